/**
 * Voice streams in cloned voices, with the ElevenLabs engine against a local stand-in of its documented
 * protocol (over HTTP): `use_voice_clone` with a sample speaks every segment in a clone of the sample,
 * without one in a clone of the input's own speech; either clone is made once and deleted at the engine
 * when the stream ends. The stand-in speaks at the pitch it measured on the sample it was sent, so the
 * pitch of what it spoke tells whose voice was cloned.
 */
import { mkdir } from "node:fs/promises";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { analyzeSample, createElevenLabsCloneEngine, measureSpeech, type CloneEngine } from "@voiceloc/engines";
import { makeSpeechWav, startElevenLabsStandIn, tempDir, type CloneServiceStandIn, type ElevenLabsRoute } from "@voiceloc/testing";
import { createStack, makeTwoSentenceWav, startService, type ServiceHarness, type Stack, type TwoSentences } from "./testing/harness.ts";

const API_KEY = "stand-in-key";
let stack: Stack;
let root: { path: string; cleanup: () => Promise<void> };
let standIn: CloneServiceStandIn<ElevenLabsRoute>;
let clones: CloneEngine;
let h: ServiceHarness;
let speech: TwoSentences;
let kalPitch: number;
let inputPitch: number;

beforeAll(async () => {
  stack = await createStack();
  root = await tempDir("voiceloc-voice-stream-clones-");
  standIn = await startElevenLabsStandIn({ apiKey: API_KEY });
  clones = createElevenLabsCloneEngine({ apiKey: API_KEY, baseUrl: standIn.url, model: "eleven_multilingual_v2", logger: stack.logger });
  speech = await makeTwoSentenceWav(stack.media, root.path, "two-sentences.wav");
  const kal = await makeSpeechWav("The old lighthouse stood at the edge of the cliff for more than a hundred years, and every night its keeper lit the lamp.", {
    voice: "flite:kal",
    path: join(root.path, "kal.wav"),
  });
  kalPitch = (await measureSpeech(kal)).profile.medianPitchHz ?? Number.NaN;
  inputPitch = (await measureSpeech(speech.path)).profile.medianPitchHz ?? Number.NaN;
  h = await startService(stack, { mediaRoot: root.path, clones });
}, 120_000);

afterAll(async () => {
  await h?.cleanup();
  await standIn?.close();
  await root?.cleanup();
});

const near = (value: number, target: number) => Math.abs(value - target) / target <= 0.15;

describe("voice streams in cloned voices (ElevenLabs stand-in over HTTP)", () => {
  it("use_voice_clone with a sample: every segment in a clone of the sample, deleted when the stream ends", async () => {
    const spokenBefore = standIn.speeches.length;
    const id = await h.submit({ file: basename(speech.path), source: "English", target: "English", useVoiceClone: true, voiceCloneSample: "kal.wav" });
    const end = await h.finished(id);
    expect(end.status, end.error ?? "").toBe("completed");
    const speeches = standIn.speeches.slice(spokenBefore);
    expect(speeches.length).toBeGreaterThanOrEqual(1);
    expect(new Set(speeches.map((s) => s.voice)).size).toBe(1);
    for (const s of speeches) expect(near(s.pitchHz, kalPitch), `${s.pitchHz} Hz against the sample's ${kalPitch} Hz`).toBe(true);
    expect([...standIn.voices.values()].some((v) => v.name === `voice stream ${id}`)).toBe(false);
  });

  it("use_voice_clone without a sample: a clone of the input's own speech, deleted when the stream ends", async () => {
    const spokenBefore = standIn.speeches.length;
    const id = await h.submit({ file: basename(speech.path), source: "English", target: "Spanish", useVoiceClone: true });
    const end = await h.finished(id);
    expect(end.status, end.error ?? "").toBe("completed");
    const speeches = standIn.speeches.slice(spokenBefore);
    expect(speeches.length).toBeGreaterThanOrEqual(1);
    expect(speeches.every((s) => s.language === "es")).toBe(true);
    for (const s of speeches) expect(near(s.pitchHz, inputPitch), `${s.pitchHz} Hz against the input's ${inputPitch} Hz`).toBe(true);
    expect([...standIn.voices.values()].some((v) => v.name === `voice stream ${id}`)).toBe(false);
  });

  it("the caller's clone (voice clone:<id>) speaks every segment and is kept at the engine afterwards", async () => {
    const work = join(root.path, "analysis");
    await mkdir(work, { recursive: true });
    const analysis = await analyzeSample({ media: stack.media, inputPath: join(root.path, "kal.wav"), workDir: work });
    const id = "0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0";
    const { ref } = await clones.create({ id, name: "Narrator", sample: analysis });
    const profile = analysis.profile;
    const clone = {
      id,
      name: "Narrator",
      engine: "elevenlabs" as const,
      ref,
      profile: { median_pitch_hz: profile.medianPitchHz, pitch_low_hz: profile.pitchLowHz, pitch_high_hz: profile.pitchHighHz, syllables_per_second: profile.syllablesPerSecond },
    };
    const spokenBefore = standIn.speeches.length;
    const task = await h.submit({ file: basename(speech.path), source: "English", target: "English", voice: `clone:${id}`, clone });
    const end = await h.finished(task);
    expect(end.status, end.error ?? "").toBe("completed");
    const speeches = standIn.speeches.slice(spokenBefore);
    expect(speeches.length).toBeGreaterThanOrEqual(1);
    expect(speeches.every((s) => s.voice === ref)).toBe(true);
    expect(standIn.voices.has(ref)).toBe(true);
  });

  it("a sample that cannot be fetched fails the stream in plain words and makes no voice", async () => {
    const voicesBefore = standIn.voices.size;
    const id = await h.submit({ file: basename(speech.path), source: "English", target: "English", useVoiceClone: true, voiceCloneSample: "two-sentences.wav.missing" });
    const end = await h.finished(id);
    expect(end.status).toBe("failed");
    expect(end.error).toMatch(/^The voice sample cannot be fetched: /);
    expect(standIn.voices.size).toBe(voicesBefore);
  });
});
