import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "@voiceloc/log";
import { makeToneWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveFfmpeg } from "./resolve.ts";
import { describeFfmpegFailure, runFfmpeg } from "./run.ts";
import { makeHugeFrameVideo, makeTestVideo, withClaimedMp4Duration, withClaimedMp4PictureSize, withZeroWavChannels } from "@voiceloc/testing";
import { DEFAULT_MAX_VIDEO_PIXELS, maxVideoPixels } from "./args.ts";
import { childMemoryLimit, ranOutOfMemory, runProcess, setChildMemoryLimit } from "./process.ts";
import { buildBurnInArgs } from "./subtitles.ts";
import { createMediaToolkit, type MediaToolkit } from "./toolkit.ts";

const exec = promisify(execFile);

let media: MediaToolkit;
let dir: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-media-hostile-"));
  media = createMediaToolkit(await resolveFfmpeg({ logger: silentLogger() }), silentLogger());
});
afterAll(async () => cleanup());

/** An AAC m4a of `seconds` of tone. */
async function m4a(seconds: number, name: string): Promise<string> {
  const path = join(dir, name);
  await exec("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`, "-ac", "1", "-ar", "16000", "-c:a", "aac", "-b:a", "32k", "-y", path]);
  return path;
}

describe("media whose headers lie", () => {
  it("lying header: decodeAudio measures the 3.4 s an m4a holds, not the 600 s its header claims", async () => {
    const honest = await m4a(3.4, "honest.m4a");
    const lying = join(dir, "lying.m4a");
    await writeFile(lying, withClaimedMp4Duration(await readFile(honest), 600));
    // The container's claim, as probed: the lie the pipeline must not trust.
    expect((await media.probe(lying)).durationSeconds).toBeGreaterThan(590);

    const decoded = await media.decodeAudio({ input: lying, outPath: join(dir, "lying.wav"), maxSeconds: 60 });
    expect(decoded.durationSeconds).toBeGreaterThan(3.3);
    expect(decoded.durationSeconds).toBeLessThan(3.6);
    expect(decoded.overLimit).toBe(false);
    expect(await media.probe(decoded.path)).toMatchObject({ format: "wav", audio: { sampleRate: 16000, channels: 1 } });
  });

  it("decoding stops just past maxSeconds and says overLimit: a huge claimed or real length costs no more than the limit", async () => {
    const long = await makeToneWav(12, join(dir, "twelve.wav"));
    const decoded = await media.decodeAudio({ input: long, outPath: join(dir, "cut.wav"), maxSeconds: 4 });
    expect(decoded.overLimit).toBe(true);
    expect(decoded.durationSeconds).toBeGreaterThan(4);
    expect(decoded.durationSeconds).toBeLessThanOrEqual(4.6);

    const exact = await media.decodeAudio({ input: long, outPath: join(dir, "whole.wav"), maxSeconds: 12 });
    expect(exact.overLimit).toBe(false);
    expect(exact.durationSeconds).toBeCloseTo(12, 1);
  });

  it("a WAV declaring 0 channels is unreadable media, in plain words without ffmpeg's stderr", async () => {
    const zero = join(dir, "zero-channels.wav");
    await writeFile(zero, withZeroWavChannels(await readFile(await makeToneWav(2, join(dir, "two.wav")))));
    const errors = [
      await media.probe(zero).catch((e: unknown) => e),
      await media.decodeAudio({ input: zero, outPath: join(dir, "zero-out.wav") }).catch((e: unknown) => e),
    ];
    for (const error of errors) {
      expect(error).toMatchObject({ name: "FfmpegFailedError", code: "MEDIA_UNREADABLE" });
      const message = (error as Error).message;
      expect(message).toMatch(/the file is damaged or is not a media file\.$/);
      expect(message).not.toMatch(/0x[0-9a-f]+|channel count|\//i);
      // The diagnostic lines stay on the error, for the logs.
      expect((error as { stderrTail: string[] }).stderrTail.join("\n")).toMatch(/channel/);
    }
  });

  it("an ffmpeg failure it does not recognise is described by its exit code, never by quoting stderr", () => {
    const described = describeFfmpegFailure(["[aist#0:0/pcm_s16le @ 0x55d5c0a1e2c0] something odd at /srv/data/in.wav"], [], 234);
    expect(described).toEqual({ code: "FFMPEG_FAILED", reason: "it stopped with exit code 234" });
  });
});

describe("pictures too big for memory", () => {
  const MiB = 1024 * 1024;
  let lying: string;

  beforeAll(async () => {
    // 8000×8000 (64 megapixels) in every frame, headers claiming 640×480: a 1 MB file a filter would need GBs for.
    const huge = await makeHugeFrameVideo(8000, 8000, join(dir, "huge.mp4"), { seconds: 2 });
    lying = join(dir, "huge-lying.mp4");
    await writeFile(lying, withClaimedMp4PictureSize(await readFile(huge), 640, 480));
  }, 120_000);

  /** Runs `fn` with every child limited to `bytes` of address space. */
  async function limited<T>(bytes: number, fn: () => Promise<T>): Promise<T> {
    const before = childMemoryLimit();
    setChildMemoryLimit(bytes);
    try {
      return await fn();
    } finally {
      setChildMemoryLimit(before);
    }
  }

  it("the first picture is judged by its decoded size, not the headers' 640×480, and refused under a 400 MiB limit", async () => {
    expect(maxVideoPixels()).toBe(DEFAULT_MAX_VIDEO_PIXELS);
    const error = await limited(400 * MiB, () => media.firstFrame(lying, { maxPixels: maxVideoPixels() }).catch((e: unknown) => e));
    expect(error).toMatchObject({ code: "MEDIA_TOO_LARGE" });
    expect((error as Error).message).toBe("The video's picture is 8000×8000 pixels (64 megapixels), more than the 35.4 megapixels this service takes.");
    // The probe does not decode a picture over the limit either: the size is unknown, never the lie nor an allocation.
    expect((await limited(400 * MiB, () => media.probe(lying))).video).toEqual({ codec: "png", width: 0, height: 0 });
  });

  it("a picture within the limit answers its decoded size; a lower limit (the sandbox's) refuses it", async () => {
    const video = await makeTestVideo(1, join(dir, "hd.mp4"), { size: "1280x720" });
    expect(await media.firstFrame(video, { maxPixels: maxVideoPixels() })).toEqual({ width: 1280, height: 720 });
    await expect(media.firstFrame(video, { maxPixels: 640 * 480 })).rejects.toMatchObject({
      code: "MEDIA_TOO_LARGE",
      message: "The video's picture is 1280×720 pixels (0.92 megapixels), more than the 0.31 megapixels this service takes.",
    });
  });

  it("every run's decoders are bounded too: burning subtitles into the huge frames fails at once as too large, within 600 MiB", async () => {
    const srt = join(dir, "cue.srt");
    await writeFile(srt, "1\n00:00:00,000 --> 00:00:01,500\nHello there\n");
    const args = buildBurnInArgs({ video: lying, subtitles: srt, output: join(dir, "burned.mp4") });
    const error = await limited(600 * MiB, () => media.run(args, { what: "Drawing the subtitles onto the video" }).catch((e: unknown) => e));
    expect(error).toMatchObject({ name: "FfmpegFailedError", code: "MEDIA_TOO_LARGE" });
    expect((error as Error).message).toBe(
      "Drawing the subtitles onto the video failed: its picture is 8000×8000 pixels (64 megapixels), more than the 35.4 megapixels this service takes.",
    );
  });

  it("a child over its memory limit fails as too large in plain words, naming the limit", async () => {
    const video = await makeTestVideo(1, join(dir, "fullhd.mp4"), { size: "1920x1080" });
    const srt = join(dir, "cue2.srt");
    await writeFile(srt, "1\n00:00:00,000 --> 00:00:00,800\nHello there\n");
    const args = buildBurnInArgs({ video, subtitles: srt, output: join(dir, "burned-hd.mp4") });
    const error = await limited(400 * MiB, () => media.run(args, { what: "Drawing the subtitles onto the video" }).catch((e: unknown) => e));
    expect(error).toMatchObject({ name: "FfmpegFailedError", code: "MEDIA_TOO_LARGE" });
    expect((error as Error).message).toBe(
      "Drawing the subtitles onto the video failed: it needed more memory than the 400 MiB this server allows one program (CHILD_MEMORY_LIMIT_MB).",
    );
    // The same run without the limit works: the limit, not the file's damage, stopped it.
    await media.run(args, { what: "Drawing the subtitles onto the video" });
  });

  it("a frame of odd width and height (721×1281) is burned, cropped to even (x264 refuses odd sizes)", async () => {
    const odd = join(dir, "odd.mp4");
    await exec("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=s=721x1281:r=25:d=1", "-f", "lavfi", "-i", "sine=d=1", "-c:v", "libx264", "-pix_fmt", "yuv444p", "-c:a", "aac", "-shortest", "-y", odd]);
    const srt = join(dir, "cue3.srt");
    await writeFile(srt, "1\n00:00:00,000 --> 00:00:00,800\nHello there\n");
    const output = join(dir, "odd-burned.mp4");
    await limited(2048 * MiB, () => media.run(buildBurnInArgs({ video: odd, subtitles: srt, output }), { what: "Drawing the subtitles onto the video" }));
    expect((await media.probe(output)).video).toMatchObject({ width: 720, height: 1280 });
  });

  it("a child killed by the kernel (SIGKILL we did not send) is out of memory, not 'stopped without saying why'", async () => {
    const error = await runFfmpeg(["-c", "kill -KILL $$"], { ffmpegPath: "/bin/sh", what: "Drawing the subtitles onto the video" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "FfmpegFailedError", code: "MEDIA_TOO_LARGE", exitSignal: "SIGKILL" });
    expect((error as Error).message).toBe("Drawing the subtitles onto the video failed: it needed more memory than the server has.");
    // A run we stop (timeout) is not.
    const stopped = await runProcess("/bin/sh", ["-c", "exec sleep 30"], { timeoutMs: 200 });
    expect(ranOutOfMemory(stopped)).toBe(false);
  });

  it("a CPU time limit stops a busy program for the CPU it used (timedOut), not for time it spent waiting", async () => {
    const busy = await runProcess("/bin/sh", ["-c", "while :; do :; done"], { cpuTimeoutSeconds: 1, timeoutMs: 120_000 });
    expect(busy).toMatchObject({ timedOut: true, exitSignal: "SIGXCPU" });
    expect(ranOutOfMemory(busy)).toBe(false);
    const waiting = await runProcess("/bin/sh", ["-c", "sleep 2; echo done"], { cpuTimeoutSeconds: 1, timeoutMs: 120_000, collectStdout: true });
    expect(waiting).toMatchObject({ timedOut: false, exitCode: 0 });
    expect(waiting.stdout.toString().trim()).toBe("done");
  });

  it("the limit is the program's own (ulimit -v), a missing program is still a spawn error, and 0 means none", async () => {
    const shown = await limited(300 * MiB, () => runProcess("/bin/sh", ["-c", "ulimit -v"], { collectStdout: true }));
    expect(shown.stdout.toString().trim()).toBe(String(300 * 1024));
    expect(shown.memoryLimitBytes).toBe(300 * MiB);
    const missing = await limited(300 * MiB, () => runProcess(join(dir, "no-such-program"), []));
    expect(missing.spawnError?.code).toBe("ENOENT");
    const free = await limited(0, () => runProcess("/bin/sh", ["-c", "ulimit -v"], { collectStdout: true }));
    expect(free.stdout.toString().trim()).toBe("unlimited");
    expect(() => setChildMemoryLimit(1024)).toThrow(RangeError);
  });
});
