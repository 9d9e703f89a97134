import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { silentLogger } from "@voiceloc/log";
import { probe, resolveFfmpeg } from "@voiceloc/media";
import { freePort, startNatsServer, tempDir } from "@voiceloc/testing";
import { chunkCheckpoints, createEnglishBook, isRunning, signalAndWait, startSampledGateway, startService, untilLogged, waitForChunkCheckpoints, type ServiceProcess } from "./testing/processes.ts";

const KEY = "mesh-key-alice-1";
/** Ack wait of the work queues in the kill-and-resume test (the default is 60 s). */
const RESUME_ACK_WAIT_MS = 15_000;

let nats: Awaited<ReturnType<typeof startNatsServer>>;
let dir: { path: string; cleanup: () => Promise<void> };
const procs: ServiceProcess[] = [];

async function startProcess(services: string, env: Record<string, string>, port: number): Promise<ServiceProcess> {
  const proc = await startService(services, env, port, 90_000);
  procs.push(proc);
  return proc;
}

/** SIGTERM to every process still running; each must exit on its own with code 0, well before the shutdown timeout. */
async function stopAll(): Promise<void> {
  const problems: string[] = [];
  for (const p of procs.splice(0)) {
    if (isRunning(p)) {
      const { code, signal, ms } = await signalAndWait(p, "SIGTERM");
      if (code !== 0 || signal !== null || ms > SHUTDOWN_BOUND_MS) {
        problems.push(`port ${p.port}: exit code ${String(code)}, signal ${String(signal)}, after ${ms} ms\n${p.output.join("").slice(-2_000)}`);
      }
    }
  }
  expect(problems).toEqual([]);
}

/** Processes get SHUTDOWN_TIMEOUT_MS=20000: a hang is cut at 20 s with exit code 1; a clean stop takes far less. */
const SHUTDOWN_BOUND_MS = 12_000;

// Every test gets its own nats-server and processes: durable consumers (the gateway's projection,
// the work queues) must not be shared with the processes of another test.
beforeEach(async () => {
  nats = await startNatsServer();
  dir = await tempDir("voiceloc-mesh-");
});

const inProcessCleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of inProcessCleanups.splice(0).reverse()) await cleanup();
  await stopAll();
  await nats?.stop();
  await dir?.cleanup();
});

describe("gateway and synthesis as two processes over nats-server", () => {
  it("synthesises through the bus and serves the audio from the shared blob store", async () => {
    const gatewayPort = await freePort();
    const common = {
      NATS_URL: nats.url,
      DATA_DIR: dir.path,
      VOICELOC_API_KEYS: `alice:${KEY}`,
      SIGNING_SECRET: "mesh-signing-secret-0123456789-abcdef",
    };
    const synthesis = await startProcess("synthesis", common, await freePort());
    const health = await fetch(`http://127.0.0.1:${synthesis.port}/healthz`);
    expect(await health.json()).toEqual({ status: "ok", services: ["synthesis"] });

    const base = `http://127.0.0.1:${gatewayPort}`;
    await startProcess("gateway", { ...common, PUBLIC_BASE_URL: base }, gatewayPort);
    const res = await fetch(`${base}/v1/speech/synthesize`, {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ text: "The bus carried this sentence between two processes.", language: "English" }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { audio_url: string; duration_seconds: number };
    const audio = await fetch(body.audio_url);
    expect(audio.status).toBe(200);
    const path = join(dir.path, "mesh.mp3");
    await writeFile(path, Buffer.from(await audio.arrayBuffer()));
    const { ffprobe } = await resolveFfmpeg({ logger: silentLogger() });
    const info = await probe(path, { ffprobePath: ffprobe });
    expect(Math.abs(info.durationSeconds - body.duration_seconds)).toBeLessThan(0.15);
    expect(body.duration_seconds).toBeGreaterThan(1.5);

    const voices = await fetch(`${base}/v1/voices?language=English`, { headers: { "API-KEY": KEY } });
    expect(voices.status).toBe(200);
    expect(((await voices.json()) as unknown[]).length).toBeGreaterThan(0);

    // stop the synthesis process: the gateway answers 503, not 500
    const exited = signalAndWait(synthesis, "SIGTERM");
    await exited;
    const down = await fetch(`${base}/v1/speech/synthesize`, {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ text: "Anyone there?", language: "English" }),
    });
    expect(down.status).toBe(503);
  });
});

