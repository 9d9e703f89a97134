/**
 * Burned-in text is sized from the frame's shorter side and a cue stays at most two lines whatever the
 * frame's shape: a fixed cue is laid out and burned as the service does it (`burnInLayout` on the
 * probed upright frame, `buildCues` with its rules, `buildBurnInArgs` with its style) into a dark
 * video, and the text is measured on a frame of the output: rows with bright pixels, each run of
 * them one line of text.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Language } from "@voiceloc/contracts";
import { buildBurnInArgs, uprightFrameSize, type MediaToolkit } from "@voiceloc/media";
import { tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCues, DEFAULT_CUE_RULES, textLength } from "./cues.ts";
import { writeSrt } from "./formats.ts";
import { burnInLayout } from "./layout.ts";
import { createStack, grayFrame, makeDarkVideo, textRows } from "./testing/harness.ts";

const SENTENCE = "And watch the birds fly over the water near the old bridge";
/** Capitals are the widest ordinary Latin text (about 0.48 of the font size per character). */
const CAPITALS = "WHAT WE MOW WHEN WE MEW IS WHOM WE WOW ON MONDAY";

let media: MediaToolkit;
let dir: { path: string; cleanup: () => Promise<void> };

beforeAll(async () => {
  media = (await createStack()).media;
  dir = await tempDir("voiceloc-subtitle-layout-");
});

afterAll(async () => {
  await dir?.cleanup();
});

interface Burned {
  lines: string[][];
  width: number;
  height: number;
  runs: [number, number][];
  band: number;
}

/** Burns `text` as one cue into a dark video of `size` the way the service does, and measures its first cue. */
async function burn(name: string, size: string, text: string, options: { rotation?: 90 | 270; language?: Language } = {}): Promise<Burned> {
  const language = options.language ?? "English";
  const video = await makeDarkVideo(media, join(dir.path, `${name}.mp4`), { size, seconds: 2, ...(options.rotation === undefined ? {} : { rotation: options.rotation }) });
  const info = await media.probe(video);
  if (info.video === undefined) throw new Error("the test video has no picture");
  const layout = burnInLayout(uprightFrameSize(info.video), language);
  const cues = buildCues([{ start: 0, end: 1.8, text }], { language, mediaSeconds: 2, rules: layout.rules });
  const srt = join(dir.path, `${name}.srt`);
  await writeFile(srt, writeSrt(cues), "utf8");
  const output = join(dir.path, `${name}-burned.mp4`);
  await media.run(buildBurnInArgs({ video, subtitles: srt, output, style: layout.style, preset: "ultrafast" }));
  const first = cues[0];
  if (first === undefined) throw new Error("no cue");
  const frame = await grayFrame(media, output, (first.start + first.end) / 2);
  return { lines: cues.map((c) => c.lines), width: frame.width, height: frame.height, ...textRows(frame) };
}

const describeRuns = (b: Burned) => `${b.width}x${b.height}: rows ${JSON.stringify(b.runs)}, band ${b.band}px, cues ${JSON.stringify(b.lines)}`;

