/**
 * A memory bomb through the HTTP API: a 1.7 MB MP4 of 16000×16000 PNG frames whose headers claim
 * 640×480, sent for burn-in and for dubbing to the shipped entry point (gateway, subtitle and voice
 * stream workers in one process, as `npm start` runs them). Before the picture limit, ffmpeg drew it at
 * 22 GB until the kernel killed it, and the killed run was retried. Now the decoded first picture is
 * refused within seconds, in plain words, on the first delivery, while the service and every program it
 * starts stay far below 1.5 GB; and an honest video sent right after, to the same running process,
 * is subtitled or dubbed as usual.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, makeHugeFrameVideo, makeSpeechWav, makeTestVideo, tempDir, withClaimedMp4PictureSize } from "@voiceloc/testing";
import { runProcess } from "@voiceloc/media";
import { followSampled, logLines, peakResidentBytes, signalAndWait, startService, type SampledRun, type ServiceProcess } from "./testing/processes.ts";

const KEY = "hostile-video-key-alice-1";
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
const GiB = 1024 * 1024 * 1024;

const REFUSAL =
  "The video's picture is 16000×16000 pixels (256 megapixels), more than the 35.4 megapixels this service takes (MAX_VIDEO_PIXELS): send a smaller video.";

describe("a 16000×16000 video bomb whose headers say 640×480", () => {
  let dir: { path: string; cleanup: () => Promise<void> };
  let service: ServiceProcess;
  let base: string;

  beforeAll(async () => {
    dir = await tempDir("voiceloc-hostile-video-");
    const speech = await makeSpeechWav("Hello there, this is a short test.", { voice: "flite:slt", path: join(dir.path, "speech.wav") });
    const honest = await makeHugeFrameVideo(16000, 16000, join(dir.path, "honest.mp4"), { withSpeechFrom: speech, seconds: 3 });
    await writeFile(join(dir.path, "bomb.mp4"), withClaimedMp4PictureSize(await readFile(honest), 640, 480));
    await makeTestVideo(4, join(dir.path, "good.mp4"), { withSpeechFrom: speech });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    service = await startService(
      "gateway,subtitle,voice-stream",
      { DATA_DIR: join(dir.path, "data"), MEDIA_ROOT: dir.path, PUBLIC_BASE_URL: base, VOICELOC_API_KEYS: `alice:${KEY}`, CHILD_MEMORY_LIMIT_MB: "1024" },
      port,
    );
  }, 180_000);

  afterAll(async () => {
    if (service) await signalAndWait(service, "SIGTERM");
    await dir?.cleanup();
  });

  /** Creates a task at `path` and follows it to its end, sampling the process tree's resident memory meanwhile. */
  const runSampled = (path: string, body: Record<string, unknown>): Promise<SampledRun> =>
    followSampled(
      service,
      async () => {
        const created = await fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
        // 202 for a subtitle job, 201 for a voice stream (the contract's statuses)
        expect([201, 202], await created.clone().text()).toContain(created.status);
        return ((await created.json()) as { id: string }).id;
      },
      async (id) => (await (await fetch(`${base}${path}/${id}`, { headers })).json()) as Record<string, unknown>,
    );

  /** The bomb was refused on its first delivery, within a minute, the process tree staying under 1.5 GB. */
  async function expectRefused(run: SampledRun, what: string): Promise<void> {
    expect(run.record.task_status, JSON.stringify(run.record)).toBe("failed");
    expect(run.record.task_error).toBe(REFUSAL);
    // Within seconds, not minutes of retries (printed for the record; the deadline is only a guard).
    expect(run.elapsed).toBeLessThan(60_000);
    // One delivery: an input failure is never redelivered.
    const deliveries = logLines(service)
      .filter((line) => line.taskId === run.id && typeof line.deliveryCount === "number")
      .map((line) => line.deliveryCount as number);
    expect(deliveries.length).toBeGreaterThan(0);
    expect(Math.max(...deliveries)).toBe(1);
    // The service and every program it started, sampled while the job ran, and the service's own peak.
    expect(run.peakTree).toBeGreaterThan(0);
    expect(run.peakTree).toBeLessThan(1.5 * GiB);
    expect(await peakResidentBytes(service.child.pid ?? 0)).toBeLessThan(1.5 * GiB);
    process.stdout.write(`${what}: bomb refused in ${run.elapsed} ms; peak resident of the process tree ${(run.peakTree / 1024 / 1024).toFixed(0)} MiB\n`);
  }

  /** What ffprobe says of the streams of the downloaded result. */
  async function resultStreams(url: string, name: string): Promise<Array<{ codec_type: string; width?: number; height?: number }>> {
    const file = join(dir.path, name);
    await writeFile(file, Buffer.from(await (await fetch(url)).arrayBuffer()));
    const probed = await runProcess("ffprobe", ["-v", "error", "-print_format", "json", "-show_streams", file], { collectStdout: true });
    expect(probed.exitCode).toBe(0);
    return (JSON.parse(probed.stdout.toString("utf8")) as { streams: Array<{ codec_type: string; width?: number; height?: number }> }).streams;
  }

  it("burn-in: is refused within seconds by its decoded picture, in plain words, never retried, the whole process tree under 1.5 GB; an honest video after it is subtitled", async () => {
    expect((await readFile(join(dir.path, "bomb.mp4"))).length).toBeLessThan(10 * 1024 * 1024);
    await expectRefused(
      await runSampled("/v1/videos/subtitle", { file: "bomb.mp4", source_language: "English", target_language: "English", mode: "burn_in" }),
      "burn-in",
    );
    const good = await runSampled("/v1/videos/subtitle", { file: "good.mp4", source_language: "English", target_language: "English", mode: "burn_in" });
    expect(good.record.task_status, JSON.stringify(good.record)).toBe("completed");
    const streams = await resultStreams(String(good.record.localized_file), "good-subtitled.mp4");
    expect(streams.filter((s) => s.codec_type === "video").map((s) => [s.width, s.height])).toEqual([[320, 240]]);
  }, 600_000);

  it("dubbing: the same bomb sent as a voice stream is refused before any speech is made, memory bounded; an honest video after it is dubbed, picture kept", async () => {
    const bomb = await runSampled("/v1/voices/streams", { file: "bomb.mp4", source_language: "English", target_language: "English" });
    await expectRefused(bomb, "dubbing");
    // Refused as soon as it was fetched: nothing was recognised, translated or spoken first.
    expect(Number(bomb.record.task_progress)).toBeLessThanOrEqual(5);
    const good = await runSampled("/v1/voices/streams", { file: "good.mp4", source_language: "English", target_language: "English" });
    expect(good.record.task_status, JSON.stringify(good.record)).toBe("completed");
    const streams = await resultStreams(String(good.record.localized_file), "good-dubbed.mp4");
    expect(streams.filter((s) => s.codec_type === "video").map((s) => [s.width, s.height])).toEqual([[320, 240]]);
    expect(streams.filter((s) => s.codec_type === "audio")).toHaveLength(2);
  }, 600_000);
});