describe("gateway and the task workers as separate processes over nats-server", () => {
  it("completes English→Spanish and Spanish→English books and English→English/Spanish voice streams created through the gateway", async () => {
    const media = join(dir.path, "media");
    await mkdir(media, { recursive: true });
    const sentences = "The river runs past the old mill. Children play on the bridge after school. ";
    await writeFile(join(media, "river.txt"), sentences.repeat(12));
    const { makeSpeechWav } = await import("@voiceloc/testing");
    await makeSpeechWav("The weather today is sunny and warm.", { voice: "flite:slt", path: join(media, "talk.wav") });

    const gatewayPort = await freePort();
    const base = `http://127.0.0.1:${gatewayPort}`;
    const common = {
      NATS_URL: nats.url,
      DATA_DIR: join(dir.path, "tasks"),
      MEDIA_ROOT: media,
      VOICELOC_API_KEYS: `alice:${KEY}`,
      SIGNING_SECRET: "mesh-signing-secret-0123456789-abcdef",
      PUBLIC_BASE_URL: base,
    };
    await startProcess("audiobook,voice-stream", common, await freePort());
    await startProcess("gateway", common, gatewayPort);
    const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
    const follow = async (path: string) => {
      const deadline = Date.now() + 180_000;
      for (;;) {
        const record = (await (await fetch(`${base}${path}`, { headers })).json()) as Record<string, unknown>;
        if (record.task_status === "completed" || record.task_status === "failed") return record;
        if (Date.now() > deadline) throw new Error(`not finished: ${JSON.stringify(record)}`);
        await new Promise((r) => setTimeout(r, 300));
      }
    };
    const book = (await (
      await fetch(`${base}/v1/audio_books/`, {
        method: "POST",
        headers,
        body: JSON.stringify({ file: "river.txt", name: "River", source_language: "English", target_language: "Spanish" }),
      })
    ).json()) as { id: string };
    await writeFile(join(media, "rio.txt"), "El río pasa junto al viejo molino. Los niños juegan en el puente después de la escuela.");
    const backwards = (await (
      await fetch(`${base}/v1/audio_books/`, {
        method: "POST",
        headers,
        body: JSON.stringify({ file: "rio.txt", name: "Río", source_language: "Spanish", target_language: "English" }),
      })
    ).json()) as { id: string };
    const streams: string[] = [];
    for (const target of ["English", "Spanish"]) {
      const stream = (await (
        await fetch(`${base}/v1/voices/streams`, {
          method: "POST",
          headers,
          body: JSON.stringify({ file: "talk.wav", source_language: "English", target_language: target }),
        })
      ).json()) as { id: string };
      streams.push(`/v1/voices/streams/${stream.id}`);
    }
    for (const path of [`/v1/audio_books/${book.id}`, `/v1/audio_books/${backwards.id}`, ...streams]) {
      const done = await follow(path);
      expect(done.task_status, String(done.task_error)).toBe("completed");
      expect(done.task_progress).toBe(100);
      const audio = await fetch(String(done.localized_file));
      expect(audio.status).toBe(200);
      expect(Number(audio.headers.get("content-length"))).toBeGreaterThan(10_000);
    }
  });
});

