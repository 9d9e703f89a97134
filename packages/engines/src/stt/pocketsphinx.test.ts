import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { makeSpeechWav, makeTestVideo, makeToneWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RecognitionError, RecognitionNotSupportedError, SttEngineUnavailableError } from "./errors.ts";
import { createPocketsphinxEngine } from "./pocketsphinx.ts";
import { createSttRegistry } from "./registry.ts";
import { requireSpeech } from "./segments.ts";
import type { SttEngine, Transcript } from "./types.ts";

const exec = promisify(execFile);
const logger = silentLogger();

const FIRST = "The quick brown fox jumps over the lazy dog. Today the weather is very nice.";
const SECOND = "Please open the window and close the door before you leave the house.";
/** Words pocketsphinx reliably gets from flite slt for these sentences (it misses ~20% of words in general). */
const ROBUST_WORDS = ["quick", "brown", "fox", "lazy", "dog", "nice", "please", "open", "window", "door", "leave", "house"];
const LONG =
  "Once upon a time there was a small village near the mountains where people worked in the fields every day " +
  "and told long stories in the evening while the children played near the river and the old men talked about " +
  "the weather and the harvest and the price of bread in the town market far away.";

let dir: string;
let cleanup: () => Promise<void>;
let media: MediaToolkit;
let engine: SttEngine;
/** FIRST, one second of silence, SECOND; 16 kHz mono WAV. */
let twoSentences: string;

