import { describe, expect, it } from "vitest";
import { assignVoices, clusterSpeakers, speakerPitches, voiceDistance } from "./speakers.ts";
import { detectSpeech, meanMfcc, refineStarts, type LineFeatures } from "./features.ts";

const line = (medianHz: number | null, mfcc: number[] | null): LineFeatures => ({ medianHz, lowHz: null, highHz: null, mfcc });
const high = (k: number) => line(172 + k, [37 - k, 20, 18 + k, 0, 0, 0, 3, 0, 2, 0, 1, -1]);
const low = (k: number) => line(102 - k, [35, 24 + k, 17, 9 - k, -2, 4, -6, -2, -2, 5, 2, -1]);

describe("clusterSpeakers", () => {
  it("separates two alternating voices and keeps each together", () => {
    expect(clusterSpeakers([high(0), low(0), high(2), low(2), high(1)])).toEqual([0, 1, 0, 1, 0]);
  });

  it("finds one speaker when every line is the same voice", () => {
    expect(clusterSpeakers([high(0), high(3), high(1), high(2)])).toEqual([0, 0, 0, 0]);
  });

  it("never makes more than maxSpeakers speakers", () => {
    const many = Array.from({ length: 10 }, (_, i) => line(80 * 1.3 ** i, null));
    const labels = clusterSpeakers(many, { maxSpeakers: 3 });
    expect(new Set(labels).size).toBe(3);
    expect(clusterSpeakers(many).reduce((m, l) => Math.max(m, l), 0)).toBe(5);
  });

  it("compares an unvoiced line by its spectrum only", () => {
    expect(voiceDistance(line(null, [1, 2]), line(150, [1, 2]))).toBe(0);
    expect(voiceDistance(line(100, null), line(200, null))).toBeCloseTo(4, 5);
  });
});

describe("assignVoices", () => {
  const voices = [
    { name: "flite:slt", medianHz: 172 },
    { name: "flite:rms", medianHz: 102 },
    { name: "flite:kal", medianHz: 91 },
  ];
  it("gives each speaker the nearest unused voice by pitch", () => {
    expect(assignVoices([180, 95], voices)).toEqual(["flite:slt", "flite:kal"]);
    // the lowest speaker (98 Hz) chooses first: rms (102 Hz); the next (100 Hz) takes kal, the nearest unused
    expect(assignVoices([100, 98, 170], voices)).toEqual(["flite:kal", "flite:rms", "flite:slt"]);
    expect(speakerPitches([0, 1, 0], [high(0), low(0), high(4)])).toEqual([172, 102]);
  });
});

describe("voice activity and MFCC", () => {
  const rate = 16_000;
  const tone = (seconds: number, hz: number, amp: number) => Int16Array.from({ length: seconds * rate }, (_, i) => Math.round(amp * Math.sin((2 * Math.PI * hz * i) / rate)));
  const concat = (...parts: Int16Array[]) => {
    const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  };

  it("finds speech between silences and moves a line's start to where it starts", () => {
    const samples = concat(tone(1, 200, 30), tone(1, 200, 8000), tone(1, 200, 30), tone(0.5, 300, 8000));
    const speech = detectSpeech(samples, rate);
    expect(speech).toHaveLength(2);
    expect(speech[0]?.start).toBeCloseTo(1, 1);
    expect(speech[1]?.start).toBeCloseTo(3, 1);
    const refined = refineStarts([{ start: 0.8, end: 2.1, text: "a" }, { start: 3.15, end: 3.5, text: "b" }], speech);
    expect(refined.map((l) => l.start)).toEqual([expect.closeTo(1, 1), expect.closeTo(3, 1)]);
  });

  it("tells a low tone's spectrum from a high one's, whatever the loudness", () => {
    const a = meanMfcc(tone(0.5, 200, 8000), rate) ?? [];
    const b = meanMfcc(tone(0.5, 2000, 8000), rate) ?? [];
    const a2 = meanMfcc(tone(0.5, 200, 2000), rate) ?? [];
    const d = (x: number[], y: number[]) => Math.hypot(...x.map((v, i) => v - (y[i] ?? 0)));
    expect(d(a, b)).toBeGreaterThan(4 * d(a, a2));
    expect(meanMfcc(new Int16Array(rate), rate)).toBeNull();
  });
});
