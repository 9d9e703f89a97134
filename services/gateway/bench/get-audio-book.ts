/**
 * `pnpm bench`: the HTTP read path of the process users run, beside a bare Hono handler.
 *
 * - service: `pnpm start` at the repository root (exactly the README's start command, default
 *   configuration and log level, output to a file) with only PORT, DATA_DIR (a temp dir),
 *   VOICELOC_API_KEYS (one seeded key), RATE_LIMIT_PER_MINUTE=60000000 and RATE_LIMIT_BURST=60000000
 *   set (the limit stays on, its cost measured, but above the load: the default 600/min would
 *   answer 429s);
 * - bare: a Hono + @hono/node-server handler returning the same JSON bytes, in its own plain
 *   `node` process (bare-server.mjs);
 * - load: autocannon's CLI in a separate process, 32 connections, 8 s per run after a 3 s
 *   warm-up of each side, bare and service interleaved (bare, service, bare, service) so a load
 *   drift on the machine hits both;
 * - CPU: each run's CPU per request of the loaded side (user + system time of its process group's
 *   live processes, read from /proc before and after the run), printed beside req/s.
 *
 * It creates 60 short audio books (one of two sentences, 59 of two words) through the API and waits until they are completed, then
 * measures GET /v1/audio_books/{id} (API-KEY) and GET /v1/audio_books/?limit=50, first with
 * every service in the process, then again with SERVICES=gateway on the same data. Exits 1 on
 * any non-2xx answer or socket error.
 *
 *   pnpm bench     (DURATION=8 CONNECTIONS=32 ROUNDS=2 to change the load)
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort, tempDir } from "@voiceloc/testing";
import { api, autocannon, machine, runBench, startBare, startShipped, waitFinished, type Bare, type BookRecord, type LoadResult, type Shipped, type Target } from "./shipped.ts";

const seconds = Number(process.env.DURATION ?? 8);
const connections = Number(process.env.CONNECTIONS ?? 32);
const rounds = Number(process.env.ROUNDS ?? 2);
const warmupSeconds = 3;
const books = 60;
const KEY = "bench-key-0001";
/** The configuration's largest rate and bucket: the limit stays on and is paid for, above the load. */
const RATE_LIMIT = "60000000";

const TEXT =
  "The lighthouse keeper climbed the stairs at dusk. Below him the sea was calm, and the boats came home one by one.";
/** The other 59 books only fill the list: one short sentence each, quick to speak. */
const FILLER = "Good evening.";

/** A load run with the CPU its target used per request (µs; undefined where it cannot be read). */
interface Run extends LoadResult {
  cpuUsPerRequest: number | undefined;
}

