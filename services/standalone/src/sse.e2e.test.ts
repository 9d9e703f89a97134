/**
 * Live progress over Server-Sent Events with real processes: two gateway processes and an audio book
 * worker on one nats-server (the gateways share the store and the projection: each event is projected by
 * one of them, and the other learns of it by a notice), and the single-machine process (in-process bus).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { silentLogger } from "@voiceloc/log";
import { SseReader, freePort, startNatsServer, tempDir, type SseEvent, checkResponsesOf } from "@voiceloc/testing";
import { startRuntime } from "./runtime.ts";
import { createEnglishBook, isRunning, logLines, signalAndWait, startService, untilLogged, type ServiceProcess } from "./testing/processes.ts";

const KEY = "sse-key-alice-1";
const SHUTDOWN_BOUND_MS = 12_000;

let nats: Awaited<ReturnType<typeof startNatsServer>>;
let dir: { path: string; cleanup: () => Promise<void> };
const procs: ServiceProcess[] = [];
const readers: SseReader[] = [];

beforeEach(async () => {
  nats = await startNatsServer();
  dir = await tempDir("voiceloc-sse-");
});

afterEach(async () => {
  await Promise.all(readers.splice(0).map((r) => r.close()));
  for (const p of procs.splice(0)) if (isRunning(p)) await signalAndWait(p, "SIGKILL");
  await nats?.stop();
  await dir?.cleanup();
});

async function book(media: string, paragraphs: number): Promise<void> {
  const paragraph =
    "The lighthouse keeper climbed the stairs every evening. He lit the lamp, wound the clock and wrote " +
    "a line in his book about the wind and the ships that passed. ";
  await mkdir(media, { recursive: true });
  await writeFile(join(media, "lighthouse.txt"), Array.from({ length: paragraphs }, (_, i) => `${paragraph}Evening ${i + 1}.`).join("\n\n"));
}

const data = (e: SseEvent | undefined) => JSON.parse(e?.data ?? "{}") as Record<string, unknown>;

/** Progress never goes back, ids rise strictly, exactly one final event and it is the last. */
function checkStream(all: SseEvent[], what: string): void {
  const progress = all.map((e) => Number(data(e).task_progress));
  expect(progress, what).toEqual([...progress].sort((a, b) => a - b));
  const ids = all.map((e) => Number(e.id));
  for (let i = 1; i < ids.length; i++) expect(ids[i], `${what}: ids ${ids.join(",")}`).toBeGreaterThan(ids[i - 1] as number);
  expect(all.filter((e) => e.event !== "progress").map((e) => e.event), what).toEqual(["completed"]);
  expect(all.at(-1)?.event, what).toBe("completed");
}

