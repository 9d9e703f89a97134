import { describe, expect, it } from "vitest";
import {
  audioEncodeArgs,
  buildConcatAudioArgs,
  buildConvertAudioArgs,
  buildExtractSpeechWavArgs,
  buildMixLanesArgs,
  buildTimelinePartArgs,
  concatListContent,
  escapeFilterValue,
  forceStyleString,
  maxVideoPixels,
  planTimeline,
  subtitlePlayResolution,
  UNTRUSTED_MEDIA_DEMUXERS,
} from "./args.ts";
import { MediaRequestError } from "./errors.ts";
import { buildBurnInArgs } from "./subtitles.ts";

const untrusted = UNTRUSTED_MEDIA_DEMUXERS.join(",");

function inputsOf(args: readonly string[]): string[] {
  return args.flatMap((a, i) => (a === "-i" ? [args[i + 1] ?? ""] : []));
}

describe("common rules", () => {
  const all = [
    buildConvertAudioArgs({ input: "/in/a.mp4", output: "/out/a.mp3", format: "mp3" }),
    buildConcatAudioArgs({ listFile: "/w/list.ffconcat", output: "/out/a.ogg", format: "ogg" }),
    buildExtractSpeechWavArgs({ input: "/in/v.webm", output: "/out/s.wav" }),
    buildBurnInArgs({ video: "/in/v.mp4", subtitles: "/w/s.srt", output: "/out/v.mp4" }),
    buildTimelinePartArgs({
      part: { startSample: 0, endSample: 48000, clips: [{ path: "/c/1.wav", offsetSamples: 100, lengthSamples: 200, gainDb: 0 }] },
      sampleRate: 48000,
      output: "/out/t.flac",
      format: "flac",
    }),
    buildMixLanesArgs({ lanes: [{ path: "/w/a.wav", concat: false }, { path: "/w/b.ffconcat", concat: true }], output: "/o.wav", format: "wav" }),
  ];

  it("starts with -nostdin -hide_banner, bounds pictures and whitelists protocols before every input", () => {
    for (const args of all) {
      expect(args.slice(0, 2)).toEqual(["-nostdin", "-hide_banner"]);
      const inputs = args.flatMap((a, i) => (a === "-i" ? [i] : []));
      expect(inputs.length).toBeGreaterThan(0);
      for (const i of inputs) {
        const before = args.slice(0, i);
        const last = before.lastIndexOf("-protocol_whitelist");
        expect(last).toBeGreaterThanOrEqual(0);
        expect(args[last + 1]).toBe("file,pipe");
        // no other -i between the whitelist and this input
        expect(before.slice(last).includes("-i")).toBe(false);
        expect(before.slice(last).includes("-format_whitelist")).toBe(true);
        // every decoder of every input is bounded to pictures of MAX_VIDEO_PIXELS at most
        expect(args[last - 2]).toBe("-max_pixels");
        expect(Number(args[last - 1])).toBeLessThanOrEqual(maxVideoPixels());
      }
    }
  });

  it("writes with -y to the given output, naming the muxer", () => {
    for (const args of all) {
      expect(args.at(-2)).toBe("-y");
      expect(args.lastIndexOf("-f")).toBeGreaterThan(args.lastIndexOf("-i"));
    }
  });

  it("makes relative paths absolute so they cannot be read as options or protocols", () => {
    const args = buildConvertAudioArgs({ input: "-i.mp4", output: "http:x.mp3", format: "mp3" });
    expect(inputsOf(args)[0]).toMatch(/^\/.*\/-i\.mp4$/);
    expect(args.at(-1)).toMatch(/^\/.*\/http:x\.mp3$/);
  });

  it("refuses paths with line breaks", () => {
    expect(() => buildConvertAudioArgs({ input: "/a\nb", output: "/o.mp3", format: "mp3" })).toThrow(MediaRequestError);
  });
});

