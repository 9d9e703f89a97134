/**
 * Process lifecycle: readiness that follows the real dependencies, start-up refusing contradictory
 * configuration, and a clean stop on a signal.
 */
import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { silentLogger } from "@voiceloc/log";
import { checkResponsesOf, freePort, startNatsServer, tempDir, type NatsServerHandle } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";
import { chunkCheckpoints, createEnglishBook, isRunning, logLines, signalAndWait, startService, untilLogged, waitForChunkCheckpoints } from "./testing/processes.ts";

const here = dirname(fileURLToPath(import.meta.url));
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function readyz(port: number): Promise<{ status: number; body: { status: string; checks: Record<string, string> } }> {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string; checks: Record<string, string> } };
}

/** Polls /readyz on every port until each answers `status`; returns how long that took. */
async function untilReady(ports: number[], status: number, withinMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const answers = await Promise.all(ports.map((port) => readyz(port)));
    if (answers.every((a) => a.status === status)) return Date.now() - started;
    if (Date.now() - started > withinMs) throw new Error(`/readyz did not turn ${status} within ${withinMs} ms: ${JSON.stringify(answers)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("/readyz follows the bus", () => {
  let nats: NatsServerHandle;

  it("turns 503 within seconds of nats-server stopping and 200 again once it is back, on the gateway and on a workers-only process", async () => {
    nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const dir = await tempDir("voiceloc-ready-");
    cleanups.push(() => dir.cleanup());
    const start = async (services: string, data: string, env: Record<string, string> = {}): Promise<Runtime> => {
      const port = await freePort();
      const runtime = await startRuntime(
        loadConfig({ SERVICES: services, NATS_URL: nats.url, DATA_DIR: join(dir.path, data), PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "silent", ...env }),
        silentLogger(),
      );
      cleanups.push(() => runtime.stop());
      if (services.split(",").includes("gateway")) checkResponsesOf(`http://127.0.0.1:${port}`);
      return runtime;
    };
    const gateway = await start("gateway", "gw");
    // blobs in JetStream: a second connection to the same server, which must come back too
    const worker = await start("synthesis", "worker", { BLOB_STORE: "nats" });
    const ports = [gateway.port, worker.port];
    expect((await readyz(gateway.port)).body).toEqual({ status: "ready", checks: { store: "ok", bus: "ok" } });
    expect((await readyz(worker.port)).body).toEqual({ status: "ready", checks: { bus: "ok" } });

    await nats.halt();
    const downAfter = await untilReady(ports, 503, 10_000);
    expect(downAfter).toBeLessThan(10_000);
    const down = await readyz(gateway.port);
    expect(down.body.status).toBe("not ready");
    expect(down.body.checks.store).toBe("ok");
    expect(down.body.checks.bus).not.toBe("ok");

    await nats.resume();
    await untilReady(ports, 200, 30_000);
    expect((await readyz(gateway.port)).body.checks).toEqual({ store: "ok", bus: "ok" });
  });
});

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  ms: number;
  output: string;
}

