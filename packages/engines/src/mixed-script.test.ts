import { silentLogger } from "@voiceloc/log";
import { beforeAll, describe, expect, it } from "vitest";
import { detectOfflineEngines } from "./detect.ts";
import { LANGUAGES, type Language } from "./languages.ts";
import { createTtsRegistry, type TtsRegistry } from "./registry.ts";
import { readWavInfo, wavSeconds } from "./wav.ts";

/** A native sentence, and the same sentence with the Latin brand names "Google" and "iPhone" in it. */
const SENTENCES: Record<Language, [plain: string, mixed: string]> = {
  French: ["Bonjour à tous, bienvenue.", "Bonjour à tous, Google et iPhone, bienvenue."],
  English: ["Hello everyone, welcome.", "Hello everyone, Google and iPhone, welcome."],
  Amharic: ["ሰላም ለሁሉም ሰው። እንኳን ደህና መጣችሁ።", "ሰላም ለሁሉም ሰው Google iPhone። እንኳን ደህና መጣችሁ።"],
  Swahili: ["Habari za asubuhi, karibuni nyote.", "Habari za asubuhi, Google na iPhone, karibuni nyote."],
  Chinese: ["你好，世界。欢迎大家。", "你好，世界。欢迎大家使用Google和iPhone。"],
  Japanese: ["こんにちは、みなさん。ようこそ。", "こんにちは、みなさん。Google と iPhone へ ようこそ。"],
  Korean: ["안녕하세요, 여러분. 환영합니다.", "안녕하세요, 여러분. Google 과 iPhone 에 환영합니다."],
  German: ["Guten Morgen, herzlich willkommen.", "Guten Morgen, Google und iPhone, herzlich willkommen."],
  Russian: ["Привет, мир. Добро пожаловать.", "Привет, мир. Google и iPhone. Добро пожаловать."],
  Portuguese: ["Olá a todos, sejam bem-vindos.", "Olá a todos, Google e iPhone, sejam bem-vindos."],
  Spanish: ["Hola a todos, bienvenidos.", "Hola a todos, Google y iPhone, bienvenidos."],
  Italian: ["Buongiorno a tutti, benvenuti.", "Buongiorno a tutti, Google e iPhone, benvenuti."],
  Arabic: ["مرحبا بالجميع، أهلا وسهلا.", "مرحبا بالجميع Google و iPhone، أهلا وسهلا."],
  Dutch: ["Goedemorgen allemaal, welkom.", "Goedemorgen allemaal, Google en iPhone, welkom."],
  Hindi: ["नमस्ते दुनिया, आप सभी का स्वागत है।", "नमस्ते दुनिया, Google और iPhone, आप सभी का स्वागत है।"],
  Urdu: ["سب کو سلام، خوش آمدید۔", "سب کو سلام Google اور iPhone، خوش آمدید۔"],
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
    const [plain, mixed] = SENTENCES[language];
    const without = await speak(language, plain);
    const withNames = await speak(language, mixed);
    expect(without.seconds).toBeGreaterThan(0.5);
    // "Google" and "iPhone" take well over half a second to say in any voice.
    expect(withNames.seconds - without.seconds, `${registry.defaultVoice(language)?.name}`).toBeGreaterThan(0.5);
  });
});
