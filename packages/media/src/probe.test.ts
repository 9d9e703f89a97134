import { join } from "node:path";
import { silentLogger } from "@voiceloc/log";
import { makeToneWav, tempDir } from "@voiceloc/testing";
import { describe, expect, it } from "vitest";
import { MediaProbeError } from "./errors.ts";
import { parseProbeJson, uprightFrameSize } from "./probe.ts";
import { resolveFfmpeg } from "./resolve.ts";
import { createMediaToolkit } from "./toolkit.ts";

describe("parseProbeJson", () => {
  it("reads format, the first audio and video streams, and string numbers", () => {
    expect(
      parseProbeJson({
        format: { format_name: "mov,mp4,m4a,3gp,3g2,mj2", duration: "12.500000" },
        streams: [
          { codec_type: "video", codec_name: "mjpeg", width: 300, height: 300, disposition: { attached_pic: 1 } },
          { codec_type: "video", codec_name: "h264", width: 1280, height: "720", disposition: { attached_pic: 0 } },
          { codec_type: "audio", codec_name: "aac", sample_rate: "44100", channels: 2 },
          { codec_type: "audio", codec_name: "opus", sample_rate: "48000", channels: 1 },
        ],
      }),
    ).toEqual({
      durationSeconds: 12.5,
      format: "mov,mp4,m4a,3gp,3g2,mj2",
      audio: { codec: "aac", sampleRate: 44100, channels: 2 },
      video: { codec: "h264", width: 1280, height: 720 },
    });
  });

  it("ignores malformed fields instead of trusting them", () => {
    expect(
      parseProbeJson({
        format: { duration: "N/A", format_name: 7 },
        streams: [null, "x", { codec_type: "audio", sample_rate: "fast", channels: 2 }, { codec_type: "audio", sample_rate: 8000, channels: 1, duration: "2.0" }],
      }),
    ).toEqual({ durationSeconds: 2, format: "unknown", audio: { codec: "unknown", sampleRate: 8000, channels: 1 } });
    expect(parseProbeJson({ streams: "nope" })).toEqual({ durationSeconds: undefined, format: "unknown" });
    expect(() => parseProbeJson("[]")).toThrow(MediaProbeError);
    expect(() => parseProbeJson(null)).toThrow(MediaProbeError);
  });

  it("reads a quarter-turn display rotation (display matrix or old rotate tag); the upright frame swaps its sides", () => {
    const video = (stream: Record<string, unknown>) => parseProbeJson({ format: { duration: "1" }, streams: [{ codec_type: "video", codec_name: "h264", width: 1280, height: 720, ...stream }] }).video;
    const matrix = (rotation: unknown) => ({ side_data_list: [{ side_data_type: "Display Matrix", displaymatrix: "…", rotation }] });
    expect(video(matrix(-90))).toEqual({ codec: "h264", width: 1280, height: 720, rotation: 270 });
    expect(video(matrix(90))?.rotation).toBe(90);
    expect(video(matrix(180))?.rotation).toBe(180);
    expect(video(matrix(-180))?.rotation).toBe(180);
    expect(video({ tags: { rotate: "90" } })?.rotation).toBe(90);
    // Upright, not a quarter turn, or unreadable: no rotation.
    for (const stream of [matrix(0), matrix(45), matrix("sideways"), { side_data_list: "x" }, { tags: { rotate: "N/A" } }, {}]) {
      expect(video(stream)).toEqual({ codec: "h264", width: 1280, height: 720 });
    }
    expect(uprightFrameSize({ width: 1280, height: 720, rotation: 90 })).toEqual({ width: 720, height: 1280 });
    expect(uprightFrameSize({ width: 1280, height: 720, rotation: 270 })).toEqual({ width: 720, height: 1280 });
    expect(uprightFrameSize({ width: 1280, height: 720, rotation: 180 })).toEqual({ width: 1280, height: 720 });
    expect(uprightFrameSize({ width: 1280, height: 720 })).toEqual({ width: 1280, height: 720 });
  });
});

describe("bundled fallback build", () => {
  it("runs the same argument builders (encode, timeline, mix, probe)", async () => {
    const { path: dir, cleanup } = await tempDir();
    try {
      const binaries = await resolveFfmpeg({ logger: silentLogger(), searchPath: "/nonexistent" });
      expect(binaries.source).toBe("bundled");
      const media = createMediaToolkit(binaries, silentLogger());
      const a = await makeToneWav(0.5, join(dir, "a.wav"));
      const b = await makeToneWav(0.5, join(dir, "b.wav"), { frequency: 660 });
      const out = join(dir, "mix.mp3");
      await media.placeClips({ clips: [{ path: a, startSeconds: 0.2 }, { path: b, startSeconds: 0.4 }], durationSeconds: 1.5, outPath: out, format: "mp3" });
      const info = await media.probe(out);
      expect(info.audio?.codec).toBe("mp3");
      expect(info.durationSeconds).toBeGreaterThan(1.4);
      expect(await media.encodedAudioDuration(out, "mp3")).toBeCloseTo(info.durationSeconds, 5);
      await media.convertAudio({ input: out, outPath: join(dir, "mix.ogg"), format: "ogg" });
      const ogg = await media.probe(join(dir, "mix.ogg"));
      expect(ogg.audio?.codec).toBe("opus");
      expect(await media.encodedAudioDuration(join(dir, "mix.ogg"), "ogg")).toBeCloseTo(ogg.durationSeconds, 5);
      for (const format of ["wav", "flac"] as const) {
        const file = join(dir, `mix.${format}`);
        await media.convertAudio({ input: out, outPath: file, format });
        expect(await media.encodedAudioDuration(file, format)).toBeCloseTo((await media.probe(file)).durationSeconds, 5);
      }
    } finally {
      await cleanup();
    }
  });
});
