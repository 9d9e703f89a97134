import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { detectOfflineEngines } from "./detect.ts";
import { createEspeakEngine } from "./espeak.ts";
import { LanguageNotSupportedError, TtsEngineUnavailableError, UnknownVoiceError, VoiceLanguageMismatchError } from "./errors.ts";
import { createFestivalEngine } from "./festival.ts";
import { createFliteEngine } from "./flite.ts";
import { LANGUAGES, type Language } from "./languages.ts";
import { createTtsRegistry, type TtsRegistry } from "./registry.ts";
import { synthesizeToFile } from "./synthesize.ts";
import type { TtsEngine } from "./types.ts";

const exec = promisify(execFile);
const logger = silentLogger();

/** Native text per language. Japanese is kana only (the offline voice cannot read kanji). */
const SENTENCES: Record<Language, string> = {
  French: "Bonjour tout le monde, comment allez-vous ?",
  English: "Hello world, this is a test of speech.",
  Amharic: "ሰላም ለዓለም። እንዴት ናችሁ?",
  Swahili: "Habari dunia, mambo yote ni mazuri.",
  Chinese: "你好，世界。今天天气很好。",
  Japanese: "こんにちは、せかい。きょうは いい てんき です。",
  Korean: "안녕하세요 세계. 오늘 날씨가 좋네요.",
  German: "Hallo Welt, wie geht es dir heute?",
  Russian: "Привет, мир. Как у вас дела?",
  Portuguese: "Olá mundo, como você está hoje?",
  Spanish: "Hola mundo, ¿cómo estás hoy?",
  Italian: "Ciao mondo, perché è così bello oggi?",
  Arabic: "مرحبا بالعالم، كيف حالك اليوم؟",
  Dutch: "Hallo wereld, hoe gaat het vandaag?",
  Hindi: "नमस्ते दुनिया। आज मौसम अच्छा है।",
  Urdu: "ہیلو دنیا۔ آج موسم اچھا ہے۔",
};

let dir: string;
let cleanup: () => Promise<void>;
let engines: TtsEngine[];
let registry: TtsRegistry;
let media: MediaToolkit;

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-tts-test-"));
  engines = await detectOfflineEngines({ logger });
  registry = createTtsRegistry(engines);
  media = createMediaToolkit(await resolveFfmpeg({ logger }), logger);
});
afterAll(async () => cleanup());

describe("detection", () => {
  it("finds the installed engines and offers only installed voices", () => {
    expect(engines.map((e) => e.id)).toEqual(["flite", "festival", "espeak"]);
    const table = registry.capabilities();
    expect(table.languages).toEqual([...LANGUAGES]);
    expect(table.cloning).toBe(false);
    expect(table.defaults).toMatchObject({
      English: "flite:slt",
      Russian: "festival:msu_ru_nsh_clunits",
      Hindi: "festival:hindi_NSK_diphone",
      Italian: "festival:lp_diphone",
      Chinese: "espeak:cmn-latn-pinyin",
      French: "espeak:fr-fr",
      Japanese: "espeak:ja",
    });
    for (const voice of table.voices) {
      expect(voice.name.startsWith(`${voice.engine}:`)).toBe(true);
      expect(voice.description).not.toBe("");
    }
  });

  it("reports a missing engine as unavailable", async () => {
    await expect(createEspeakEngine({ logger, binary: "/nonexistent/espeak-ng" })).rejects.toBeInstanceOf(TtsEngineUnavailableError);
    await expect(createFliteEngine({ logger, binary: "/nonexistent/flite" })).rejects.toMatchObject({ code: "ENGINE_UNAVAILABLE" });
    await expect(createFestivalEngine({ logger, festivalBinary: "/nonexistent/festival" })).rejects.toMatchObject({
      message: "The festival speech engine is not installed.",
    });
    expect(await detectOfflineEngines({ logger, espeak: { binary: "/nonexistent" }, flite: false, festival: false })).toEqual([]);
  });

  it("uses the espeak-ng voice that reads Chinese characters as Mandarin, not English tone numbers", async () => {
    const { stdout } = await exec("espeak-ng", ["-q", "-x", "-v", "cmn-latn-pinyin", SENTENCES.Chinese]);
    expect(stdout).not.toContain("(en)");
    expect(stdout).toMatch(/n'i35.*X'Au214/s); // ni3 hao3 with third-tone sandhi on "ni"
  });
});

async function checkSpeech(path: string, text: string): Promise<number> {
  const info = await media.probe(path);
  expect(info.audio).toBeDefined();
  const volume = await media.measureVolume(path);
  expect(volume.meanVolumeDb).toBeGreaterThan(-45);
  expect(volume.maxVolumeDb).toBeGreaterThan(-20);
  const chars = [...text].length;
  expect(info.durationSeconds).toBeGreaterThan(0.4);
  expect(info.durationSeconds).toBeLessThan(Math.max(4, chars * 0.3));
  return info.durationSeconds;
}

describe("every voice in the capability table speaks its language", () => {
  it.each(LANGUAGES.map((l) => [l]))("%s", async (language) => {
    const voices = registry.voicesFor(language);
    expect(voices.length).toBeGreaterThan(0);
    for (const voice of voices) {
      const out = join(dir, `${voice.name.replace(":", "_")}.wav`);
      const result = await synthesizeToFile({ registry, media }, { text: SENTENCES[language], language, voice: voice.name, format: "wav", outPath: out });
      expect(result).toMatchObject({ path: out, format: "wav", voice: voice.name, chunks: 1 });
      const seconds = await checkSpeech(out, SENTENCES[language]);
      expect(result.durationSeconds).toBeCloseTo(seconds, 5);
    }
  });
});

