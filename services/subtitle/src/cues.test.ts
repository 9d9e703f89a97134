import type { Language } from "@voiceloc/contracts";
import { describe, expect, it } from "vitest";
import { buildCues, cueRulesFor, DEFAULT_CUE_RULES, textLength, type Cue, type CueSegment, type TimedWord } from "./cues.ts";

/** Words spoken one after another from `start`, `step` seconds apart; `pauses` adds silence before a word index. */
function timedWords(text: string, start: number, step: number, pauses: Record<number, number> = {}): TimedWord[] {
  let at = start;
  return text.split(" ").map((word, i) => {
    at += pauses[i] ?? 0;
    const w = { word, start: at, end: at + step * 0.85 };
    at += step;
    return w;
  });
}

function timedSegment(text: string, start: number, step: number, pauses: Record<number, number> = {}): CueSegment {
  const words = timedWords(text, start, step, pauses);
  return { start: words[0]?.start ?? start, end: words.at(-1)?.end ?? start, text, words };
}

/** The rules every cue list must keep, whatever the input. */
function expectReadable(cues: readonly Cue[], language: Language, mediaSeconds: number): void {
  const rules = cueRulesFor(language);
  expect(cues.length).toBeGreaterThan(0);
  cues.forEach((cue, i) => {
    expect(cue.lines.length, `cue ${i} lines`).toBeGreaterThanOrEqual(1);
    expect(cue.lines.length, `cue ${i} lines`).toBeLessThanOrEqual(2);
    for (const line of cue.lines) {
      expect(textLength(line), `"${line}"`).toBeLessThanOrEqual(rules.maxLineChars);
      expect(line).toBe(line.trim());
      expect(line).not.toBe("");
    }
    expect(cue.start).toBeGreaterThanOrEqual(0);
    expect(cue.end).toBeLessThanOrEqual(mediaSeconds);
    expect(cue.end - cue.start, `cue ${i} duration`).toBeLessThanOrEqual(rules.maxSeconds + 1e-6);
  });
  for (let i = 1; i < cues.length; i++) {
    const gap = (cues[i]?.start ?? Number.NaN) - (cues[i - 1]?.end ?? Number.NaN);
    expect(gap, `gap before cue ${i}`).toBeGreaterThanOrEqual(rules.gapSeconds - 0.0011);
  }
}

const joined = (cues: readonly Cue[], sep = " ") => cues.flatMap((c) => c.lines).join(sep);