function recognisedWords(transcript: Transcript): Set<string> {
  return new Set(transcript.text.toLowerCase().split(/[^a-z']+/).filter((w) => w !== ""));
}

function expectWellFormed(transcript: Transcript): void {
  let previousEnd = 0;
  for (const segment of transcript.segments) {
    expect(segment.start).toBeGreaterThanOrEqual(previousEnd);
    expect(segment.end).toBeGreaterThan(segment.start);
    expect(segment.end).toBeLessThanOrEqual(transcript.durationSeconds);
    expect(segment.text.trim()).not.toBe("");
    expect(segment.text).not.toMatch(/<|>|\[|\]|\(\d+\)/);
    for (const word of segment.words ?? []) {
      expect(word.start).toBeGreaterThanOrEqual(segment.start);
      expect(word.end).toBeLessThanOrEqual(segment.end);
      // pocketsphinx states a confidence for every word (`-time yes`), scaled to 0–1.
      expect(word.confidence).toEqual(expect.any(Number));
      expect(word.confidence).toBeGreaterThanOrEqual(0);
      expect(word.confidence).toBeLessThanOrEqual(1);
    }
    previousEnd = segment.end;
  }
  expect(transcript.text).toBe(transcript.segments.map((s) => s.text).join(" "));
}

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-stt-test-"));
  media = createMediaToolkit(await resolveFfmpeg({ logger }), logger);
  engine = await createPocketsphinxEngine({ logger, media });
  const first = await makeSpeechWav(FIRST, { voice: "flite:slt", path: join(dir, "first.wav") });
  const second = await makeSpeechWav(SECOND, { voice: "flite:slt", path: join(dir, "second.wav") });
  twoSentences = join(dir, "two-sentences.wav");
  await exec(media.binaries.ffmpeg, [
    "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
    "-i", first, "-f", "lavfi", "-t", "1", "-i", "anullsrc=r=16000:cl=mono", "-i", second,
    "-filter_complex", "[0:a][1:a][2:a]concat=n=3:v=0:a=1", "-ar", "16000", "-ac", "1", twoSentences,
  ]);
});
afterAll(async () => cleanup());

describe("pocketsphinx engine", () => {
  it("offers English only, offline", () => {
    expect(engine.id).toBe("pocketsphinx");
    expect(engine.capabilities()).toEqual({ languages: ["English"], kind: "offline" });
  });

  it("recognises two sentences separated by a pause as time-ordered segments", async () => {
    const info = await media.probe(twoSentences);
    const transcript = await engine.transcribe({ path: twoSentences, language: "English" });
    expect(transcript.language).toBe("English");
    expect(transcript.durationSeconds).toBeCloseTo(info.durationSeconds, 1);
    expect(transcript.segments.length).toBeGreaterThanOrEqual(2);
    expectWellFormed(transcript);
    const found = recognisedWords(transcript);
    const hits = ROBUST_WORDS.filter((w) => found.has(w));
    expect(hits.length, `recognised: ${transcript.text}`).toBeGreaterThanOrEqual(Math.ceil(ROBUST_WORDS.length * 0.7));
    // The second sentence is in a later segment than the first: the first segment with a word of
    // the first sentence comes before the last segment with a word of the second.
    const has = (words: readonly string[]) => (s: { text: string }) => words.some((w) => new RegExp(`\\b${w}\\b`, "i").test(s.text));
    const firstSentence = transcript.segments.findIndex(has(ROBUST_WORDS.slice(0, 6)));
    const secondSentence = transcript.segments.findLastIndex(has(ROBUST_WORDS.slice(6)));
    expect(firstSentence, transcript.text).toBeGreaterThanOrEqual(0);
    expect(secondSentence, transcript.text).toBeGreaterThan(firstSentence);
    expect(transcript.segments.some((s) => (s.words?.length ?? 0) > 0)).toBe(true);
  });

  it("splits a long utterance into readable cues", async () => {
    const path = await makeSpeechWav(LONG, { voice: "flite:slt", path: join(dir, "long.wav") });
    const transcript = await engine.transcribe({ path, language: "English" });
    expectWellFormed(transcript);
    expect(transcript.segments.length).toBeGreaterThanOrEqual(3);
    for (const segment of transcript.segments) expect(segment.text.length).toBeLessThanOrEqual(80);
    // Cues of several words last at most 7 s (a single long word may not be cut).
    const multiWord = transcript.segments.filter((segment) => (segment.words?.length ?? 0) > 1);
    expect(multiWord.length).toBeGreaterThanOrEqual(3);
    for (const segment of multiWord) expect(segment.end - segment.start).toBeLessThanOrEqual(7);
    const found = recognisedWords(transcript);
    expect(["village", "mountains", "children", "river", "weather", "market"].filter((w) => found.has(w)).length).toBeGreaterThanOrEqual(4);
  });

  it("recognises the speech track of a video", async () => {
    const speech = await makeSpeechWav(SECOND, { voice: "flite:slt", path: join(dir, "video-speech.wav") });
    const video = await makeTestVideo(6, join(dir, "speech.mp4"), { withSpeechFrom: speech });
    const transcript = await engine.transcribe({ path: video, language: "English" });
    expectWellFormed(transcript);
    expect(transcript.durationSeconds).toBeGreaterThan(5);
    const found = recognisedWords(transcript);
    expect(["please", "open", "window", "door", "leave", "house"].filter((w) => found.has(w)).length).toBeGreaterThanOrEqual(4);
  });

  // Decision: audio without speech is not an error for the engine; it gives an empty transcript.
  // Callers that need speech use requireSpeech(), which throws RECOGNITION_NO_SPEECH.
  it("gives an empty transcript for a tone or silence", async () => {
    const tone = await makeToneWav(4, join(dir, "tone.wav"));
    const silence = join(dir, "silence.wav");
    await exec(media.binaries.ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "anullsrc=r=44100:cl=stereo", "-t", "3", silence]);
    for (const path of [tone, silence]) {
      const transcript = await engine.transcribe({ path, language: "English" });
      expect(transcript.segments).toEqual([]);
      expect(transcript.text).toBe("");
      expect(transcript.durationSeconds).toBeGreaterThan(2.5);
      expect(() => requireSpeech(transcript)).toThrow(expect.objectContaining({ code: "RECOGNITION_NO_SPEECH", message: "The audio contains no recognisable speech." }));
    }
  });

  it("refuses other languages with RecognitionNotSupportedError", async () => {
    await expect(engine.transcribe({ path: twoSentences, language: "French" })).rejects.toThrow(RecognitionNotSupportedError);
    await expect(engine.transcribe({ path: twoSentences, language: "French" })).rejects.toThrow(/French/);
  });

  it("explains a file without audio or a missing file", async () => {
    const silentVideo = await makeTestVideo(2, join(dir, "no-audio.mp4"), { noAudio: true });
    await expect(engine.transcribe({ path: silentVideo, language: "English" })).rejects.toMatchObject({
      name: "RecognitionError",
      code: "RECOGNITION_MEDIA_UNUSABLE",
    });
    await expect(engine.transcribe({ path: join(dir, "missing.wav"), language: "English" })).rejects.toMatchObject({
      code: "RECOGNITION_MEDIA_UNUSABLE",
    });
  });

  it("stops when cancelled", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(engine.transcribe({ path: twoSentences, language: "English", signal: controller.signal })).rejects.toMatchObject({
      code: "RECOGNITION_CANCELLED",
    });
    const late = new AbortController();
    const running = engine.transcribe({ path: twoSentences, language: "English", signal: late.signal });
    late.abort();
    await expect(running).rejects.toBeInstanceOf(RecognitionError);
  });

  it("reports a missing program or model as unavailable", async () => {
    await expect(createPocketsphinxEngine({ logger, media, binary: join(dir, "no-such-program") })).rejects.toThrow(SttEngineUnavailableError);
    await expect(createPocketsphinxEngine({ logger, media, modelDir: dir })).rejects.toThrow(/model is not installed/);
  });
});

describe("registry with the offline engine", () => {
  it("covers English only and names unsupported languages", async () => {
    const registry = createSttRegistry([engine]);
    expect(registry.capabilities()).toEqual({
      languages: ["English"],
      engines: { English: { id: "pocketsphinx", kind: "offline" } },
      chains: { English: ["pocketsphinx"] },
    });
    expect(registry.engineFor("English")).toBe(engine);
    await expect(registry.transcribe({ path: twoSentences, language: "Japanese" })).rejects.toThrow(RecognitionNotSupportedError);
    await expect(registry.transcribe({ path: twoSentences, language: "Japanese" })).rejects.toMatchObject({ language: "Japanese", code: "RECOGNITION_NOT_SUPPORTED" });
    await expect(registry.transcribe({ path: twoSentences, language: "Klingon" })).rejects.toThrow(/"Klingon" is not a language/);
    const transcript = await registry.transcribe({ path: twoSentences, language: "English" });
    expect(transcript.segments.length).toBeGreaterThanOrEqual(2);
  });
});
