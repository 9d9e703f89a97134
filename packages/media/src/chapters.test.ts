import { describe, expect, it } from "vitest";
import {
  buildRewrapCoverArgs,
  buildWrapAudioBookArgs,
  checkBookChapters,
  checkBookTags,
  cleanTagText,
  escapeFfmetadata,
  ffmetadataContent,
  MAX_BOOK_CHAPTERS,
  MAX_CHAPTER_TITLE_CHARACTERS,
  parseChaptersJson,
  sniffCoverImage,
} from "./chapters.ts";
import { MediaRequestError } from "./errors.ts";

describe("FFMETADATA text", () => {
  it("escapes the five special characters with a backslash and nothing else", () => {
    expect(escapeFfmetadata("a=b;c#d\\e\nf")).toBe("a\\=b\\;c\\#d\\\\e\\\nf");
    expect(escapeFfmetadata("Chapitre 1 — « Été » 中文")).toBe("Chapitre 1 — « Été » 中文");
  });

  it("makes carriage returns line breaks and drops other control characters (a NUL or CR would end the value early)", () => {
    expect(cleanTagText("one\r\ntwo\rthree\0\u0007\tfour")).toBe("one\ntwo\nthree\tfour");
  });

  it("cuts long text at a code point with an ellipsis", () => {
    const cut = cleanTagText("😀".repeat(30), 10);
    expect(Array.from(cut)).toHaveLength(10);
    expect(cut.endsWith("😀…")).toBe(true);
  });

  it("writes tags and chapters in milliseconds; the language goes in for MP3 only, the audio book media type for M4B only", () => {
    const chapters = checkBookChapters([
      { title: "One = first", startSeconds: 0, endSeconds: 1.2344 },
      { title: "Two", startSeconds: 1.2344, endSeconds: 5 },
    ]);
    const tags = checkBookTags({ title: "Book #1", narrator: "espeak:en", language: "eng" });
    const mp3 = ffmetadataContent({ tags, chapters, format: "mp3" });
    expect(mp3).toBe(
      [
        ";FFMETADATA1",
        "title=Book \\#1",
        "composer=espeak:en",
        "language=eng",
        "",
        "[CHAPTER]", "TIMEBASE=1/1000", "START=0", "END=1234", "title=One \\= first",
        "",
        "[CHAPTER]", "TIMEBASE=1/1000", "START=1234", "END=5000", "title=Two",
        "",
      ].join("\n"),
    );
    const m4b = ffmetadataContent({ tags, chapters, format: "m4b" });
    expect(m4b).not.toContain("language=");
    expect(m4b).toContain("media_type=2\n");
  });
});

describe("checkBookChapters", () => {
  const ok = { title: "A", startSeconds: 0, endSeconds: 1 };
  it.each([
    ["a chapter that ends before it starts", [{ title: "A", startSeconds: 2, endSeconds: 1 }], /Chapter 1 ends before it starts/],
    ["overlapping chapters", [ok, { title: "B", startSeconds: 0.5, endSeconds: 2 }], /Chapter 2 starts before chapter 1 ends/],
    ["a negative start", [{ title: "A", startSeconds: -1, endSeconds: 1 }], /Chapter 1 has an invalid start/],
    ["a start that is not a number", [{ title: "A", startSeconds: Number.NaN, endSeconds: 1 }], /invalid start/],
    ["an untitled chapter", [ok, { title: " \n ", startSeconds: 1, endSeconds: 2 }], /Chapter 2 has no title/],
  ])("refuses %s in plain words", (_what, chapters, message) => {
    expect(() => checkBookChapters(chapters)).toThrow(MediaRequestError);
    expect(() => checkBookChapters(chapters)).toThrow(message);
  });

  it("refuses a chapter past the end of the audio, and allows encoder padding's worth", () => {
    expect(() => checkBookChapters([{ title: "A", startSeconds: 0, endSeconds: 14 }], 12)).toThrow(/past the end of the audio \(12\.00 s\)/);
    expect(checkBookChapters([{ title: "A", startSeconds: 0, endSeconds: 12.3 }], 12)).toHaveLength(1);
  });

  it(`refuses more than ${MAX_BOOK_CHAPTERS} chapters (the table of contents counts them in a byte)`, () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ title: `C${i}`, startSeconds: i, endSeconds: i + 1 }));
    expect(checkBookChapters(many(MAX_BOOK_CHAPTERS))).toHaveLength(MAX_BOOK_CHAPTERS);
    expect(() => checkBookChapters(many(MAX_BOOK_CHAPTERS + 1))).toThrow(/256 chapters; a book file holds at most 255/);
  });

  it("cuts a very long title", () => {
    const [only] = checkBookChapters([{ title: "x".repeat(5000), startSeconds: 0, endSeconds: 1 }]);
    expect(Array.from(only?.title ?? "")).toHaveLength(MAX_CHAPTER_TITLE_CHARACTERS);
  });
});

describe("checkBookTags", () => {
  it("takes ISO 639-2 codes only", () => {
    expect(checkBookTags({ language: "fra" }).language).toBe("fra");
    for (const language of ["fr", "FRA", "french", "en-US"]) {
      expect(() => checkBookTags({ language })).toThrow(/ISO 639-2 code of three lowercase letters/);
    }
  });

  it("leaves out empty values", () => {
    expect(checkBookTags({ title: "  ", album: "Album", artist: "" })).toEqual({ album: "Album" });
  });
});

