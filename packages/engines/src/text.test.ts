import { describe, expect, it } from "vitest";
import { UnspeakableTextError } from "./errors.ts";
import { prepareText, splitSentences, splitText, toAsciiText, toLatin1 } from "./text.ts";

describe("prepareText", () => {
  it("normalises whitespace and control characters", () => {
    expect(prepareText("  Hello\u0007\n\t world\u200B  ")).toBe("Hello world");
    expect(prepareText("e\u0301te\u0301")).toBe("été");
  });
  it("refuses text with nothing to say", () => {
    expect(() => prepareText(" ... !! ")).toThrow(UnspeakableTextError);
    expect(() => prepareText("")).toThrow(/no text to speak/);
  });
});

describe("splitSentences", () => {
  it("splits Latin, CJK, Devanagari, Urdu and Ethiopic sentences", () => {
    expect(splitSentences("Hello there. Is it 3.5 now? Yes!")).toEqual(["Hello there.", "Is it 3.5 now?", "Yes!"]);
    expect(splitSentences("你好。今天天气很好！我们走吧")).toEqual(["你好。", "今天天气很好！", "我们走吧"]);
    expect(splitSentences("आज मौसम अच्छा है। कल बारिश होगी।")).toEqual(["आज मौसम अच्छा है।", "कल बारिश होगी।"]);
    expect(splitSentences("آج موسم اچھا ہے۔ کل بارش ہوگی۔")).toEqual(["آج موسم اچھا ہے۔", "کل بارش ہوگی۔"]);
    expect(splitSentences("ሰላም ለዓለም። ዛሬ ጥሩ ቀን ነው።")).toEqual(["ሰላም ለዓለም።", "ዛሬ ጥሩ ቀን ነው።"]);
    expect(splitSentences('He said "stop." Then left.')).toEqual(['He said "stop."', "Then left."]);
  });
});

describe("splitText", () => {
  it("keeps short text whole", () => {
    expect(splitText("One. Two.", 100)).toEqual(["One. Two."]);
  });

  it("groups sentences into chunks under the limit", () => {
    const text = Array.from({ length: 30 }, (_, i) => `Sentence number ${i} is here.`).join(" ");
    const chunks = splitText(text, 100);
    expect(chunks.length).toBeGreaterThan(5);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(100);
      expect(chunk).toMatch(/\.$/);
    }
    expect(chunks.join(" ")).toBe(text);
  });

  it("cuts over-long sentences at commas, then spaces, then anywhere", () => {
    const long = `${"word ".repeat(40)}end, ${"more ".repeat(10)}done.`;
    for (const chunk of splitText(long, 60)) expect(chunk.length).toBeLessThanOrEqual(60);
    const chinese = "你".repeat(130);
    const pieces = splitText(chinese, 50);
    expect(pieces.map((p) => [...p].length)).toEqual([50, 50, 30]);
  });
});

describe("encodings", () => {
  it("transcodes to Latin-1 for festival Italian", () => {
    expect([...toLatin1("perché è così — “bello” €")]).toEqual([...Buffer.from('perché è così  -  "bello"  ', "latin1")]);
  });
  it("reduces text to ASCII for English-only engines", () => {
    expect(toAsciiText("Café “déjà vu” — naïve…")).toBe('Cafe "deja vu" - naive...');
  });
});
