/**
 * Hostile books: external entities, entity expansion, a decompression bomb, too many entries,
 * zip-slip names, too much text, cancellation. Each fails in plain words, fast, with memory bounded.
 */
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { BookInputError, readBook } from "./index.ts";
import { deflatedZeros, epubHead, epubOf, prose, xhtml } from "./testing/books.ts";
import { buildZip, type ZipEntry } from "@voiceloc/testing";

const LIMITS = { maxCharacters: 1_000_000, maxUnpackedBytes: 32_000_000 };
const MB = 1_000_000;

async function refusal(promise: Promise<unknown>): Promise<BookInputError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BookInputError);
  return error as BookInputError;
}

/** Runs `work`, sampling the resident set size; the peak growth over the start, in bytes. */
async function rssGrowth<T>(work: () => Promise<T>): Promise<{ result: PromiseSettledResult<T>; growth: number; seconds: number }> {
  const start = process.memoryUsage().rss;
  let peak = start;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 2);
  const began = performance.now();
  const [result] = await Promise.allSettled([work()]);
  const seconds = (performance.now() - began) / 1000;
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { result: result as PromiseSettledResult<T>, growth: peak - start, seconds };
}

const PASSWD_LINES = readFileSync("/etc/passwd", "utf8")
  .split("\n")
  .filter((l) => l.length > 8);

const XXE_DOCTYPE = `<!DOCTYPE html [
  <!ENTITY x SYSTEM "file:///etc/passwd">
  <!ENTITY y SYSTEM "http://127.0.0.1:9/leak">
]>`;

const LAUGHS = `<!DOCTYPE html [
  <!ENTITY lol "lol">
  ${Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? "" : i};`.repeat(10)}">`).join("\n  ")}
]>`;

describe("entities and DTDs are never resolved nor expanded", () => {
  it("an external entity to /etc/passwd (in the OPF and in a chapter) leaks nothing", async () => {
    expect(PASSWD_LINES.length).toBeGreaterThan(0);
    const chapter = xhtml(`<h1>Start</h1><p>&x;Before the entity &y; and after it, the keeper counted the boats coming home.</p>`, { doctype: XXE_DOCTYPE });
    const bytes = epubOf([{ path: "c.xhtml", title: "Start &x;", data: chapter }], [], XXE_DOCTYPE.replace("html", "package"));
    const book = await readBook(bytes, LIMITS);
    const out = JSON.stringify(book);
    for (const line of PASSWD_LINES) expect(out).not.toContain(line);
    expect(out).not.toMatch(/root:|\/bin\/|&x;|&y;|\]>|ENTITY/u);
    expect(book.title).toBe("Generated");
    expect(book.chapters).toEqual([{ title: "Start", text: "Before the entity and after it, the keeper counted the boats coming home." }]);

    const html = await readBook(Buffer.from(`${XXE_DOCTYPE}<html><body><p>A page &x; with words.</p></body></html>`.replace("DOCTYPE html", "DOCTYPE html")), LIMITS);
    expect(JSON.stringify(html)).not.toMatch(/root:|ENTITY|\]>/u);
  });

  it("a billion-laughs expansion is not expanded, and the parse is quick", async () => {
    const chapter = xhtml(`<p>&lol9; The keeper counted the boats and laughed at nothing.</p>`, { doctype: LAUGHS });
    const { result, growth, seconds } = await rssGrowth(() => readBook(epubOf([{ path: "c.xhtml", title: "Laughs", data: chapter }]), LIMITS));
    expect(result.status).toBe("fulfilled");
    const book = result.status === "fulfilled" ? result.value : null;
    expect(book?.chapters).toEqual([{ title: "Laughs", text: "The keeper counted the boats and laughed at nothing." }]);
    expect(seconds).toBeLessThan(5);
    expect(growth).toBeLessThan(100 * MB);
  });
});

describe("archives are bounded", () => {
  let bomb: Buffer;
  beforeAll(async () => {
    bomb = await deflatedZeros(400 * MB);
  }, 120_000);

  it("a chapter that inflates to 400 MB but claims 2 KB stops within seconds, in plain words, memory bounded", async () => {
    expect(bomb.length).toBeLessThan(2 * MB);
    const bytes = epubOf([
      { path: "a.xhtml", title: "A", data: xhtml(`<p>${prose("a")[0]}</p>`) },
      { path: "bomb.xhtml", title: "Bomb", deflated: bomb, declaredSize: 2048 },
    ]);
    const { result, growth, seconds } = await rssGrowth(() => readBook(bytes, LIMITS));
    expect(result.status).toBe("rejected");
    const error = result.status === "rejected" ? (result.reason as unknown) : null;
    expect(error).toBeInstanceOf(BookInputError);
    expect((error as BookInputError).message).toBe(
      "The EPUB file is damaged: OEBPS/bomb.xhtml holds a different amount of data than its header says (a decompression bomb?).",
    );
    expect(seconds).toBeLessThan(10);
    expect(growth).toBeLessThan(100 * MB);
  });

  it("a chapter that says it inflates to 400 MB is refused before inflating; honest entries stop at the total bound", async () => {
    const honest = epubOf([{ path: "bomb.xhtml", title: "Bomb", deflated: bomb, declaredSize: 400 * MB }]);
    const { result, seconds } = await rssGrowth(() => readBook(honest, LIMITS));
    expect(result.status).toBe("rejected");
    const error = (result as PromiseRejectedResult).reason as BookInputError;
    expect(error.reason).toBe("too_large");
    expect(error.message).toBe("The EPUB unpacks to more than 32 MB, the limit for a book; it may be a decompression bomb.");
    expect(seconds).toBeLessThan(5);

    // Five chapters of 10 MB each (mostly spaces, a sentence at the end), each within the bound alone.
    const big = (label: string) => xhtml(`<p>${" ".repeat(10 * MB)}${prose(label)[0]}</p>`);
    const many = epubOf(["a", "b", "c", "d", "e"].map((l) => ({ path: `${l}.xhtml`, title: l, data: big(l) })));
    const tooMuch = await refusal(readBook(many, LIMITS));
    expect(tooMuch.reason).toBe("too_large");
    const enough = await readBook(many, { ...LIMITS, maxUnpackedBytes: 60 * MB });
    expect(enough.chapters.map((c) => c.title)).toEqual(["a", "b", "c", "d", "e"]);
  });

  it("an archive of 100,000 entries stops at the entry bound at once", async () => {
    const entries: ZipEntry[] = [...epubHead()];
    for (let i = 0; i < 100_000; i++) entries.push({ name: `OEBPS/f${i}.xhtml`, data: "", method: 0 });
    const bytes = buildZip(entries);
    const { result, seconds } = await rssGrowth(() => readBook(bytes, LIMITS));
    expect(result.status).toBe("rejected");
    const error = (result as PromiseRejectedResult).reason as BookInputError;
    expect(error).toBeInstanceOf(BookInputError);
    expect(error.message).toBe("The EPUB holds more than 10,000 files, the limit for a book.");
    expect(seconds).toBeLessThan(5);
    const lower = await refusal(readBook(epubOf([{ path: "a.xhtml", title: "A", data: xhtml("<p>Words.</p>") }]), { ...LIMITS, maxEntries: 3 }));
    expect(lower.message).toBe("The EPUB holds more than 3 files, the limit for a book.");
  }, 60_000);

  it("entry names with ../ or absolute paths are names only: hrefs resolve inside the archive and nothing is written", async () => {
    const tag = `zipslip-${process.pid}-${Date.now()}`;
    const page = (words: string) => xhtml(`<p>${words} ${prose(tag, 1, 4).join(" ")}</p>`);
    const opf = `<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata/>
