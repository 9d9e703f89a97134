import { describe, expect, it } from "vitest";
import type { Cue } from "./cues.ts";
import { escapeVttText, formatTimestamp, parseSubtitles, writeSrt, writeSubtitles, writeVtt } from "./formats.ts";

const cues: Cue[] = [
  { start: 1.5, end: 3.25, lines: ["The weather is nice", "today."] },
  { start: 3.333, end: 5.001, lines: ["Fish & chips <b>are</b> --> served"] },
  { start: 3725.004, end: 3727.9, lines: ["After an hour"] },
];

describe("timestamps", () => {
  it.each([
    [0, ",", "00:00:00,000"],
    [1.5, ",", "00:00:01,500"],
    [59.9996, ".", "00:01:00.000"],
    [3725.004, ".", "01:02:05.004"],
    [360_000.25, ",", "100:00:00,250"],
    [-1, ".", "00:00:00.000"],
  ] as const)("%s s with %s → %s", (seconds, sep, expected) => {
    expect(formatTimestamp(seconds, sep)).toBe(expected);
  });
});

describe("SRT (SubRip)", () => {
  it("numbers blocks from 1, uses comma milliseconds, CRLF line ends and a blank line after each cue", () => {
    expect(writeSrt(cues)).toBe(
      "1\r\n00:00:01,500 --> 00:00:03,250\r\nThe weather is nice\r\ntoday.\r\n\r\n" +
        "2\r\n00:00:03,333 --> 00:00:05,001\r\nFish & chips <b>are</b> --> served\r\n\r\n" +
        "3\r\n01:02:05,004 --> 01:02:07,900\r\nAfter an hour\r\n\r\n",
    );
  });

  it("never writes an empty line inside a cue (it would end the cue) and skips cues without text", () => {
    const out = writeSrt([
      { start: 0, end: 1, lines: ["first\n\nsecond", "  "] },
      { start: 2, end: 3, lines: [""] },
      { start: 4, end: 5, lines: ["last"] },
    ]);
    expect(out).toBe("1\r\n00:00:00,000 --> 00:00:01,000\r\nfirst\r\nsecond\r\n\r\n2\r\n00:00:04,000 --> 00:00:05,000\r\nlast\r\n\r\n");
  });

  it("reads back the same cues with CRLF or LF line ends", () => {
    const srt = writeSrt(cues.slice(0, 1));
    const expected = [{ start: 1.5, end: 3.25, lines: ["The weather is nice", "today."] }];
    expect(parseSubtitles(srt)).toEqual(expected);
    expect(parseSubtitles(srt.replace(/\r\n/g, "\n"))).toEqual(expected);
  });
});

describe("WebVTT", () => {
  it("starts with the WEBVTT header and a blank line, uses dot milliseconds and escapes &, < and >", () => {
    expect(writeVtt(cues)).toBe(
      "WEBVTT\n\n" +
        "00:00:01.500 --> 00:00:03.250\nThe weather is nice\ntoday.\n\n" +
        "00:00:03.333 --> 00:00:05.001\nFish &amp; chips &lt;b&gt;are&lt;/b&gt; --&gt; served\n\n" +
        "01:02:05.004 --> 01:02:07.900\nAfter an hour\n\n",
    );
  });

  it("escapes in the order that keeps entities intact", () => {
    expect(escapeVttText("a<b & c>d &amp;")).toBe("a&lt;b &amp; c&gt;d &amp;amp;");
  });

  it("reads back the original text", () => {
    expect(parseSubtitles(writeVtt(cues))).toEqual(cues.map((c) => ({ ...c, start: Math.round(c.start * 1000) / 1000 })));
  });

  it("an empty cue list is a valid file with only the header", () => {
    expect(writeVtt([])).toBe("WEBVTT\n\n");
  });
});

it("writeSubtitles picks the writer by format", () => {
  expect(writeSubtitles("srt", cues)).toBe(writeSrt(cues));
  expect(writeSubtitles("vtt", cues)).toBe(writeVtt(cues));
});
