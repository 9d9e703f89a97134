import { describe, expect, it } from "vitest";
import { ChunkQueue, splitByWeight } from "./lanes.ts";
import { leadLimits } from "./pipeline.ts";
import { runPool } from "./pool.ts";
import { BookTextError, chunkText, cutTextWithin, decodeText, normaliseText, speakableText } from "./text.ts";
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

describe("cutTextWithin (the cut of plans that tapered each core's share)", () => {
  const book = normaliseText(Array.from({ length: 12 }, () => ENGLISH_BOOK).join("\n\n"));
  const words = (s: string) => s.split(/\s+/).filter(Boolean);
  const lengthOf = (s: string) => [...s].length;
  // As such a plan stored them: big chunks, halving towards the end of each of two shares.
  const limits = [6_000, 6_000, 3_000, 1_500, 1_000, 6_000, 6_000, 3_000, 1_500, 1_000, 1_000];

  it("cuts between sentences within each chunk's own limit, losing no words", () => {
    const chunks = cutTextWithin(book, limits);
    expect(chunks.length).toBeGreaterThanOrEqual(limits.length);
    for (const [i, chunk] of chunks.entries()) {
      expect(lengthOf(chunk)).toBeLessThanOrEqual(limits[i] ?? 1_000);
    }
    // Past the stored limits, chunks keep the last one.
    expect(chunks.slice(limits.length).every((chunk) => lengthOf(chunk) <= 1_000)).toBe(true);
    expect(words(chunks.join(" "))).toEqual(words(book));
  });

  it("gives the same chunks every time, and none for a text with nothing to say", () => {
    expect(cutTextWithin(book, limits)).toEqual(cutTextWithin(book, [...limits]));
    expect(cutTextWithin("Hello there.\n\nGeneral Kenobi.", [10_000, 1_000])).toEqual(["Hello there.\n\nGeneral Kenobi."]);
    expect(cutTextWithin("* * *", [10_000, 1_000])).toEqual([]);
    expect(cutTextWithin(book, [])).toEqual([]);
  });
});

describe("speakableText", () => {
  it("ends headings with a full stop so the voice pauses, and joins paragraphs", () => {
    expect(speakableText("Chapter One\n\nIt began to rain.\n\nThe end, or so it seemed:\n\n* * *")).toBe(
      "Chapter One. It began to rain. The end, or so it seemed: * * *",
    );
  });
});

