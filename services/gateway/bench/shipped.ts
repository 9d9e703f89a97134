/**
 * What the benchmarks share: the shipped process started exactly as the README says
 * (`pnpm start` at the repository root, in its own process group), the API calls they make,
 * autocannon run as a separate process, and a bare Hono handler in its own plain `node` process.
 * Nothing here knows how `pnpm start` is implemented: it only runs it and waits for /readyz.
 */
import { spawn, execFile, execFileSync, type ChildProcess } from "node:child_process";
import { closeSync, openSync, readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const autocannonBin = join(dirname(createRequire(import.meta.url).resolve("autocannon/package.json")), "autocannon.js");
const bareServerScript = join(dirname(fileURLToPath(import.meta.url)), "bare-server.mjs");

/**
 * The environment the shipped process gets: the machine's basics (PATH, HOME, locale, temp dir)
 * and nothing of this shell's service configuration, so every setting not given is its default.
 */
function baseEnv(): NodeJS.ProcessEnv {
  const keep = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "TMPDIR", "TZ"];
  const env: NodeJS.ProcessEnv = {};
  for (const name of keep) if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
}

let clockTicks: number | undefined;

/**
 * CPU time (user + system, seconds) the live processes of a process group have used so far, from
 * /proc; undefined off Linux. Sampled before and after a load run: its CPU per request.
 */
function groupCpuSeconds(pgid: number | undefined): number | undefined {
  if (pgid === undefined || process.platform !== "linux") return undefined;
  clockTicks ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  let ticks = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    // after "pid (comm) ": state, ppid, pgrp, …, utime (14th field), stime (15th)
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / clockTicks;
}

/** A process group the benchmarks load: where it answers, and the CPU it has used so far. */
export interface Target {
  readonly url: string;
  /** Seconds of CPU used by the group's live processes (undefined off Linux). */
  cpuSeconds(): number | undefined;
}

export interface Shipped extends Target {
  readonly logFile: string;
  /** SIGTERM to the whole process group, then waits until every process of it is gone (SIGKILL after 20 s). */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();

/** Signals every process group this harness started (used on the way out, whatever happened). */
export function killAll(signal: NodeJS.Signals = "SIGKILL"): void {
  for (const child of live) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function stopGroup(child: ChildProcess, graceMs: number): Promise<void> {
  const pgid = child.pid;
  if (pgid === undefined) return;
  try {
    process.kill(-pgid, "SIGTERM");
  } catch {
    // already gone
  }
  const deadline = Date.now() + graceMs;
  while (groupAlive(pgid) && Date.now() < deadline) await sleep(100);
  if (groupAlive(pgid)) {
    process.kill(-pgid, "SIGKILL");
    while (groupAlive(pgid)) await sleep(100);
  }
  live.delete(child);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no output)";
  }
}

/**
 * `pnpm start` at the repository root with PORT, DATA_DIR and the given variables only, its
 * output appended to `logFile` (a file, not a pipe, so a chatty log never blocks it). Resolves
 * once GET /readyz answers 200; `pnpm start` first runs the set-up script, so the wait is long.
 */
export async function startShipped(options: {
  port: number;
  dataDir: string;
  logFile: string;
  env: Record<string, string>;
  readyTimeoutMs?: number;
}): Promise<Shipped> {
  const out = openSync(options.logFile, "a");
  const child = spawn("pnpm", ["start"], {
    cwd: repoRoot,
    detached: true, // its own process group: stop() signals pnpm, the shell and the service alike
    stdio: ["ignore", out, out],
    env: { ...baseEnv(), ...options.env, PORT: String(options.port), DATA_DIR: options.dataDir },
  });
  closeSync(out);
  live.add(child);
  let exited: string | undefined;
  child.once("exit", (code, signal) => {
    exited = `exited (${signal ?? `code ${code}`})`;
  });
  const url = `http://127.0.0.1:${options.port}`;
  const shipped: Shipped = { url, logFile: options.logFile, cpuSeconds: () => groupCpuSeconds(child.pid), stop: () => stopGroup(child, 20_000) };
  const deadline = Date.now() + (options.readyTimeoutMs ?? 300_000);
  for (;;) {
    if (exited !== undefined) {
      await shipped.stop();
      throw new Error(`pnpm start ${exited} before it was ready; its last output:\n${tail(options.logFile)}`);
    }
    try {
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.status === 200) return shipped;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await shipped.stop();
      throw new Error(`pnpm start was not ready within ${(options.readyTimeoutMs ?? 300_000) / 1000} s; its last output:\n${tail(options.logFile)}`);
    }
    await sleep(250);
  }
}