describe("line and cue length per script", () => {
  const cases: { language: Language; text: string; limit: number; unspaced?: boolean }[] = [
    {
      language: "English",
      limit: 42,
      text: "So today we are going to talk about the weather and how it changes during the year, because people often ask me why it rains so much in the spring and so little in the summer.",
    },
    {
      language: "Russian",
      limit: 42,
      text: "Сегодня мы поговорим о погоде и о том, как она меняется в течение года, потому что люди часто спрашивают меня, почему весной так много дождей.",
    },
    {
      language: "Arabic",
      limit: 42,
      text: "سنتحدث اليوم عن الطقس وكيف يتغير خلال السنة، لأن الناس يسألونني كثيرا لماذا تمطر كثيرا في الربيع وقليلا في الصيف.",
    },
    {
      language: "Hindi",
      limit: 42,
      text: "आज हम मौसम के बारे में बात करेंगे और यह कि साल भर में यह कैसे बदलता है, क्योंकि लोग अक्सर मुझसे पूछते हैं कि वसंत में इतनी बारिश क्यों होती है।",
    },
    {
      language: "Chinese",
      limit: 16,
      unspaced: true,
      text: "今天我们来谈谈天气，以及它在一年中是如何变化的，因为人们经常问我为什么春天下这么多雨而夏天却很少下雨。",
    },
    {
      language: "Japanese",
      limit: 16,
      unspaced: true,
      text: "今日は天気について話しましょう。一年を通してどのように変わるのか、なぜ春はこんなに雨が多いのかとよく聞かれます。",
    },
  ];
  it.each(cases)("$language: lines of at most $limit characters, two lines per cue, all text kept in order", ({ language, text, limit, unspaced }) => {
    const cues = buildCues([{ start: 1, end: 12, text }], { language, mediaSeconds: 14 });
    expectReadable(cues, language, 14);
    expect(cueRulesFor(language).maxLineChars).toBe(limit);
    expect(cues.length).toBeGreaterThanOrEqual(2);
    // Nothing lost, nothing reordered (right-to-left text stays in logical order).
    const normal = (s: string) => s.replace(/\s+/g, "");
    expect(normal(joined(cues, unspaced ? "" : " "))).toBe(normal(text.replace(/^./, (c) => c.toUpperCase())));
  });

  it("keeps Arabic and Urdu in logical order without direction marks", () => {
    for (const [language, text] of [["Arabic", "مرحبا بكم في هذا البرنامج"], ["Urdu", "آج موسم بہت اچھا ہے"]] as const) {
      const cues = buildCues([{ start: 0.5, end: 2.5, text }], { language, mediaSeconds: 5 });
      expect(cues.map((c) => c.lines)).toEqual([[text]]);
      expect(joined(cues)).not.toMatch(/[\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
    }
  });
});

describe("cue timing", () => {
  const table: { name: string; segments: CueSegment[]; media: number; expected: { start: number; end: number }[] }[] = [
    {
      name: "a short word lasts the minimum 5/6 s",
      segments: [{ start: 2, end: 2.3, text: "yes" }],
      media: 10,
      expected: [{ start: 2, end: 2.833 }],
    },
    {
      name: "a long text is held for its reading speed (17 characters per second)",
      segments: [{ start: 1, end: 2, text: "this sentence has exactly fifty one characters in it" }],
      media: 10,
      expected: [{ start: 1, end: 1 + 52 / 17 }],
    },
    {
      name: "the reading-speed extension stops two frames before the next cue",
      segments: [
        { start: 1, end: 2, text: "this sentence has exactly fifty one characters in it" },
        { start: 2.5, end: 3.5, text: "next one" },
      ],
      media: 10,
      expected: [
        { start: 1, end: 2.5 - 2 / 24 },
        { start: 2.5, end: 3.5 },
      ],
    },
    {
      name: "overlapping segments are separated by a gap",
      segments: [
        { start: 1, end: 3, text: "first thing said here" },
        { start: 2.5, end: 4, text: "second thing said" },
      ],
      media: 10,
      expected: [
        { start: 1, end: 2.5 - 2 / 24 },
        { start: 2.5, end: 4 },
      ],
    },
    {
      name: "the last cue ends with the video",
      segments: [{ start: 4.6, end: 5.2, text: "the end" }],
      media: 5,
      expected: [{ start: 4.167, end: 5 }],
    },
    {
      name: "speech running past the video's end is cut at the end",
      segments: [{ start: 3, end: 8, text: "we keep talking after the picture stops" }],
      media: 5,
      expected: [{ start: 3, end: 5 }],
    },
  ];
  it.each(table)("$name", ({ segments, media, expected }) => {
    const cues = buildCues(segments, { language: "English", mediaSeconds: media });
    expect(cues.map((c) => ({ start: c.start, end: c.end }))).toEqual(expected.map((e) => ({ start: round(e.start), end: round(e.end) })));
  });

  it("a 12-second segment becomes cues of at most 7 s", () => {
    const segment = timedSegment("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen", 0.5, 0.75);
    const cues = buildCues([segment], { language: "English", mediaSeconds: 20 });
    expectReadable(cues, "English", 20);
    expect(cues.length).toBeGreaterThanOrEqual(2);
    for (const cue of cues) expect(cue.end - cue.start).toBeLessThanOrEqual(7);
  });
});

describe("word-level and segment-level timing", () => {
  const text = "the river runs past the old mill and the children play on the bridge after school every day of the week";

  it("with word times, each cue starts at its first word and the break falls at the pause", () => {
    // A 1.2 s pause before "play" (word 10); without it the cue would break before "and".
    const segment = timedSegment(text, 1, 0.3, { 10: 1.2 });
    const cues = buildCues([segment], { language: "English", mediaSeconds: 30 });
    expectReadable(cues, "English", 30);
    expect(cues[0]?.start).toBe(1);
    expect(cues[0]?.lines.join(" ")).toBe("The river runs past the old mill and the children");
    const play = segment.words?.[10];
    expect(cues[1]?.lines.join(" ").startsWith("play on the bridge")).toBe(true);
    expect(cues[1]?.start).toBe(round(play?.start ?? Number.NaN));
  });

  it("without word times, the segment's time is shared by length and cues still cover it in order", () => {
    const cues = buildCues([{ start: 2, end: 9, text }], { language: "English", mediaSeconds: 30 });
    expectReadable(cues, "English", 30);
    expect(cues[0]?.start).toBe(2);
    expect(cues.length).toBeGreaterThanOrEqual(2);
    const lastEnd = cues.at(-1)?.end ?? 0;
    expect(lastEnd).toBeGreaterThanOrEqual(9);
    expect(joined(cues)).toBe(`The ${text.slice(4)}`);
    // The second cue starts about where its first word is spoken if words are spread evenly by length.
    const firstChars = joined([cues[0] as Cue]).length;
    const expectedStart = 2 + (7 * (firstChars + 1)) / (text.length + 1);
    expect(Math.abs((cues[1]?.start ?? 0) - expectedStart)).toBeLessThan(0.5);
  });
});

describe("natural breaks", () => {
  const cueBreaks: { name: string; text: string; language: Language; firstCueEndsWith: string }[] = [
    {
      name: "a cue breaks after a full stop",
      language: "English",
      text: "I came home very late last night. Then I cooked a big dinner and ate all of it alone at the kitchen table.",
      firstCueEndsWith: "night.",
    },
    {
      name: "a cue breaks after a comma in Spanish",
      language: "Spanish",
      text: "Hoy vamos a hablar del tiempo que hace en la ciudad, y de cómo cambia durante el año porque la gente me pregunta a menudo.",
      firstCueEndsWith: "ciudad,",
    },
  ];
  it.each(cueBreaks)("$name", ({ text, language, firstCueEndsWith }) => {
    const cues = buildCues([{ start: 0.5, end: 6.5, text }], { language, mediaSeconds: 10 });
    expectReadable(cues, language, 10);
    expect(cues[0]?.lines.at(-1)?.endsWith(firstCueEndsWith)).toBe(true);
  });

  const lineBreaks: { name: string; text: string; language: Language; lines: string[] }[] = [
    {
      name: "two lines break before a conjunction when balanced enough",
      language: "English",
      text: "I wanted to stay at home all day but my friends came over",
      lines: ["I wanted to stay at home all day", "but my friends came over"],
    },
    {
      name: "two lines break after a comma",
      language: "English",
      text: "When the rain stopped at last, we went out into the garden",
      lines: ["When the rain stopped at last,", "we went out into the garden"],
    },
    {
      name: "two lines are balanced when nothing else decides",
      language: "English",
      text: "Seven green bottles stood upon the long wooden kitchen shelf",
      lines: ["Seven green bottles stood upon", "the long wooden kitchen shelf"],
    },
    {
      name: "a line does not end with an article",
      language: "English",
      text: "Put the heavy boxes in the corner of the garage please",
      lines: ["Put the heavy boxes", "in the corner of the garage please"],
    },
  ];
  it.each(lineBreaks)("$name", ({ text, language, lines }) => {
    const cues = buildCues([{ start: 0.5, end: 6.5, text }], { language, mediaSeconds: 10 });
    expectReadable(cues, language, 10);
    expect(cues[0]?.lines).toEqual(lines);
  });

  it("one short line stays one line", () => {
    const cues = buildCues([{ start: 0, end: 2, text: "good morning everyone" }], { language: "English", mediaSeconds: 5 });
    expect(cues).toEqual([{ start: 0, end: 2, lines: ["Good morning everyone"] }]);
  });
});

describe("defaults", () => {
  it("match the numbers in docs/tasks.md", () => {
    expect(DEFAULT_CUE_RULES).toMatchObject({ maxLines: 2, maxLineChars: 42, minSeconds: 5 / 6, maxSeconds: 7, maxCharsPerSecond: 17 });
    expect(DEFAULT_CUE_RULES.gapSeconds).toBeCloseTo(2 / 24, 6);
    expect(cueRulesFor("Chinese").maxLineChars).toBe(16);
    expect(cueRulesFor("Korean").maxLineChars).toBe(16);
  });
});

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