describe("audioEncodeArgs", () => {
  it("maps each format to its codec and muxer", () => {
    expect(audioEncodeArgs("mp3")).toEqual(["-vn", "-sn", "-dn", "-map_metadata", "-1", "-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3"]);
    expect(audioEncodeArgs("wav")).toEqual(["-vn", "-sn", "-dn", "-map_metadata", "-1", "-c:a", "pcm_s16le", "-f", "wav"]);
    expect(audioEncodeArgs("flac")).toEqual(["-vn", "-sn", "-dn", "-map_metadata", "-1", "-c:a", "flac", "-f", "flac"]);
    expect(audioEncodeArgs("ogg")).toEqual(["-vn", "-sn", "-dn", "-map_metadata", "-1", "-c:a", "libopus", "-b:a", "64k", "-ar", "48000", "-f", "ogg"]);
  });

  it("applies bitrate, rate and channels, and validates them", () => {
    expect(audioEncodeArgs("mp3", { bitrateKbps: 64, sampleRate: 22050, channels: 1 })).toEqual([
      "-vn", "-sn", "-dn", "-map_metadata", "-1", "-c:a", "libmp3lame", "-b:a", "64k", "-ac", "1", "-ar", "22050", "-f", "mp3",
    ]);
    expect(() => audioEncodeArgs("ogg", { sampleRate: 22050 })).toThrow(/Opus/);
    expect(() => audioEncodeArgs("mp3", { bitrateKbps: 3 })).toThrow(MediaRequestError);
    expect(() => audioEncodeArgs("wav", { channels: 6 })).toThrow(MediaRequestError);
  });
});

describe("builders", () => {
  it("convert maps the first audio track of an untrusted input", () => {
    expect(buildConvertAudioArgs({ input: "/in/a.mp4", output: "/out/a.flac", format: "flac" })).toEqual([
      "-nostdin", "-hide_banner", "-nostats",
      "-max_pixels", "35389440", "-protocol_whitelist", "file,pipe", "-format_whitelist", untrusted, "-i", "/in/a.mp4",
      "-map", "0:a:0",
      "-vn", "-sn", "-dn", "-map_metadata", "-1", "-c:a", "flac", "-f", "flac",
      "-y", "/out/a.flac",
    ]);
  });

  it("concat reads a list file through the concat demuxer, allowing only WAV chunks", () => {
    expect(buildConcatAudioArgs({ listFile: "/w/l.txt", output: "/o.mp3", format: "mp3", encode: { bitrateKbps: 64 } })).toEqual([
      "-nostdin", "-hide_banner", "-nostats", "-safe", "0",
      "-max_pixels", "35389440", "-protocol_whitelist", "file,pipe", "-format_whitelist", "concat,wav", "-f", "concat", "-i", "/w/l.txt",
      "-map", "0:a:0",
      "-vn", "-sn", "-dn", "-map_metadata", "-1", "-c:a", "libmp3lame", "-b:a", "64k", "-f", "mp3",
      "-y", "/o.mp3",
    ]);
  });

  it("concat list quotes every path literally", () => {
    expect(concatListContent(["/a/one.wav", "/b/it's here.wav"])).toBe(
      "ffconcat version 1.0\nfile '/a/one.wav'\nfile '/b/it'\\''s here.wav'\n",
    );
    expect(() => concatListContent([])).toThrow(MediaRequestError);
  });

  it("extracts 16 kHz mono PCM WAV", () => {
    const args = buildExtractSpeechWavArgs({ input: "/v.mkv", output: "/s.wav" });
    expect(args.slice(args.indexOf("-map"))).toEqual([
      "-map", "0:a:0", "-vn", "-sn", "-dn", "-map_metadata", "-1", "-c:a", "pcm_s16le", "-ac", "1", "-ar", "16000", "-f", "wav", "-y", "/s.wav",
    ]);
  });
});

describe("escapeFilterValue", () => {
  it("escapes for the option level and then the graph level", () => {
    // the example from the ffmpeg-filters documentation
    expect(escapeFilterValue("this is a 'string': may contain one, or more, special characters")).toBe(
      "this is a \\\\\\'string\\\\\\'\\\\: may contain one\\, or more\\, special characters",
    );
    expect(escapeFilterValue("/a/[x];y\\z.srt")).toBe("/a/\\[x\\]\\;y\\\\\\\\z.srt");
  });
});

