import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "@voiceloc/log";
import { makeSpeechWav, makeToneWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUDIO_FORMATS, type AudioFormat, type EncodeOptions } from "./args.ts";
import {
  flacDurationFromHeader,
  mp3DurationFromHeader,
  oggOpusDuration,
  opusPacketSamples,
  readEncodedAudioDuration,
  wavDurationFromHeader,
} from "./duration.ts";
import { resolveFfmpeg, type FfmpegBinaries } from "./resolve.ts";
import { createMediaToolkit, type MediaToolkit } from "./toolkit.ts";

const exec = promisify(execFile);

let media: MediaToolkit;
let binaries: FfmpegBinaries;
let dir: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-duration-test-"));
  binaries = await resolveFfmpeg({ logger: silentLogger() });
  media = createMediaToolkit(binaries, silentLogger());
});
afterAll(async () => cleanup());

/** ffprobe's format.duration, printed to the microsecond. */
const PRECISION = 5;

describe("container durations match ffprobe for files this package encodes", () => {
  const shapes: Array<{ label: string; seconds: number; sampleRate: number; channels: 1 | 2; encode?: EncodeOptions }> = [
    { label: "8 kHz mono, short", seconds: 0.35, sampleRate: 8000, channels: 1 },
    { label: "16 kHz mono", seconds: 1.845, sampleRate: 16000, channels: 1 },
    { label: "22.05 kHz mono", seconds: 5.52, sampleRate: 22050, channels: 1 },
    { label: "44.1 kHz stereo", seconds: 3.3, sampleRate: 44100, channels: 2 },
    { label: "48 kHz stereo to mono at 32 kHz", seconds: 2.01, sampleRate: 48000, channels: 2, encode: { channels: 1, sampleRate: 32000, bitrateKbps: 64 } },
  ];
  it.each(shapes)("$label", async ({ label, seconds, sampleRate, channels, encode }) => {
    const input = await makeToneWav(seconds, join(dir, `${label.replace(/\W+/g, "-")}.wav`), { sampleRate, channels });
    for (const format of AUDIO_FORMATS) {
      const out = join(dir, `${label.replace(/\W+/g, "-")}.${format}`);
      const formatEncode = format === "ogg" && encode?.sampleRate === 32000 ? { ...encode, sampleRate: 48000 } : encode;
      await media.convertAudio({ input, outPath: out, format, encode: formatEncode });
      const read = await readEncodedAudioDuration(out, format);
      const probed = (await media.probe(out)).durationSeconds;
      expect(read, `${label} ${format}`).toBeDefined();
      expect(read, `${label} ${format}`).toBeCloseTo(probed, PRECISION);
      expect(await media.encodedAudioDuration(out, format)).toBeCloseTo(probed, PRECISION);
    }
  });

  it("reads joined speech chunks and a long Opus file walked page by page", async () => {
    const a = await makeSpeechWav("The first sentence of the story.", { path: join(dir, "a.wav") });
    const b = await makeSpeechWav("And the second one, a little longer than the first.", { path: join(dir, "b.wav") });
    const long = await makeToneWav(95, join(dir, "long.wav"), { sampleRate: 22050 });
    for (const format of AUDIO_FORMATS) {
      const joined = join(dir, `joined.${format}`);
      await media.concatAudio({ inputs: [a, b, a], outPath: joined, format });
      expect(await readEncodedAudioDuration(joined, format)).toBeCloseTo((await media.probe(joined)).durationSeconds, PRECISION);
      const longOut = join(dir, `long.${format}`);
      await media.convertAudio({ input: long, outPath: longOut, format });
      expect(await readEncodedAudioDuration(longOut, format)).toBeCloseTo((await media.probe(longOut)).durationSeconds, PRECISION);
    }
  });
});

