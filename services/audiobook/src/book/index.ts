/**
 * A book file to chapters of plain text to speak: `readBook` sniffs the format from the bytes
 * (sniff.ts) and reads plain text, Markdown, HTML/XHTML or EPUB 2/3, refusing in plain words (a
 * BookInputError, which is a BookTextError) what it cannot read, and stopping hostile files at their
 * bounds: the characters of text produced (`maxCharacters`, counted as the text grows), the bytes an
 * EPUB unpacks to (`maxUnpackedBytes`, counted as they inflate) and its number of files (`maxEntries`).
 * Nothing is written to disk; no DTD or external entity is ever read.
 */
import { readFile } from "node:fs/promises";
import { hasWords, normaliseText } from "../text.ts";
import { decodeMarkup, decodePlain } from "./decode.ts";
import { readEpub } from "./epub.ts";
import { BookInputError, TextBudget } from "./errors.ts";
import { htmlBlocks } from "./html.ts";
import { readMarkdown } from "./markdown.ts";
import { chapterTitle, chaptersFromBlocks, type Chapter } from "./outline.ts";
import { looksLikeHtml, looksLikeHtmlBytes, looksLikeMarkdown, sniffBytes } from "./sniff.ts";

export { BookInputError, type BookInputReason } from "./errors.ts";
export type { Chapter } from "./outline.ts";

export type BookFormat = "text" | "markdown" | "html" | "epub";

export interface Book {
  format: BookFormat;
  /** The book's title when the source names it (EPUB `dc:title`, HTML `<title>`, an opening heading). */
  title?: string;
  /** In reading order; never empty. */
  chapters: Chapter[];
}

export interface ReadBookOptions {
  /** The most characters of text to speak; more is refused as soon as the text grows past it. */
  maxCharacters: number;
  /** The most bytes an EPUB may unpack to, across every file read from it. */
  maxUnpackedBytes: number;
  /** The most files an EPUB may hold (default 10,000). */
  maxEntries?: number;
  signal?: AbortSignal;
}

export const DEFAULT_MAX_BOOK_ENTRIES = 10_000;

/** HTML headings that cut chapters: h1–h3 (h4–h6 are spoken as paragraphs). */
const HTML_SPLIT_LEVEL = 3;

/** Reads a book from its bytes (or a file path): its format, title and chapters. */
export async function readBook(source: Buffer | string, options: ReadBookOptions): Promise<Book> {
  const { signal } = options;
  signal?.throwIfAborted();
  const bytes = typeof source === "string" ? await readFile(source, { signal }) : source;
  const budget = new TextBudget(options.maxCharacters, signal);
  const sniffed = sniffBytes(bytes);
  let book: Book;
  switch (sniffed) {
    case "zip":
      throw new BookInputError("not_text", "The file is a ZIP archive but not an EPUB book; upload the book itself (EPUB, Markdown, HTML or text).");
    case "pdf":
      throw new BookInputError("not_text", "The file is a PDF document, which is not supported; upload the book as EPUB, Markdown, HTML or plain text.");
    case "epub": {
      const { title, chapters } = await readEpub(bytes, {
        budget,
        maxEntries: options.maxEntries ?? DEFAULT_MAX_BOOK_ENTRIES,
        maxUnpackedBytes: options.maxUnpackedBytes,
        signal,
      });
      book = withTitle("epub", title, chapters);
      break;
    }
    default: {
      const text = looksLikeHtmlBytes(bytes) ? decodeMarkup(bytes) : decodePlain(bytes);
      if (looksLikeHtml(text)) {
        const doc = htmlBlocks(text, { budget });
        const { title, chapters } = chaptersFromBlocks(doc.blocks, HTML_SPLIT_LEVEL);
        book = withTitle("html", doc.title ?? title, chapters);
      } else if (looksLikeMarkdown(text)) {
        const { title, chapters } = readMarkdown(text, budget);
        book = withTitle("markdown", title, chapters);
      } else {
        const normalised = normaliseText(text);
        budget.add(normalised);
        book = { format: "text", chapters: hasWords(normalised) ? [{ title: null, text: normalised }] : [] };
      }
    }
  }
  if (book.chapters.length === 0) throw new BookInputError("empty", "The book has no text to read aloud.");
  return book;
}

function withTitle(format: BookFormat, raw: string | null, chapters: Chapter[]): Book {
  const title = raw === null ? null : chapterTitle(raw);
  return title === null ? { format, chapters } : { format, title, chapters };
}

