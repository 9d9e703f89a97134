import { execFile } from "node:child_process";
import { stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { makeHugePng, makeSpeechWav, makeToneWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CloneError } from "../errors.ts";
import { readWavInfo, wavSeconds } from "../wav.ts";
import { analyzeSample, measureSpeech, SAMPLE_MAX_SECONDS, SAMPLE_MIN_SECONDS } from "./analyze.ts";

const exec = promisify(execFile);
const logger = silentLogger();

/** About 30 syllables, 8 s of speech with two pauses. */
const STORY =
  "My grandfather kept a small garden behind the house. He grew beans, tomatoes and a few bright sunflowers every summer. On quiet evenings he told us stories about the sea.";

let dir: string;
let cleanup: () => Promise<void>;
let media: MediaToolkit;

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-sample-test-"));
  media = createMediaToolkit(await resolveFfmpeg({ logger }), logger);
});
afterAll(async () => cleanup());

async function ffmpeg(...args: string[]): Promise<void> {
  await exec("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", ...args]);
}

async function refusal(inputPath: string, name: string): Promise<CloneError> {
  const workDir = join(dir, `work-${name}`);
  await exec("mkdir", ["-p", workDir]);
  const error = await analyzeSample({ media, inputPath, workDir }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CloneError);
  const clone = error as CloneError;
  expect(clone.code).toBe("SAMPLE_UNUSABLE");
  return clone;
}

describe("analyzeSample", () => {
  it("measures a usable sample: decoded length, the speaker's pitch and speaking rate, a 16 kHz mono WAV", async () => {
    const speech = await makeSpeechWav(STORY, { voice: "flite:rms", path: join(dir, "rms.wav") });
    const mp3 = join(dir, "rms.mp3");
    await ffmpeg("-i", speech, "-c:a", "libmp3lame", "-b:a", "64k", mp3);
    const workDir = join(dir, "work-ok");
    await exec("mkdir", ["-p", workDir]);
    const analysis = await analyzeSample({ media, inputPath: mp3, workDir });
    const spoken = await readWavInfo(speech);
    expect(Math.abs(analysis.seconds - wavSeconds(spoken!))).toBeLessThan(0.15);
    expect(analysis.profile.medianPitchHz).toBeGreaterThan(90);
    expect(analysis.profile.medianPitchHz).toBeLessThan(112);
    expect(analysis.profile.pitchLowHz).toBeLessThan(analysis.profile.medianPitchHz!);
    expect(analysis.profile.pitchHighHz).toBeGreaterThan(analysis.profile.medianPitchHz!);
    // Conversational English is 3 to 6 syllables a second.
    expect(analysis.profile.syllablesPerSecond).toBeGreaterThan(3);
    expect(analysis.profile.syllablesPerSecond).toBeLessThan(6.5);
    expect(analysis.wavPath.startsWith(workDir)).toBe(true);
    const decoded = await readWavInfo(analysis.wavPath);
    expect(decoded).toMatchObject({ sampleRate: 16000, channels: 1, bitsPerSample: 16 });
  });

  it("sees faster speech as faster: the same words 1.5× as fast measure about 1.5× the rate", async () => {
    const speech = await makeSpeechWav(STORY, { voice: "flite:slt", path: join(dir, "slt.wav") });
    const fast = join(dir, "slt-fast.wav");
    await ffmpeg("-i", speech, "-af", "atempo=1.5", "-c:a", "pcm_s16le", fast);
    const normal = await measureSpeech(speech);
    const quick = await measureSpeech(fast);
    const ratio = quick.profile.syllablesPerSecond! / normal.profile.syllablesPerSecond!;
    expect(ratio).toBeGreaterThan(1.5 * 0.85);
    expect(ratio).toBeLessThan(1.5 * 1.15);
    // Pauses are not speech: stretching the silence between sentences leaves the rate as it was.
    const paused = join(dir, "slt-paused.wav");
    await ffmpeg("-i", speech, "-af", "apad=pad_dur=2", "-c:a", "pcm_s16le", join(dir, "slt-tail.wav"));
    await ffmpeg("-i", join(dir, "slt-tail.wav"), "-i", speech, "-filter_complex", "[0:a][1:a]concat=n=2:v=0:a=1", "-c:a", "pcm_s16le", paused);
    const twice = await measureSpeech(paused);
    expect(twice.profile.syllablesPerSecond! / normal.profile.syllablesPerSecond!).toBeGreaterThan(0.9);
    expect(twice.profile.syllablesPerSecond! / normal.profile.syllablesPerSecond!).toBeLessThan(1.1);
  });

  it("refuses a sample shorter than 3 seconds, saying how long it is", async () => {
    const short = await makeSpeechWav("Hello there, my friend.", { voice: "flite:rms", path: join(dir, "short.wav") });
    const error = await refusal(short, "short");
    expect(error.message).toMatch(new RegExp(`shorter than the ${SAMPLE_MIN_SECONDS} seconds needed`));
    const tone = await makeToneWav(2, join(dir, "tone-2s.wav"), { frequency: 170 });
    expect((await refusal(tone, "tone")).message).toMatch(/is 2 seconds long, shorter than the 3 seconds needed/);
  });

  it("refuses a sample longer than 5 minutes of decoded sound, and decodes no more than the limit of it", async () => {
    const long = join(dir, "six-minutes.wav");
    await ffmpeg("-f", "lavfi", "-i", "sine=frequency=150:sample_rate=8000:duration=360", "-c:a", "pcm_s16le", long);
    const error = await refusal(long, "long");
    expect(error.message).toMatch(/longer than 5 minutes/);
    const written = await stat(join(dir, "work-long", "voice-sample.wav"));
    // 16 kHz 16-bit mono: 32 000 bytes a second, cut just past the limit
    expect(written.size).toBeLessThan((SAMPLE_MAX_SECONDS + 1) * 32_000);
  });

  it("refuses a silent sample", async () => {
    const silent = join(dir, "silent.wav");
    await ffmpeg("-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", "5", "-c:a", "pcm_s16le", silent);
    expect((await refusal(silent, "silent")).message).toMatch(/silent/);
  });

  it("refuses a sample of noise, with no voiced speech", async () => {
    const noise = join(dir, "noise.wav");
    await ffmpeg("-f", "lavfi", "-i", "anoisesrc=color=pink:amplitude=0.4:duration=5:sample_rate=16000", "-c:a", "pcm_s16le", noise);
    expect((await refusal(noise, "noise")).message).toMatch(/no clear speech/);
  });

  it("refuses a picture or a text file named .wav as not audio", async () => {
    const png = await makeHugePng(32, 32, join(dir, "picture.wav"));
    expect((await refusal(png, "png")).message).toMatch(/not an audio file this service can read/);
    const text = join(dir, "notes.wav");
    await writeFile(text, "These are my notes, not a recording.\n".repeat(50));
    expect((await refusal(text, "text")).message).toMatch(/not an audio file this service can read/);
  });

  it("refuses a video without sound as having no sound track", async () => {
    const video = join(dir, "silent-film.mp4");
    await ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x64:rate=10:duration=4", "-c:v", "libx264", "-pix_fmt", "yuv420p", video);
    expect((await refusal(video, "video")).message).toMatch(/no sound track/);
  });
});
