import { execFile } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { makeSpeechWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { detectOfflineEngines } from "../detect.ts";
import { CloneError, LanguageNotSupportedError } from "../errors.ts";
import { readWavInfo, wavSeconds } from "../wav.ts";
import { createTtsRegistry, type TtsRegistry } from "../registry.ts";
import { synthesizeToFile } from "../synthesize.ts";
import { analyzeSample, measureSpeech, type SpeechMeasure } from "./analyze.ts";
import { createMatchCloneEngine, matchFilter } from "./match.ts";
import { cloneSpeaker, cloneVoiceName } from "./speak.ts";
import type { CloneEngine, ClonedVoice } from "./types.ts";

const exec = promisify(execFile);
const logger = silentLogger();

/** The speaker's recording: about 10 s of English with pauses. */
const STORY =
  "My grandfather kept a small garden behind the house. He grew beans, tomatoes and a few bright sunflowers every summer. On quiet evenings he told us stories about the sea.";

/** What the clone is asked to say (not the sample's words). */
const TEXT = {
  English: "The weather was cold this morning, so we stayed inside. We read our books by the window until it was time for lunch.",
  Spanish: "El tiempo estaba frío esta mañana, así que nos quedamos dentro. Leímos nuestros libros junto a la ventana hasta la hora de comer.",
} as const;

let dir: string;
let cleanup: () => Promise<void>;
let media: MediaToolkit;
let registry: TtsRegistry;
let match: CloneEngine;
const clones: Record<"low" | "high", ClonedVoice> = {} as Record<"low" | "high", ClonedVoice>;

async function ffmpeg(...args: string[]): Promise<void> {
  await exec("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", ...args]);
}

/** A clone made as the service makes one: the sample decoded and analysed, the engine's handle. */
async function makeClone(id: string, samplePath: string): Promise<ClonedVoice> {
  const workDir = join(dir, `sample-${id}`);
  await mkdir(workDir, { recursive: true });
  const sample = await analyzeSample({ media, inputPath: samplePath, workDir });
  const { ref } = await match.create({ id, name: `Speaker ${id}`, sample });
  return { id, name: `Speaker ${id}`, engine: "match", ref, profile: sample.profile };
}

/** The speech of an encoded file as a listener's tools would measure it: decoded, then pitch and rate. */
async function measureEncoded(path: string): Promise<SpeechMeasure> {
  const wav = `${path}.decoded.wav`;
  await media.decodeAudio({ input: path, outPath: wav, sampleRate: 16_000 });
  return measureSpeech(wav);
}

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-match-test-"));
  media = createMediaToolkit(await resolveFfmpeg({ logger }), logger);
  registry = createTtsRegistry(await detectOfflineEngines({ logger }));
  match = createMatchCloneEngine({ registry, media, logger });
  // A low male voice (~90 Hz): flite's kal. A high female voice (~250 Hz): flite's slt raised by half.
  const low = await makeSpeechWav(STORY, { voice: "flite:kal", path: join(dir, "low.wav") });
  const slt = await makeSpeechWav(STORY, { voice: "flite:slt", path: join(dir, "slt.wav") });
  const high = join(dir, "high.m4a");
  await ffmpeg("-i", slt, "-af", "rubberband=pitch=1.5:formant=preserved", "-c:a", "aac", "-b:a", "96k", high);
  clones.low = await makeClone("low", low);
  clones.high = await makeClone("high", high);
});
afterAll(async () => cleanup());

