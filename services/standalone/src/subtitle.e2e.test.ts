/**
 * Video subtitles through the HTTP API: in one process (every service), then over a real nats-server
 * with the gateway and the subtitle worker as separate processes, including a worker killed mid-task
 * that resumes without recognising again.
 */
import { access, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { createLogger, silentLogger } from "@voiceloc/log";
import { createMediaToolkit, GLOBAL_ARGS, inputArgs, resolveFfmpeg, runProcess, UNTRUSTED_MEDIA_DEMUXERS, type MediaToolkit } from "@voiceloc/media";
import { freePort, makeSpeechWav, makeTestVideo, startNatsServer, tempDir, checkResponsesOf } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";
import { logLines, signalAndWait, startSampledGateway, startService, type ServiceProcess } from "./testing/processes.ts";

const KEY = "subtitle-key-alice-1";
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
const SPEECH = "The weather is very nice today. I would like a cup of hot coffee please.";
const VIDEO_SECONDS = 8;
/** Ack wait of the work queues in the mesh test (the default is 60 s). */
const RESUME_ACK_WAIT_MS = 15_000;

let dir: { path: string; cleanup: () => Promise<void> };
let media: MediaToolkit;
let mediaRoot: string;
let videoPath: string;

beforeAll(async () => {
  dir = await tempDir("voiceloc-subtitle-e2e-");
  mediaRoot = join(dir.path, "media");
  await mkdir(mediaRoot, { recursive: true });
  media = createMediaToolkit(await resolveFfmpeg({ logger: silentLogger() }), silentLogger());
  const speech = await makeSpeechWav(SPEECH, { voice: "flite:slt", path: join(dir.path, "speech.wav") });
  videoPath = await makeTestVideo(VIDEO_SECONDS, join(mediaRoot, "talk.mp4"), { withSpeechFrom: speech });
});

afterAll(async () => {
  await dir?.cleanup();
});

type Json = Record<string, unknown>;

async function create(base: string, body: Json): Promise<string> {
  const res = await fetch(`${base}/v1/videos/subtitle`, { method: "POST", headers, body: JSON.stringify(body) });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

/**
 * Polls the job until it finishes. Gives up within the test's own time limit (180 s), so a job that
 * does not finish fails with its record and, given `log`, the task's log lines (where it waits).
 */
async function follow(base: string, id: string, options: { timeoutMs?: number; log?: readonly string[] } = {}): Promise<Json> {
  const timeoutMs = options.timeoutMs ?? 150_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const record = (await (await fetch(`${base}/v1/videos/subtitle/${id}`, { headers, signal: AbortSignal.timeout(30_000) })).json()) as Json;
    if (record.task_status === "completed" || record.task_status === "failed") return record;
    if (Date.now() > deadline) {
      // the task's own lines (worker, bus, projection), not the request lines of this polling
      const lines = (options.log ?? []).filter((line) => line.includes(`"taskId":"${id}"`) || line.includes(`"msgId":"${id}"`));
      throw new Error(`not finished within ${timeoutMs / 1000} s: ${JSON.stringify(record)}${lines.length > 0 ? `\n${lines.join("")}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}

async function download(url: unknown, name: string): Promise<{ path: string; contentType: string | null }> {
  const res = await fetch(String(url));
  expect(res.status).toBe(200);
  const path = join(dir.path, name);
  await writeFile(path, Buffer.from(await res.arrayBuffer()));
  return { path, contentType: res.headers.get("content-type") };
}

async function grayFrame(path: string, seconds: number): Promise<{ width: number; height: number; pixels: Buffer }> {
  const info = await media.probe(path);
  const width = info.video?.width ?? 0;
  const height = info.video?.height ?? 0;
  const result = await runProcess(
    media.binaries.ffmpeg,
    [...GLOBAL_ARGS, "-loglevel", "error", "-ss", seconds.toFixed(3), ...inputArgs(path, UNTRUSTED_MEDIA_DEMUXERS), "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"],
    { collectStdout: true, maxStdoutBytes: 64 * 1024 * 1024 },
  );
  expect(result.stdout.length).toBe(width * height);
  return { width, height, pixels: result.stdout };
}

function meanDifference(a: Buffer, b: Buffer, width: number, fromRow: number, toRow: number): number {
  let sum = 0;
  for (let i = fromRow * width; i < toRow * width; i++) sum += Math.abs((a[i] ?? 0) - (b[i] ?? 0));
  return sum / Math.max(1, (toRow - fromRow) * width);
}

const TIMING = /(\d\d):(\d\d):(\d\d)[,.](\d{3}) --> (\d\d):(\d\d):(\d\d)[,.](\d{3})/g;

function cueTimes(text: string): { start: number; end: number }[] {
  return [...text.matchAll(TIMING)].map((m) => {
    const n = m.slice(1).map(Number) as number[];
    const at = (i: number) => (n[i] ?? 0) * 3600 + (n[i + 1] ?? 0) * 60 + (n[i + 2] ?? 0) + (n[i + 3] ?? 0) / 1000;
    return { start: at(0), end: at(4) };
  });
}

async function subtitleStreams(path: string): Promise<{ codec_name?: string; tags?: { language?: string } }[]> {
  const result = await runProcess(
    media.binaries.ffprobe,
    ["-v", "error", "-print_format", "json", "-show_streams", "-select_streams", "s", ...inputArgs(path, UNTRUSTED_MEDIA_DEMUXERS)],
    { collectStdout: true },
  );
  return (JSON.parse(result.stdout.toString("utf8")) as { streams: { codec_name?: string; tags?: { language?: string } }[] }).streams;
}

describe("subtitles through the HTTP API in one process", () => {
  let runtime: Runtime;
  let base: string;
  /** The runtime's log (debug: deliveries, retries, projected events), shown for a job that does not finish. */
  const log: string[] = [];
  const followJob = (id: string) => follow(base, id, { log });

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    checkResponsesOf(base);
    runtime = await startRuntime(
      loadConfig({ DATA_DIR: join(dir.path, "single"), MEDIA_ROOT: mediaRoot, PORT: String(port), HOST: "127.0.0.1", PUBLIC_BASE_URL: base, VOICELOC_API_KEYS: `alice:${KEY}`, LOG_LEVEL: "debug" }),
      createLogger({ level: "debug", destination: { write: (line: string) => void log.push(line) } }),
    );
  });

  afterAll(async () => {
    await runtime?.stop();
  });

  it("English → English burn_in: an SRT and a video of the same length, audio kept, text drawn low in the frame", async () => {
    const id = await create(base, { file: "talk.mp4", source_language: "English", target_language: "English" });
    const record = await followJob(id);
    expect(record.task_status, String(record.task_error)).toBe("completed");
    expect(record.mode).toBe("burn_in");
    expect(record.task_progress).toBe(100);

    const srt = await download(record.subtitle_file, "e2e.srt");
    const text = await readFile(srt.path, "utf8");
    expect(text.startsWith("1\r\n")).toBe(true);
    expect(text.toLowerCase()).toMatch(/weather/);
    const times = cueTimes(text);
    expect(times.length).toBeGreaterThanOrEqual(1);
    for (const t of times) {
      expect(t.end).toBeGreaterThan(t.start);
      expect(t.end).toBeLessThanOrEqual(VIDEO_SECONDS);
    }
    for (let i = 1; i < times.length; i++) expect(times[i]?.start).toBeGreaterThan(times[i - 1]?.end ?? Number.NaN);

    const burned = await download(record.localized_file, "e2e-burned.mp4");
    expect(burned.contentType).toBe("video/mp4");
    const info = await media.probe(burned.path);
    expect(Math.abs(info.durationSeconds - VIDEO_SECONDS)).toBeLessThanOrEqual(0.5);
    expect(info.audio?.codec).toBe("aac");
    const volume = await media.measureVolume(burned.path);
    expect(volume.maxVolumeDb).toBeGreaterThan(-20);

    const first = times[0] ?? { start: 0, end: 0 };
    const at = (first.start + first.end) / 2;
    const original = await grayFrame(videoPath, at);
    const drawn = await grayFrame(burned.path, at);
    const lower = meanDifference(original.pixels, drawn.pixels, original.width, Math.floor(original.height * 0.7), original.height);
    const upper = meanDifference(original.pixels, drawn.pixels, original.width, 0, Math.floor(original.height * 0.5));
    expect(lower, `lower ${lower}, upper ${upper}`).toBeGreaterThan(1.5);
    expect(lower).toBeGreaterThan(upper * 10);
  });

  it("side_file + vtt: a WEBVTT file and an MP4 with an English subtitle stream", async () => {
    const id = await create(base, { file: "talk.mp4", source_language: "English", target_language: "English", mode: "side_file", subtitle_format: "vtt" });
    const record = await followJob(id);
    expect(record.task_status, String(record.task_error)).toBe("completed");
    const vtt = await download(record.subtitle_file, "e2e.vtt");
    expect((await readFile(vtt.path, "utf8")).startsWith("WEBVTT\n\n")).toBe(true);
    const soft = await download(record.localized_file, "e2e-soft.mp4");
    const streams = await subtitleStreams(soft.path);
    expect(streams).toHaveLength(1);
    expect(streams[0]?.codec_name).toBe("mov_text");
    expect(streams[0]?.tags?.language).toBe("eng");
  });

  it("English → Spanish completes with Spanish cues", async () => {
    const id = await create(base, { file: "talk.mp4", source_language: "English", target_language: "Spanish", mode: "side_file" });
    const record = await followJob(id);
    expect(record.task_status, String(record.task_error)).toBe("completed");
    const srt = await readFile((await download(record.subtitle_file, "e2e-es.srt")).path, "utf8");
    expect(srt.toLowerCase()).toMatch(/tiempo|café/);
  });
});

describe("gateway and subtitle worker as separate processes over nats-server", () => {
  let nats: Awaited<ReturnType<typeof startNatsServer>>;
  const procs: ServiceProcess[] = [];
  const inProcessCleanups: (() => Promise<void>)[] = [];

  async function startProcess(services: string, env: Record<string, string>, port: number): Promise<ServiceProcess> {
    const proc = await startService(services, env, port, 90_000);
    procs.push(proc);
    return proc;
  }

  const messages = (proc: ServiceProcess) => logLines(proc).map((line) => line.msg);

  beforeAll(async () => {
    nats = await startNatsServer();
  });

  afterAll(async () => {
    for (const p of procs.splice(0)) await signalAndWait(p, "SIGTERM");
    for (const cleanup of inProcessCleanups.splice(0).reverse()) await cleanup();
    await nats?.stop();
  });

  it("completes a burn_in job; a worker killed after recognition resumes in a new process without recognising again, and task_progress never moves backwards on any projection update", async () => {
    const dataDir = join(dir.path, "mesh");
    const gatewayPort = await freePort();
    const base = `http://127.0.0.1:${gatewayPort}`;
    const common = {
      NATS_URL: nats.url,
      DATA_DIR: dataDir,
      MEDIA_ROOT: mediaRoot,
      VOICELOC_API_KEYS: `alice:${KEY}`,
      SIGNING_SECRET: "mesh-signing-secret-0123456789-abcdef",
      PUBLIC_BASE_URL: base,
      // a killed worker's task comes back after this ack wait (running tasks keep their leases with in-progress acks)
      WORK_ACK_WAIT_MS: String(RESUME_ACK_WAIT_MS),
    };
    // The gateway runs in this process (SERVICES=gateway, the worker in its own) so that every
    // projection update can be sampled as it is stored.
    const { progressOf, stop: stopGateway } = await startSampledGateway(nats.url, common, gatewayPort, RESUME_ACK_WAIT_MS);
    inProcessCleanups.push(stopGateway);
    const first = await startProcess("subtitle", common, await freePort());

    const id = await create(base, { file: "talk.mp4", source_language: "English", target_language: "English" });
    const done = await follow(base, id, { timeoutMs: 240_000 });
    expect(done.task_status, String(done.task_error)).toBe("completed");
    expect((await download(done.localized_file, "mesh.mp4")).contentType).toBe("video/mp4");
    expect((await readFile((await download(done.subtitle_file, "mesh.srt")).path, "utf8")).toLowerCase()).toMatch(/weather/);

    // A bigger video, so rendering takes long enough to kill the worker in the middle of it.
    const speech = await makeSpeechWav(SPEECH, { voice: "flite:slt", path: join(dir.path, "speech-big.wav") });
    await makeTestVideo(20, join(mediaRoot, "big.mp4"), { withSpeechFrom: speech, size: "960x540" });
    const big = await create(base, { file: "big.mp4", source_language: "English", target_language: "English" });
    const transcript = join(dataDir, "blobs", "objects", "tasks", big, "checkpoints", "transcript.json");
    const deadline = Date.now() + 120_000;
    // Killed while rendering (progress past the written subtitle file, 72%): after the transcript
    // checkpoint, and above what a redelivery can open with (70%), so an opening that lowered the
    // record would show.
    const rendering = () => (progressOf.get(big) ?? []).some((p) => p > 72 && p < 100);
    for (;;) {
      if (rendering() && (await access(transcript).then(() => true, () => false))) break;
      if (Date.now() > deadline) throw new Error(`rendering did not start:\n${first.output.join("")}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    const exited = signalAndWait(first, "SIGKILL");
    await exited;
    const midway = (await (await fetch(`${base}/v1/videos/subtitle/${big}`, { headers })).json()) as Json;
    expect(midway.task_status).toBe("processing");
    expect(midway.task_progress).toBeGreaterThan(72);
    expect(messages(first).filter((m) => m === "speech recognised")).toHaveLength(2);

    const second = await startProcess("subtitle", common, await freePort());
    const record = await follow(base, big, { timeoutMs: 240_000 });
    expect(record.task_status, String(record.task_error)).toBe("completed");
    const log = messages(second);
    expect(log).toContain("transcript restored from its checkpoint; recognition is not redone");
    expect(log).not.toContain("speech recognised");
    const info = await media.probe((await download(record.localized_file, "mesh-big.mp4")).path);
    expect(Math.abs(info.durationSeconds - 20)).toBeLessThanOrEqual(0.5);

    const samples = progressOf.get(big) ?? [];
    const drops = samples.flatMap((value, i) => (i > 0 && value < Math.max(...samples.slice(0, i)) ? [`#${i}: ${value} after ${Math.max(...samples.slice(0, i))}`] : []));
    expect(drops, `progress samples: ${samples.join(", ")}`).toEqual([]);
    // Both deliveries' events were projected, up to the end.
    expect(samples.length).toBeGreaterThan(5);
    expect(samples.at(-1)).toBe(100);
  }, 480_000);
});
