import { describe, expect, it } from "vitest";
import { RecognitionError } from "./errors.ts";
import { parsePocketsphinxOutput } from "./pocketsphinx.ts";
import { buildTranscript, normalizeSegments, requireSpeech, segmentsFromUtterances, splitTimedText, splitUtterance, wordsToText } from "./segments.ts";
import type { TranscriptWord } from "./types.ts";

/** Real `pocketsphinx_continuous -time yes` output (0.8+5prealpha, Debian) for two flite sentences and a tone. */
const OUTPUT = [
  "the quick brown fox jumped over the lazy dog",
  "<s> 0.090 0.150 0.999400",
  "the 0.160 0.280 0.578878",
  "quick 0.290 0.560 0.118286",
  "brown 0.570 0.910 0.535812",
  "fox 0.920 1.290 1.000100",
  "jumped 1.300 1.740 0.100835",
  "[SPEECH] 1.750 1.900 0.999900",
  "over 1.910 1.960 0.999100",
  "<sil> 1.970 2.000 0.999100",
  "the 2.000 2.080 1.000000",
  "lazy 2.090 2.520 0.999900",
  "dog 2.530 2.860 0.666612",
  "</s> 5.000 5.400 1.000000",
  "please open the window and close",
  "<s> 6.180 6.240 0.999800",
  "please 6.250 6.600 0.999700",
  "open 6.610 6.980 0.704800",
  "the 6.990 7.060 0.961169",
  "window 7.070 7.470 0.999800",
  "and(2) 7.480 7.630 0.881514",
  "close(2) 7.640 7.990 0.634668",
  "</s> 9.780 9.830 1.000000",
  "",
  "<s> 10.000 10.110 1.000000",
  "</s> 10.120 10.630 1.000000",
  "",
].join("\n");

function words(spec: string): TranscriptWord[] {
  // "word@start-end word@start-end …"
  return spec.split(" ").map((item) => {
    const [word = "", times = ""] = item.split("@");
    const [start = "0", end = "0"] = times.split("-");
    return { word, start: Number(start), end: Number(end) };
  });
}

describe("pocketsphinx output", () => {
  it("reads utterances, drops fillers and pronunciation variants, clamps confidence", () => {
    const utterances = parsePocketsphinxOutput(OUTPUT);
    expect(utterances).toHaveLength(2);
    expect(utterances[0]?.map((w) => w.word)).toEqual(["the", "quick", "brown", "fox", "jumped", "over", "the", "lazy", "dog"]);
    expect(utterances[1]?.map((w) => w.word)).toEqual(["please", "open", "the", "window", "and", "close"]);
    expect(utterances[0]?.[3]).toEqual({ word: "fox", start: 0.92, end: 1.29, confidence: 1 });
    expect(utterances[1]?.[0]).toEqual({ word: "please", start: 6.25, end: 6.6, confidence: 1 });
  });

  it("gives nothing for empty output or an empty hypothesis", () => {
    expect(parsePocketsphinxOutput("")).toEqual([]);
    expect(parsePocketsphinxOutput("\n<s> 0.000 0.110 1.000000\n</s> 0.120 0.630 1.000000\n")).toEqual([]);
  });

  it("makes one readable segment per utterance", () => {
    const segments = segmentsFromUtterances(parsePocketsphinxOutput(OUTPUT));
    expect(segments.map((s) => [s.start, s.end, s.text])).toEqual([
      [0.16, 2.86, "The quick brown fox jumped over the lazy dog"],
      [6.25, 7.99, "Please open the window and close"],
    ]);
  });
});

