/** Per-language facts for subtitles: the ISO 639-2 track tag and the font that covers the script. */
import type { Language } from "@voiceloc/contracts";

/** ISO 639-2/T codes, the language tag of an MP4 subtitle track (one table, in contracts). */
export { ISO_639_2_CODES as ISO_639_2 } from "@voiceloc/contracts";

/**
 * The Noto family (Debian fonts-noto-core, fonts-noto-cjk) libass draws each language with. "Noto Sans"
 * covers Latin and Cyrillic; Urdu needs Noto Nastaliq Urdu (Noto Sans lacks U+06C1 ہ).
 */
export const SUBTITLE_FONTS: Record<Language, string> = {
  French: "Noto Sans",
  English: "Noto Sans",
  Amharic: "Noto Sans Ethiopic",
  Swahili: "Noto Sans",
  Chinese: "Noto Sans CJK SC",
  Japanese: "Noto Sans CJK JP",
  Korean: "Noto Sans CJK KR",
  German: "Noto Sans",
  Russian: "Noto Sans",
  Portuguese: "Noto Sans",
  Spanish: "Noto Sans",
  Italian: "Noto Sans",
  Arabic: "Noto Naskh Arabic",
  Dutch: "Noto Sans",
  Hindi: "Noto Sans Devanagari",
  Urdu: "Noto Nastaliq Urdu",
};