describe("sniffCoverImage", () => {
  const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "latin1") : Buffer.from(p))));
  it("knows JPEG and PNG from their bytes", () => {
    expect(sniffCoverImage(bytes([0xff, 0xd8, 0xff, 0xe0], "\0\x10JFIF"))).toEqual({ type: "jpeg" });
    expect(sniffCoverImage(bytes([0x89], "PNG\r\n\x1a\n\0\0\0\rIHDR"))).toEqual({ type: "png" });
  });

  it.each([
    ["GIF89a\x01\0\x01\0", "a GIF picture"],
    ["RIFF\0\0\0\0WEBPVP8 ", "a WebP picture"],
    ["BM\0\0\0\0\0\0", "a BMP picture"],
    ["\0\0\0\x1cftypavif", "an AVIF or HEIC picture"],
    ["<?xml version='1.0'?><svg", "text (SVG or HTML)"],
    ["%PDF-1.7\n", "not a picture this service knows"],
    ["", "not a picture this service knows"],
  ])("refuses %j, naming it as %s", (head, named) => {
    expect(sniffCoverImage(bytes(head))).toEqual({ refused: `The cover must be a JPEG or PNG picture; this file is ${named}.` });
  });
});

describe("argument builders", () => {
  it("MP3: the audio copied, ID3v2.3, the cover copied as an attached front cover read by its own single-picture demuxer", () => {
    const args = buildWrapAudioBookArgs({
      input: "/w/book.mp3",
      metadataFile: "/w/book.ffmetadata",
      cover: { path: "/w/cover.png", type: "png" },
      coverPixelLimit: 1000,
      output: "/out/book.mp3",
      format: "mp3",
    });
    const text = args.join(" ");
    expect(text).toContain("-c:a copy");
    expect(text).not.toMatch(/libmp3lame|-b:a/);
    expect(text).toContain("-id3v2_version 3");
    expect(text).toContain("-format_whitelist ffmetadata -f ffmetadata -i /w/book.ffmetadata");
    expect(text).toContain("-max_pixels 1000 -protocol_whitelist file,pipe -format_whitelist png_pipe -f png_pipe -i /w/cover.png");
    expect(text).toContain("-map 0:a:0 -map 2:v:0 -map_metadata 1 -map_chapters 1");
    expect(text).toContain("-c:v copy -disposition:v:0 attached_pic -metadata:s:v:0 comment=Cover (front)");
    expect(args.slice(-4)).toEqual(["-f", "mp3", "-y", "/out/book.mp3"]);
  });

  it("M4B: AAC mono at 64 kb/s, the language on the audio track, ipod muxer with brand M4B", () => {
    const args = buildWrapAudioBookArgs({ input: "/w/book.mp3", metadataFile: "/w/m", output: "/out/b.m4b", format: "m4b", language: "deu" });
    const text = args.join(" ");
    expect(text).toContain("-c:a aac -b:a 64k -ac 1 -metadata:s:a:0 language=deu");
    expect(text).toContain("-movflags +faststart -brand M4B  -f ipod");
    expect(text).not.toContain("-map 2:v:0");
    expect(() => buildWrapAudioBookArgs({ input: "/a", metadataFile: "/m", output: "/o", format: "m4b", language: "de; rm" })).toThrow(MediaRequestError);
  });

  it("rewrap: timestamps kept, only the book's audio copied, the new picture attached (or none)", () => {
    const text = buildRewrapCoverArgs({ input: "/b.mp3", format: "mp3", cover: { path: "/c.jpg", type: "jpeg" }, output: "/o.mp3" }).join(" ");
    expect(text).toMatch(/^-nostdin -hide_banner -nostats -copyts /);
    expect(text).toContain("-format_whitelist mp3,mov -i /b.mp3");
    expect(text).toContain("-format_whitelist jpeg_pipe -f jpeg_pipe -i /c.jpg");
    expect(text).toContain("-map 0:a -map 1:v:0 -map_metadata 0 -map_chapters 0 -c:a copy -c:v copy");
    const none = buildRewrapCoverArgs({ input: "/b.m4b", format: "m4b", cover: null, output: "/o.m4b" }).join(" ");
    expect(none).not.toMatch(/-map 1|attached_pic|-c:v/);
    expect(none).toContain("-f ipod");
  });
});

describe("parseChaptersJson", () => {
  it("reads ffprobe's chapters in seconds with their titles", () => {
    expect(
      parseChaptersJson({
        chapters: [
          { id: 0, start_time: "0.000000", end_time: "4.000000", tags: { title: "One" } },
          { id: 1, start_time: "4.000000", end_time: "9.500000" },
          { id: 2, start_time: "N/A", end_time: "10" },
        ],
      }),
    ).toEqual([
      { title: "One", startSeconds: 0, endSeconds: 4 },
      { title: "", startSeconds: 4, endSeconds: 9.5 },
    ]);
    expect(parseChaptersJson({})).toEqual([]);
  });
});
