/**
 * Test helpers: the entry point (main.ts) run as a child process per service, as a mesh runs it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { blobRootFor, createFsBlobStore } from "@voiceloc/blobs";
import { createNatsBus } from "@voiceloc/bus";
import { loadConfig } from "@voiceloc/config";
import { createGateway } from "@voiceloc/gateway";
import { silentLogger } from "@voiceloc/log";
import { checkResponsesOf } from "@voiceloc/testing";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const entry = join(dirname(fileURLToPath(import.meta.url)), "..", "main.ts");

export interface ServiceProcess {
  services: string;
  child: ChildProcess;
  port: number;
  /** Everything written to stdout and stderr so far. */
  output: string[];
  /** Resolves with the exit code and signal once the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `main.ts` with SERVICES and PORT set and waits until its /readyz answers 200. A gateway's
 * responses are checked against its OpenAPI document from then on (see contract-setup.ts).
 */
export async function startService(services: string, env: Record<string, string>, port: number, readyWithinMs = 120_000): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd: join(dirname(entry), ".."),
    env: { ...process.env, SHUTDOWN_TIMEOUT_MS: "20000", ...env, SERVICES: services, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: env.LOG_LEVEL ?? "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  child.stdout?.on("data", (d: Buffer) => output.push(d.toString()));
  child.stderr?.on("data", (d: Buffer) => output.push(d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const proc: ServiceProcess = { services, child, port, output, exited };
  const deadline = Date.now() + readyWithinMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${services} exited early:\n${output.join("")}`);
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ok) {
      if (services.split(",").some((name) => name.trim() === "gateway")) checkResponsesOf(`http://127.0.0.1:${port}`);
      return proc;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  child.kill("SIGKILL");
  throw new Error(`${services} did not become ready within ${readyWithinMs} ms:\n${output.join("")}`);
}

export function isRunning(proc: ServiceProcess): boolean {
  return proc.child.exitCode === null && proc.child.signalCode === null;
}

/** Sends the signal (if the process still runs) and waits for the exit; returns it with how long it took. */
export async function signalAndWait(proc: ServiceProcess, signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
  const started = Date.now();
  if (isRunning(proc)) proc.child.kill(signal);
  const exit = await proc.exited;
  return { ...exit, ms: Date.now() - started };
}

/** The JSON log lines written so far (pino, one object per line). */
export function logLines(proc: ServiceProcess): Array<Record<string, unknown>> {
  return proc.output
    .join("")
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

/**
 * Waits until `until` holds of the JSON log lines the processes have written so far (all of them, in
 * order): a process writes its output in chunks, up to 100 ms after a line is logged (see
 * docs/observability.md), so a line may follow what a client saw of the same moment.
 */
export async function untilLogged(procs: ServiceProcess[], until: (lines: Array<Record<string, unknown>>) => boolean, withinMs = 10_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!until(procs.flatMap(logLines))) {
    if (Date.now() > deadline) throw new Error(`the lines waited for were not logged within ${withinMs} ms:\n${procs.map((p) => p.output.join("").slice(-3_000)).join("\n")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Creates an English → English audio book of a MEDIA_ROOT file through the gateway; returns its id. */
export async function createEnglishBook(base: string, key: string, file: string, name: string): Promise<string> {
  const res = await fetch(`${base}/v1/audio_books/`, {
    method: "POST",
    headers: { "API-KEY": key, "Content-Type": "application/json" },
    body: JSON.stringify({ file, name, source_language: "English", target_language: "English" }),
  });
  if (res.status !== 201) throw new Error(`creating ${file}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** The chunk checkpoints an audio book task has written so far (file blob store under DATA_DIR). */
export async function chunkCheckpoints(dataDir: string, taskId: string): Promise<string[]> {
  const names = await readdir(join(dataDir, "blobs", "objects", "tasks", taskId, "checkpoints")).catch(() => [] as string[]);
  return names.filter((name) => /^chunk-.*\.mp3$/.test(name));
}

/** Waits (polling) until the task has at least `count` chunk checkpoints; the worker's output on a timeout. */
export async function waitForChunkCheckpoints(dataDir: string, taskId: string, count: number, worker: ServiceProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await chunkCheckpoints(dataDir, taskId)).length < count) {
    if (Date.now() > deadline) throw new Error(`no ${count} checkpoints appeared:\n${worker.output.join("")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A gateway in the test's own process (SERVICES=gateway) over the given nats-server, recording every
 * task_progress value the projection stores, per record id, so a test can check it never goes back.
 */
export async function startSampledGateway(
  natsUrl: string,
  env: Record<string, string>,
  port: number,
  workAckWaitMs: number,
): Promise<{ progressOf: Map<string, number[]>; stop: () => Promise<void> }> {
  const progressOf = new Map<string, number[]>();
  const bus = await createNatsBus({ url: natsUrl, logger: silentLogger(), name: "test-gateway", workAckWaitMs });
  const config = loadConfig({ ...env, SERVICES: "gateway", PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "silent" });
  const blobs = createFsBlobStore({ root: blobRootFor(config.dataDir) });
  const gateway = await createGateway({
    config,
    logger: silentLogger(),
    bus,
    blobs,
    onProjected: (_event, record) => {
      if (!record) return;
      const seen = progressOf.get(record.id) ?? [];
      seen.push(record.task_progress);
      progressOf.set(record.id, seen);
    },
  });
  await gateway.start();
  checkResponsesOf(`http://127.0.0.1:${port}`);
  return {
    progressOf,
    stop: async () => {
      await gateway.stop();
      await bus.close({ graceMs: 5_000 });
      await blobs.close();
    },
  };
}

const PAGE = 4096;

/** Resident bytes of `pid` and every process descending from it, read from /proc. */
export async function treeResidentBytes(pid: number): Promise<number> {
  const parents = new Map<number, number>();
  const resident = new Map<number, number>();
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, "utf8").catch(() => "");
    // pid (comm) state ppid … rss is field 24; comm may hold spaces, so count from its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields.length < 22) continue;
    parents.set(Number(name), Number(fields[1]));
    resident.set(Number(name), Number(fields[21]) * PAGE);
  }
  let total = 0;
  for (const [candidate, bytes] of resident) {
    for (let at: number | undefined = candidate; at !== undefined && at > 1; at = parents.get(at)) {
      if (at === pid) {
        total += bytes;
        break;
      }
    }
  }
  return total;
}

/** The peak resident set (VmHWM) the kernel recorded for one process. */
export async function peakResidentBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
  return Number(kb) * 1024;
}

/** A task run while the process tree's resident memory was sampled. */
export interface SampledRun {
  id: string;
  /** The record at its end (or as last read, at the deadline). */
  record: Record<string, unknown>;
  /** From the creation to the end, in ms. */
  elapsed: number;
  /** The largest resident size of `service` and every process it started, sampled every 20 ms. */
  peakTree: number;
}

/**
 * Creates a task (`create` answers its id) and reads its record (`read`) until it completed or failed,
 * sampling the resident memory of `service`'s process tree meanwhile. The deadline is a guard for a loaded
 * machine, not a measure.
 */
export async function followSampled(
  service: ServiceProcess,
  create: () => Promise<string>,
  read: (id: string) => Promise<Record<string, unknown>>,
  deadlineMs = 240_000,
): Promise<SampledRun> {
  let peakTree = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peakTree = Math.max(peakTree, await treeResidentBytes(service.child.pid ?? 0));
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  try {
    const started = Date.now();
    const id = await create();
    let record: Record<string, unknown> = {};
    const deadline = Date.now() + deadlineMs;
    while (Date.now() < deadline) {
      record = await read(id);
      if (record.task_status === "failed" || record.task_status === "completed") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    return { id, record, elapsed: Date.now() - started, peakTree };
  } finally {
    sampling = false;
    await sampler;
  }
}
