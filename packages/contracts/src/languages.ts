/** The Language enumeration of the contract: case-sensitive, exactly these values. */
export const LANGUAGES = [
  "French",
  "English",
  "Amharic",
  "Swahili",
  "Chinese",
  "Japanese",
  "Korean",
  "German",
  "Russian",
  "Portuguese",
  "Spanish",
  "Italian",
  "Arabic",
  "Dutch",
  "Hindi",
  "Urdu",
] as const;

export type Language = (typeof LANGUAGES)[number];

/** ISO 639-1 code of each language (accepted as input by speech synthesis). */
export const LANGUAGE_CODES: Record<Language, string> = {
  French: "fr",
  English: "en",
  Amharic: "am",
  Swahili: "sw",
  Chinese: "zh",
  Japanese: "ja",
  Korean: "ko",
  German: "de",
  Russian: "ru",
  Portuguese: "pt",
  Spanish: "es",
  Italian: "it",
  Arabic: "ar",
  Dutch: "nl",
  Hindi: "hi",
  Urdu: "ur",
};

/** ISO 639-2/T code of each language: the language tag of an audio or subtitle track in MP4 and Matroska. */
export const ISO_639_2_CODES: Record<Language, string> = {
  French: "fra",
  English: "eng",
  Amharic: "amh",
  Swahili: "swa",
  Chinese: "zho",
  Japanese: "jpn",
  Korean: "kor",
  German: "deu",
  Russian: "rus",
  Portuguese: "por",
  Spanish: "spa",
  Italian: "ita",
  Arabic: "ara",
  Dutch: "nld",
  Hindi: "hin",
  Urdu: "urd",
};

const BY_CODE = new Map<string, Language>(
  (Object.entries(LANGUAGE_CODES) as Array<[Language, string]>).map(([name, code]) => [code, name]),
);

export function isLanguage(value: unknown): value is Language {
  return typeof value === "string" && (LANGUAGES as readonly string[]).includes(value);
}

/** A language name or its ISO 639-1 code → the language name; undefined otherwise. */
export function languageFromNameOrCode(value: string): Language | undefined {
  return isLanguage(value) ? value : BY_CODE.get(value);
}
