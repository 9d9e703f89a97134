import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { makeHugePng } from "@voiceloc/testing";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { readBook } from "./book/index.ts";
import { epub2, epub3, HTML_BOOK, MARKDOWN_BOOK } from "./book/testing/books.ts";
import { partTitle, PART_SECONDS, timeChapters } from "./chapters.ts";
import { createBookHarness, createEngineStack, type BookHarness, type EngineStack } from "./testing/harness.ts";

const exec = promisify(execFile);

/** The attached picture's bytes as the file stores them . */
async function pictureBytes(path: string): Promise<Buffer> {
  const { stdout } = await exec("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-map", "0:v", "-c", "copy", "-f", "image2pipe", "-"], {
    encoding: "buffer",
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

describe("chapter times from the spoken chunks", () => {
  it("gives each titled chapter the sum of its chunks, and cuts untitled text into about-30-minute parts at chunk boundaries", () => {
    const chunk = 600; // ten-minute chunks
    const timed = timeChapters(
      [
        { title: "One", chunks: 1 },
        { title: null, chunks: 7 },
        { title: "Two", chunks: 2 },
      ],
      [5, ...new Array<number>(7).fill(chunk), 3, 4],
      "German",
    );
    // 70 minutes untitled: two parts of about 30 minutes (40 + 30 at ten-minute boundaries).
    expect(timed.map((c) => c.title)).toEqual(["One", "Teil 1", "Teil 2", "Two"]);
    expect(timed[0]).toEqual({ title: "One", start_seconds: 0, end_seconds: 5 });
    expect(timed[3]).toEqual({ title: "Two", start_seconds: 5 + 7 * chunk, end_seconds: 5 + 7 * chunk + 7 });
    for (let i = 1; i < timed.length; i++) expect(timed[i]!.start_seconds).toBe(timed[i - 1]!.end_seconds);
    const parts = timed.slice(1, 3).map((c) => c.end_seconds - c.start_seconds);
    for (const p of parts) expect(Math.abs(p - PART_SECONDS)).toBeLessThanOrEqual(chunk);
  });

  it("titles a short text without headings as one part, in the target language", () => {
    expect(timeChapters([{ title: null, chunks: 2 }], [10, 11], "Japanese")).toEqual([{ title: partTitle("Japanese", 1), start_seconds: 0, end_seconds: 21 }]);
    expect(partTitle("Japanese", 1)).toBe("第1部");
    expect(partTitle("Spanish", 3)).toBe("Parte 3");
  });

  it("merges more chapters than a file holds into at most 255 that still span the book", () => {
    const many = Array.from({ length: 600 }, (_, i) => ({ title: `C${i}`, chunks: 1 }));
    const timed = timeChapters(many, new Array<number>(600).fill(2), "English");
    expect(timed.length).toBeLessThanOrEqual(255);
    expect(timed[0]!.start_seconds).toBe(0);
    expect(timed.at(-1)!.end_seconds).toBe(1200);
  });
});

let stack: EngineStack;
beforeAll(async () => {
  stack = await createEngineStack();
});
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function harness(): Promise<BookHarness> {
  const h = await createBookHarness(stack);
  cleanups.push(h.cleanup);
  await h.service({}).start();
  return h;
}

/** The book's chapters as its source gives them (the titles the pipeline must keep, in order). */
async function sourceTitles(bytes: Buffer | string): Promise<Array<string | null>> {
  const book = await readBook(typeof bytes === "string" ? Buffer.from(bytes, "utf8") : bytes, { maxCharacters: 1_000_000, maxUnpackedBytes: 64 * 1024 * 1024 });
  return book.chapters.map((c) => c.title);
}

describe("audio books with chapters, formats and covers (real engines and ffmpeg)", () => {
  it.each([
    ["EPUB 3 (nav), as M4B", "book.epub", () => epub3(), "m4b" as const],
    ["EPUB 2 (NCX only), as MP3", "book2.epub", () => epub2(), "mp3" as const],
    ["Markdown, as MP3", "book.md", () => Buffer.from(MARKDOWN_BOOK), "mp3" as const],
    ["HTML, as M4B", "book.html", () => Buffer.from(HTML_BOOK), "m4b" as const],
  ])("%s: the file's chapters and the event's match the source titles in order and span the book", async (_label, name, make, format) => {
    const h = await harness();
    const bytes = make();
    const titles = await sourceTitles(bytes);
    expect(titles.length).toBeGreaterThan(1);
    const id = await h.publish({ file: await h.writeInput(name, bytes), outputFormat: format });
    const end = await h.waitForEnd(id, 300_000);
    expect(end.error ?? null).toBeNull();
    expect(end.result_key).toBe(`results/audiobook/${id}.${format}`);
    const path = await h.localFile(end.result_key!);
    const info = await stack.media.probe(path);
    if (format === "m4b") {
      expect(info.format.split(",")).toContain("mp4");
      expect(info.audio?.codec).toBe("aac");
    } else {
      expect(info.audio?.codec).toBe("mp3");
    }
    // An untitled opening chapter is titled "Part 1"; every other title is the source's, in order.
    const expected = titles.map((t, i) => t ?? partTitle("English", titles.slice(0, i + 1).filter((x) => x === null).length));
    const inFile = await stack.media.chaptersOf(path);
    expect(inFile.map((c) => c.title)).toEqual(expected);
    expect(end.chapters?.map((c) => c.title)).toEqual(expected);
    expect(end.chapters![0]!.start_seconds).toBe(0);
    expect(Math.abs(end.chapters!.at(-1)!.end_seconds - info.durationSeconds)).toBeLessThan(1);
    for (const [i, c] of inFile.entries()) {
      expect(c.endSeconds).toBeGreaterThan(c.startSeconds);
      expect(Math.abs(c.startSeconds - end.chapters![i]!.start_seconds)).toBeLessThan(0.2);
    }
    expect(end.warnings).toEqual([]);
  }, 400_000);

  it("Markdown: the text handed to the engine has no marks, no code and no link targets", async () => {
    const spokenTexts: string[] = [];
    const tts = Object.create(stack.tts) as typeof stack.tts;
    tts.resolve = (language, voice) => {
      const resolved = stack.tts.resolve(language, voice);
      const engine = Object.create(resolved.engine) as typeof resolved.engine;
      engine.synthesize = (request) => {
        spokenTexts.push(request.text);
        return resolved.engine.synthesize(request);
      };
      return { ...resolved, engine };
    };
    const h = await createBookHarness(stack);
    cleanups.push(h.cleanup);
    await h.service({ tts }).start();
    const id = await h.publish({ file: await h.writeInput("marks.md", MARKDOWN_BOOK) });
    expect((await h.waitForEnd(id, 300_000)).status).toBe("completed");
    const spoken = spokenTexts.join("\n");
    expect(spoken).toContain("guide to lamps");
    for (const never of ["**", "](", "https://", "never spoken", "```", "~~", "|------|", "# "]) expect(spoken).not.toContain(never);
  }, 400_000);

  it("embeds the cover as the attached picture; a cover that cannot be fetched leaves the book without one and says why", async () => {
    const h = await harness();
    const cover = join(h.mediaRoot, "cover.png");
    await makeHugePng(64, 48, cover);
    const text = await h.writeInput("short.md", "# One\n\nThe first short chapter.\n\n# Two\n\nThe second short chapter.\n");
    const withCover = await h.publish({ file: text, cover: "cover.png", outputFormat: "m4b" });
    const missing = await h.publish({ file: text, cover: "no-such-cover.png" });
    const ok = await h.waitForEnd(withCover, 300_000);
    expect(ok.warnings).toEqual([]);
    // The picture is the cover, byte for byte.
    expect((await pictureBytes(await h.localFile(ok.result_key!))).equals(await readFile(cover))).toBe(true);
    const without = await h.waitForEnd(missing, 300_000);
    expect(without.status).toBe("completed");
    expect(without.warnings).toHaveLength(1);
    expect(without.warnings![0]).toMatch(/^The cover was not embedded: /);
    const { stdout } = await exec("ffprobe", ["-v", "error", "-show_streams", "-of", "json", await h.localFile(without.result_key!)]);
    const streams = (JSON.parse(stdout) as { streams: Array<{ codec_type: string }> }).streams;
    expect(streams.map((x) => x.codec_type)).toEqual(["audio"]);
  }, 400_000);
});
