import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg } from "@voiceloc/media";
import { tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEspeakEngine } from "../espeak.ts";
import { createFliteEngine } from "../flite.ts";
import type { Language } from "../languages.ts";
import { createTtsRegistry } from "../registry.ts";
import { createPocketsphinxEngine } from "../stt/pocketsphinx.ts";
import type { SttEngine } from "../stt/types.ts";
import type { TtsEngine } from "../types.ts";
import { normaliseText } from "./normalise.ts";

const exec = promisify(execFile);
const logger = silentLogger();

/**
 * What espeak-ng would say, as its phoneme mnemonics (`-q -x`) without stress, pause and word-boundary
 * marks (which differ between "5" and "five" without changing the sounds).
 */
async function phonemes(text: string, voice: string): Promise<string> {
  const { stdout } = await exec("espeak-ng", ["-q", "-x", "-v", voice, text], { timeout: 30_000 });
  return stdout.replace(/[\s',_|!;:]/g, "");
}

/** Levenshtein distance between two phoneme strings. */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next.push(Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)));
    row = next;
  }
  return row[b.length] ?? 0;
}

/**
 * Written forms espeak-ng misreads (measured), and the same thing written out by hand in words. After
 * normalisation espeak-ng must say (nearly: a vowel of a number word may differ) what it says for the
 * words, and be much nearer to them than what it said for the written form.
 */
const SPOKEN: [Language, string, string, string][] = [
  ["English", "en-us", "It costs $5.", "It costs five dollars."],
  ["English", "en-us", "on 2026-11-28", "on November twenty-eighth, two thousand twenty-six"],
  ["English", "en-us", "the 3,5 mark", "the three point five mark"],
  ["English", "en-us", "1 000 000 people", "one million people"],
  ["English", "en-us", "12 km", "twelve kilometres"],
  ["French", "fr-fr", "Il coûte $5.", "Il coûte cinq dollars."],
  ["French", "fr-fr", "le 2026-11-28", "le vingt-huit novembre deux mille vingt-six"],
  ["German", "de", "am 3. Oktober", "am dritten Oktober"],
  ["German", "de", "Es kostet $5.", "Es kostet fünf Dollar."],
  ["German", "de", "z. B. 12 km", "zum Beispiel zwölf Kilometer"],
  ["Spanish", "es", "Cuesta $5.", "Cuesta cinco dólares."],
  ["Italian", "it", "Costa £2.", "Costa due sterline."],
  ["Portuguese", "pt-br", "Sr. Silva", "senhor Silva"],
  ["Spanish", "es", "el 1.º", "el primero"],
  ["French", "fr-fr", "la 2e fois", "la deuxième fois"],
  ["Dutch", "nl", "3.5 liter", "drie komma vijf liter"],
  ["Russian", "ru", "Стоит $5.", "Стоит пять долларов."],
  ["Swahili", "sw", "Inagharimu 5 €.", "Inagharimu yuro tano."],
  ["Amharic", "am", "50 %", "ሃምሳ በመቶ"],
  ["Arabic", "ar", "50 %", "خَمْسُونَ بالمئة"],
  ["Hindi", "hi", "$5", "पाँच डॉलर"],
  ["Urdu", "ur", "$5", "پانچ ڈالر"],
  ["Chinese", "cmn-latn-pinyin", "3.5", "三点五"],
  ["Japanese", "ja", "$5", "ごどる"],
  ["Korean", "ko", "$5", "오 달러"],
];

describe("espeak-ng says the normalised text as the words a reader says", () => {
  it.each(SPOKEN)("%s (%s): %s", async (language, voice, written, words) => {
    const normalised = normaliseText(written, language);
    const [before, after, expected] = await Promise.all([phonemes(written, voice), phonemes(normalised, voice), phonemes(words, voice)]);
    expect(after).not.toBe(before);
    const near = distance(after, expected);
    expect(near, `normalised: ${after}\nwords:      ${expected}`).toBeLessThanOrEqual(Math.max(2, Math.round(expected.length * 0.1)));
    expect(near).toBeLessThan(distance(before, expected));
  });
});

describe("through the TTS registry (every caller's speak path)", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let espeak: TtsEngine;
  let flite: TtsEngine;
  let stt: SttEngine;

  beforeAll(async () => {
    ({ path: dir, cleanup } = await tempDir("voiceloc-normalise-test-"));
    espeak = await createEspeakEngine({ logger });
    flite = await createFliteEngine({ logger });
    const media = createMediaToolkit(await resolveFfmpeg({ logger }), logger);
    stt = await createPocketsphinxEngine({ logger, media });
  });
  afterAll(async () => cleanup());

  it("speaks '$5' in English as the engine speaks 'five dollars', not as it speaks '$5' raw", async () => {
    const registry = createTtsRegistry([espeak]);
    const { engine } = registry.resolve("English", "espeak:en-us");
    const viaRegistry = await engine.synthesize({ text: "It costs $5 today.", language: "English", voice: "espeak:en-us", outPath: join(dir, "registry.wav") });
    const words = await espeak.synthesize({ text: "It costs five dollars today.", language: "English", voice: "espeak:en-us", outPath: join(dir, "words.wav") });
    const raw = await espeak.synthesize({ text: "It costs $5 today.", language: "English", voice: "espeak:en-us", outPath: join(dir, "raw.wav") });
    const [a, b, c] = await Promise.all([readFile(viaRegistry.wavPath), readFile(words.wavPath), readFile(raw.wavPath)]);
    expect(a.equals(b)).toBe(true);
    expect(a.equals(c)).toBe(false);
  });

  it("a date flite reads digit by digit is heard as a month and day (recognised by pocketsphinx)", async () => {
    const registry = createTtsRegistry([flite]);
    const voice = registry.defaultVoice("English");
    expect(voice).toBeDefined();
    const { engine } = registry.resolve("English", voice?.name);
    const text = "The meeting is on 2026-11-28 in the morning.";
    const viaRegistry = await engine.synthesize({ text, language: "English", voice: voice?.name, outPath: join(dir, "date.wav") });
    const raw = await flite.synthesize({ text, language: "English", voice: voice?.name, outPath: join(dir, "date-raw.wav") });
    const heard = async (path: string) => (await stt.transcribe({ path, language: "English" })).text.toLowerCase();
    const [normalised, unnormalised] = await Promise.all([heard(viaRegistry.wavPath), heard(raw.wavPath)]);
    expect(normalised).toMatch(/november/);
    expect(unnormalised).not.toMatch(/november/);
  }, 120_000);
});