/** Runs the entry point; `signal` is sent once /readyz answers 200 (or never, when start-up must fail). */
async function runMain(env: Record<string, string>, signal?: NodeJS.Signals, beforeSignal?: () => Promise<void>): Promise<Exit> {
  const child = spawn(process.execPath, ["--import", "tsx", join(here, "main.ts")], {
    cwd: join(here, ".."),
    env: { ...process.env, HOST: "127.0.0.1", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once("exit", (code, sig) => resolve([code, sig])));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  });
  let started = Date.now();
  if (signal) {
    const port = Number(env.PORT);
    const deadline = Date.now() + 90_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`exited before it was ready:\n${output}`);
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`never ready:\n${output}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    if (beforeSignal) await beforeSignal();
    started = Date.now();
    child.kill(signal);
  }
  // bounded either way: a process that should have refused to start but runs is killed after 30 s
  const limit = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const [code, sig] = await exited;
  clearTimeout(limit);
  return { code, signal: sig, ms: Date.now() - started, output };
}

describe("the entry process", () => {
  it.each(["SIGTERM", "SIGINT"] as const)("stops on %s with exit code 0, well before its shutdown timeout", async (signal) => {
    const dir = await tempDir("voiceloc-stop-");
    cleanups.push(() => dir.cleanup());
    // SHUTDOWN_TIMEOUT_MS=20000: a hang would end after 20 s with exit code 1
    const exit = await runMain({ SERVICES: "gateway", DATA_DIR: dir.path, PORT: String(await freePort()), SHUTDOWN_TIMEOUT_MS: "20000" }, signal);
    expect({ code: exit.code, signal: exit.signal }, exit.output).toEqual({ code: 0, signal: null });
    expect(exit.ms).toBeLessThan(10_000);
    expect(exit.output).toContain('"msg":"stopped"');
  });

  it("stops on SIGTERM in the middle of an audio book with exit code 0, within its shutdown timeout", async () => {
    const dir = await tempDir("voiceloc-stop-busy-");
    cleanups.push(() => dir.cleanup());
    const media = join(dir.path, "media");
    await mkdir(media, { recursive: true });
    const paragraph = "The harbour woke slowly. Fishermen carried their nets down to the water, and gulls argued over the roofs. ";
    await writeFile(join(media, "long.txt"), Array.from({ length: 150 }, (_, i) => `${paragraph}Part ${i + 1}.`).join("\n\n"));
    const port = await freePort();
    checkResponsesOf(`http://127.0.0.1:${port}`);
    const key = "stop-busy-key-1";
    let busy: { task_status: string; task_progress: number } | undefined;
    const exit = await runMain(
      // SHUTDOWN_TIMEOUT_MS=10000: a process still busy then exits with code 1
      { SERVICES: "gateway,audiobook", DATA_DIR: dir.path, MEDIA_ROOT: media, PORT: String(port), VOICELOC_API_KEYS: `alice:${key}`, SHUTDOWN_TIMEOUT_MS: "10000" },
      "SIGTERM",
      async () => {
        const headers = { "API-KEY": key, "Content-Type": "application/json" };
        const created = (await (
          await fetch(`http://127.0.0.1:${port}/v1/audio_books/`, {
            method: "POST",
            headers,
            body: JSON.stringify({ file: "long.txt", name: "Long", source_language: "English", target_language: "English" }),
          })
        ).json()) as { id: string };
        const deadline = Date.now() + 60_000;
        for (;;) {
          busy = (await (await fetch(`http://127.0.0.1:${port}/v1/audio_books/${created.id}`, { headers })).json()) as typeof busy;
          if (busy?.task_status === "processing" && busy.task_progress > 0) return;
          if (Date.now() > deadline) throw new Error(`the book never got going: ${JSON.stringify(busy)}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      },
    );
    expect(busy?.task_status).toBe("processing");
    expect({ code: exit.code, signal: exit.signal }, exit.output.slice(-3_000)).toEqual({ code: 0, signal: null });
    expect(exit.ms).toBeLessThan(10_000);
  });

  it("stops with exit code 0 on a SIGTERM that arrives during start-up, once started", async () => {
    const dir = await tempDir("voiceloc-stop-early-");
    cleanups.push(() => dir.cleanup());
    const child = spawn(process.execPath, ["--import", "tsx", join(here, "main.ts")], {
      cwd: join(here, ".."),
      // the engines' self-tests keep a worker starting for a while
      env: { ...process.env, HOST: "127.0.0.1", LOG_LEVEL: "info", SERVICES: "gateway,synthesis", DATA_DIR: dir.path, PORT: String(await freePort()), SHUTDOWN_TIMEOUT_MS: "20000" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once("exit", (code, sig) => resolve([code, sig])));
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    });
    let signalled = false;
    const onData = (d: Buffer) => {
      output += d.toString();
      if (!signalled && output.includes('"msg":"starting"')) {
        signalled = true;
        child.kill("SIGTERM");
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    const limit = setTimeout(() => child.kill("SIGKILL"), 120_000);
    const [code, sig] = await exited;
    clearTimeout(limit);
    expect({ code, signal: sig }, output.slice(-3_000)).toEqual({ code: 0, signal: null });
    const messages = output.split("\n").filter((l) => l.startsWith("{")).map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(messages).toContain("signal during start-up; stopping once started");
    expect(messages.indexOf("stopped")).toBeGreaterThan(messages.indexOf("ready"));
  });

  it("refuses at start a blob store on NATS without NATS_URL, naming both variables (exit code 78)", async () => {
    const dir = await tempDir("voiceloc-badcfg-");
    cleanups.push(() => dir.cleanup());
    const exit = await runMain({ SERVICES: "gateway", DATA_DIR: dir.path, PORT: String(await freePort()), BLOB_STORE: "nats", NATS_URL: "" });
    expect(exit.code).toBe(78);
    expect(exit.output).toContain("BLOB_STORE");
    expect(exit.output).toContain("NATS_URL");
    expect(exit.output).not.toContain('"msg":"ready"');
  });
});

describe("SIGTERM in the middle of a task, over nats-server", () => {
  it("hands the book back with its checkpoints: the worker exits 0 within its grace period and another worker process completes the book without redoing finished chunks", async () => {
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const dir = await tempDir("voiceloc-handback-");
    cleanups.push(() => dir.cleanup());
    const media = join(dir.path, "media");
    await mkdir(media, { recursive: true });
    const paragraph =
      "The old harbour town woke slowly, as it always had. Fishermen carried their nets down to the water, " +
      "and the baker opened his shutters to let the smell of bread into the street. Gulls argued over the roofs. ";
    await writeFile(join(media, "harbour.txt"), Array.from({ length: 240 }, (_, i) => `${paragraph}This is part ${i + 1}.`).join("\n\n"));
    const dataDir = join(dir.path, "data");
    const gatewayPort = await freePort();
    const base = `http://127.0.0.1:${gatewayPort}`;
    const key = "handback-key-alice-1";
    const common = {
      NATS_URL: nats.url,
      DATA_DIR: dataDir,
      MEDIA_ROOT: media,
      VOICELOC_API_KEYS: `alice:${key}`,
      SIGNING_SECRET: "handback-signing-secret-0123456789-abcdef",
      PUBLIC_BASE_URL: base,
      // A task whose worker vanished would come back only after 10 minutes: within this test, only one
      // handed back (nak) at shutdown is delivered again.
      WORK_ACK_WAIT_MS: "600000",
    };
    const started = [await startService("gateway", common, gatewayPort)];
    // SHUTDOWN_TIMEOUT_MS=6000: running tasks get 2 s, then are aborted and handed back; a process still
    // busy at 6 s exits with code 1. The book (about 50,000 characters) takes far longer than the grace.
    const first = await startService("audiobook", { ...common, SHUTDOWN_TIMEOUT_MS: "6000" }, await freePort());
    started.push(first);
    cleanups.push(async () => {
      for (const proc of started) if (isRunning(proc)) await signalAndWait(proc, "SIGKILL");
    });
    const headers = { "API-KEY": key, "Content-Type": "application/json" };
    const book = { id: await createEnglishBook(base, key, "harbour.txt", "Harbour") };

    await waitForChunkCheckpoints(dataDir, book.id, 3, first);
    const exit = await signalAndWait(first, "SIGTERM");
    expect({ code: exit.code, signal: exit.signal }, first.output.join("").slice(-3_000)).toEqual({ code: 0, signal: null });
    const finishedBeforeStop = (await chunkCheckpoints(dataDir, book.id)).length;
    const firstLog = logLines(first);
    expect(firstLog.some((l) => l.msg === "task aborted by shutdown; it will be redelivered" && l.taskId === book.id)).toBe(true);
    expect(firstLog.some((l) => l.msg === "audio book ready")).toBe(false);
    expect(firstLog.some((l) => l.msg === "stopped")).toBe(true);
    const midway = (await (await fetch(`${base}/v1/audio_books/${book.id}`, { headers })).json()) as { task_status: string; task_progress: number };
    expect(midway.task_status).toBe("processing");

    const second = await startService("audiobook", common, await freePort());
    started.push(second);
    const until = Date.now() + 240_000;
    let record: Record<string, unknown>;
    for (;;) {
      record = (await (await fetch(`${base}/v1/audio_books/${book.id}`, { headers })).json()) as Record<string, unknown>;
      if (record.task_status === "completed" || record.task_status === "failed") break;
      if (Date.now() > until) throw new Error(`not finished: ${JSON.stringify(record)}\n${second.output.join("").slice(-3_000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(record.task_status, String(record.task_error)).toBe("completed");
    await untilLogged([second], (lines) => lines.some((l) => l.msg === "audio book ready"));
    const ready = logLines(second).filter((l) => l.msg === "audio book ready") as Array<{ chunks: number; spoken: number; resumed: number; deliveryCount: number }>;
    expect(ready).toHaveLength(1);
    const summary = ready[0]!;
    expect(summary.deliveryCount).toBe(2);
    expect(summary.resumed).toBeGreaterThanOrEqual(finishedBeforeStop);
    expect(summary.spoken).toBe(summary.chunks - summary.resumed);
    expect(summary.spoken).toBeLessThan(summary.chunks);
  }, 420_000);
});
