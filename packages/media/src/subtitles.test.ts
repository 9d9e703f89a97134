import { describe, expect, it } from "vitest";
import { UNTRUSTED_MEDIA_DEMUXERS } from "./args.ts";
import { MediaError } from "./errors.ts";
import {
  assertSingleMediaFile,
  buildBurnInArgs,
  buildCappedSpeechWavArgs,
  buildSoftSubtitleTrackArgs,
  videoContainerFor,
} from "./subtitles.ts";

const untrusted = UNTRUSTED_MEDIA_DEMUXERS.join(",");

/** The option value that follows `name` (first occurrence after `from`). */
function valueOf(args: readonly string[], name: string, from = 0): string | undefined {
  const i = args.indexOf(name, from);
  return i < 0 ? undefined : args[i + 1];
}

describe("assertSingleMediaFile", () => {
  it.each(["mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "avi", "mpegts"])("accepts %s", (format) => {
    expect(() => assertSingleMediaFile({ format })).not.toThrow();
  });

  it.each([
    ["hls", /playlist/],
    ["concat", /playlist or a list of other files/],
    ["image2", /list of other files/],
    ["mov,hls", /playlist/],
    ["tty", /not in a supported/],
    ["unknown", /not in a supported/],
  ])("refuses %s", (format, message) => {
    let caught: unknown;
    try {
      assertSingleMediaFile({ format });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(MediaError);
    expect((caught as MediaError).code).toBe("MEDIA_FORMAT_NOT_ALLOWED");
    expect((caught as MediaError).message).toMatch(message);
  });

  it("refuses a referencing demuxer even when the caller's whitelist lists it", () => {
    expect(() => assertSingleMediaFile({ format: "hls" }, ["hls", "mp4"])).toThrow(/playlist/);
  });
});

describe("buildCappedSpeechWavArgs", () => {
  it("opens the input under the whitelists and decodes at most the limit into 16 kHz mono PCM", () => {
    const args = buildCappedSpeechWavArgs({ input: "/in/v.mp4", output: "/w/s.wav", maxSeconds: 601 });
    expect(args.slice(0, 3)).toEqual(["-nostdin", "-hide_banner", "-nostats"]);
    expect(valueOf(args, "-protocol_whitelist")).toBe("file,pipe");
    expect(valueOf(args, "-format_whitelist")).toBe(untrusted);
    expect(valueOf(args, "-i")).toBe("/in/v.mp4");
    expect(valueOf(args, "-map")).toBe("0:a:0");
    expect(valueOf(args, "-t")).toBe("601.000");
    expect(valueOf(args, "-ar")).toBe("16000");
    expect(valueOf(args, "-ac")).toBe("1");
    expect(valueOf(args, "-c:a")).toBe("pcm_s16le");
    expect(args.slice(-3)).toEqual(["wav", "-y", "/w/s.wav"]);
  });

  it("refuses a limit that is not positive", () => {
    expect(() => buildCappedSpeechWavArgs({ input: "/a", output: "/b", maxSeconds: 0 })).toThrow(MediaError);
    expect(() => buildCappedSpeechWavArgs({ input: "/a", output: "/b", maxSeconds: Number.NaN })).toThrow(MediaError);
  });
});

describe("buildBurnInArgs", () => {
  it("draws with libass, re-encodes the picture only and copies the audio", () => {
    const args = buildBurnInArgs({
      video: "/in/it's [v].mp4",
      subtitles: "/w/cues:1.srt",
      output: "/out/v.mp4",
      style: { fontName: "Noto Nastaliq Urdu", fontSize: 16 },
      maxSeconds: 3600,
    });
    expect(valueOf(args, "-protocol_whitelist")).toBe("file,pipe");
    expect(valueOf(args, "-i")).toBe("/in/it's [v].mp4");
    expect(args.filter((a, i) => args[i - 1] === "-map")).toEqual(["0:v:0", "0:a:0?"]);
    expect(valueOf(args, "-vf")).toBe(String.raw`crop=trunc(iw/2)*2:trunc(ih/2)*2:0:0,subtitles=filename=/w/cues\\:1.srt:force_style=FontName=Noto Nastaliq Urdu\,FontSize=16`);
    expect(valueOf(args, "-c:v")).toBe("libx264");
    expect(valueOf(args, "-c:a")).toBe("copy");
    expect(valueOf(args, "-t")).toBe("3600.000");
    expect(valueOf(args, "-f")).toBe("mp4");
    expect(args.at(-1)).toBe("/out/v.mp4");
  });

  it("writes Matroska when asked (audio MP4 cannot carry)", () => {
    const args = buildBurnInArgs({ video: "/in/v.mkv", subtitles: "/w/c.srt", output: "/out/v.mkv", container: "matroska" });
    expect(valueOf(args, "-f")).toBe("matroska");
    expect(args).not.toContain("-movflags");
  });
});

describe("buildSoftSubtitleTrackArgs", () => {
  it("copies picture and audio, adds the subtitles as mov_text with the language tag", () => {
    const args = buildSoftSubtitleTrackArgs({ video: "/in/v.mp4", subtitles: "/w/c.srt", output: "/out/v.mp4", language: "urd", title: "Urdu" });
    const inputs = args.flatMap((a, i) => (a === "-i" ? [args[i + 1]] : []));
    expect(inputs).toEqual(["/in/v.mp4", "/w/c.srt"]);
    // The subtitle input may only be read by the subtitle demuxers.
    expect(valueOf(args, "-format_whitelist", args.indexOf("/in/v.mp4"))).toBe("srt,webvtt");
    expect(args.filter((a, i) => args[i - 1] === "-map")).toEqual(["0:v:0", "0:a:0?", "1:s:0"]);
    expect(valueOf(args, "-c:v")).toBe("copy");
    expect(valueOf(args, "-c:a")).toBe("copy");
    expect(valueOf(args, "-c:s")).toBe("mov_text");
    expect(args).toContain("language=urd");
    expect(args).toContain("title=Urdu");
    expect(valueOf(args, "-f")).toBe("mp4");
  });

  it("encodes the audio to AAC when asked", () => {
    const args = buildSoftSubtitleTrackArgs({ video: "/in/v.webm", subtitles: "/w/c.srt", output: "/o.mp4", language: "eng", encodeAudio: true });
    expect(valueOf(args, "-c:a")).toBe("aac");
    expect(valueOf(args, "-c:v")).toBe("copy");
  });

  it.each(["en", "ENG", "e g", "eng;x"])("refuses the language tag %j", (language) => {
    expect(() => buildSoftSubtitleTrackArgs({ video: "/v", subtitles: "/s", output: "/o", language })).toThrow(MediaError);
  });
});

it("videoContainerFor keeps MP4 for audio it can carry", () => {
  expect(videoContainerFor("aac")).toBe("mp4");
  expect(videoContainerFor("opus")).toBe("mp4");
  expect(videoContainerFor(undefined)).toBe("mp4");
  expect(videoContainerFor("vorbis")).toBe("matroska");
  expect(videoContainerFor("pcm_s16le")).toBe("matroska");
});