export interface BookRecord {
  id: string;
  task_status: "queued" | "processing" | "completed" | "failed";
  task_progress: number;
  task_error: string | null;
  localized_file: string | null;
  date_created: string;
  date_updated: string;
}

/** One API call with an API key; throws on an unexpected status, naming it and the body. */
export async function api<T>(base: string, key: string, method: string, path: string, body?: unknown, expect = [200, 201]): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "API-KEY": key, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!expect.includes(res.status)) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

/** Polls the account's records until none of `ids` is queued or processing; throws if one failed. */
export async function waitFinished(base: string, key: string, ids: readonly string[], timeoutMs: number): Promise<BookRecord[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const records = await Promise.all(ids.map((id) => api<BookRecord>(base, key, "GET", `/v1/audio_books/${id}`)));
    const failed = records.find((r) => r.task_status === "failed");
    if (failed) throw new Error(`audio book ${failed.id} failed: ${failed.task_error}`);
    if (records.every((r) => r.task_status === "completed")) return records;
    if (Date.now() > deadline) throw new Error(`audio books not completed within ${timeoutMs / 1000} s`);
    await sleep(500);
  }
}

export interface LoadResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

/** autocannon's CLI in its own process (`--json`), so the load generator never shares the server's event loop. */
export function autocannon(url: string, options: { connections: number; seconds: number; headers?: Record<string, string> }): Promise<LoadResult> {
  const args = [autocannonBin, "--json", "-c", String(options.connections), "-d", String(options.seconds)];
  for (const [k, v] of Object.entries(options.headers ?? {})) args.push("-H", `${k}=${v}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => {
      if (error) reject(error);
      else resolve(JSON.parse(stdout) as LoadResult);
    });
  });
}

export interface Bare extends Target {
  stop(): Promise<void>;
}

/**
 * A bare Hono + @hono/node-server handler in its own plain `node` process, answering each
 * route with the given JSON (the same bytes the service returned). Routes are Hono paths.
 */
export async function startBare(routes: Record<string, string>, bodyDir: string): Promise<Bare> {
  const { writeFile } = await import("node:fs/promises");
  const args = [bareServerScript];
  let n = 0;
  for (const [route, body] of Object.entries(routes)) {
    const file = join(bodyDir, `bare-body-${(n += 1)}.json`);
    await writeFile(file, body);
    args.push(route, file);
  }
  const child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", "pipe", "inherit"], env: baseEnv() });
  live.add(child);
  const port = await new Promise<number>((resolve, reject) => {
    let buffered = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      buffered += chunk;
      const line = buffered.split("\n")[0];
      if (buffered.includes("\n") && line !== undefined) resolve(Number(line.trim()));
    });
    child.once("exit", (code) => reject(new Error(`bare server exited (code ${code})`)));
  });
  return { url: `http://127.0.0.1:${port}`, cpuSeconds: () => groupCpuSeconds(child.pid), stop: () => stopGroup(child, 5_000) };
}

/** `uptime` figures and core count, printed beside every measurement. */
/** Runs a bench's main: Ctrl-C and a crash both stop every process the bench started. */
export function runBench(main: () => Promise<void>): void {
  process.on("SIGINT", () => {
    killAll("SIGTERM");
    process.exit(130);
  });
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    killAll("SIGKILL");
    process.exit(1);
  });
}

export function machine(): string {
  const [one, five, fifteen] = loadavg().map((l) => l.toFixed(2));
  return `Node ${process.version}, ${cpus().length} cores, load average ${one} ${five} ${fifteen} (1, 5, 15 min)`;
}
