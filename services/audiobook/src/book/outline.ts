/**
 * From a document's blocks (headings and paragraphs, in reading order) to chapters. Markdown and HTML
 * books share the rule; EPUB books are cut by their table of contents instead (epub.ts).
 */
import { hasWords, normaliseText } from "../text.ts";

export type Block =
  | { kind: "heading"; level: number; text: string }
  | { kind: "text"; text: string }
  /** An element whose id a table of contents points at (EPUB): a chapter may start here. */
  | { kind: "anchor"; id: string };

export interface Chapter {
  /** The chapter's title, or null when the source gives none (the pipeline titles it). */
  title: string | null;
  /** Plain text to speak: paragraphs separated by a blank line, no markup. */
  text: string;
}

/** Whitespace collapsed to single spaces, trimmed. */
export const squash = (s: string): string => s.replace(/\s+/gu, " ").trim();

/** The longest title kept (characters); longer ones are cut at a word and end with "…". */
export const MAX_TITLE_CHARACTERS = 200;

/** A title: whitespace collapsed, at most MAX_TITLE_CHARACTERS, null when empty. */
export function chapterTitle(raw: string): string | null {
  const title = squash(raw);
  if (title === "") return null;
  if (title.length <= MAX_TITLE_CHARACTERS) return title;
  const cut = title.slice(0, MAX_TITLE_CHARACTERS - 1);
  const space = cut.lastIndexOf(" ");
  return `${(space > MAX_TITLE_CHARACTERS / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** Chapter text from its paragraphs: normalised like a text book (normaliseText). */
export const chapterText = (paragraphs: readonly string[]): string => normaliseText(paragraphs.join("\n\n"));

/**
 * The chapters of a document by its headings (those up to `maxSplitLevel`; deeper ones are spoken as
 * paragraphs). The splitting level is the highest one (smallest number) used more than once; when no
 * level repeats, the highest level used. Headings at the splitting level, or above it, start a chapter
 * and are its title (not repeated in its text); deeper headings stay in the text as a paragraph. A
 * heading above the splitting level that opens the document (before any text) is the book's title
 * rather than a chapter, unless it is the only heading there is. Text before the first chapter
 * heading is a chapter with a null title. Chapters with nothing to say (no letter or digit) are
 * dropped: the book's chapters are what a listener hears.
 */
export function chaptersFromBlocks(blocks: readonly Block[], maxSplitLevel: number): { title: string | null; chapters: Chapter[] } {
  const counts = new Map<number, number>();
  for (const b of blocks) if (b.kind === "heading" && b.level <= maxSplitLevel && b.text !== "") counts.set(b.level, (counts.get(b.level) ?? 0) + 1);
  const levels = [...counts.keys()].sort((a, b) => a - b);
  const repeated = levels.find((l) => (counts.get(l) ?? 0) > 1);
  const split = repeated ?? levels[0];

  let bookTitle: string | null = null;
  const chapters: Chapter[] = [];
  let title: string | null = null;
  let paragraphs: string[] = [];
  let started = false; // a chapter heading or some text has been met
  const close = () => {
    const text = chapterText(paragraphs);
    if (hasWords(text)) chapters.push({ title, text });
    paragraphs = [];
  };
  for (const b of blocks) {
    if (b.kind === "anchor") continue;
    if (b.kind === "heading" && split !== undefined && b.level <= split && b.text !== "") {
      if (b.level < split && !started && bookTitle === null) {
        bookTitle = chapterTitle(b.text);
        continue;
      }
      if (started) close();
      title = chapterTitle(b.text);
      started = true;
      continue;
    }
    if (b.text === "") continue;
    paragraphs.push(b.text);
    if (hasWords(b.text)) started = true;
  }
  close();
  if (bookTitle === null && split !== undefined && repeated === undefined) {
    // The only heading of its level names the book too when it opens it.
    const first = blocks.find((b) => b.kind !== "anchor" && (b.kind === "heading" || hasWords(b.text)));
    if (first?.kind === "heading" && first.level === split) bookTitle = chapterTitle(first.text);
  }
  return { title: bookTitle, chapters };
}