describe("live progress across two gateway processes on one nats-server", () => {
  it("follows an audio book to completed on both gateways, resumes on the other gateway with Last-Event-ID without repeats, and a SIGTERM ends open streams at once", async () => {
    const media = join(dir.path, "media");
    await book(media, 30);
    const ports = [await freePort(), await freePort()];
    const bases = ports.map((p) => `http://127.0.0.1:${p}`);
    const common = {
      NATS_URL: nats.url,
      // one DATA_DIR: both gateways on the same embedded store (and the worker on the same blob files)
      DATA_DIR: join(dir.path, "data"),
      MEDIA_ROOT: media,
      VOICELOC_API_KEYS: `alice:${KEY}`,
      SIGNING_SECRET: "sse-signing-secret-0123456789-abcdef",
      PUBLIC_BASE_URL: bases[0] as string,
      // each gateway logs the events it projects (`task event`), so the test can tell who projected what
      LOG_LEVEL: "debug",
      SSE_HEARTBEAT_MS: "2000",
    };
    const worker = await startService("audiobook", { ...common, LOG_LEVEL: "info" }, await freePort(), 120_000);
    procs.push(worker);
    const [a, b] = [await startService("gateway", common, ports[0] as number, 120_000), await startService("gateway", common, ports[1] as number, 120_000)];
    procs.push(a as ServiceProcess, b as ServiceProcess);
    const headers = { "API-KEY": KEY };

    const id = await createEnglishBook(bases[0] as string, KEY, "lighthouse.txt", "Lighthouse");
    const path = `/v1/audio_books/${id}/events`;
    const onA = await SseReader.open(`${bases[0]}${path}`, headers);
    const onB = await SseReader.open(`${bases[1]}${path}`, headers);
    const interrupted = await SseReader.open(`${bases[1]}${path}`, headers);
    readers.push(onA, onB, interrupted);

    // midway: the client on B goes away, and comes back on A with the last id it got
    await interrupted.until(() => {
      const last = data(interrupted.events.at(-1));
      return last.task_status === "processing" && Number(last.task_progress) > 0;
    }, "progress past 0 on gateway B", 180_000);
    const lastId = interrupted.events.at(-1)?.id as string;
    const before = interrupted.events.slice();
    await interrupted.close();
    const resumed = await SseReader.open(`${bases[0]}${path}`, { ...headers, "Last-Event-ID": lastId });
    readers.push(resumed);

    const [fromA, fromB, afterResume] = await Promise.all([onA.untilEnd(240_000), onB.untilEnd(240_000), resumed.untilEnd(240_000)]);
    checkStream(fromA, "gateway A");
    checkStream(fromB, "gateway B");
    checkStream([...before, ...afterResume], "B then A with Last-Event-ID");
    // no repeats: nothing at or below the last id the client had
    expect(afterResume.every((e) => Number(e.id) > Number(lastId))).toBe(true);
    expect(fromA.length).toBeGreaterThan(2);
    expect(fromB.length).toBeGreaterThan(2);

    // the final event is the record exactly as GET returns it (and its signed download works)
    const get = (await (await fetch(`${bases[1]}/v1/audio_books/${id}`, { headers })).json()) as Record<string, unknown>;
    const finalA = data(fromA.at(-1));
    const finalB = data(fromB.at(-1));
    for (const final of [finalA, finalB]) {
      expect(final).toEqual({ ...get, localized_file: expect.any(String) });
      expect(final.task_progress).toBe(100);
    }
    const audio = await fetch(String(finalB.localized_file));
    expect(audio.status).toBe(200);
    expect(Number(audio.headers.get("content-length"))).toBeGreaterThan(10_000);

    // Who projected what: each event is projected by exactly one gateway; the completion by one of them,
    // so the stream on the other gateway received it through a notice.
    await untilLogged([a as ServiceProcess, b as ServiceProcess], (lines) =>
      lines.some((l) => l.msg === "task event" && l.taskId === id && l.applied === true && l.status === "completed"),
    );
    const projected = (proc: ServiceProcess) =>
      logLines(proc).filter((l) => l.msg === "task event" && l.taskId === id && l.applied === true).map((l) => `${String(l.status)}@${String(l.progress)}`);
    const byA = projected(a as ServiceProcess);
    const byB = projected(b as ServiceProcess);
    process.stdout.write(`sse e2e: gateway A projected ${byA.length} events, gateway B ${byB.length}; stream A got ${fromA.length}, stream B ${fromB.length}, resumed ${afterResume.length} after id ${lastId}\n`);
    expect(byA.filter((e) => e.startsWith("completed")).length + byB.filter((e) => e.startsWith("completed")).length).toBe(1);

    // a stream still open (a subtitle job no worker takes) when the gateways get SIGTERM: it ends, and they exit promptly
    const job = (await (
      await fetch(`${bases[1]}/v1/videos/subtitle`, {
        method: "POST",
        headers: { ...headers, "Content-Type": "application/json" },
        body: JSON.stringify({ file: "talk.mp4", source_language: "English", target_language: "English" }),
      })
    ).json()) as { id: string };
    const held = [await SseReader.open(`${bases[0]}/v1/videos/subtitle/${job.id}/events`, headers), await SseReader.open(`${bases[1]}/v1/videos/subtitle/${job.id}/events`, headers)];
    readers.push(...held);
    await Promise.all(held.map((r) => r.until(() => r.comments.includes("heartbeat"), "a heartbeat", 60_000)));
    for (const proc of [a, b] as ServiceProcess[]) {
      const exit = await signalAndWait(proc, "SIGTERM");
      expect(exit, proc.output.join("").slice(-2_000)).toMatchObject({ code: 0, signal: null });
      expect(exit.ms).toBeLessThan(SHUTDOWN_BOUND_MS);
    }
    await Promise.all(held.map((r) => r.untilEnd(10_000)));
  }, 420_000);
});

describe("live progress in the single-machine process (in-process bus)", () => {
  it("follows an audio book to completed", async () => {
    const media = join(dir.path, "media-one");
    await book(media, 12);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    checkResponsesOf(base);
    const runtime = await startRuntime(
      loadConfig({
        SERVICES: "gateway,audiobook",
        DATA_DIR: join(dir.path, "one"),
        MEDIA_ROOT: media,
        PORT: String(port),
        HOST: "127.0.0.1",
        PUBLIC_BASE_URL: base,
        VOICELOC_API_KEYS: `alice:${KEY}`,
        LOG_LEVEL: "silent",
      }),
      silentLogger(),
    );
    try {
      const id = await createEnglishBook(base, KEY, "lighthouse.txt", "Lighthouse");
      const reader = await SseReader.open(`${base}/v1/audio_books/${id}/events`, { Authorization: `Bearer ${KEY}` });
      readers.push(reader);
      const all = await reader.untilEnd(240_000);
      checkStream(all, "single process");
      expect(all.length).toBeGreaterThan(2);
      expect(data(all.at(-1)).localized_file).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/files\//);
    } finally {
      await runtime.stop();
    }
  }, 300_000);
});