describe("segment helpers", () => {
  it("capitalises the first letter and the pronoun I", () => {
    expect(wordsToText(["i", "think", "i'm", "sure", "it", "is"])).toBe("I think I'm sure it is");
  });

  it("splits an over-long utterance at the longest pause into cues within the limits", () => {
    const long = words(
      "once@0-0.5 upon@0.5-0.8 a@0.8-0.9 time@0.9-1.2 there@1.2-1.4 was@1.4-1.6 a@1.6-1.7 small@1.7-2 village@2-2.3 " +
        "near@2.3-2.5 the@2.5-2.6 mountains@2.6-3.1 where@3.9-4.1 people@4.1-4.5 worked@4.5-4.8 in@4.8-4.9 the@4.9-5 fields@5-5.4 " +
        "every@5.4-5.7 day@5.7-6 and@6-6.2 told@6.2-6.5 long@6.5-6.8 stories@6.8-7.3 in@7.3-7.4 the@7.4-7.5 evening@7.5-8",
    );
    const pieces = splitUtterance(long, { maxSeconds: 7, maxChars: 80 });
    expect(pieces.length).toBeGreaterThanOrEqual(2);
    expect(pieces.flat()).toEqual(long);
    expect(pieces[0]?.at(-1)?.word).toBe("mountains");
    for (const piece of pieces) {
      const text = piece.map((w) => w.word).join(" ");
      expect(text.length).toBeLessThanOrEqual(80);
      expect((piece.at(-1)?.end ?? 0) - (piece[0]?.start ?? 0)).toBeLessThanOrEqual(7);
    }
  });

  it("splits continuous speech without pauses into even cues, also for very long utterances", () => {
    const vocabulary = ["people", "worked", "in", "the", "fields", "every", "day", "and", "told", "stories"];
    const long: TranscriptWord[] = Array.from({ length: 2_000 }, (_, i) => ({ word: vocabulary[i % vocabulary.length] ?? "x", start: i * 0.3, end: i * 0.3 + 0.3 }));
    const pieces = splitUtterance(long, { maxSeconds: 7, maxChars: 80 });
    expect(pieces.flat()).toEqual(long);
    const sizes = pieces.map((p) => p.length);
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(8);
    for (const piece of pieces) {
      expect(piece.map((w) => w.word).join(" ").length).toBeLessThanOrEqual(80);
      expect((piece.at(-1)?.end ?? 0) - (piece[0]?.start ?? 0)).toBeLessThanOrEqual(7);
      expect(["the", "in", "and"]).not.toContain(piece.at(-1)?.word === long.at(-1)?.word ? "" : piece.at(-1)?.word);
    }
    const segments = segmentsFromUtterances([long.slice(0, 40)]);
    expect(segments[0]?.text.startsWith("People")).toBe(true);
    expect(segments[1]?.text.charAt(0)).toBe(segments[1]?.text.charAt(0).toLowerCase());
  });

  it("keeps a single word that is longer than the limits", () => {
    expect(splitUtterance(words("hmm@0-9"), { maxSeconds: 7, maxChars: 80 })).toHaveLength(1);
  });

  it("sorts, clamps and removes overlaps", () => {
    const segments = normalizeSegments(
      [
        { start: 4, end: 12, text: " last " },
        { start: -1, end: 2.5, text: "first" },
        { start: 2, end: 3, text: "second" },
        { start: 3, end: 3.5, text: "   " },
      ],
      10,
    );
    expect(segments).toEqual([
      { start: 0, end: 2, text: "first" },
      { start: 2, end: 3, text: "second" },
      { start: 4, end: 10, text: "last" },
    ]);
  });

  it("splits an untimed long segment at sentence ends in proportion to the characters", () => {
    const text = "This is the first sentence of a long segment. Here comes a second one, quite long too. And a third one ends it.";
    const pieces = splitTimedText({ start: 10, end: 30, text }, { maxSeconds: 7, maxChars: 80 });
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    expect(pieces.map((p) => p.text).join(" ")).toBe(text);
    expect(pieces[0]?.start).toBe(10);
    expect(pieces.at(-1)?.end).toBe(30);
    for (let i = 1; i < pieces.length; i++) expect(pieces[i]?.start).toBeGreaterThanOrEqual(pieces[i - 1]?.end ?? 0);
  });

  it("builds the transcript text and refuses an empty one on request", () => {
    const transcript = buildTranscript("English", 5, [{ start: 0, end: 1, text: "Hello" }, { start: 1, end: 2, text: "world" }]);
    expect(transcript).toMatchObject({ language: "English", durationSeconds: 5, text: "Hello world" });
    expect(requireSpeech(transcript)).toBe(transcript);
    const empty = buildTranscript("English", 5, []);
    expect(empty).toEqual({ language: "English", durationSeconds: 5, segments: [], text: "" });
    expect(() => requireSpeech(empty)).toThrow(RecognitionError);
    expect(() => requireSpeech(empty)).toThrow("The audio contains no recognisable speech.");
  });
});
