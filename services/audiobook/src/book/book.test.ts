import { describe, expect, it } from "vitest";
import { BookTextError } from "../text.ts";
import { BookInputError, readBook, type Book } from "./index.ts";
import { looksLikeMarkdown } from "./sniff.ts";
import { epub2, epub3, epubHead, epubOf, HTML_BOOK, MARKDOWN_BOOK, prose, xhtml } from "./testing/books.ts";
import { buildZip } from "@voiceloc/testing";

const LIMITS = { maxCharacters: 1_000_000, maxUnpackedBytes: 50_000_000 };
const read = (bytes: Buffer | string) => readBook(typeof bytes === "string" ? Buffer.from(bytes) : bytes, LIMITS);
const titles = (book: Book) => book.chapters.map((c) => c.title);
const spoken = (book: Book) => book.chapters.map((c) => c.text).join("\n\n");

async function refusal(promise: Promise<unknown>): Promise<BookInputError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BookInputError);
  expect(error).toBeInstanceOf(BookTextError);
  return error as BookInputError;
}

describe("EPUB", () => {
  it("reads an EPUB 3 by its nav: spine order, TOC titles, a fragment entry splits, cover/title/copyright/nav/linear=no skipped", async () => {
    const book = await read(epub3());
    expect(book.format).toBe("epub");
    expect(book.title).toBe("The Lighthouse Keeper");
    expect(titles(book)).toEqual(["Arrival at the Harbour", "The Storm", "The Engineer", "Nine Boats"]);
    const [one, two, three, four] = book.chapters.map((c) => c.text);
    expect(one).toMatch(/^In chapter one the keeper/u);
    expect(one).toContain("She checked the lamp twice.");
    expect(two).toContain("In chapter two");
    // A nested (deeper) TOC entry does not split: its heading stays in the chapter as a paragraph.
    expect(two).toContain("After the storm\n\nIn the calm");
    expect(three).toContain("In chapter three");
    expect(three).not.toContain("chapter four");
    expect(four).toMatch(/^In chapter four/u);
    const all = spoken(book);
    for (const never of ["footnote", "script text", "copyright notice", "A novel", "Contents", "cover", "Notes that sit", "p { margin", "Chapter 1", "1 twice"]) {
      expect(all).not.toContain(never);
    }
  });

  it("reads an EPUB 2 by its NCX: guide cover and copyright skipped, &nbsp; decoded, an unlisted document titled by its heading", async () => {
    const book = await read(epub2());
    expect(book.title).toBe("Northern Light");
    expect(titles(book)).toEqual(["The First Morning", "The Second Morning", "Epilogue"]);
    expect(book.chapters[0]?.text).toContain("Fish and chips & tea.");
    expect(book.chapters[2]?.text).toMatch(/^In the epilogue/u);
    expect(spoken(book)).not.toMatch(/copyright page|Cover|One\n|Two\n/u);
  });

  it("without a table of contents, titles chapters by their first heading and continues a chapter across a heading-less file", async () => {
    const bytes = buildZip([
      ...epubHead(),
      {
        name: "OEBPS/content.opf",
        data: `<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata/><manifest>
<item id="a" href="a.xhtml" media-type="application/xhtml+xml"/><item id="b" href="b.xhtml" media-type="application/xhtml+xml"/>
<item id="c" href="c.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="a"/><itemref idref="b"/><itemref idref="c"/></spine></package>`,
      },
      { name: "OEBPS/a.xhtml", data: xhtml(`<h2>Beginnings</h2><p>${prose("the beginning", 1, 5).join("")}</p>`) },
      { name: "OEBPS/b.xhtml", data: xhtml(`<p>${prose("the same chapter", 1, 5).join("")}</p>`) },
      { name: "OEBPS/c.xhtml", data: xhtml(`<h3>Endings</h3><p>${prose("the end", 1, 5).join("")}</p>`) },
    ]);
    const book = await read(bytes);
    expect(book.title).toBeUndefined();
    expect(titles(book)).toEqual(["Beginnings", "Endings"]);
    expect(book.chapters[0]?.text).toContain("In the same chapter");
  });

  it("reads a sloppy EPUB: mimetype deflated and not first, an href that differs from its file in case", async () => {
    const bytes = buildZip([
      { name: "META-INF/container.xml", data: `<container><rootfiles><rootfile full-path="content.opf"/></rootfiles></container>` },
      { name: "mimetype", data: "application/epub+zip" },
      {
        name: "content.opf",
        data: `<package version="2.0"><metadata><dc:title xmlns:dc="http://purl.org/dc/elements/1.1/">Sloppy</dc:title></metadata>
<manifest><item id="a" href="Text/Chapter.XHTML" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="a"/></spine></package>`,
      },
      { name: "text/chapter.xhtml", data: xhtml(`<h1>The Only Chapter</h1><p>${prose("sloppy", 1, 2).join("")}</p>`) },
    ]);
    const book = await read(bytes);
    expect(book).toMatchObject({ format: "epub", title: "Sloppy", chapters: [{ title: "The Only Chapter" }] });
  });

  it("refuses an EPUB whose text is encrypted (DRM), and a ZIP that is not an EPUB", async () => {
    const drm = epubOf([{ path: "c.xhtml", title: "C", data: xhtml(`<p>${prose("x")[0]}</p>`) }], [
      {
        name: "META-INF/encryption.xml",
        data: `<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#">
<enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
<enc:CipherData><enc:CipherReference URI="OEBPS/c.xhtml"/></enc:CipherData></enc:EncryptedData></encryption>`,
      },
    ]);
    const protectedBook = await refusal(read(drm));
    expect(protectedBook.reason).toBe("protected");
    expect(protectedBook.message).toMatch(/DRM/u);

    const zip = await refusal(read(buildZip([{ name: "report.docx.xml", data: "<w/>" }])));
    expect(zip.message).toBe("The file is a ZIP archive but not an EPUB book; upload the book itself (EPUB, Markdown, HTML or text).");
    const wrongMime = await refusal(read(buildZip([{ name: "mimetype", data: "application/zip", method: 0 }])));
    expect(wrongMime.message).toMatch(/not an EPUB book/u);
  });
});