describe("a book whose worker is killed mid-way", () => {
  it("resumes from its checkpoints in a new worker process, completes without redoing finished chunks, and task_progress never moves backwards on any projection update", async () => {
    const media = join(dir.path, "media-resume");
    await mkdir(media, { recursive: true });
    const paragraph =
      "The old harbour town woke slowly, as it always had. Fishermen carried their nets down to the water, " +
      "and the baker opened his shutters to let the smell of bread into the street. Gulls argued over the roofs. ";
    await writeFile(join(media, "harbour.txt"), Array.from({ length: 60 }, (_, i) => `${paragraph}This is part ${i + 1}.`).join("\n\n"));
    const dataDir = join(dir.path, "resume");
    const gatewayPort = await freePort();
    const base = `http://127.0.0.1:${gatewayPort}`;
    const common = {
      NATS_URL: nats.url,
      DATA_DIR: dataDir,
      MEDIA_ROOT: media,
      VOICELOC_API_KEYS: `alice:${KEY}`,
      SIGNING_SECRET: "mesh-signing-secret-0123456789-abcdef",
      PUBLIC_BASE_URL: base,
      // a killed worker's book comes back after this ack wait (running tasks keep their leases with in-progress acks)
      WORK_ACK_WAIT_MS: String(RESUME_ACK_WAIT_MS),
    };
    // The gateway runs in this process so that every projection update can be sampled as it is stored.
    const { progressOf, stop: stopGateway } = await startSampledGateway(nats.url, common, gatewayPort, RESUME_ACK_WAIT_MS);
    inProcessCleanups.push(stopGateway);
    const first = await startProcess("audiobook", common, await freePort());
    const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
    const book = { id: await createEnglishBook(base, KEY, "harbour.txt", "Harbour") };

    // Wait until a few chunks are checkpointed, then kill the worker without warning.
    await waitForChunkCheckpoints(dataDir, book.id, 3, first);
    const exited = signalAndWait(first, "SIGKILL");
    await exited;
    const finishedBeforeKill = (await chunkCheckpoints(dataDir, book.id)).length;
    const midway = (await (await fetch(`${base}/v1/audio_books/${book.id}`, { headers })).json()) as { task_status: string; task_progress: number };
    expect(midway.task_status).toBe("processing");
    // progress had risen before the kill, so a retry opening at 0 would show as a drop
    expect(midway.task_progress).toBeGreaterThan(0);

    const second = await startProcess("audiobook", common, await freePort());
    const until = Date.now() + 240_000;
    let record: Record<string, unknown>;
    for (;;) {
      record = (await (await fetch(`${base}/v1/audio_books/${book.id}`, { headers })).json()) as Record<string, unknown>;
      if (record.task_status === "completed" || record.task_status === "failed") break;
      if (Date.now() > until) throw new Error(`not finished: ${JSON.stringify(record)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(record.task_status, String(record.task_error)).toBe("completed");
    // The worker's lines reach its output in chunks (up to 100 ms late): wait for the summary line.
    await untilLogged([second], (lines) => lines.some((l) => l.msg === "audio book ready"));
    const ready = second.output
      .join("")
      .split("\n")
      .filter((line) => line.includes('"audio book ready"'))
      .map((line) => JSON.parse(line) as { chunks: number; spoken: number; resumed: number });
    expect(ready).toHaveLength(1);
    const summary = ready[0]!;
    expect(summary.resumed).toBeGreaterThanOrEqual(finishedBeforeKill);
    expect(summary.spoken).toBe(summary.chunks - summary.resumed);
    expect(summary.spoken).toBeLessThan(summary.chunks);

    const samples = progressOf.get(book.id) ?? [];
    const drops = samples.flatMap((value, i) => (i > 0 && value < Math.max(...samples.slice(0, i)) ? [`#${i}: ${value} after ${Math.max(...samples.slice(0, i))}`] : []));
    expect(drops, `progress samples: ${samples.join(", ")}`).toEqual([]);
    // the redelivery's events were projected too (not just the first delivery's)
    expect(samples.length).toBeGreaterThan(5);
    expect(samples.at(-1)).toBe(100);
  }, 300_000);
});
