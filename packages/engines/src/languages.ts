/**
 * The service's languages. A local copy for now: it will later come from the contracts package.
 */
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

export function isLanguage(value: unknown): value is Language {
  return typeof value === "string" && (LANGUAGES as readonly string[]).includes(value);
}