describe("the match engine (offline)", () => {
  it("took the samples' voices as they are: ~90 Hz and ~250 Hz", () => {
    expect(clones.low.profile.medianPitchHz).toBeGreaterThan(80);
    expect(clones.low.profile.medianPitchHz).toBeLessThan(100);
    expect(clones.high.profile.medianPitchHz).toBeGreaterThan(225);
    expect(clones.high.profile.medianPitchHz).toBeLessThan(275);
    expect(clones.low.ref).toBe("");
  });

  it.each([
    ["low", "English"],
    ["low", "Spanish"],
    ["high", "English"],
    ["high", "Spanish"],
  ] as const)("speaks in the %s clone in %s within 10 percent of its median pitch and 15 percent of its rate", async (which, language) => {
    const clone = clones[which];
    const outPath = join(dir, `${which}-${language}.mp3`);
    const result = await synthesizeToFile({ registry, media, clones: match, logger }, { text: TEXT[language], language, clone, format: "mp3", outPath });
    expect(result.voice).toBe(`clone:${which}`);
    expect(result.durationSeconds).toBeGreaterThan(3);
    const spoken = await measureEncoded(outPath);
    const pitchRatio = spoken.profile.medianPitchHz! / clone.profile.medianPitchHz!;
    const rateRatio = spoken.profile.syllablesPerSecond! / clone.profile.syllablesPerSecond!;
    expect(pitchRatio, `median pitch ${spoken.profile.medianPitchHz?.toFixed(1)} Hz for ${clone.profile.medianPitchHz?.toFixed(1)} Hz`).toBeGreaterThan(0.9);
    expect(pitchRatio).toBeLessThan(1.1);
    expect(rateRatio, `rate ${spoken.profile.syllablesPerSecond?.toFixed(2)}/s for ${clone.profile.syllablesPerSecond?.toFixed(2)}/s`).toBeGreaterThan(0.85);
    expect(rateRatio).toBeLessThan(1.15);
  });

  it("starts from the installed voice nearest the sample's pitch", async () => {
    const high = await match.synthesize(clones.high, { text: TEXT.English, language: "English", outPath: join(dir, "pick-high.wav") });
    const low = await match.synthesize(clones.low, { text: TEXT.English, language: "English", outPath: join(dir, "pick-low.wav") });
    expect(high.voice).toBe("flite:slt");
    expect(["flite:kal", "flite:kal16", "flite:rms"]).toContain(low.voice);
    expect(high.sampleRate).toBe(low.sampleRate);
  });

  it("speaks a long text in chunks, each in the clone's voice", async () => {
    const small = createMatchCloneEngine({ registry, media, logger, maxInputChars: 130 });
    const text = `${TEXT.English} ${STORY}`;
    const outPath = join(dir, "chunks.wav");
    const result = await synthesizeToFile({ registry, media, clones: small }, { text, language: "English", clone: clones.high, format: "wav", outPath });
    expect(result.chunks).toBeGreaterThanOrEqual(3);
    expect(result.voice).toBe("clone:high");
    const spoken = await measureSpeech(outPath);
    expect(Math.abs(spoken.profile.medianPitchHz! / clones.high.profile.medianPitchHz! - 1)).toBeLessThan(0.1);
    expect(spoken.speechSeconds).toBeGreaterThan(8);
  });

  it("makes nothing to keep and removes nothing: the profile is the voice", async () => {
    await expect(match.remove(clones.low)).resolves.toBeUndefined();
    expect(match.languages()).toEqual(registry.capabilities().languages);
  });
});

describe("the shaping filter", () => {
  it.each([
    [true, 1.5, 1.2],
    [true, 0.7, 0.8],
    [false, 1.5, 1.2],
    [false, 0.7, 0.8],
  ] as const)("with rubberband %s moves the pitch by %f and the tempo by %f", async (rubberband, pitch, tempo) => {
    const voice = await makeSpeechWav(TEXT.English, { voice: "flite:rms", path: join(dir, "filter-in.wav") });
    const out = join(dir, `filter-${String(rubberband)}-${pitch}.wav`);
    await ffmpeg("-i", voice, "-af", matchFilter({ pitch, tempo }, 16000, { rubberband }), "-c:a", "pcm_s16le", out);
    const before = await measureSpeech(voice);
    const after = await measureSpeech(out);
    expect(Math.abs(after.profile.medianPitchHz! / before.profile.medianPitchHz! / pitch - 1)).toBeLessThan(0.05);
    const lengthRatio = wavSeconds((await readWavInfo(out))!) / wavSeconds((await readWavInfo(voice))!);
    expect(Math.abs(lengthRatio * tempo - 1)).toBeLessThan(0.05);
  });
});

describe("speech in a clone", () => {
  it("refuses a clone made by an engine this server does not run, in plain words", async () => {
    const elsewhere: ClonedVoice = { ...clones.low, engine: "elevenlabs", ref: "abc", name: "Grandpa" };
    const message = 'The cloned voice "Grandpa" was made by elevenlabs, which this server does not run (CLONE_ENGINE).';
    for (const deps of [{ registry, media, clones: match }, { registry, media }]) {
      const error = await synthesizeToFile(deps, { text: "Hello.", language: "English", clone: elsewhere, format: "wav", outPath: join(dir, "never.wav") }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CloneError);
      expect(error).toMatchObject({ code: "CLONE_NOT_FOUND", message });
    }
    expect(() => cloneSpeaker(undefined, clones.low)).toThrow(message.replace("Grandpa", "Speaker low").replace("elevenlabs", "match"));
  });

  it("gives lanes that drive engines directly an engine speaking in the clone", async () => {
    const speaker = cloneSpeaker(match, clones.low);
    const table = speaker.capabilities();
    expect(table.voices.map((v) => v.name)).toEqual(table.languages.map(() => cloneVoiceName(clones.low)));
    expect(table.voices[0]?.description).toMatch(/approximation, not a clone/);
    expect(table.maxInputChars).toBe(match.maxInputChars);
    const result = await speaker.synthesize({ text: "Good evening, and thank you for listening.", language: "English", voice: "whatever", outPath: join(dir, "lane.wav") });
    expect(result.voice).toBe("clone:low");
    const spoken = await measureSpeech(result.wavPath);
    expect(Math.abs(spoken.profile.medianPitchHz! / clones.low.profile.medianPitchHz! - 1)).toBeLessThan(0.1);
    await expect(speaker.synthesize({ text: "Hello.", language: "Klingon" as "English" })).rejects.toBeInstanceOf(LanguageNotSupportedError);
  });
});