describe("synthesizeToFile", () => {
  it.each([
    ["mp3", "mp3"],
    ["wav", "pcm_s16le"],
    ["ogg", "opus"],
    ["flac", "flac"],
  ] as const)("encodes %s", async (format, codec) => {
    const out = join(dir, `formats.${format}`);
    const result = await synthesizeToFile({ registry, media }, { text: SENTENCES.English, language: "English", format, outPath: out });
    expect(result.voice).toBe("flite:slt");
    const info = await media.probe(out);
    expect(info.audio?.codec).toBe(codec);
    expect(info.audio?.channels).toBe(1);
    // Read from the container without ffprobe, it must be what ffprobe states.
    expect(result.durationSeconds).toBeCloseTo(info.durationSeconds, 5);
    await checkSpeech(out, SENTENCES.English);
  });

  it("splits long text on sentences and joins the pieces seamlessly", async () => {
    const text = Array.from({ length: 12 }, (_, i) => `This is sentence number ${i + 1} of a longer story.`).join(" ");
    const whole = await synthesizeToFile({ registry, media }, { text, language: "English", voice: "espeak:en-us", format: "wav", outPath: join(dir, "whole.wav") });
    const split = await synthesizeToFile(
      { registry, media },
      { text, language: "English", voice: "espeak:en-us", format: "mp3", outPath: join(dir, "split.mp3"), maxChunkChars: 120 },
    );
    expect(whole.chunks).toBe(1);
    expect(split.chunks).toBeGreaterThanOrEqual(5);
    // each engine call adds its own end-of-text pause, so the split version is a little longer
    expect(split.durationSeconds).toBeGreaterThan(whole.durationSeconds * 0.9);
    expect(split.durationSeconds).toBeLessThan(whole.durationSeconds * 1.5);
    expect((await media.measureVolume(split.path)).meanVolumeDb).toBeGreaterThan(-45);
    expect(split.durationSeconds).toBeCloseTo((await media.probe(split.path)).durationSeconds, 5);
  });

  it("refuses Japanese with kanji instead of reading it wrongly", async () => {
    await expect(
      synthesizeToFile({ registry, media }, { text: "日本語を話します", language: "Japanese", format: "wav", outPath: join(dir, "kanji.wav") }),
    ).rejects.toMatchObject({ name: "UnspeakableTextError", code: "TEXT_NOT_SPEAKABLE", message: expect.stringContaining("kanji") });
  });

  it("the festival voice refuses text in a script it cannot read; the registry hands it to a voice that reads it", async () => {
    const festival = engines.find((e) => e.id === "festival");
    expect(festival).toBeDefined();
    await expect(festival?.synthesize({ text: "Privet mir", language: "Russian", voice: "festival:msu_ru_nsh_clunits" })).rejects.toMatchObject({
      code: "TEXT_NOT_SPEAKABLE",
    });
    const spoken = await synthesizeToFile({ registry, media }, { text: "Privet mir", language: "Russian", format: "wav", outPath: join(dir, "latin-ru.wav") });
    expect(spoken.durationSeconds).toBeGreaterThan(0.3);
  });

  it("stops when cancelled", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(
      synthesizeToFile({ registry, media }, { text: "Hello", language: "English", format: "wav", outPath: join(dir, "c.wav"), signal: controller.signal }),
    ).rejects.toMatchObject({ code: "SYNTHESIS_CANCELLED" });
  });
});

describe("registry", () => {
  it("lists voices best first and resolves the default", () => {
    const english = registry.voicesFor("English").map((v) => v.name);
    expect(english.slice(0, 3)).toEqual(["flite:slt", "flite:rms", "flite:awb"]);
    expect(english.indexOf("festival:kal_diphone")).toBeLessThan(english.indexOf("espeak:en-us"));
    expect(registry.defaultVoice("Swahili")?.name).toBe("espeak:sw");
    expect(registry.resolve("Russian")).toMatchObject({ engine: { id: "festival" }, voice: { name: "festival:msu_ru_nsh_clunits" } });
    expect(registry.resolve("Russian", "espeak:ru").engine.id).toBe("espeak");
  });

  it("gives typed errors naming the language or voice", () => {
    expect(() => registry.resolve("Klingon")).toThrow(LanguageNotSupportedError);
    expect(() => registry.resolve("Klingon")).toThrow(/"Klingon" is not a language/);
    expect(() => registry.resolve("English", "flite:nobody")).toThrow(UnknownVoiceError);
    expect(() => registry.resolve("English", "flite:nobody")).toThrow(/no voice called "flite:nobody"/);
    expect(() => registry.resolve("French", "flite:slt")).toThrow(VoiceLanguageMismatchError);
    expect(() => registry.resolve("French", "flite:slt")).toThrow('The voice "flite:slt" does not speak French; it speaks English.');
    const englishOnly = createTtsRegistry(engines.filter((e) => e.id === "flite"));
    expect(() => englishOnly.resolve("Korean")).toThrow("Speech in Korean is not available: no installed voice speaks Korean.");
    expect(englishOnly.defaultVoice("Korean")).toBeUndefined();
    expect(englishOnly.capabilities().languages).toEqual(["English"]);
  });

  it("refuses two engines with the same id", () => {
    expect(() => createTtsRegistry([...engines, ...engines])).toThrow(/share the id/);
  });
});
