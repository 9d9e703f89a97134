/**
 * A lexicon is heard: speech made with a lexicon that aliases a made-up word is recognised (pocketsphinx,
 * offline) as containing the alias, and the same request without the lexicon is not.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { detectOfflineEngines } from "../detect.ts";
import { UnspeakableTextError } from "../errors.ts";
import { createTtsRegistry, type TtsRegistry } from "../registry.ts";
import { createPocketsphinxEngine } from "../stt/pocketsphinx.ts";
import type { SttEngine } from "../stt/types.ts";
import { synthesizeToFile } from "../synthesize.ts";
import type { LexiconForSpeech } from "./apply.ts";
import { parsePls } from "./pls.ts";

const logger = silentLogger();
let dir: string;
let cleanup: () => Promise<void>;
let registry: TtsRegistry;
let media: MediaToolkit;
let stt: SttEngine;

const NS = "http://www.w3.org/2005/01/pronunciation-lexicon";
const lexiconOf = (body: string): LexiconForSpeech => ({
  id: "l1",
  name: "words",
  entries: parsePls(`<lexicon version="1.0" xmlns="${NS}" alphabet="ipa" xml:lang="en-US">${body}</lexicon>`).entries,
});
const TEXT = "Today we saw the Zxqv near the river.";

async function speak(name: string, voice: string, lexicons: LexiconForSpeech[], text = TEXT): Promise<string> {
  const out = join(dir, `${name}.wav`);
  await synthesizeToFile({ registry, media, logger }, { text, language: "English", voice, format: "wav", outPath: out, lexicons });
  return out;
}

async function heard(name: string, voice: string, lexicons: LexiconForSpeech[]): Promise<string[]> {
  const out = await speak(name, voice, lexicons);
  const transcript = await stt.transcribe({ path: out, language: "English" });
  return transcript.text.toLowerCase().split(/[^a-z']+/).filter((word) => word !== "");
}

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-lexicon-test-"));
  registry = createTtsRegistry(await detectOfflineEngines({ logger }));
  media = createMediaToolkit(await resolveFfmpeg({ logger }), logger);
  stt = await createPocketsphinxEngine({ logger, media });
});
afterAll(async () => cleanup());

describe("lexicons in speech", () => {
  it("an alias is heard in place of the made-up word, and only with the lexicon", async () => {
    // words pocketsphinx reliably recognises from flite's slt voice
    const alias = lexiconOf("<lexeme><grapheme>Zxqv</grapheme><alias>quick brown fox</alias></lexeme>");
    const withLexicon = await heard("alias", "flite:slt", [alias]);
    const without = await heard("plain", "flite:slt", []);
    const aliasWords = ["quick", "brown", "fox"];
    expect(aliasWords.filter((word) => withLexicon.includes(word)).length, withLexicon.join(" ")).toBeGreaterThanOrEqual(2);
    expect(aliasWords.filter((word) => without.includes(word)), without.join(" ")).toEqual([]);
    // the rest of the sentence is still spoken
    expect(["today", "near", "river"].filter((word) => withLexicon.includes(word)).length, withLexicon.join(" ")).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it("an IPA phoneme is said by an espeak-ng voice: the made-up word sounds exactly as the word transcribed", async () => {
    // pocketsphinx hardly recognises espeak-ng's formant speech, so the sound itself is compared:
    // "Zxqv" said as /ˈwɪndoʊ/ is the same audio as espeak-ng saying "window"
    const phoneme = lexiconOf("<lexeme><grapheme>Zxqv</grapheme><phoneme>ˈwɪndoʊ</phoneme></lexeme>");
    const said = await readFile(await speak("phoneme", "espeak:en-us", [phoneme]));
    const word = await readFile(await speak("word", "espeak:en-us", [], TEXT.replace("Zxqv", "window")));
    const plain = await readFile(await speak("espeak-plain", "espeak:en-us", []));
    expect(said.length).toBe(word.length);
    expect(said.equals(word)).toBe(true);
    expect(plain.length).not.toBe(word.length);
  }, 120_000);

  it("a phoneme-only entry is refused with a voice that takes no phonemes, naming the entry", async () => {
    const phoneme = lexiconOf("<lexeme><grapheme>Zxqv</grapheme><phoneme>ˈlaɪthaʊs</phoneme></lexeme>");
    const attempt = synthesizeToFile({ registry, media, logger }, { text: TEXT, language: "English", voice: "flite:slt", format: "wav", outPath: join(dir, "no.wav"), lexicons: [phoneme] });
    await expect(attempt).rejects.toBeInstanceOf(UnspeakableTextError);
    await expect(attempt).rejects.toThrow(/'Zxqv' \(lexicon 'words'\)/);
  });
});
