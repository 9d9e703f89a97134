import { UnspeakableTextError } from "./errors.ts";

/** Normalises text for speech: NFC, no control characters, single spaces. Refuses text with nothing to say. */
export function prepareText(text: string): string {
  const cleaned = text
    .normalize("NFC")
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F\u200B\uFEFF]/g, "")
    .replace(/[\s\u00A0]+/g, " ")
    .trim();
  if (!/[\p{L}\p{N}]/u.test(cleaned)) {
    throw new UnspeakableTextError("TEXT_EMPTY", "There is no text to speak.");
  }
  return cleaned;
}

const SENTENCE_END = /[.!?…。！？｡।॥۔؟።፧]/u;
const CLOSERS = /["'”’»）)\]」』】]/u;
const CLAUSE_BREAK = /[,;:、，；：،؛፣]/u;

/** Splits text after sentence-ending punctuation (Latin, CJK, Devanagari, Arabic/Urdu, Ethiopic). */
export function splitSentences(text: string): string[] {
  const chars = [...text];
  const sentences: string[] = [];
  let current = "";
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] ?? "";
    current += c;
    if (!SENTENCE_END.test(c)) continue;
    while (i + 1 < chars.length && (SENTENCE_END.test(chars[i + 1] ?? "") || CLOSERS.test(chars[i + 1] ?? ""))) current += chars[++i];
    const next = chars[i + 1];
    // "3.5" or "e.g." inside a word is not a sentence end; CJK enders need no following space.
    if (next === undefined || /\s/u.test(next) || /[。！？｡।॥۔؟።]/u.test(c)) {
      if (current.trim() !== "") sentences.push(current.trim());
      current = "";
    }
  }
  if (current.trim() !== "") sentences.push(current.trim());
  return sentences;
}

/** Cuts one over-long sentence at clause breaks, then spaces, then anywhere, keeping pieces ≤ max. */
function splitLong(sentence: string, max: number): string[] {
  const pieces: string[] = [];
  let rest = sentence;
  while ([...rest].length > max) {
    const chars = [...rest];
    const window = chars.slice(0, max);
    let cut = -1;
    for (let i = window.length - 1; i > max / 3 && cut < 0; i--) if (CLAUSE_BREAK.test(window[i] ?? "")) cut = i + 1;
    for (let i = window.length - 1; i > max / 3 && cut < 0; i--) if (/\s/u.test(window[i] ?? "")) cut = i + 1;
    if (cut < 0) cut = max;
    pieces.push(chars.slice(0, cut).join("").trim());
    rest = chars.slice(cut).join("").trim();
  }
  if (rest !== "") pieces.push(rest);
  return pieces.filter((p) => p !== "");
}

/**
 * Splits text into chunks of at most `maxChars` characters (code points), breaking between sentences
 * where possible, so each chunk is one comfortable engine call.
 */
export function splitText(text: string, maxChars: number): string[] {
  if (!Number.isInteger(maxChars) || maxChars < 20) throw new RangeError("maxChars must be an integer ≥ 20");
  if ([...text].length <= maxChars) return [text];
  const chunks: string[] = [];
  let current = "";
  for (const sentence of splitSentences(text).flatMap((s) => ([...s].length > maxChars ? splitLong(s, maxChars) : [s]))) {
    const joined = current === "" ? sentence : `${current} ${sentence}`;
    if ([...joined].length <= maxChars) {
      current = joined;
    } else {
      chunks.push(current);
      current = sentence;
    }
  }
  if (current !== "") chunks.push(current);
  return chunks;
}

const TYPOGRAPHY: Record<string, string> = {
  "\u2018": "'", "\u2019": "'", "\u201A": "'", "\u201B": "'",
  "\u201C": '"', "\u201D": '"', "\u201E": '"', "\u2032": "'", "\u2033": '"',
  "\u2013": "-", "\u2014": " - ", "\u2212": "-", "\u2026": "...", "\u2022": ",",
};

function replaceTypography(text: string): string {
  return text.replace(/[\u2018\u2019\u201A\u201B\u201C\u201D\u201E\u2032\u2033\u2013\u2014\u2212\u2026\u2022]/g, (c) => TYPOGRAPHY[c] ?? c);
}

/** Text for engines that only read ASCII (flite, festival English): accents dropped, other symbols removed. */
export function toAsciiText(text: string): string {
  return replaceTypography(text)
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .replace(/[^\x20-\x7E\n]/g, " ")
    .replace(/ {2,}/g, " ")
    .trim();
}

/** ISO-8859-1 bytes for engines that read Latin-1 (festival Italian); characters outside it become spaces. */
export function toLatin1(text: string): Buffer {
  const mapped = replaceTypography(text.normalize("NFC")).replace(/[^\x20-\x7E\n\u00A0-\u00FF]/g, " ");
  return Buffer.from(mapped, "latin1");
}