describe("lanes: splitting and sharing the chunks", () => {
  it("splits the chunks into contiguous lists of about equal weight, one per lane, each ending nearest its share", () => {
    const weights = [10, 10, 10, 10, 30, 10, 10, 10];
    expect(splitByWeight([0, 1, 2, 3, 4, 5, 6, 7], (i) => weights[i]!, 2)).toEqual([[0, 1, 2, 3], [4, 5, 6, 7]]);
    const tapered = [100, 100, 50, 25, 12, 13, 100, 100, 50, 25, 13];
    expect(splitByWeight(tapered.map((_, i) => i), (i) => tapered[i]!, 2)).toEqual([[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]);
    expect(splitByWeight([3, 4, 9], () => 1, 4)).toEqual([[3], [4], [9]]);
    expect(splitByWeight([], () => 1, 2)).toEqual([]);
  });

  it("a lane keeps its run while the next chunk follows the last, and an idle lane takes the back half of the fullest list", () => {
    const queue = new ChunkQueue([[0, 1, 2], [3, 4, 5, 6, 7, 8, 9]], 2, () => 1);
    expect(queue.take(0)).toBe(0);
    expect(queue.nextAfter(0, 0)).toBe(1);
    expect(queue.nextAfter(0, 5)).toBeUndefined();
    expect(queue.take(1)).toBe(3);
    expect(queue.nextAfter(0, 1)).toBe(2);
    expect(queue.nextAfter(0, 2)).toBeUndefined(); // lane 0's list is empty: its run ends
    // Lane 1 still has 4..9 unstarted: lane 0 takes the back half and starts a new run there.
    expect(queue.take(0)).toBe(7);
    expect(queue.nextAfter(1, 3)).toBe(4);
    expect(queue.nextAfter(1, 4)).toBe(5);
    expect(queue.nextAfter(1, 5)).toBe(6);
    expect(queue.nextAfter(1, 6)).toBeUndefined();
    expect(queue.nextAfter(0, 7)).toBe(8);
    expect(queue.take(1)).toBe(9); // the last unstarted chunk moves to the idle lane
    expect(queue.take(0)).toBeUndefined();
    expect(queue.remaining).toBe(0);
  });

  it("an idle lane takes another lane's chunks only when they weigh more than a new encoder costs", () => {
    const weights = [5000, 2500, 1250, 950, 5000];
    const queue = new ChunkQueue([[0, 1, 2, 3], [4]], 2, (i) => weights[i]!, 1000);
    expect(queue.take(1)).toBe(4);
    expect(queue.take(0)).toBe(0);
    expect(queue.nextAfter(0, 0)).toBe(1);
    expect(queue.take(1)).toBe(2); // 1250 + 950 left in lane 0's list: worth a new encoder
    expect(queue.nextAfter(1, 2)).toBe(3);
    expect(queue.remaining).toBe(0);

    const late = new ChunkQueue([[0, 1, 2, 3], [4]], 2, (i) => weights[i]!, 1000);
    expect(late.take(1)).toBe(4);
    expect(late.take(0)).toBe(0);
    expect(late.nextAfter(0, 0)).toBe(1);
    expect(late.nextAfter(0, 1)).toBe(2);
    expect(late.take(1)).toBeUndefined(); // 950 left: lane 0's own encoder takes it sooner
    expect(late.nextAfter(0, 2)).toBe(3);
  });
});

describe("a long book's lead: small first chunks, growing", () => {
  it("cuts a long first chapter to 250, 500, 1,000, 2,000 characters, then to the plan's size, losing no words, the same every time", () => {
    expect(leadLimits(10_000)).toEqual([250, 500, 1_000, 2_000, 4_000]);
    expect(leadLimits(3_000)).toEqual([250, 500, 1_000]);
    // Chunks under 3,000 characters: the first is spoken in about a second anyway, so no lead.
    expect(leadLimits(2_999)).toEqual([]);
    let book = "";
    while (book.length < 30_000) book += `${normaliseText(ENGLISH_BOOK)}\n\n`;
    book = normaliseText(book);
    const limits = [...leadLimits(10_000), 10_000];
    const chunks = cutTextWithin(book, limits);
    for (const [i, chunk] of chunks.entries()) expect(chunk.length).toBeLessThanOrEqual(limits[i] ?? 10_000);
    // Each lead chunk is filled to near its limit (a sentence or so short), so the first one is about 15 s of speech.
    for (const [i, limit] of leadLimits(10_000).entries()) expect(chunks[i]!.length).toBeGreaterThan(limit * 0.6);
    expect(chunks.length).toBeGreaterThan(5);
    const words = (s: string) => s.split(/\s+/).filter(Boolean);
    expect(chunks.flatMap(words)).toEqual(words(book));
    expect(cutTextWithin(book, [...limits])).toEqual(chunks);
  });

  it("a chunk named alone ends its run: the lane's next chunk starts a new run (a new encoder)", () => {
    const queue = new ChunkQueue([[0, 1, 2], [3, 4]], 2, () => 1, 0, [0]);
    expect(queue.take(0)).toBe(0);
    expect(queue.nextAfter(0, 0)).toBeUndefined(); // chunk 0's encoder ends with it
    expect(queue.take(0)).toBe(1); // the lane goes on with its own list, in a new run
    expect(queue.nextAfter(0, 1)).toBe(2);
    expect(queue.take(1)).toBe(3);
    expect(queue.nextAfter(1, 3)).toBe(4);
    expect(queue.remaining).toBe(0);
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