describe("burned-in text on frames of every shape", () => {
  let landscape: Burned;

  beforeAll(async () => {
    landscape = await burn("landscape", "1280x720", SENTENCE);
  });

  it("1280×720: the sentence is two lines in a band of about a tenth of the height, laid out as before", () => {
    expect(landscape.lines, describeRuns(landscape)).toEqual([["And watch the birds fly over", "the water near the old bridge"]]);
    expect(landscape.runs, describeRuns(landscape)).toHaveLength(2);
    // Two lines of a 40-pixel font (16 of the script's 288, scaled to 720) with their outline.
    expect(landscape.band / landscape.height, describeRuns(landscape)).toBeGreaterThan(0.08);
    expect(landscape.band / landscape.height, describeRuns(landscape)).toBeLessThan(0.11);
    // The line length of a landscape frame is the rules' own (the cues are those of a side file).
    expect(burnInLayout({ width: 1280, height: 720 }, "English").rules).toEqual(DEFAULT_CUE_RULES);
    expect(buildCues([{ start: 0, end: 1.8, text: SENTENCE }], { language: "English", mediaSeconds: 2 }).map((c) => c.lines)).toEqual(landscape.lines);
  });

  it("720×1280 (portrait phone video): the same sentence is two lines, drawn as large as on 1280×720, in under 12 % of the height", async () => {
    const portrait = await burn("portrait", "720x1280", SENTENCE);
    expect(portrait.lines, describeRuns(portrait)).toEqual([["And watch the birds fly over", "the water near the old bridge"]]);
    expect(portrait.runs, describeRuns(portrait)).toHaveLength(2);
    expect(portrait.band / portrait.height, describeRuns(portrait)).toBeLessThanOrEqual(0.12);
    // Same shorter side, same text: the same band, line by line.
    expect(Math.abs(portrait.band - landscape.band), `${describeRuns(portrait)} / ${describeRuns(landscape)}`).toBeLessThanOrEqual(2);
  });

  it("a phone video stored 1280×720 with a quarter-turn display matrix is laid out for its upright 720×1280 frame", async () => {
    const turned = await burn("turned", "1280x720", SENTENCE, { rotation: 90 });
    expect([turned.width, turned.height]).toEqual([720, 1280]);
    expect(turned.runs, describeRuns(turned)).toHaveLength(2);
    expect(turned.band / turned.height, describeRuns(turned)).toBeLessThanOrEqual(0.12);
  });

  it("portrait lines are cut to what the width holds: the widest text (capitals) still draws each line on one row", async () => {
    const rules = burnInLayout({ width: 720, height: 1280 }, "English").rules;
    expect(rules.maxLineChars).toBeLessThan(DEFAULT_CUE_RULES.maxLineChars);
    const capitals = await burn("capitals", "720x1280", CAPITALS);
    expect(capitals.lines.flat().every((line) => textLength(line) <= rules.maxLineChars), describeRuns(capitals)).toBe(true);
    expect(capitals.lines[0], describeRuns(capitals)).toHaveLength(2);
    expect(capitals.runs, describeRuns(capitals)).toHaveLength(2);
  });

  it("square (1080×1080) and very wide (1920×480) frames: two lines, the text sized from the shorter side", async () => {
    for (const [name, size] of [["square", "1080x1080"], ["wide", "1920x480"]] as const) {
      const b = await burn(name, size, SENTENCE);
      expect(b.runs, describeRuns(b)).toHaveLength(2);
      const short = Math.min(b.width, b.height);
      // The landscape band is 70 of 720 pixels; the same share of the shorter side, within rounding.
      expect(Math.abs(b.band / short - landscape.band / landscape.height), describeRuns(b)).toBeLessThan(0.01);
    }
  });

  it("Chinese on a portrait frame keeps its 16 characters a line, two lines", async () => {
    const text = "今天天气很好我们一起去河边看鸟飞过那座古老的石桥好吗";
    const b = await burn("chinese", "720x1280", text, { language: "Chinese" });
    expect(burnInLayout({ width: 720, height: 1280 }, "Chinese").rules.maxLineChars).toBe(16);
    expect(b.lines[0], describeRuns(b)).toHaveLength(2);
    expect(b.runs, describeRuns(b)).toHaveLength(2);
    expect(b.band / b.height).toBeLessThanOrEqual(0.12);
  });
});

describe("burnInLayout", () => {
  it("scripts in the frame's proportions with a shorter side of 288, margins in the same units", () => {
    expect(burnInLayout({ width: 1280, height: 720 }, "English").style).toMatchObject({ playResX: 512, playResY: 288, fontSize: 16, marginV: 14, marginL: 10, marginR: 10 });
    expect(burnInLayout({ width: 720, height: 1280 }, "English").style).toMatchObject({ playResX: 288, playResY: 512, fontSize: 16 });
    expect(burnInLayout({ width: 640, height: 480 }, "English").style).toMatchObject({ playResX: 384, playResY: 288 });
    expect(burnInLayout({ width: 1080, height: 1080 }, "English").style).toMatchObject({ playResX: 288, playResY: 288 });
    expect(burnInLayout({ width: 721, height: 1279 }, "English").style).toMatchObject({ playResX: 288, playResY: 511 });
    expect(burnInLayout({ width: 1, height: 4000 }, "English").style).toMatchObject({ playResX: 288, playResY: 1_000_000 });
    expect(burnInLayout({ width: 720, height: 1280 }, "Urdu").style.fontName).toBe("Noto Nastaliq Urdu");
  });

  it("line length: the rules' own from 4:3 outward, what the width holds on narrower frames, never under half", () => {
    const chars = (width: number, height: number, language: Language = "English", fontSize?: number) => burnInLayout({ width, height }, language, fontSize).rules.maxLineChars;
    expect(chars(1920, 1080)).toBe(42);
    expect(chars(640, 480)).toBe(42);
    expect(chars(1080, 1080)).toBe(33);
    expect(chars(720, 1280)).toBe(33);
    expect(chars(1080, 1920)).toBe(33);
    expect(chars(720, 1280, "Japanese")).toBe(16);
    // A large configured font: fewer characters a line, down to half the rules', then a smaller font.
    expect(chars(1280, 720, "English", 24)).toBe(41);
    expect(chars(720, 1280, "English", 24)).toBe(22);
    const huge = burnInLayout({ width: 720, height: 1280 }, "English", 40);
    expect(huge.rules.maxLineChars).toBe(21);
    expect(huge.style.fontSize).toBeLessThan(26);
    expect(() => burnInLayout({ width: 720, height: 1280 }, "English", Number.NaN)).toThrow(RangeError);
  });
});
