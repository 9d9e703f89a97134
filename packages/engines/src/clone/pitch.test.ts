import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { makeSpeechWav, makeToneWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodePcm16Wav } from "../wav.ts";
import { measurePitch, percentile, pitchOfSamples, trackPitch, trackPitchAsync } from "./pitch.ts";

const exec = promisify(execFile);

let dir: string;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-pitch-test-"));
});
afterAll(async () => cleanup());

/** A voice-like periodic sound: harmonics falling off like a glottal source, with a slow vibrato of ±`vibrato` Hz. */
function voiceLike(hz: number, seconds: number, sampleRate: number, vibrato = 0): Int16Array {
  const out = new Int16Array(Math.round(seconds * sampleRate));
  let phase = 0;
  for (let i = 0; i < out.length; i++) {
    const f = hz + vibrato * Math.sin((2 * Math.PI * 5 * i) / sampleRate);
    phase += (2 * Math.PI * f) / sampleRate;
    let v = 0;
    for (let h = 1; h * f < sampleRate / 2 && h <= 20; h++) v += Math.sin(h * phase) / h;
    out[i] = Math.round(6000 * v);
  }
  return out;
}

const SENTENCE = "Hello everyone, and welcome to the show. Today we will talk about the weather and the news of the week.";

describe("pitch of generated sounds", () => {
  it.each([90, 170, 250])("finds %i Hz in a harmonic-rich tone within 2 %", (hz) => {
    for (const rate of [8000, 16000, 22050, 44100]) {
      const summary = pitchOfSamples(voiceLike(hz, 1.5, rate), rate);
      expect(summary.medianHz, `at ${rate} Hz sampling`).not.toBeNull();
      expect(Math.abs((summary.medianHz ?? 0) / hz - 1), `at ${rate} Hz sampling`).toBeLessThan(0.02);
      expect(summary.voicedSeconds).toBeGreaterThan(1.2);
    }
  });

  it("follows a pitch that moves: the range spans the vibrato, the median its centre", () => {
    const summary = pitchOfSamples(voiceLike(150, 2, 16000, 20), 16000);
    expect(Math.abs((summary.medianHz ?? 0) / 150 - 1)).toBeLessThan(0.03);
    expect(summary.lowHz).toBeLessThan(140);
    expect(summary.highHz).toBeGreaterThan(160);
  });

  it.each([90, 170, 250])("measures an ffmpeg sine of %i Hz written as WAV within 2 %", async (hz) => {
    const path = await makeToneWav(2, join(dir, `sine-${hz}.wav`), { frequency: hz });
    const summary = await measurePitch(path);
    expect(Math.abs((summary.medianHz ?? 0) / hz - 1)).toBeLessThan(0.02);
    expect(summary.voicedSeconds).toBeGreaterThan(1.8);
  });

  it("finds no pitch in silence or white noise", async () => {
    expect(pitchOfSamples(new Int16Array(16000), 16000)).toEqual({ medianHz: null, lowHz: null, highHz: null, voicedSeconds: 0 });
    const noise = join(dir, "noise.wav");
    await exec("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "anoisesrc=color=white:amplitude=0.3:duration=2:sample_rate=16000", "-c:a", "pcm_s16le", noise]);
    const summary = await measurePitch(noise);
    expect(summary.voicedSeconds).toBeLessThan(0.2);
  });

  it("gives one value per 10 ms frame and marks quiet frames unvoiced", () => {
    const samples = new Int16Array(16000);
    samples.set(voiceLike(200, 0.5, 16000), 8000);
    const track = trackPitch(samples, 16000);
    expect(track.hopSeconds).toBeCloseTo(0.01, 5);
    expect(track.hz.length).toBeGreaterThan(90);
    const voiced = [...track.hz.entries()].filter(([, hz]) => hz > 0).map(([i]) => i * track.hopSeconds);
    expect(Math.min(...voiced)).toBeGreaterThan(0.45);
    expect(Math.max(...voiced)).toBeLessThan(1.0);
  });

  it("analyses long sound in slices, leaving the event loop free, with the same result", async () => {
    const samples = voiceLike(120, 60, 16000, 10);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const track = await trackPitchAsync(samples, 16000).finally(() => clearInterval(timer));
    // 6000 frames in slices of 1000: timers ran between them
    expect(ticks).toBeGreaterThanOrEqual(3);
    const whole = trackPitch(samples.subarray(0, 16000 * 5), 16000);
    expect(Array.from(track.hz.subarray(0, 100))).toEqual(Array.from(whole.hz.subarray(0, 100)));
    const aborted = AbortSignal.abort();
    await expect(trackPitchAsync(samples, 16000, { signal: aborted })).rejects.toThrow();
  });

  it("refuses a file that is not 16-bit PCM WAV", async () => {
    const text = join(dir, "text.wav");
    await writeFile(text, "not audio at all");
    await expect(measurePitch(text)).rejects.toThrow(/16-bit PCM WAV/);
  });

  it("reads the WAV it measures (channels mixed, any rate)", async () => {
    const path = join(dir, "made.wav");
    await writeFile(path, encodePcm16Wav(voiceLike(130, 1, 11025), 11025));
    expect(Math.abs(((await measurePitch(path)).medianHz ?? 0) / 130 - 1)).toBeLessThan(0.02);
  });

  it("interpolates percentiles", () => {
    expect(percentile([1, 2, 3, 4, 5], 0.5)).toBe(3);
    expect(percentile([10, 20], 0.25)).toBe(12.5);
    expect(percentile([], 0.5)).toBeNull();
  });
});

describe("pitch of voices", () => {
  it.each([
    ["slt", 150, 185],
    ["rms", 90, 112],
    ["kal", 80, 100],
  ] as const)("flite %s speaks between %i and %i Hz", async (voice, low, high) => {
    const path = await makeSpeechWav(SENTENCE, { voice: `flite:${voice}`, path: join(dir, `${voice}.wav`) });
    const summary = await measurePitch(path);
    expect(summary.medianHz).toBeGreaterThan(low);
    expect(summary.medianHz).toBeLessThan(high);
    expect(summary.lowHz).toBeLessThan(summary.medianHz ?? 0);
    expect(summary.highHz).toBeGreaterThan(summary.medianHz ?? 0);
    expect(summary.voicedSeconds).toBeGreaterThan(1.5);
  });

  it("sees a voice shifted up an octave by ffmpeg an octave higher", async () => {
    const rms = await makeSpeechWav(SENTENCE, { voice: "flite:rms", path: join(dir, "rms-base.wav") });
    const up = join(dir, "rms-up.wav");
    await exec("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-i", rms, "-af", "rubberband=pitch=2:formant=preserved", "-c:a", "pcm_s16le", up]);
    const base = (await measurePitch(rms)).medianHz ?? 0;
    const shifted = (await measurePitch(up)).medianHz ?? 0;
    expect(shifted / base).toBeGreaterThan(1.9);
    expect(shifted / base).toBeLessThan(2.1);
  });
});
