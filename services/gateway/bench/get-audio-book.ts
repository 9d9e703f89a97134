/**
 * Benchmark: authenticated `GET /v1/audio_books/{id}` through the whole gateway
 * (auth lookup, store read, presentation, request logging) beside a bare Hono
 * handler returning the same JSON, in one run. Target ratio ≥ 0.5.
 *
 *   pnpm bench            (DURATION=10 CONNECTIONS=20 to change the load)
 */
import { pino } from "pino";
import { Hono } from "hono";
import { serve } from "@hono/node-server";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { loadConfig } from "@voiceloc/config";
import { tempDir, freePort } from "@voiceloc/testing";
import { createGateway } from "../src/gateway.ts";

const duration = Number(process.env.DURATION ?? 8);
const connections = Number(process.env.CONNECTIONS ?? 16);
const KEY = "bench-key-0001";

interface LoadResult {
  requests: { average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
}

const autocannonBin = join(dirname(createRequire(import.meta.url).resolve("autocannon/package.json")), "autocannon.js");

/** Load from a separate process (autocannon's CLI), so the load generator does not share the server's event loop. */
function load(url: string, headers: Record<string, string>): Promise<LoadResult> {
  const args = [autocannonBin, "--json", "-c", String(connections), "-d", String(duration)];
  for (const [k, v] of Object.entries(headers)) args.push("-H", `${k}=${v}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      if (error) reject(error);
      else resolve(JSON.parse(stdout) as LoadResult);
    });
  });
}

async function main() {
  const dir = await tempDir("voiceloc-bench-");
  const port = await freePort();
  // The rate limit stays on (its per-request cost is part of what is measured) but far above the load.
  const rateLimit = process.env.RATE_LIMIT_PER_MINUTE ?? "1000000";
  const config = loadConfig({ DATA_DIR: dir.path, PORT: String(port), HOST: "127.0.0.1", VOICELOC_API_KEYS: `bench:${KEY}`, LOG_LEVEL: "info", RATE_LIMIT_PER_MINUTE: rateLimit });
  const logger = pino({ level: process.env.BENCH_LOG_LEVEL ?? "info" }, pino.destination({ dest: `${dir.path}/requests.log`, sync: false }));
  const gateway = await createGateway({ config, logger });
  await gateway.start();
  const created = await gateway.app.request("/v1/audio_books/", {
    method: "POST",
    headers: { "API-KEY": KEY, "Content-Type": "application/json" },
    body: JSON.stringify({ file: "https://example.com/book.txt", name: "Bench", source_language: "English", target_language: "French" }),
  });
  const record = (await created.json()) as { id: string };
  // Fill the store a little so lookups are not against a near-empty table.
  for (let i = 0; i < 2000; i += 1) {
    await gateway.app.request("/v1/audio_books/", {
      method: "POST",
      headers: { "API-KEY": KEY, "Content-Type": "application/json" },
      body: JSON.stringify({ file: `b${i}.txt`, name: `Book ${i}`, source_language: "English", target_language: "French" }),
    });
  }
  const path = `/v1/audio_books/${record.id}`;
  const body = await (await gateway.app.request(path, { headers: { "API-KEY": KEY } })).text();

  const barePort = await freePort();
  const bare = new Hono().get("/v1/audio_books/:id", (c) => c.body(body, 200, { "Content-Type": "application/json" }));
  const bareServer = serve({ fetch: bare.fetch, port: barePort, hostname: "127.0.0.1" });

  // Warm both up, then measure.
  await load(`http://127.0.0.1:${barePort}${path}`, {});
  await load(`http://127.0.0.1:${port}${path}`, { "API-KEY": KEY });
  const bareResult = await load(`http://127.0.0.1:${barePort}${path}`, {});
  const gwResult = await load(`http://127.0.0.1:${port}${path}`, { "API-KEY": KEY });

  const row = (name: string, r: LoadResult) =>
    `${name.padEnd(34)} ${r.requests.average.toFixed(0).padStart(8)} req/s   p50 ${String(r.latency.p50).padStart(4)} ms   p99 ${String(r.latency.p99).padStart(4)} ms   non-2xx ${r.non2xx}`;
  const out = [
    `GET /v1/audio_books/{id}, ${connections} connections, ${duration} s each, Node ${process.version}, RATE_LIMIT_PER_MINUTE=${rateLimit}`,
    row("bare Hono handler (same JSON)", bareResult),
    row("gateway (auth + store + logging)", gwResult),
    `ratio gateway / bare: ${(gwResult.requests.average / bareResult.requests.average).toFixed(2)} (target ≥ 0.50)`,
  ];
  process.stdout.write(`${out.join("\n")}\n`);
  bareServer.close();
  await gateway.stop();
  await dir.cleanup();
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
