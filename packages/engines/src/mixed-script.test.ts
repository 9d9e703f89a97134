import { silentLogger } from "@voiceloc/log";
import { beforeAll, describe, expect, it } from "vitest";
import { detectOfflineEngines } from "./detect.ts";
import { LANGUAGES, type Language } from "./languages.ts";
import { createTtsRegistry, type TtsRegistry } from "./registry.ts";
import { readWavInfo, wavSeconds } from "./wav.ts";

/**
 * A native sentence cut in two: spoken as it is, and with only the Latin brand names "Google iPhone"
 * put between the halves (no native word added, so any extra length is the brand names).
 */
const SENTENCES: Record<Language, [before: string, after: string]> = {
  French: ["Bonjour à tous,", "bienvenue."],
  English: ["Hello everyone,", "welcome."],
  Amharic: ["ሰላም ለሁሉም ሰው", "። እንኳን ደህና መጣችሁ።"],
  Swahili: ["Habari za asubuhi,", "karibuni nyote."],
  Chinese: ["你好，世界。欢迎大家使用", "。"],
  Japanese: ["こんにちは、みなさん。", "へ ようこそ。"],
  Korean: ["안녕하세요, 여러분.", "환영합니다."],
  German: ["Guten Morgen,", "herzlich willkommen."],
  Russian: ["Привет, мир.", "Добро пожаловать."],
  Portuguese: ["Olá a todos,", "sejam bem-vindos."],
  Spanish: ["Hola a todos,", "bienvenidos."],
  Italian: ["Buongiorno a tutti,", "benvenuti."],
  Arabic: ["مرحبا بالجميع", "، أهلا وسهلا."],
  Dutch: ["Goedemorgen allemaal,", "welkom."],
  Hindi: ["नमस्ते दुनिया,", "आप सभी का स्वागत है।"],
  Urdu: ["سب کو سلام", "، خوش آمدید۔"],
};

let registry: TtsRegistry;

beforeAll(async () => {
  registry = createTtsRegistry(await detectOfflineEngines({ logger: silentLogger() }));
  await registry.selfTest();
});

async function speak(language: Language, text: string): Promise<{ seconds: number; voice: string }> {
  const { engine, voice } = registry.resolve(language);
  const result = await engine.synthesize({ text, language, voice: voice.name });
  const info = await readWavInfo(result.wavPath);
  return { seconds: info ? wavSeconds(info) : 0, voice: result.voice };
}

describe("mixed-script text with each language's default voice (real engines)", () => {
  it("every language has a working default voice after the self-test", () => {
    expect(registry.capabilities().languages).toEqual([...LANGUAGES]);
  });

  it.each(LANGUAGES)("%s: Latin brand names inside native text are spoken, not dropped", async (language) => {
    const [before, after] = SENTENCES[language];
    const plain = `${before} ${after}`;
    const mixed = `${before} Google iPhone ${after}`;
    const without = await speak(language, plain);
    const withNames = await speak(language, mixed);
    expect(without.seconds).toBeGreaterThan(0.5);
    // "Google" and "iPhone" take well over half a second to say in any voice.
    expect(withNames.seconds - without.seconds, `${registry.defaultVoice(language)?.name}`).toBeGreaterThan(0.5);
  });
});