describe("files without the expected structure are left to ffprobe", () => {
  it("an MP3 without a Xing frame", async () => {
    const tone = await makeToneWav(1.5, join(dir, "noxing.wav"), { sampleRate: 22050 });
    const out = join(dir, "noxing.mp3");
    await exec(binaries.ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-i", tone, "-c:a", "libmp3lame", "-write_xing", "0", "-f", "mp3", out]);
    expect(await readEncodedAudioDuration(out, "mp3")).toBeUndefined();
    const measured = await media.encodedAudioDuration(out, "mp3");
    expect(measured).toBeCloseTo((await media.probe(out)).durationSeconds, PRECISION);
    expect(measured).toBeGreaterThan(1.4);
  });

  it("a WAV streamed with placeholder sizes, and files of another format", async () => {
    const tone = await makeToneWav(1, join(dir, "streamed-src.wav"));
    const { stdout } = await exec(binaries.ffmpeg, ["-nostdin", "-loglevel", "error", "-i", tone, "-c:a", "pcm_s16le", "-f", "wav", "pipe:1"], {
      encoding: "buffer",
      maxBuffer: 8 * 1024 * 1024,
    });
    const streamed = join(dir, "streamed.wav");
    await writeFile(streamed, stdout);
    expect(await readEncodedAudioDuration(streamed, "wav")).toBeUndefined();
    expect(await media.encodedAudioDuration(streamed, "wav")).toBeCloseTo(1, 2);
    for (const format of AUDIO_FORMATS.filter((f) => f !== "wav")) {
      expect(await readEncodedAudioDuration(tone, format), format).toBeUndefined();
    }
  });

  it("headers cut short or damaged give undefined, never a throw", async () => {
    const tone = await makeToneWav(1, join(dir, "cut.wav"), { sampleRate: 16000 });
    const files: Partial<Record<AudioFormat, Buffer>> = {};
    for (const format of AUDIO_FORMATS) {
      const out = join(dir, `cut.${format}`);
      await media.convertAudio({ input: tone, outPath: out, format });
      files[format] = await readFile(out);
    }
    const parse = (format: AudioFormat, buffer: Buffer): number | undefined =>
      format === "wav"
        ? wavDurationFromHeader(buffer, buffer.length)
        : format === "flac"
          ? flacDurationFromHeader(buffer)
          : format === "mp3"
            ? mp3DurationFromHeader(buffer)
            : oggOpusDuration(buffer);
    for (const format of AUDIO_FORMATS) {
      const whole = files[format] ?? Buffer.alloc(0);
      // Cuts inside the headers each reader relies on (the body is not read, except for Ogg).
      for (const cut of format === "ogg" ? [0, 3, 11, 20, 40, 60, 100, 1000] : [0, 3, 11, 20, 40]) {
        expect(() => parse(format, whole.subarray(0, cut))).not.toThrow();
        expect(parse(format, whole.subarray(0, cut)), `${format} cut at ${cut}`).toBeUndefined();
      }
      const flipped = Buffer.from(whole);
      flipped[0] = (flipped[0] ?? 0) ^ 0xff;
      expect(parse(format, flipped), `${format} with a damaged signature`).toBeUndefined();
    }
    // Ogg cut mid-page (a packet cut off).
    const ogg = files.ogg ?? Buffer.alloc(0);
    expect(oggOpusDuration(ogg.subarray(0, ogg.length - 7))).toBeUndefined();
  });
});

describe("encodedAudioDuration", () => {
  it("is cancelled by an aborted signal", async () => {
    const tone = await makeToneWav(0.5, join(dir, "abort.wav"));
    const controller = new AbortController();
    controller.abort();
    await expect(media.encodedAudioDuration(tone, "wav", { signal: controller.signal })).rejects.toMatchObject({ code: "MEDIA_CANCELLED" });
  });
});

describe("opusPacketSamples", () => {
  it("reads frame size and count from the TOC byte (RFC 6716)", () => {
    expect(opusPacketSamples(Buffer.from([(1 << 3) | 0]))).toBe(960); // SILK NB 20 ms, one frame
    expect(opusPacketSamples(Buffer.from([(15 << 3) | 1]))).toBe(1920); // hybrid FB 20 ms, two frames
    expect(opusPacketSamples(Buffer.from([(16 << 3) | 2]))).toBe(240); // CELT NB 2.5 ms, two frames
    expect(opusPacketSamples(Buffer.from([(31 << 3) | 3, 3]))).toBe(2880); // CELT FB 20 ms, three frames
    expect(opusPacketSamples(Buffer.from([(31 << 3) | 3]))).toBeUndefined();
    expect(opusPacketSamples(Buffer.alloc(0))).toBeUndefined();
  });
});
