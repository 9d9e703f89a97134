/**
 * Splitting text for translation engines: chunks end on paragraph or sentence boundaries, each at
 * most `maxChars` long, and the whitespace between them (paragraph breaks, line breaks, spaces) is
 * remembered so translated chunks are put back together with the original layout.
 */

/** One piece of text sent to an engine in a single call. */
export interface TranslationChunk {
  /** The text of the chunk: its paragraphs joined by their original breaks. */
  text: string;
  /** The chunk's paragraphs (or the part of one long paragraph that fits), without surrounding whitespace. */
  paragraphs: string[];
  /** The original breaks between `paragraphs` (always one fewer). */
  breaks: string[];
  /** The original whitespace that follows the chunk (a paragraph break, a space, or the text's trailing whitespace). */
  after: string;
}

export interface ChunkPlan {
  /** Whitespace before the first chunk. */
  leading: string;
  chunks: TranslationChunk[];
}

/** A run of whitespace holding at least two line breaks: a paragraph break. */
const PARAGRAPH_BREAK = /[^\S\n]*\n(?:[^\S\n]*\n)+[^\S\n]*/g;
/** Sentence-ending punctuation (Latin, CJK, Devanagari, Arabic/Urdu, Ethiopic). */
const SENTENCE_END = /[.!?…。！？｡।॥۔؟።፧]/u;
/** Enders that need no following space (CJK, Devanagari danda, Urdu full stop, Ethiopic). */
const TIGHT_END = /[。！？｡।॥۔؟።]/u;
const CLOSERS = /["'”’»）)\]」』】]/u;
const CLAUSE_BREAK = /[,;:、，；：،؛፣]/u;

/** True when the whitespace run is a paragraph break (two or more line breaks). */
export function isParagraphBreak(gap: string): boolean {
  return (gap.match(/\n/g)?.length ?? 0) >= 2;
}

/** Splits at paragraph breaks, returning the paragraphs and the exact breaks between them. */
export function splitParagraphs(body: string): { paragraphs: string[]; breaks: string[] } {
  const paragraphs: string[] = [];
  const breaks: string[] = [];
  let last = 0;
  for (const match of body.matchAll(PARAGRAPH_BREAK)) {
    paragraphs.push(body.slice(last, match.index));
    breaks.push(match[0]);
    last = match.index + match[0].length;
  }
  paragraphs.push(body.slice(last));
  return { paragraphs, breaks };
}

interface Unit {
  text: string;
  /** Whitespace after the unit. */
  gap: string;
}

/** Sentences of one paragraph, each with the whitespace that follows it. */
function sentences(paragraph: string): Unit[] {
  const units: Unit[] = [];
  let start = 0;
  let i = 0;
  while (i < paragraph.length) {
    const c = paragraph[i] ?? "";
    i++;
    if (!SENTENCE_END.test(c)) continue;
    while (i < paragraph.length && (SENTENCE_END.test(paragraph[i] ?? "") || CLOSERS.test(paragraph[i] ?? ""))) i++;
    const next = paragraph[i];
    // "3.5" or "e.g." inside a word is not a sentence end.
    if (next !== undefined && !/\s/u.test(next) && !TIGHT_END.test(c)) continue;
    let end = i;
    while (end < paragraph.length && /\s/u.test(paragraph[end] ?? "")) end++;
    units.push({ text: paragraph.slice(start, i), gap: paragraph.slice(i, end) });
    start = end;
    i = end;
  }
  if (start < paragraph.length) units.push({ text: paragraph.slice(start), gap: "" });
  return units;
}

/** Moves a cut that would split a surrogate pair one position back. */
function safeCut(text: string, cut: number): number {
  const code = text.charCodeAt(cut - 1);
  return code >= 0xd800 && code <= 0xdbff && cut > 1 ? cut - 1 : cut;
}

/** Cuts one over-long sentence at clause breaks, then spaces, then anywhere; pieces are at most `max` long. */
function splitLong(unit: Unit, max: number): Unit[] {
  const pieces: Unit[] = [];
  let rest = unit.text;
  while (rest.length > max) {
    let cut = -1;
    for (let i = max - 1; i > max / 3 && cut < 0; i--) if (CLAUSE_BREAK.test(rest[i] ?? "") && /\s/u.test(rest[i + 1] ?? "")) cut = i + 1;
    for (let i = max; i > max / 3 && cut < 0; i--) if (/\s/u.test(rest[i] ?? "")) cut = i;
    if (cut < 0) cut = safeCut(rest, max);
    let end = cut;
    while (end < rest.length && /\s/u.test(rest[end] ?? "")) end++;
    pieces.push({ text: rest.slice(0, cut).trimEnd(), gap: rest.slice(rest.slice(0, cut).trimEnd().length, end) });
    rest = rest.slice(end);
  }
  pieces.push({ text: rest, gap: unit.gap });
  return pieces.filter((p) => p.text !== "");
}

/**
 * Plans the chunks for `text`: paragraphs are kept whole and packed together while they fit in
 * `maxChars`; a longer paragraph is split between sentences (an over-long sentence at a clause break
 * or space). Joining `leading`, then each chunk's text followed by its `after`, gives back `text`.
 */
export function planChunks(text: string, maxChars: number): ChunkPlan {
  if (!Number.isInteger(maxChars) || maxChars < 20) throw new RangeError("maxChars must be an integer of at least 20");
  const leading = /^\s*/u.exec(text)?.[0] ?? "";
  if (leading.length === text.length) return { leading: text, chunks: [] };
  const trailing = /\s*$/u.exec(text)?.[0] ?? "";
  const body = text.slice(leading.length, text.length - trailing.length);

  // Units no longer than maxChars, each marked with the paragraph it belongs to.
  const { paragraphs, breaks } = splitParagraphs(body);
  const units: (Unit & { paragraph: number })[] = [];
  paragraphs.forEach((paragraph, index) => {
    const gap = breaks[index] ?? trailing;
    const parts = paragraph.length <= maxChars ? [{ text: paragraph, gap: "" }] : sentences(paragraph).flatMap((s) => (s.text.length > maxChars ? splitLong(s, maxChars) : [s]));
    parts.forEach((part, i) => units.push({ text: part.text, gap: i === parts.length - 1 ? gap : part.gap, paragraph: index }));
  });

  const chunks: TranslationChunk[] = [];
  let current: (typeof units)[number][] = [];
  const flush = (): void => {
    const first = current[0];
    const last = current.at(-1);
    if (!first || !last) return;
    const chunkParagraphs: string[] = [];
    const chunkBreaks: string[] = [];
    let paragraphText = "";
    current.forEach((unit, i) => {
      paragraphText += unit.text;
      if (i === current.length - 1) return;
      if ((current[i + 1]?.paragraph ?? unit.paragraph) !== unit.paragraph) {
        chunkParagraphs.push(paragraphText);
        chunkBreaks.push(unit.gap);
        paragraphText = "";
      } else {
        paragraphText += unit.gap;
      }
    });
    chunkParagraphs.push(paragraphText);
    chunks.push({ text: joinParagraphs(chunkParagraphs, chunkBreaks), paragraphs: chunkParagraphs, breaks: chunkBreaks, after: last.gap });
    current = [];
  };
  let length = 0;
  for (const unit of units) {
    const previous = current.at(-1);
    const added = (previous ? previous.gap.length : 0) + unit.text.length;
    if (previous && length + added > maxChars) {
      flush();
      length = 0;
    }
    length += current.length === 0 ? unit.text.length : added;
    current.push(unit);
  }
  flush();
  return { leading, chunks };
}

/** Interleaves paragraphs with the breaks between them. */
export function joinParagraphs(paragraphs: readonly string[], breaks: readonly string[]): string {
  let out = "";
  paragraphs.forEach((paragraph, i) => {
    out += paragraph;
    if (i < paragraphs.length - 1) out += breaks[i] ?? "\n\n";
  });
  return out;
}

/** Puts translated chunks (one per chunk of the plan, same order) back together with the original whitespace. */
export function assembleChunks(plan: ChunkPlan, translated: readonly string[]): string {
  let out = plan.leading;
  plan.chunks.forEach((chunk, i) => {
    out += (translated[i] ?? "") + chunk.after;
  });
  return out;
}

/** Cleans text before translation: line endings to "\n", control characters (except tab and line break) removed, NFC. */
export function normalizeTranslationInput(text: string): string {
  return text
    .replace(/\r\n?/g, "\n")
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F\uFEFF]/g, "")
    .normalize("NFC");
}

/** Runs `task` for each item with at most `limit` running at once; results keep the input order. */
export async function mapInOrder<T, R>(items: readonly T[], limit: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const index = next++;
      try {
        results[index] = await task(items[index] as T, index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}
