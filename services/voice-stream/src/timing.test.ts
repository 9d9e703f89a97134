import { describe, expect, it } from "vitest";
import { fitClip, mergeSegments } from "./timing.ts";

describe("fitClip", () => {
  it("keeps a clip that fits at its segment's start, unchanged", () => {
    expect(fitClip(0, 0.2, 3.5, 2.0)).toEqual({ startSeconds: 0.2, tempo: 1 });
    expect(fitClip(2.2, 3.8, 10, 2.0)).toEqual({ startSeconds: 3.8, tempo: 1 });
  });

  it("speeds a clip up just enough to end at the next segment", () => {
    const slot = fitClip(0, 1, 3, 2.4);
    expect(slot.startSeconds).toBe(1);
    expect(slot.tempo).toBeCloseTo(1.2, 3);
  });

  it("never speeds up beyond the limit, and ignores negligible overruns", () => {
    expect(fitClip(0, 0, 2, 4).tempo).toBe(1.3);
    expect(fitClip(0, 0, 2, 4, { maxTempo: 1.5 }).tempo).toBe(1.5);
    expect(fitClip(0, 0, 2, 2.02).tempo).toBe(1);
  });

  it("starts a clip after a previous one that ran late, then squeezes it toward the next segment", () => {
    const slot = fitClip(3.9, 3.5, 6, 2.0);
    expect(slot.startSeconds).toBeCloseTo(4.05, 5);
    expect(slot.tempo).toBeCloseTo(2.0 / (6 - 4.05), 2);
  });

  it("caps the speed-up when there is no room left at all", () => {
    expect(fitClip(6.5, 3.5, 6, 2.0)).toEqual({ startSeconds: 6.65, tempo: 1.3 });
  });
});

describe("mergeSegments", () => {
  it("joins pieces of one utterance and keeps segments apart across a pause", () => {
    const merged = mergeSegments([
      { start: 0.1, end: 3.0, text: "the weather is" },
      { start: 3.1, end: 5.0, text: "very nice today" },
      { start: 6.5, end: 8.0, text: "i would like coffee" },
    ]);
    expect(merged).toEqual([
      { start: 0.1, end: 5.0, text: "the weather is very nice today" },
      { start: 6.5, end: 8.0, text: "i would like coffee" },
    ]);
  });

  it("stops merging at the longest allowed segment", () => {
    const pieces = Array.from({ length: 6 }, (_, i) => ({ start: i * 5, end: i * 5 + 5, text: `p${i}` }));
    const merged = mergeSegments(pieces, { maxSeconds: 12 });
    expect(merged.map((s) => s.text)).toEqual(["p0 p1", "p2 p3", "p4 p5"]);
  });
});