interface Scenario {
  name: string;
  bare: Run[];
  service: Run[];
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

const cpu = (us: number | undefined) => (us === undefined ? "n/a" : us.toFixed(1));

function row(label: string, r: Run): string {
  return `  ${label.padEnd(22)} ${fmt(r.requests.average).padStart(8)} req/s   CPU ${cpu(r.cpuUsPerRequest).padStart(5)} µs/req   p50 ${String(r.latency.p50).padStart(3)} ms   p99 ${String(r.latency.p99).padStart(3)} ms   non-2xx ${r.non2xx}   errors ${r.errors + r.timeouts}`;
}

/** One load run on `target`, with the CPU its processes used per request answered. */
async function run(target: Target, path: string, headers?: Record<string, string>): Promise<Run> {
  const before = target.cpuSeconds();
  const result = await autocannon(`${target.url}${path}`, { connections, seconds, ...(headers === undefined ? {} : { headers }) });
  const after = target.cpuSeconds();
  const cpuUsPerRequest = before === undefined || after === undefined || result.requests.total === 0 ? undefined : ((after - before) * 1e6) / result.requests.total;
  return { ...result, cpuUsPerRequest };
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Warm both up, then bare and service interleaved, `rounds` times each. */
async function measure(name: string, bare: Bare, service: Shipped, path: string): Promise<Scenario> {
  const headers = { "API-KEY": KEY };
  await autocannon(`${bare.url}${path}`, { connections, seconds: warmupSeconds });
  await autocannon(`${service.url}${path}`, { connections, seconds: warmupSeconds, headers });
  const scenario: Scenario = { name, bare: [], service: [] };
  say(`${name}: GET ${path.replace(/[0-9a-f-]{36}/, "{id}")}`);
  for (let round = 1; round <= rounds; round += 1) {
    const b = await run(bare, path);
    say(row(`round ${round} bare Hono`, b));
    const s = await run(service, path, headers);
    say(row(`round ${round} service`, s));
    scenario.bare.push(b);
    scenario.service.push(s);
  }
  return scenario;
}

function summary(s: Scenario): { line: string; bad: number } {
  const bareRps = mean(s.bare.map((r) => r.requests.average));
  const serviceRps = mean(s.service.map((r) => r.requests.average));
  const p50 = Math.max(...s.service.map((r) => r.latency.p50));
  const p99 = Math.max(...s.service.map((r) => r.latency.p99));
  const bad = [...s.bare, ...s.service].reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0);
  const meanCpu = (runs: Run[]) => (runs.some((r) => r.cpuUsPerRequest === undefined) ? undefined : mean(runs.map((r) => r.cpuUsPerRequest ?? 0)));
  const line = `| ${s.name} | ${fmt(bareRps)} | ${fmt(serviceRps)} | ${(serviceRps / bareRps).toFixed(2)} | ${cpu(meanCpu(s.bare))} | ${cpu(meanCpu(s.service))} | ${p50} ms | ${p99} ms | ${bad} |`;
  return { line, bad };
}

async function main(): Promise<void> {
  const dir = await tempDir("voiceloc-bench-");
  const dataDir = join(dir.path, "data");
  await mkdir(join(dataDir, "media"), { recursive: true });
  await writeFile(join(dataDir, "media", "book.txt"), `${TEXT}\n`);
  await writeFile(join(dataDir, "media", "filler.txt"), `${FILLER}\n`);
  const logFile = join(dir.path, "service.log");
  const env = { VOICELOC_API_KEYS: `bench:${KEY}`, RATE_LIMIT_PER_MINUTE: RATE_LIMIT, RATE_LIMIT_BURST: RATE_LIMIT };
  let bare: Bare | undefined;
  let service: Shipped | undefined;
  let failed = false;
  try {
    say(`pnpm start (all services), ${machine()}`);
    let started = Date.now();
    service = await startShipped({ port: await freePort(), dataDir, logFile, env });
    say(`  ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    started = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < books; i += 1) {
      const body = { file: i === 0 ? "book.txt" : "filler.txt", name: `Bench book ${i + 1}`, source_language: "English", target_language: "English" };
      ids.push((await api<BookRecord>(service.url, KEY, "POST", "/v1/audio_books/", body, [201])).id);
    }
    await waitFinished(service.url, KEY, ids, 15 * 60_000);
    say(`  ${books} short audio books created and completed in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const recordPath = `/v1/audio_books/${ids[0]}`;
    const listPath = "/v1/audio_books/?limit=50";
    const recordBody = JSON.stringify(await api<BookRecord>(service.url, KEY, "GET", recordPath));
    const list = await api<BookRecord[]>(service.url, KEY, "GET", listPath);
    if (list.length !== 50) throw new Error(`the list held ${list.length} records, expected 50`);
    bare = await startBare({ "/v1/audio_books/:id": recordBody, "/v1/audio_books/": JSON.stringify(list) }, dir.path);
    say(`  record ${recordBody.length} bytes, list ${JSON.stringify(list).length} bytes; ${connections} connections, ${seconds} s per run, ${rounds} rounds interleaved\n`);

    const scenarios: Scenario[] = [];
    scenarios.push(await measure("record, all services", bare, service, recordPath));
    scenarios.push(await measure("list of 50, all services", bare, service, listPath));
    await service.stop();
    service = undefined;

    say(`\npnpm start with SERVICES=gateway on the same data, ${machine()}`);
    started = Date.now();
    service = await startShipped({ port: await freePort(), dataDir, logFile, env: { ...env, SERVICES: "gateway" } });
    say(`  ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    scenarios.push(await measure("record, `SERVICES=gateway`", bare, service, recordPath));
    scenarios.push(await measure("list of 50, `SERVICES=gateway`", bare, service, listPath));

    say(`\n${machine()}`);
    say("| Read (32 connections) | bare req/s | service req/s | ratio | bare CPU µs/req | service CPU µs/req | service p50 | service p99 | non-2xx |");
    say("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let bad = 0;
    for (const s of scenarios) {
      const { line, bad: n } = summary(s);
      bad += n;
      say(line);
    }
    say("req/s and CPU per request (the process group's user + system time over the run's requests): mean of the rounds; p50/p99: the worst round. Targets for the record read (all services): ratio ≥ 0.80, p99 < 25 ms.");
    if (bad > 0) {
      say(`FAILED: ${bad} non-2xx answers or socket errors (service log: ${logFile})`);
      failed = true;
    }
  } finally {
    await service?.stop();
    await bare?.stop();
    if (!failed) await dir.cleanup();
  }
  if (failed) process.exit(1);
}

runBench(main);
