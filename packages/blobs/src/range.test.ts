import { describe, expect, it } from "vitest";
import { contentRange, contentTypeFor, parseRange } from "./range.ts";

describe("parseRange", () => {
  const size = 1000;

  it("returns none without a usable header", () => {
    for (const header of [undefined, "", "   ", "bytes", "items=0-1", "bytes=", "bytes=-", "bytes=abc", "bytes=1-2-3", "bytes=0x10-20", "bytes=1 0-20", "bytes=+1-2"]) {
      expect(parseRange(header, size), String(header)).toEqual({ kind: "none" });
    }
  });

  it("parses first-last, clamping last to size-1", () => {
    expect(parseRange("bytes=0-99", size)).toEqual({ kind: "range", start: 0, end: 99 });
    expect(parseRange("bytes=0-0", size)).toEqual({ kind: "range", start: 0, end: 0 });
    expect(parseRange("bytes=500-999", size)).toEqual({ kind: "range", start: 500, end: 999 });
    expect(parseRange("bytes=500-5000", size)).toEqual({ kind: "range", start: 500, end: 999 });
    expect(parseRange("bytes=999-999", size)).toEqual({ kind: "range", start: 999, end: 999 });
    expect(parseRange("bytes=0-99999999999999999999999", size)).toEqual({ kind: "range", start: 0, end: 999 });
  });

  it("parses an open-ended range", () => {
    expect(parseRange("bytes=100-", size)).toEqual({ kind: "range", start: 100, end: 999 });
    expect(parseRange("bytes=0-", size)).toEqual({ kind: "range", start: 0, end: 999 });
    expect(parseRange("bytes=999-", size)).toEqual({ kind: "range", start: 999, end: 999 });
  });

  it("parses a suffix range", () => {
    expect(parseRange("bytes=-500", size)).toEqual({ kind: "range", start: 500, end: 999 });
    expect(parseRange("bytes=-1", size)).toEqual({ kind: "range", start: 999, end: 999 });
    expect(parseRange("bytes=-1000", size)).toEqual({ kind: "range", start: 0, end: 999 });
    expect(parseRange("bytes=-5000", size)).toEqual({ kind: "range", start: 0, end: 999 });
    expect(parseRange("bytes=-99999999999999999999", size)).toEqual({ kind: "range", start: 0, end: 999 });
  });

  it("is case-insensitive in the unit and tolerates whitespace around = and commas", () => {
    expect(parseRange("Bytes=0-1", size)).toEqual({ kind: "range", start: 0, end: 1 });
    expect(parseRange(" bytes = 0-1 ", size)).toEqual({ kind: "range", start: 0, end: 1 });
    expect(parseRange("bytes=0-1, ", size)).toEqual({ kind: "range", start: 0, end: 1 });
  });

  it("reports unsatisfiable ranges", () => {
    expect(parseRange("bytes=1000-", size)).toEqual({ kind: "unsatisfiable" });
    expect(parseRange("bytes=1000-2000", size)).toEqual({ kind: "unsatisfiable" });
    expect(parseRange("bytes=99999999999999999999-", size)).toEqual({ kind: "unsatisfiable" });
    expect(parseRange("bytes=-0", size)).toEqual({ kind: "unsatisfiable" });
  });

  it("ignores an invalid range whose last is before its first", () => {
    expect(parseRange("bytes=100-99", size)).toEqual({ kind: "none" });
  });

  it("serves the whole body for several ranges", () => {
    expect(parseRange("bytes=0-1,5-6", size)).toEqual({ kind: "none" });
    expect(parseRange("bytes=0-1, -5", size)).toEqual({ kind: "none" });
    expect(parseRange("bytes=0-0,0-0,0-0", size)).toEqual({ kind: "none" });
    expect(parseRange("bytes=0-1,garbage", size)).toEqual({ kind: "none" });
  });

  it("handles an empty representation", () => {
    expect(parseRange("bytes=0-", 0)).toEqual({ kind: "unsatisfiable" });
    expect(parseRange("bytes=0-0", 0)).toEqual({ kind: "unsatisfiable" });
    expect(parseRange("bytes=-5", 0)).toEqual({ kind: "none" });
    expect(parseRange(undefined, 0)).toEqual({ kind: "none" });
  });

  it("refuses a bad size", () => {
    expect(() => parseRange("bytes=0-1", -1)).toThrow(RangeError);
    expect(() => parseRange("bytes=0-1", 1.5)).toThrow(RangeError);
  });

  it("formats Content-Range", () => {
    expect(contentRange({ start: 0, end: 99 }, 1000)).toBe("bytes 0-99/1000");
    expect(contentRange("unsatisfiable", 1000)).toBe("bytes */1000");
  });
});

describe("contentTypeFor", () => {
  it.each([
    ["a/b.mp3", "audio/mpeg"],
    ["a/b.MP3", "audio/mpeg"],
    ["b.wav", "audio/wav"],
    ["b.ogg", "audio/ogg"],
    ["b.opus", "audio/ogg"],
    ["b.flac", "audio/flac"],
    ["b.mp4", "video/mp4"],
    ["b.webm", "video/webm"],
    ["b.mkv", "video/x-matroska"],
    ["b.srt", "application/x-subrip"],
    ["b.vtt", "text/vtt"],
    ["b.txt", "text/plain; charset=utf-8"],
    ["b.json", "application/json"],
    ["archive.tar.mp3", "audio/mpeg"],
    ["b.bin", "application/octet-stream"],
    ["noext", "application/octet-stream"],
    ["dir.mp3/noext", "application/octet-stream"],
    [".mp3", "application/octet-stream"],
    ["b.", "application/octet-stream"],
    ["b.constructor", "application/octet-stream"],
    ["b.toString", "application/octet-stream"],
  ])("%s → %s", (key, type) => {
    expect(contentTypeFor(key)).toBe(type);
  });
});
