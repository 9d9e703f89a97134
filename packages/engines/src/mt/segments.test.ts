import { describe, expect, it } from "vitest";
import { translateSegments, type SegmentTranslator } from "./segments.ts";

/** A translator (our own port) that upper-cases, optionally merging paragraphs; it records each call. */
function translator(options: { mergesParagraphs?: boolean } = {}): SegmentTranslator & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    translate: async ({ text }) => {
      calls.push(text);
      const upper = text.toUpperCase();
      return options.mergesParagraphs ? upper.replace(/\n\n/g, " ") : ` ${upper} `;
    },
  };
}

describe("translateSegments", () => {
  it("translates several segments per call and keeps one translation per segment, in order", async () => {
    const mt = translator();
    const progress: number[] = [];
    const out = await translateSegments(mt, {
      texts: ["one", "two", "three"],
      source: "English",
      target: "Spanish",
      onProgress: (done) => progress.push(done),
    });
    expect(out).toEqual(["ONE", "TWO", "THREE"]);
    expect(mt.calls).toEqual(["one\n\ntwo\n\nthree"]);
    expect(progress).toEqual([3]);
  });

  it("starts a new call when a batch would pass the character budget, never splitting a segment", async () => {
    const mt = translator();
    const texts = ["a".repeat(8), "b".repeat(8), "c".repeat(30)];
    const out = await translateSegments(mt, { texts, source: "English", target: "Spanish", batchChars: 20 });
    expect(out).toEqual(texts.map((t) => t.toUpperCase()));
    expect(mt.calls).toEqual([`${"a".repeat(8)}\n\n${"b".repeat(8)}`, "c".repeat(30)]);
  });

  it("translates one by one when the engine merges the paragraph breaks", async () => {
    const mt = translator({ mergesParagraphs: true });
    const out = await translateSegments(mt, { texts: ["one", "two"], source: "English", target: "Spanish" });
    expect(out).toEqual(["ONE", "TWO"]);
    expect(mt.calls).toEqual(["one\n\ntwo", "one", "two"]);
  });
});
