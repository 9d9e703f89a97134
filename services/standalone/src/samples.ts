import type { Language } from "@voiceloc/contracts";

/** A short native sentence per language, for end-to-end synthesis checks. */
export const SAMPLE_SENTENCES: Record<Language, string> = {
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
