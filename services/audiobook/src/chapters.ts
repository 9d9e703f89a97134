/**
 * A book's chapters in the spoken file: each chapter is spoken as its own run of chunks (no chunk
 * crosses a chapter), so its start and end are the measured durations of the chunks before it and of
 * its own. A chapter without a title (a text with no headings, or the text before the first heading)
 * is cut at chunk boundaries into parts of about 30 minutes, titled "Part N" in the target language.
 */
import type { Language } from "@voiceloc/contracts";

/** How long a part of a book without headings is, about (seconds). */
export const PART_SECONDS = 30 * 60;

/** Most chapters a book file holds (the ID3 `CTOC` and the MP4 `chpl` count them in one byte). */
export const MAX_FILE_CHAPTERS = 255;

/** The word "Part" in each language of the contract ("Part 3"). */
export const PART_WORD: Readonly<Record<Language, string>> = {
  French: "Partie",
  English: "Part",
  Amharic: "ክፍል",
  Swahili: "Sehemu",
  Chinese: "第{n}部分",
  Japanese: "第{n}部",
  Korean: "제{n}부",
  German: "Teil",
  Russian: "Часть",
  Portuguese: "Parte",
  Spanish: "Parte",
  Italian: "Parte",
  Arabic: "الجزء",
  Dutch: "Deel",
  Hindi: "भाग",
  Urdu: "حصہ",
};

/** "Part 3" in the target language (a pattern with `{n}` where the number goes inside the word). */
export function partTitle(language: Language, n: number): string {
  const word = PART_WORD[language];
  return word.includes("{n}") ? word.replace("{n}", String(n)) : `${word} ${n}`;
}

/** A chapter as the record and the file show it. */
export interface TimedChapter {
  title: string;
  start_seconds: number;
  end_seconds: number;
}

/** A chapter of the spoken text: its title (null: untitled, cut into parts) and how many chunks speak it. */
export interface SpokenChapter {
  title: string | null;
  chunks: number;
}

const round3 = (s: number) => Math.round(s * 1000) / 1000;

/**
 * The chapters' times from the measured seconds of every chunk, in order. Untitled chapters are cut
 * into about-30-minute parts at chunk boundaries ("Part N", numbered across the book). More chapters
 * than a file holds are merged, each kept chapter running to the next kept one.
 */
export function timeChapters(chapters: readonly SpokenChapter[], chunkSeconds: readonly number[], language: Language): TimedChapter[] {
  const total = chapters.reduce((n, c) => n + c.chunks, 0);
  if (total !== chunkSeconds.length) throw new Error(`The chapters hold ${total} chunks but ${chunkSeconds.length} were measured.`);
  const out: TimedChapter[] = [];
  let at = 0;
  let chunk = 0;
  let part = 0;
  for (const chapter of chapters) {
    const seconds = chunkSeconds.slice(chunk, chunk + chapter.chunks);
    chunk += chapter.chunks;
    const length = seconds.reduce((a, b) => a + b, 0);
    if (chapter.title !== null) {
      out.push({ title: chapter.title, start_seconds: at, end_seconds: at + length });
      at += length;
      continue;
    }
    // Parts of about PART_SECONDS: as many as the length calls for, each ending at the chunk boundary nearest its share.
    const parts = Math.max(1, Math.round(length / PART_SECONDS));
    let start = at;
    let elapsed = 0;
    let next = 1;
    for (const [i, s] of seconds.entries()) {
      elapsed += s;
      const last = i === seconds.length - 1;
      const mark = (length * next) / parts;
      const after = elapsed + (seconds[i + 1] ?? 0);
      // Close a part at this boundary when it is nearer its mark than the next boundary would be.
      if (last || (next < parts && Math.abs(elapsed - mark) <= Math.abs(after - mark))) {
        part++;
        out.push({ title: partTitle(language, part), start_seconds: start, end_seconds: at + elapsed });
        start = at + elapsed;
        next++;
      }
    }
    at += length;
  }
  return mergeChapters(out).map((c) => ({ title: c.title, start_seconds: round3(c.start_seconds), end_seconds: round3(c.end_seconds) }));
}

/** At most MAX_FILE_CHAPTERS: every k-th chapter kept, running to the next one kept. */
function mergeChapters(chapters: TimedChapter[]): TimedChapter[] {
  if (chapters.length <= MAX_FILE_CHAPTERS) return chapters;
  const step = Math.ceil(chapters.length / MAX_FILE_CHAPTERS);
  const kept: TimedChapter[] = [];
  for (let i = 0; i < chapters.length; i += step) {
    const group = chapters.slice(i, i + step);
    const first = group[0];
    const last = group[group.length - 1];
    if (first !== undefined && last !== undefined) kept.push({ title: first.title, start_seconds: first.start_seconds, end_seconds: last.end_seconds });
  }
  return kept;
}
