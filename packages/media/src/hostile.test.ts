import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "@voiceloc/log";
import { makeToneWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveFfmpeg } from "./resolve.ts";
import { describeFfmpegFailure } from "./run.ts";
import { withClaimedMp4Duration, withZeroWavChannels } from "@voiceloc/testing";
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