describe("the subtitles filter and its style", () => {
  it("builds an escaped subtitles filter with fonts and style", () => {
    const args = buildBurnInArgs({
      video: "/v.mp4",
      subtitles: "/w/it's: a, test.srt",
      output: "/o.mp4",
      fontsDir: "/fonts",
      style: { fontName: "Noto Sans CJK SC", fontSize: 24, primaryColour: "&H00FFFFFF", outline: 2 },
    });
    const vf = args[args.indexOf("-vf") + 1];
    expect(vf).toBe(
      "crop=trunc(iw/2)*2:trunc(ih/2)*2:0:0,subtitles=filename=/w/it\\\\\\'s\\\\: a\\, test.srt:fontsdir=/fonts:force_style=FontName=Noto Sans CJK SC\\,FontSize=24\\,PrimaryColour=&H00FFFFFF\\,Outline=2",
    );
    expect(args).toContain("0:a:0?");
    expect(args.slice(-4)).toEqual(["-f", "mp4", "-y", "/o.mp4"]);
  });

  it("rejects style values that could break out of the filter", () => {
    expect(() => forceStyleString({ fontName: "x,y" })).toThrow(MediaRequestError);
    expect(() => forceStyleString({ primaryColour: "white" })).toThrow(MediaRequestError);
    expect(() => forceStyleString({ fontSize: -1 })).toThrow(MediaRequestError);
  });

  it("sets the script's play resolution first, then the style, side margins included", () => {
    expect(forceStyleString({ playResX: 288, playResY: 512, fontName: "Noto Sans", fontSize: 16, marginV: 14, marginL: 10, marginR: 10 })).toBe(
      "PlayResX=288,PlayResY=512,FontName=Noto Sans,FontSize=16,MarginV=14,MarginL=10,MarginR=10",
    );
    expect(() => forceStyleString({ playResX: 288 })).toThrow("needs both a width and a height");
    expect(() => forceStyleString({ playResX: 288.5, playResY: 512 })).toThrow("PlayResX must be a whole number");
    expect(() => forceStyleString({ playResX: 288, playResY: 0 })).toThrow("PlayResY must be a whole number");
    expect(() => forceStyleString({ marginL: -1 })).toThrow(MediaRequestError);
  });
});

describe("subtitlePlayResolution", () => {
  it("gives the frame's proportions with the shorter side 288 (landscape: ffmpeg's default height)", () => {
    expect(subtitlePlayResolution(1280, 720)).toEqual({ playResX: 512, playResY: 288 });
    expect(subtitlePlayResolution(640, 480)).toEqual({ playResX: 384, playResY: 288 });
    expect(subtitlePlayResolution(720, 1280)).toEqual({ playResX: 288, playResY: 512 });
    expect(subtitlePlayResolution(1080, 1080)).toEqual({ playResX: 288, playResY: 288 });
    expect(subtitlePlayResolution(3840, 400)).toEqual({ playResX: 2765, playResY: 288 });
    expect(subtitlePlayResolution(721, 1279)).toEqual({ playResX: 288, playResY: 511 });
    expect(subtitlePlayResolution(1, 1)).toEqual({ playResX: 288, playResY: 288 });
    expect(subtitlePlayResolution(720, 1280, 360)).toEqual({ playResX: 360, playResY: 640 });
  });

  it("refuses a size that is not a whole number of pixels", () => {
    expect(() => subtitlePlayResolution(0, 720)).toThrow("The subtitle frame's width must be a whole number of pixels, at least 1.");
    expect(() => subtitlePlayResolution(1280, 720.5)).toThrow(MediaRequestError);
    expect(() => subtitlePlayResolution(1280, Number.NaN)).toThrow(MediaRequestError);
  });
});

