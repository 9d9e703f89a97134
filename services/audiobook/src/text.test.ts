import { describe, expect, it } from "vitest";
import { buildMp3CopyConcatArgs } from "./join.ts";
import { runPool } from "./pool.ts";
import { BookTextError, chunkText, decodeText, normaliseText, speakableText } from "./text.ts";
import { ENGLISH_BOOK } from "./testing/texts.ts";

const utf16le = (text: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]);
const utf16be = (text: string) => {
  const le = Buffer.from(text, "utf16le");
  return Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(le.swap16())]);
};

describe("decodeText", () => {
  const sample = "Crème brûlée — ¿qué tal? 日本語 😀";

  it("reads UTF-8 with and without a byte order mark, and UTF-16 LE/BE with one", () => {
    expect(decodeText(Buffer.from(sample, "utf8"))).toBe(sample);
    expect(decodeText(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(sample, "utf8")]))).toBe(sample);
    expect(decodeText(utf16le(sample))).toBe(sample);
    expect(decodeText(utf16be(sample))).toBe(sample);
  });

  it("refuses binary files and broken encodings, saying why", () => {
    const png = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489", "hex");
    expect(() => decodeText(png)).toThrow(BookTextError);
    expect(() => decodeText(png)).toThrow(/^The file is not text: it contains binary data/);
    expect(() => decodeText(Buffer.from([0x48, 0x69, 0xc3, 0x28, 0x21]))).toThrow(/^The file is not text: it is not valid UTF-8/);
    expect(() => decodeText(Buffer.from([0xff, 0xfe, 0x41]))).toThrow(/odd number of bytes/);
    expect(() => decodeText(Buffer.from([0xff, 0xfe, 0x00, 0xd8, 0x41, 0x00]))).toThrow(/invalid UTF-16/); // lone surrogate
    expect(() => decodeText(Buffer.from([0x00, 0x00, 0xfe, 0xff, 0, 0, 0, 0x41]))).toThrow(/UTF-32/);
    expect(() => decodeText(Buffer.from("a\u0001b\u0002c\u0003d", "utf8"))).toThrow(/control characters/);
  });

  it("accepts an empty file (the caller says it has no text)", () => {
    expect(decodeText(Buffer.alloc(0))).toBe("");
  });
});

describe("normaliseText", () => {
  it("applies NFC, unifies line breaks, drops controls, collapses spaces and keeps paragraphs", () => {
    const input = "\uFEFFTitle\r\n\r\n  The  cafe\u0301\topened\u200B at\r\nnine. It closed\u0007 late.\r\n\r\n\r\nSecond\u00A0paragraph.\fThird.";
    expect(normaliseText(input)).toBe("Title\n\nThe café opened at nine. It closed late.\n\nSecond paragraph.\n\nThird.");
  });

  it("joins wrapped lines and breaks a paragraph after a line that ends a sentence", () => {
    expect(normaliseText("It was a long\nand quiet night.\nThe end")).toBe("It was a long and quiet night.\n\nThe end");
  });

  it("returns nothing for whitespace only", () => {
    expect(normaliseText(" \r\n\t \u200B\n")).toBe("");
  });
});

describe("chunkText", () => {
  it("cuts between sentences, within the limit, losing no words", () => {
    const text = normaliseText(ENGLISH_BOOK);
    const chunks = chunkText(text, 500);
    expect(chunks.length).toBeGreaterThan(5);
    for (const chunk of chunks) {
      expect([...chunk].length).toBeLessThanOrEqual(500);
      expect(chunk).toMatch(/[.!?]$/);
    }
    const words = (s: string) => s.split(/\s+/).filter(Boolean);
    expect(words(chunks.join(" "))).toEqual(words(text));
  });

  it("keeps the whole text in one chunk when it fits, and drops chunks with nothing to say", () => {
    expect(chunkText("Hello there.\n\nGeneral Kenobi.", 1500)).toEqual(["Hello there.\n\nGeneral Kenobi."]);
    expect(chunkText("* * *", 1500)).toEqual([]);
  });
});

describe("speakableText", () => {
  it("ends headings with a full stop so the voice pauses, and joins paragraphs", () => {
    expect(speakableText("Chapter One\n\nIt began to rain.\n\nThe end, or so it seemed:\n\n* * *")).toBe(
      "Chapter One. It began to rain. The end, or so it seemed: * * *",
    );
  });
});

describe("buildMp3CopyConcatArgs", () => {
  it("copies MP3 frames from a concat list, opening only mp3 chunks", () => {
    const args = buildMp3CopyConcatArgs("/tmp/list.ffconcat", "/tmp/out.mp3");
    expect(args).toContain("copy");
    expect(args.join(" ")).toContain("-format_whitelist concat,mp3 -f concat -i /tmp/list.ffconcat");
    expect(args).not.toContain("libmp3lame");
    expect(args.slice(-2)).toEqual(["-y", "/tmp/out.mp3"]);
  });
});

describe("runPool", () => {
  it("runs at most `limit` at once and stops starting work after the first failure", async () => {
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const error = await runPool([1, 2, 3, 4, 5, 6], 2, async (n) => {
      started.push(n);
      running++;
      peak = Math.max(peak, running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running--;
      if (n === 2) throw new Error("two failed");
    }).catch((e: unknown) => e);
    expect(error).toEqual(new Error("two failed"));
    expect(peak).toBe(2);
    expect(started.length).toBeLessThan(6);
  });
});