<manifest><item id="a" href="../../../${tag}.xhtml" media-type="application/xhtml+xml"/>
<item id="b" href="/tmp/${tag}-abs.xhtml" media-type="application/xhtml+xml"/></manifest>
<spine><itemref idref="a"/><itemref idref="b"/></spine></package>`;
    const bytes = buildZip([
      ...epubHead(),
      { name: "OEBPS/content.opf", data: opf },
      { name: `../../../${tag}.xhtml`, data: page("Outside relative.") },
      { name: `/tmp/${tag}-abs.xhtml`, data: page("Outside absolute.") },
      { name: `${tag}.xhtml`, data: page("Inside relative.") },
      { name: `tmp/${tag}-abs.xhtml`, data: page("Inside absolute.") },
    ]);
    const book = await readBook(bytes, LIMITS);
    const all = book.chapters.map((c) => c.text).join(" ");
    expect(all).toMatch(/^Inside relative\..*Inside absolute\./su);
    expect(all).not.toContain("Outside");
    for (const path of [resolve(process.cwd(), `../../../${tag}.xhtml`), `/tmp/${tag}-abs.xhtml`, resolve(tmpdir(), `${tag}.xhtml`), resolve(process.cwd(), `${tag}.xhtml`), `/${tag}.xhtml`]) {
      expect(existsSync(path)).toBe(false);
    }
  });
});

describe("text and time are bounded", () => {
  it("maxCharacters stops the text as it grows: the chapter after the bound is never unpacked", async () => {
    const bomb = await deflatedZeros(50 * MB);
    const bytes = epubOf([
      { path: "a.xhtml", title: "A", data: xhtml(prose("a", 10).map((p) => `<p>${p}</p>`).join("")) },
      { path: "bomb.xhtml", title: "Bomb", deflated: bomb, declaredSize: 1024 },
    ]);
    const error = await refusal(readBook(bytes, { ...LIMITS, maxCharacters: 2_000 }));
    expect(error.reason).toBe("too_long");
    expect(error.message).toBe("The book is too long: it has more than 2,000 characters of text to speak.");

    // One paragraph of 20 million characters: refused as it is parsed, well before its end.
    const huge = Buffer.from(`<!DOCTYPE html><html><body><p>${"word ".repeat(4_000_000)}</p></body></html>`);
    const { result, growth } = await rssGrowth(() => readBook(huge, { ...LIMITS, maxCharacters: 10_000 }));
    expect((result as PromiseRejectedResult).reason).toBeInstanceOf(BookInputError);
    expect(growth).toBeLessThan(100 * MB);
    const markdown = await refusal(readBook(Buffer.from(`# A\n\n${"word ".repeat(5000)}\n\n# B\n\nmore`), { ...LIMITS, maxCharacters: 10_000 }));
    expect(markdown.reason).toBe("too_long");
  });

  it("Markdown nested thousands of levels deep or full of open marks is read or refused in plain words, quickly", async () => {
    const after = "\n\n## After\n\nThe keeper counted the boats that came home.";
    const hostile = {
      quotes: `## Deep\n\n${">".repeat(40)} x${after}`,
      lists: `## Deep\n\n${Array.from({ length: 40 }, (_, i) => `${" ".repeat(i * 2)}- x`).join("\n")}${after}`,
      brackets: `## Deep\n\nWords ${"[".repeat(100_000)} x${after}`,
      emphasis: `## Deep\n\nWords ${"**a ".repeat(50_000)}x${" b**".repeat(50_000)}${after}`,
    };
    for (const [name, source] of Object.entries(hostile)) {
      const { result, growth, seconds } = await rssGrowth(() => readBook(Buffer.from(source), LIMITS));
      expect(result.status, name).toBe("fulfilled");
      const book = (result as PromiseFulfilledResult<Awaited<ReturnType<typeof readBook>>>).value;
      expect(book.format, name).toBe("markdown");
      expect(book.chapters.at(-1), name).toEqual({ title: "After", text: "The keeper counted the boats that came home." });
      expect(seconds, name).toBeLessThan(10);
      expect(growth, name).toBeLessThan(200 * MB);
    }
    const deep = {
      lists: `## Deep\n\n${Array.from({ length: 3000 }, (_, i) => `${" ".repeat(i * 2)}- x`).join("\n")}${after}`,
      quotes: `## Deep\n\n${">".repeat(50_000)} x${after}`,
    };
    for (const [name, source] of Object.entries(deep)) {
      const { result, seconds } = await rssGrowth(() => readBook(Buffer.from(source), LIMITS));
      expect(result.status, name).toBe("rejected");
      expect((result as PromiseRejectedResult).reason, name).toMatchObject({
        name: "BookInputError",
        message: "The Markdown nests lists or quotes too deeply (dozens of levels inside each other) to be read as a book.",
      });
      expect(seconds, name).toBeLessThan(10);
    }
  }, 60_000);

  it("HTML nested 200,000 elements deep, or with 300,000 unclosed tags, is refused in plain words within seconds", async () => {
    const message = "The file nests more than 4,096 elements inside each other (unclosed tags?), too deep to read as a book.";
    const sources = {
      nested: `<html><body><h1>A</h1>${"<div>".repeat(200_000)}deep words${"</div>".repeat(200_000)}</body></html>`,
      unclosed: `<html><body><h1>A</h1>${"<p><b><i>".repeat(100_000)}words</body></html>`,
    };
    for (const [name, source] of Object.entries(sources)) {
      const { result, seconds } = await rssGrowth(() => readBook(Buffer.from(source), LIMITS));
      expect((result as PromiseRejectedResult).reason, name).toMatchObject({ name: "BookInputError", message });
      expect(seconds, name).toBeLessThan(10);
    }
    // In an EPUB chapter too, and deep but within the bound is read.
    const chapter = xhtml(`<h1>Deep</h1>${"<div>".repeat(5000)}words${"</div>".repeat(5000)}`);
    await expect(readBook(epubOf([{ path: "c.xhtml", title: "Deep", data: chapter }]), LIMITS)).rejects.toMatchObject({ message });
    const fine = `<html><body><h1>A</h1>${"<span>".repeat(4000)}${prose("deep", 1, 3).join("")}</body></html>`;
    expect((await readBook(Buffer.from(fine), LIMITS)).chapters[0]?.text).toMatch(/^In deep the keeper/u);
  }, 60_000);

  it("an aborted read stops with the signal's reason", async () => {
    const controller = new AbortController();
    const bytes = epubOf([{ path: "big.xhtml", title: "Big", deflated: await deflatedZeros(200 * MB), declaredSize: 200 * MB }]);
    const reading = readBook(bytes, { ...LIMITS, maxUnpackedBytes: 1_000 * MB, signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    const began = performance.now();
    await expect(reading).rejects.toMatchObject({ name: "AbortError" });
    expect(performance.now() - began).toBeLessThan(5_000);
  });
});