describe("Markdown", () => {
  it("cuts chapters at the repeated heading level, speaks no mark, reads links as their text, skips code, HTML and images", async () => {
    const book = await read(MARKDOWN_BOOK);
    expect(book.format).toBe("markdown");
    expect(book.title).toBe("The Harbour Book");
    expect(titles(book)).toEqual([null, "The First Chapter", "The Second Chapter", "The Third Chapter"]);
    const all = spoken(book);
    expect(all).not.toMatch(/[*_#`>|[\]~]|\]\(|https?:|lighthouse|never spoken|secret|title:|author:/u);
    expect(all).toContain("with bold, italic, underscored and struck words.");
    expect(all).toContain("The keeper read a guide to lamps and a reference link by the window.");
    expect(all).toContain("kept reading until dusk");
    expect(all).toContain("A quoted line from the log book, with a strong word inside the quote.");
    expect(all).toContain("A nested numbered item");
    expect(all).toContain("Swift, Four");
    expect(all).toContain("boats & tides.");
    // A deeper heading stays in its chapter as a paragraph.
    expect(book.chapters[2]?.text).toContain("A Small Section\n\nText of the small section");
  });

  it("without a repeated level, the lone heading opening the text titles the book and its one chapter", async () => {
    const book = await read(`# A Short Story\n\nIt was a **dark** night,<br>and the _wind_ blew.<script>alert("no")</script>\n\nThe end came [soon](x.html).\n`);
    expect(book.format).toBe("markdown");
    expect(book.title).toBe("A Short Story");
    expect(book.chapters).toEqual([{ title: "A Short Story", text: "It was a dark night, and the wind blew.\n\nThe end came soon." }]);
  });

  it("keeps ordinary prose with stray marks as plain text", async () => {
    const prose = [
      "It was 1990. She wrote *very* little that year, and her notes_on_boats were few.",
      "- a dash at the start of a line, as in a letter",
      "He said: 5 * 3 = 15, and laughed. Then he left for the harbour, where the boats were.",
    ].join("\n\n");
    expect(looksLikeMarkdown(prose)).toBe(false);
    const book = await read(prose);
    expect(book.format).toBe("text");
    expect(book.chapters).toHaveLength(1);
    expect(book.chapters[0]?.title).toBeNull();
    expect(book.chapters[0]?.text).toContain("5 * 3 = 15");
  });
});

describe("HTML", () => {
  it("cuts chapters at h1–h3, never speaks head, script, style, nav, aside or captions, decodes entities, blocks end paragraphs", async () => {
    const book = await read(HTML_BOOK);
    expect(book.format).toBe("html");
    expect(book.title).toBe("Tides & Lights");
    expect(titles(book)).toEqual(["The Café by the Sea", "Second Light"]);
    const all = spoken(book);
    expect(all).not.toMatch(/never spoken|style text|color|console|Contents|caption|sidebar|picture|&[a-z#0-9]+;|<\/?(?:p|div|br|span|h\d|td)\b/iu);
    expect(book.chapters[0]?.text).toBe(
      "The keeper opened the café at dawn—before the boats went out to sea.\n\nA block in a div ends its sentence\n\nand this starts another one",
    );
    expect(book.chapters[1]?.text).toBe("Rain fell on the harbour <all night> long.\n\nBoat, Crew\n\nSwift, Four\n\nA minor heading\n\nThe last words of the book.");
  });

  it("closes XHTML's self-closing script, style, title and anchors instead of swallowing the page", async () => {
    const page = `<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title/><script src="a.js"/><style/></head><body><h1>T</h1><p>Spoken words here.<a id="x"/> And more.</p><textarea/><p>Last words.</p></body></html>`;
    expect((await read(page)).chapters).toEqual([{ title: "T", text: "Spoken words here. And more.\n\nLast words." }]);
  });

  it("sniffs XHTML by its XML declaration and namespace, whatever the file is called", async () => {
    const book = await read(xhtml(`<h1>Only</h1><p>One paragraph of an XHTML page.</p>`));
    expect(book.format).toBe("html");
    expect(book.chapters).toEqual([{ title: "Only", text: "One paragraph of an XHTML page." }]);
  });
});

describe("encodings, fragments and titles", () => {
  it("decodes markup in the encoding it declares (windows-1252 in an EPUB chapter and an HTML page)", async () => {
    const latin = (s: string) => Buffer.from(s, "latin1");
    const page = latin(`<?xml version="1.0" encoding="windows-1252"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><body><h1>Caf\u00e9</h1><p>Cr\u00e8me br\u00fbl\u00e9e at the harbour caf\u00e9.</p></body></html>`);
    const book = await read(epubOf([{ path: "c.xhtml", title: "Caf\u00e9", data: page }]));
    expect(book.chapters).toEqual([{ title: "Café", text: "Crème brûlée at the harbour café." }]);
    const html = await read(latin(`<html><head><meta charset="iso-8859-1"><title>T</title></head><body><p>Gar\u00e7on!</p></body></html>`));
    expect(html.chapters[0]?.text).toBe("Garçon!");
    const undeclared = await refusal(read(latin(`<html><body><p>Gar\u00e7on!</p></body></html>`)));
    expect(undeclared.message).toMatch(/not valid UTF-8/u);
  });

  it("sniffs an HTML fragment that opens with a block element it closes", async () => {
    const book = await read(`<h2>One</h2><p>First words.</p>\n<h2>Two</h2><p>Second words.</p>`);
    expect(book.format).toBe("html");
    expect(titles(book)).toEqual(["One", "Two"]);
  });

  it("cuts over-long titles at a word, and titles a document by a TOC entry whose anchor is missing", async () => {
    const long = Array.from({ length: 60 }, (_, i) => `word${i}`).join(" ");
    const book = await read(`# ${long}\n\nSome text of the first chapter.\n\n# Short\n\nMore text here.`);
    const first = book.chapters[0]?.title ?? "";
    expect(first.length).toBeLessThanOrEqual(200);
    expect(first).toMatch(/^word0 word1 .* word\d+…$/u);
    const bytes = buildZip([
      ...epubHead(),
      {
        name: "OEBPS/content.opf",
        data: `<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata/><manifest>
<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
<item id="a" href="a.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="a"/></spine></package>`,
      },
      { name: "OEBPS/nav.xhtml", data: xhtml(`<nav epub:type="toc"><ol><li><a href="a.xhtml#nowhere">Found Anyway</a></li></ol></nav>`) },
      { name: "OEBPS/a.xhtml", data: xhtml(`<p>${prose("a")[0] ?? ""}</p>`) },
    ]);
    expect(titles(await read(bytes))).toEqual(["Found Anyway"]);
  });
});

describe("plain text and refusals", () => {
  it("reads plain text (UTF-16 with a byte order mark too) as one untitled chapter", async () => {
    const text = "The keeper climbed the stairs.\nShe counted them aloud.";
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]);
    const book = await read(utf16);
    expect(book).toEqual({ format: "text", chapters: [{ title: null, text: "The keeper climbed the stairs.\n\nShe counted them aloud." }] });
  });

  it("refuses binary data, PDF documents and books with nothing to say, in plain words", async () => {
    const binary = await refusal(read(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d])));
    expect(binary.message).toMatch(/^The file is not text: it contains binary data/u);
    const pdf = await refusal(read("%PDF-1.7\n%âãÏÓ\n"));
    expect(pdf.message).toMatch(/PDF document, which is not supported/u);
    const empty = await refusal(read("<!DOCTYPE html><html><body><script>x()</script><p> </p></body></html>"));
    expect(empty.reason).toBe("empty");
    expect(empty.code).toBe("empty");
    expect(empty.message).toBe("The book has no text to read aloud.");
  });

  it("reads a book from a file path", async () => {
    const { tempDir } = await import("@voiceloc/testing");
    const { writeFile } = await import("node:fs/promises");
    const dir = await tempDir("book-");
    try {
      const path = `${dir.path}/book.bin`;
      await writeFile(path, epub2());
      expect(titles(await readBook(path, LIMITS))).toEqual(["The First Morning", "The Second Morning", "Epilogue"]);
    } finally {
      await dir.cleanup();
    }
  });
});
