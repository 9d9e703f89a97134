import type { Language } from "./languages.ts";

/**
 * One short native sentence per language, spoken by every voice in its self-test (kana only for
 * Japanese: the offline Japanese voice cannot read kanji).
 */
export const SELF_TEST_SENTENCES: Record<Language, string> = {
  French: "Bonjour tout le monde, bienvenue à tous.",
  English: "Hello everyone, and welcome to the show.",
  Amharic: "ሰላም ለሁሉም ሰው። እንኳን ደህና መጣችሁ።",
  Swahili: "Habari za asubuhi, karibuni nyote.",
  Chinese: "你好，世界。欢迎大家。",
  Japanese: "こんにちは、みなさん。ようこそ。",
  Korean: "안녕하세요, 여러분. 환영합니다.",
  German: "Guten Morgen, herzlich willkommen.",
  Russian: "Привет, мир. Добро пожаловать.",
  Portuguese: "Olá a todos, sejam bem-vindos.",
  Spanish: "Hola a todos, bienvenidos al programa.",
  Italian: "Buongiorno a tutti, benvenuti.",
  Arabic: "مرحبا بالجميع، أهلا وسهلا.",
  Dutch: "Goedemorgen allemaal, welkom.",
  Hindi: "नमस्ते दुनिया, आप सभी का स्वागत है।",
  Urdu: "سب کو سلام، خوش آمدید۔",
};

/** The first word of the language's sentence: the tiny request a paid speech service is tested with. */
export function selfTestWord(language: Language): string {
  const sentence = SELF_TEST_SENTENCES[language];
  const word = /^[\p{L}\p{M}]+/u.exec(sentence)?.[0];
  return word ?? sentence;
}
