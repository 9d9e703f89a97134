/**
 * Benchmark: the cost of the HTTP metrics middleware. One gateway (one store, one authenticator, one
 * rate limiter), served twice: with the middleware (as shipped) and without it; an authenticated
 * `GET /v1/audio_books/{id}` under load against each, alternating, in one run.
 *
 *   pnpm --filter @voiceloc/gateway exec tsx bench/metrics-overhead.ts   (DURATION=8 CONNECTIONS=32 ROUNDS=2)
 */
import { pino } from "pino";
import { serve } from "@hono/node-server";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { loadConfig } from "@voiceloc/config";
import { tempDir, freePort } from "@voiceloc/testing";
import { createApp } from "../src/app.ts";
import { createGateway } from "../src/gateway.ts";

const duration = Number(process.env.DURATION ?? 8);
const connections = Number(process.env.CONNECTIONS ?? 32);
const rounds = Number(process.env.ROUNDS ?? 2);
const KEY = "bench-key-0001";

interface LoadResult {
  requests: { average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
}

const autocannonBin = join(dirname(createRequire(import.meta.url).resolve("autocannon/package.json")), "autocannon.js");

function load(url: string): Promise<LoadResult> {
  const args = [autocannonBin, "--json", "-c", String(connections), "-d", String(duration), "-H", `API-KEY=${KEY}`, url];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      if (error) reject(error);
      else resolve(JSON.parse(stdout) as LoadResult);
    });
  });
}

async function main() {
  const dir = await tempDir("voiceloc-bench-metrics-");
  const port = await freePort();
  const config = loadConfig({ DATA_DIR: dir.path, PORT: String(port), HOST: "127.0.0.1", VOICELOC_API_KEYS: `bench:${KEY}`, RATE_LIMIT_PER_MINUTE: "60000000" });
  const logger = pino({ level: "info" }, pino.destination({ dest: `${dir.path}/requests.log`, sync: false }));
  const gateway = await createGateway({ config, logger });
  await gateway.start();
  const created = await gateway.app.request("/v1/audio_books/", {
    method: "POST",
    headers: { "API-KEY": KEY, "Content-Type": "application/json" },
    body: JSON.stringify({ file: "https://example.com/book.txt", name: "Bench", source_language: "English", target_language: "French" }),
  });
  const { id } = (await created.json()) as { id: string };
  const path = `/v1/audio_books/${id}`;

  const barePort = await freePort();
  const without = createApp({ ...gateway.deps, metrics: false });
  const server = serve({ fetch: without.fetch, port: barePort, hostname: "127.0.0.1" });

  const withUrl = `http://127.0.0.1:${port}${path}`;
  const withoutUrl = `http://127.0.0.1:${barePort}${path}`;
  await load(withoutUrl);
  await load(withUrl);
  const results = { with: [] as LoadResult[], without: [] as LoadResult[] };
  for (let i = 0; i < rounds; i += 1) {
    results.without.push(await load(withoutUrl));
    results.with.push(await load(withUrl));
  }
  // In process too (no sockets, less noise from other load on the machine): µs per request, alternating blocks.
  const perRequest = { with: 0, without: 0 };
  const BLOCK = 2_000;
  const BLOCKS = Number(process.env.BLOCKS ?? 10);
  for (let b = 0; b < BLOCKS; b += 1) {
    for (const [name, app] of [["without", without], ["with", gateway.app]] as const) {
      const started = performance.now();
      for (let i = 0; i < BLOCK; i += 1) await (await app.request(path, { headers: { "API-KEY": KEY } })).text();
      perRequest[name] += (performance.now() - started) * 1_000;
    }
  }
  const us = (total: number) => total / (BLOCK * BLOCKS);
  const avg = (list: LoadResult[]) => list.reduce((s, r) => s + r.requests.average, 0) / list.length;
  const p99 = (list: LoadResult[]) => Math.max(...list.map((r) => r.latency.p99));
  const non2xx = (list: LoadResult[]) => list.reduce((s, r) => s + r.non2xx, 0);
  const row = (name: string, list: LoadResult[]) =>
    `${name.padEnd(36)} ${avg(list).toFixed(0).padStart(8)} req/s   p99 ${String(p99(list)).padStart(4)} ms   non-2xx ${non2xx(list)}`;
  process.stdout.write(
    [
      `GET /v1/audio_books/{id}, ${connections} connections, ${rounds}×${duration} s each (alternating), Node ${process.version}, load ${loadavg().map((l) => l.toFixed(1)).join(" ")}`,
      row("gateway without HTTP metrics", results.without),
      row("gateway with HTTP metrics", results.with),
      `ratio with / without: ${(avg(results.with) / avg(results.without)).toFixed(3)}`,
      `in process (app.request, ${BLOCKS}×${BLOCK} alternating): without ${us(perRequest.without).toFixed(1)} µs/request, with ${us(perRequest.with).toFixed(1)} µs/request, difference ${(us(perRequest.with) - us(perRequest.without)).toFixed(1)} µs (${((us(perRequest.without) / us(perRequest.with))).toFixed(3)}× the throughput)`,
      "",
    ].join("\n"),
  );
  server.close();
  await gateway.stop();
  await dir.cleanup();
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
