import { describe, expect, it } from "vitest";
import { assembleChunks, mapInOrder, normalizeTranslationInput, planChunks } from "./chunk.ts";

function rebuild(text: string, max: number): string {
  const plan = planChunks(text, max);
  return assembleChunks(
    plan,
    plan.chunks.map((c) => c.text),
  );
}

describe("planChunks", () => {
  it("keeps short text in one chunk with its surrounding whitespace", () => {
    const plan = planChunks("\n  Hello there.\n\nSecond paragraph.  \n", 100);
    expect(plan.leading).toBe("\n  ");
    expect(plan.chunks).toHaveLength(1);
    expect(plan.chunks[0]?.paragraphs).toEqual(["Hello there.", "Second paragraph."]);
    expect(plan.chunks[0]?.breaks).toEqual(["\n\n"]);
    expect(plan.chunks[0]?.after).toBe("  \n");
  });

  it("returns no chunk for blank text", () => {
    expect(planChunks(" \n\t", 100)).toEqual({ leading: " \n\t", chunks: [] });
  });

  it("packs whole paragraphs and never exceeds the limit", () => {
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Paragraph ${i + 1} has a sentence. And another one here.`);
    const text = paragraphs.join("\n\n");
    const plan = planChunks(text, 200);
    expect(plan.chunks.length).toBeGreaterThan(5);
    for (const chunk of plan.chunks) {
      expect(chunk.text.length).toBeLessThanOrEqual(200);
      for (const p of chunk.paragraphs) expect(paragraphs).toContain(p);
    }
    expect(rebuild(text, 200)).toBe(text);
  });

  it("splits a long paragraph between sentences and keeps the exact whitespace", () => {
    const sentence = (i: number) => `This is sentence number ${i}, which is long enough to matter.`;
    const text = `Title\n\n${Array.from({ length: 40 }, (_, i) => sentence(i)).join(" ")}\n\n\nEnd line one\nEnd line two`;
    const plan = planChunks(text, 300);
    for (const chunk of plan.chunks) {
      expect(chunk.text.length).toBeLessThanOrEqual(300);
      // every cut inside the long paragraph is after a full stop
      if (chunk.after === " ") expect(chunk.text.endsWith(".")).toBe(true);
    }
    expect(rebuild(text, 300)).toBe(text);
  });

  it("cuts an over-long sentence at clause breaks or spaces", () => {
    const text = `${Array.from({ length: 60 }, (_, i) => `clause ${i}`).join(", ")}.`;
    const plan = planChunks(text, 100);
    expect(plan.chunks.length).toBeGreaterThan(3);
    for (const chunk of plan.chunks) expect(chunk.text.length).toBeLessThanOrEqual(100);
    expect(rebuild(text, 100)).toBe(text);
    const unbroken = "x".repeat(250);
    expect(planChunks(unbroken, 100).chunks.map((c) => c.text.length)).toEqual([100, 100, 50]);
    expect(rebuild(unbroken, 100)).toBe(unbroken);
  });

  it("splits after CJK, Devanagari and Urdu sentence ends", () => {
    const text = "这是第一句。这是第二句。这是第三句。".repeat(10);
    const plan = planChunks(text, 40);
    for (const chunk of plan.chunks) {
      expect(chunk.text.length).toBeLessThanOrEqual(40);
      expect(chunk.text.endsWith("。")).toBe(true);
    }
    expect(rebuild(text, 40)).toBe(text);
    const hindi = "यह घर लाल है। ".repeat(20).trim();
    expect(rebuild(hindi, 50)).toBe(hindi);
  });

  it("does not cut inside numbers or abbreviations", () => {
    const text = `The value is 3.5 units, e.g.this one. ${"Another sentence follows here. ".repeat(5)}`.trim();
    const plan = planChunks(text, 60);
    expect(plan.chunks[0]?.text).toContain("3.5");
    expect(plan.chunks[0]?.text).toContain("e.g.this");
  });
});

describe("normalizeTranslationInput", () => {
  it("unifies line endings and drops control characters", () => {
    expect(normalizeTranslationInput("a\r\nb\rc\u0000d\te\u000Bf")).toBe("a\nb\ncd\tef");
  });
});

describe("mapInOrder", () => {
  it("keeps the order of results whatever the completion order", async () => {
    const delays = [30, 5, 20, 1, 10];
    const out = await mapInOrder(delays, 3, (d, i) => new Promise<number>((resolve) => setTimeout(() => resolve(i), d)));
    expect(out).toEqual([0, 1, 2, 3, 4]);
  });
});