describe("planTimeline", () => {
  const clip = (path: string, startSeconds: number, durationSeconds: number) => ({ path: `/c/${path}`, startSeconds, durationSeconds });

  it("puts non-overlapping clips in one lane at exact sample offsets", () => {
    const plan = planTimeline([clip("b", 2, 1), clip("a", 0.5, 1)], { durationSeconds: 5, sampleRate: 8000 });
    expect(plan.totalSamples).toBe(40000);
    expect(plan.lanes).toEqual([
      [
        {
          startSample: 0,
          endSample: 40000,
          clips: [
            { path: "/c/a", offsetSamples: 4000, lengthSamples: 8000, gainDb: 0 },
            { path: "/c/b", offsetSamples: 16000, lengthSamples: 8000, gainDb: 0 },
          ],
        },
      ],
    ]);
  });

  it("moves overlapping clips to another lane", () => {
    const plan = planTimeline([clip("a", 0, 2), clip("b", 1, 2), clip("c", 2, 1)], { durationSeconds: 4, sampleRate: 8000 });
    expect(plan.lanes.map((lane) => lane.flatMap((p) => p.clips.map((c) => c.path)))).toEqual([["/c/a", "/c/c"], ["/c/b"]]);
  });

  it("splits long lanes into contiguous parts", () => {
    const clips = Array.from({ length: 5 }, (_, i) => clip(String(i), i, 0.5));
    const plan = planTimeline(clips, { durationSeconds: 6, sampleRate: 8000, maxClipsPerPass: 2 });
    const parts = plan.lanes[0] ?? [];
    expect(parts.map((p) => [p.startSample, p.endSample])).toEqual([[0, 16000], [16000, 32000], [32000, 48000]]);
    expect(parts[1]?.clips[0]?.offsetSamples).toBe(0);
    expect(parts[2]?.clips[0]?.offsetSamples).toBe(0);
  });

  it("cuts clips at the end of the track and drops clips after it", () => {
    const plan = planTimeline([clip("a", 1.5, 1), clip("b", 3, 1)], { durationSeconds: 2, sampleRate: 8000 });
    expect(plan.truncatedClips).toBe(1);
    expect(plan.droppedClips).toBe(1);
    expect(plan.lanes[0]?.[0]?.clips).toEqual([{ path: "/c/a", offsetSamples: 12000, lengthSamples: 4000, gainDb: 0 }]);
  });

  it("gives a silent track when there are no clips, and validates input", () => {
    expect(planTimeline([], { durationSeconds: 1, sampleRate: 8000 }).lanes).toEqual([[{ startSample: 0, endSample: 8000, clips: [] }]]);
    expect(() => planTimeline([clip("a", -1, 1)], { durationSeconds: 1, sampleRate: 8000 })).toThrow(/start time/);
    expect(() => planTimeline([], { durationSeconds: 0, sampleRate: 8000 })).toThrow(MediaRequestError);
  });

  it("renders a part as exact silence gaps and padded clips joined by concat", () => {
    const args = buildTimelinePartArgs({
      part: { startSample: 0, endSample: 1000, clips: [{ path: "/c/a.wav", offsetSamples: 100, lengthSamples: 300, gainDb: -3 }] },
      sampleRate: 8000,
      output: "/o.wav",
      format: "wav",
    });
    const fmt = "aformat=sample_fmts=fltp:sample_rates=8000:channel_layouts=mono";
    expect(args[args.indexOf("-filter_complex") + 1]).toBe(
      [
        `anullsrc=r=8000:cl=mono,${fmt},atrim=end_sample=100[g0]`,
        `[0:a:0]aresample=8000,${fmt},apad,atrim=end_sample=300,volume=-3dB[c0]`,
        `anullsrc=r=8000:cl=mono,${fmt},atrim=end_sample=600[gend]`,
        "[g0][c0][gend]concat=n=3:v=0:a=1[out]",
      ].join(";"),
    );
  });

  it("sums lanes without normalisation", () => {
    const args = buildMixLanesArgs({
      lanes: [{ path: "/a.wav", concat: false }, { path: "/b.ffconcat", concat: true }, { path: "/c.wav", concat: false }],
      output: "/o.mp3",
      format: "mp3",
    });
    expect(args[args.indexOf("-filter_complex") + 1]).toBe("[0:a:0][1:a:0][2:a:0]amerge=inputs=3,pan=mono|c0=c0+c1+c2[out]");
  });
});
