import { describe, expect, it } from "vitest";
import { fitClip, lengthBudget, measuredRate, mergeSegments, slotBudget, summarizeTiming } from "./timing.ts";

describe("fitClip", () => {
  it("keeps a line that fits at its original start, unchanged", () => {
    expect(fitClip(0.2, 3.5, 2.0)).toEqual({ startSeconds: 0.2, tempo: 1 });
    expect(fitClip(3.8, 10, 2.0)).toEqual({ startSeconds: 3.8, tempo: 1 });
  });

  it("speeds a line up just enough to end at the next line's start", () => {
    const slot = fitClip(1, 3, 2.4);
    expect(slot.startSeconds).toBe(1);
    expect(slot.tempo).toBeCloseTo(1.2, 3);
    expect(slot.cutSeconds).toBeUndefined();
  });

  it("never speeds up beyond 1.4x and cuts the rest at the next line's start", () => {
    const slot = fitClip(0, 2, 4);
    expect(slot.tempo).toBe(1.4);
    expect(slot.cutSeconds).toBe(2);
    expect(fitClip(0, 2, 4, { maxTempo: 2 })).toEqual({ startSeconds: 0, tempo: 2 });
    expect(fitClip(0, 2, 2.02).tempo).toBe(1);
  });

  it("starts every line on time whatever the line before did (a dense pair: 0.7 s gap)", () => {
    // The first line (0–2.5 s in the original) translated to 4.2 s; the second starts at 3.2 s.
    const first = fitClip(0, 3.2, 4.2);
    const second = fitClip(3.2, 6, 2);
    expect(first.startSeconds + (first.cutSeconds ?? 4.2 / first.tempo)).toBeLessThanOrEqual(3.2);
    expect(second.startSeconds).toBe(3.2);
  });
});

describe("summarizeTiming and lengthBudget", () => {
  it("counts the lines sped up and the largest factor", () => {
    expect(summarizeTiming([{ startSeconds: 0, tempo: 1 }, { startSeconds: 2, tempo: 1.2 }, { startSeconds: 5, tempo: 1.4, cutSeconds: 1 }])).toEqual({ lines_sped_up: 2, largest_factor: 1.4 });
    expect(summarizeTiming([{ startSeconds: 0, tempo: 1 }])).toEqual({ lines_sped_up: 0, largest_factor: 1 });
  });

  it("budgets characters from the slot and the voice's rate", () => {
    expect(lengthBudget(3, 14)).toBe(42);
    expect(lengthBudget(0.2, 14)).toBe(8);
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

  it("never joins lines the recogniser gives to different speakers, and keeps each line's speaker", () => {
    const merged = mergeSegments([
      { start: 0.1, end: 1.0, text: "are you coming", speaker: "A" },
      { start: 1.1, end: 1.6, text: "yes", speaker: "B" },
      { start: 1.7, end: 2.5, text: "right now", speaker: "B" },
    ]);
    expect(merged).toEqual([
      { start: 0.1, end: 1.0, text: "are you coming", speaker: "A" },
      { start: 1.1, end: 2.5, text: "yes right now", speaker: "B" },
    ]);
  });

  it("stops merging at the longest allowed segment", () => {
    const pieces = Array.from({ length: 6 }, (_, i) => ({ start: i * 5, end: i * 5 + 5, text: `p${i}` }));
    const merged = mergeSegments(pieces, { maxSeconds: 12 });
    expect(merged.map((s) => s.text)).toEqual(["p0 p1", "p2 p3", "p4 p5"]);
  });
});

describe("a voice's measured speaking rate and a slot's budget", () => {
  it("counts characters per second of sound, and the silence around it as a fixed cost", () => {
    expect(measuredRate(120, 8.4, { start: 0.1, end: 8.1 })).toEqual({ charsPerSecond: 15, overheadSeconds: expect.closeTo(0.4, 6) as number });
  });

  it("measures nothing from too little speech", () => {
    expect(measuredRate(120, 1, undefined)).toBeUndefined();
    expect(measuredRate(120, 1, { start: 0.2, end: 0.5 })).toBeUndefined();
    expect(measuredRate(5, 3, { start: 0, end: 2 })).toBeUndefined();
  });

  it("a slot's budget: its length less the fixed silence, at 0.9 of the voice's rate", () => {
    expect(slotBudget(3.4, { charsPerSecond: 15, overheadSeconds: 0.4 })).toBe(40);
    expect(slotBudget(3.4, { charsPerSecond: 20, overheadSeconds: 0.4 })).toBe(54);
    expect(slotBudget(0.3, { charsPerSecond: 15, overheadSeconds: 0.4 })).toBe(8);
  });
});
