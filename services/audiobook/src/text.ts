/**
 * The book's text: decoding the uploaded bytes, normalising them, and cutting the text into
 * sentence-bounded chunks (one engine call each).
 */
import { splitSentences, splitText } from "@voiceloc/engines";

/** Why the uploaded file could not be used as the text of a book; the message is for the user. */
export class BookTextError extends Error {
  override name = "BookTextError";
  readonly code: "not_text" | "empty";
  constructor(code: "not_text" | "empty", message: string) {
    super(message);
    this.code = code;
  }
}

const notText = (reason: string) => new BookTextError("not_text", `The file is not text: ${reason}.`);

function decodeStrict(bytes: Uint8Array, encoding: "utf-8" | "utf-16le", what: string): string {
  try {
    return new TextDecoder(encoding, { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw notText(what);
  }
}

/** Controls that do not belong in text (tab, line feed, form feed and carriage return do). */
const BINARY_CONTROLS = /[\u0000-\u0008\u000E-\u001F\u007F]/gu;

/**
 * Decodes a text file: UTF-8 (with or without a byte order mark) or UTF-16 LE/BE with a byte order
 * mark. Refuses binary files (NUL bytes, invalid UTF-8, many control characters) and UTF-32 with
 * a BookTextError saying why.
 */
export function decodeText(bytes: Uint8Array): string {
  const b = (i: number) => bytes[i];
  let text: string;
  if (b(0) === 0x00 && b(1) === 0x00 && b(2) === 0xfe && b(3) === 0xff) {
    throw notText("it is encoded as UTF-32, which is not supported (save it as UTF-8)");
  } else if (b(0) === 0xff && b(1) === 0xfe && b(2) === 0x00 && b(3) === 0x00 && bytes.length % 4 === 0 && bytes.length >= 8) {
    throw notText("it is encoded as UTF-32, which is not supported (save it as UTF-8)");
  } else if (b(0) === 0xef && b(1) === 0xbb && b(2) === 0xbf) {
    text = decodeStrict(bytes.subarray(3), "utf-8", "it is not valid UTF-8 (save it as UTF-8 or as UTF-16 with a byte order mark)");
  } else if ((b(0) === 0xff && b(1) === 0xfe) || (b(0) === 0xfe && b(1) === 0xff)) {
    const body = bytes.subarray(2);
    if (body.length % 2 !== 0) throw notText("it starts like UTF-16 text but has an odd number of bytes");
    let le = body;
    if (b(0) === 0xfe) {
      // Big endian: swap each pair of bytes, then decode as little endian.
      const swapped = new Uint8Array(body.length);
      for (let i = 0; i + 1 < body.length; i += 2) {
        swapped[i] = body[i + 1] ?? 0;
        swapped[i + 1] = body[i] ?? 0;
      }
      le = swapped;
    }
    text = decodeStrict(le, "utf-16le", "it starts like UTF-16 text but holds invalid UTF-16");
  } else {
    if (bytes.includes(0)) throw notText("it contains binary data (NUL bytes), like an image, audio or document file");
    text = decodeStrict(bytes, "utf-8", "it is not valid UTF-8 (save it as UTF-8 or as UTF-16 with a byte order mark)");
  }
  if (text.includes("\u0000")) throw notText("it contains binary data (NUL characters)");
  const controls = text.match(BINARY_CONTROLS)?.length ?? 0;
  if (controls > 0 && controls > text.length / 100) throw notText("it contains many control characters, like a binary file");
  return text;
}

const SENTENCE_END = /[.!?…。！？｡।॥۔؟።][”’"'»)\]」』】]*$/u;
const LINE_END_BREAK = /[.!?…。！？｡।॥۔؟።:][”’"'»)\]」』】]*$/u;

/**
 * Normalises decoded text: NFC, line breaks unified, control and zero-width characters removed,
 * whitespace runs collapsed to one space. Paragraphs are kept, separated by one blank line: a blank
 * line always separates paragraphs; a single line break does too when the line ends a sentence
 * (otherwise it is a wrapped line, joined with a space). Returns "" when nothing is left.
 */
export function normaliseText(text: string): string {
  const unified = text
    .normalize("NFC")
    .replace(/\r\n?|\u2028|\u0085/gu, "\n")
    .replace(/[\u2029\f\v]/gu, "\n\n")
    .replace(/[\u0000-\u0008\u000E-\u001F\u007F-\u0084\u0086-\u009F\u200B\u2060\uFEFF]/gu, "");
  const paragraphs: string[] = [];
  for (const block of unified.split(/\n[^\S\n]*\n/u)) {
    let current = "";
    for (const rawLine of block.split("\n")) {
      const line = rawLine.replace(/\s+/gu, " ").trim();
      if (line === "") continue;
      current = current === "" ? line : `${current} ${line}`;
      if (LINE_END_BREAK.test(line)) {
        paragraphs.push(current);
        current = "";
      }
    }
    if (current !== "") paragraphs.push(current);
  }
  return paragraphs.join("\n\n");
}

/** True when the text holds something a voice can say (a letter or a digit). */
export function hasWords(text: string): boolean {
  return /[\p{L}\p{N}]/u.test(text);
}

const length = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

/**
 * Cuts normalised text into chunks of at most `maxChars` characters (code points): each paragraph
 * is split between sentences with the engines' splitText, then the pieces are packed into chunks,
 * paragraphs kept apart by a blank line inside a chunk. Chunks without a letter or digit (e.g. a
 * line of asterisks on its own) are dropped: there is nothing in them to say.
 */
export function chunkText(text: string, maxChars: number): string[] {
  return packText(
    text,
    (paragraph) => splitText(paragraph, maxChars),
    () => maxChars,
  );
}

/** A paragraph's sentences, each over-long one cut into pieces of at most `pieceChars` (the pieces of a cut by limits). */
const sentencePieces =
  (pieceChars: number) =>
  (paragraph: string): string[] =>
    splitSentences(paragraph).flatMap((sentence) => splitText(sentence, pieceChars));

/**
 * Packs the pieces of each paragraph (`piecesOf`, given the trimmed paragraph) into chunks, the chunk
 * after `index` earlier ones of at most `limitFor(index)` characters; paragraphs inside a chunk stay
 * apart by a blank line.
 */
function packText(text: string, piecesOf: (paragraph: string) => string[], limitFor: (index: number) => number): string[] {
  const chunks: string[] = [];
  let current = "";
  let currentLength = 0;
  let limit = limitFor(0);
  for (const paragraph of text.split("\n\n")) {
    if (paragraph.trim() === "") continue;
    let first = true;
    for (const piece of piecesOf(paragraph.trim())) {
      const pieceLength = length(piece);
      const separator = first ? "\n\n" : " ";
      first = false;
      if (current !== "" && currentLength + separator.length + pieceLength <= limit) {
        current += separator + piece;
        currentLength += separator.length + pieceLength;
      } else {
        if (current !== "") {
          chunks.push(current);
          limit = limitFor(chunks.length);
        }
        current = piece;
        currentLength = pieceLength;
      }
    }
  }
  if (current !== "") chunks.push(current);
  // Dropped after packing: a replay by limits counts the same chunks.
  return chunks.filter(hasWords);
}

/**
 * The cut of a plan stored by an earlier version, which tapered each core's share (each chunk packed
 * to its own limit, the plan's `chunkLimits`: big ones, halving towards the share's end), again from
 * its limits alone, so a redelivery joins its chunks with the stored ones whatever its core count.
 */
export function cutTextWithin(text: string, limits: readonly number[]): string[] {
  if (limits.length === 0) return [];
  const pieceChars = Math.min(...limits);
  const last = limits[limits.length - 1] ?? pieceChars;
  return packText(text, sentencePieces(pieceChars), (index) => limits[index] ?? last);
}

/**
 * The text handed to the voice for one chunk: paragraphs joined by spaces, a full stop added to a
 * paragraph that does not end a sentence (a heading), so the voice pauses there instead of running
 * the heading into the next sentence.
 */
export function speakableText(chunk: string): string {
  return chunk
    .split("\n\n")
    .map((p) => p.trim())
    .filter((p) => p !== "")
    .map((p) => (SENTENCE_END.test(p) || !/[\p{L}\p{N}]$/u.test(p) ? p : `${p}.`))
    .join(" ");
}
