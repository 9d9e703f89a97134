import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { silentLogger } from "@voiceloc/log";
import { tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildPcmToMp3StreamArgs, buildWavStreamToMp3StreamArgs, wavStreamHeader } from "./args.ts";
import { readEncodedAudioDuration } from "./duration.ts";
import { buildMp3InfoFrame, mp3SampleRateFor, Mp3FrameCutter, parseMp3FrameHeader, scanMp3Frames } from "./mp3.ts";
import { resolveFfmpeg } from "./resolve.ts";
import { createMediaToolkit, type MediaToolkit } from "./toolkit.ts";

let media: MediaToolkit;
let dir: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  media = createMediaToolkit(await resolveFfmpeg({ logger: silentLogger() }), silentLogger());
  ({ path: dir, cleanup } = await tempDir("voiceloc-mp3-"));
});
afterAll(async () => cleanup());

/** `seconds` of a 440 Hz tone as 16-bit mono PCM at `rate`. */
function tone(seconds: number, rate: number): Buffer {
  const samples = Math.round(seconds * rate);
  const pcm = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), i * 2);
  return pcm;
}

/** Encodes PCM through the streaming encoder, returning the bare frames it wrote. */
async function encodeStream(pcm: Buffer, rate: number): Promise<Buffer> {
  const out: Buffer[] = [];
  await media.run(buildPcmToMp3StreamArgs({ input: { sampleFormat: "s16le", sampleRate: rate, channels: 1 }, encode: { bitrateKbps: 64, quality: 7, channels: 1 } }), {
    stdin: Readable.from([pcm]),
    onStdout: (chunk) => void out.push(chunk),
  });
  return Buffer.concat(out);
}

describe("MP3 frames", () => {
  it("the streaming encoder writes bare frames (no tag, no Xing) at the input's own rate, cut into whole frames however the bytes arrive", async () => {
    const stream = await encodeStream(tone(3, 16000), 16000);
    const first = parseMp3FrameHeader(stream);
    expect(first).toMatchObject({ sampleRate: 16000, samplesPerFrame: 576, bitrateKbps: 64, channels: 1, length: 288 });
    const scan = scanMp3Frames(stream);
    // 3 s = 83.3 frames of 576 samples, plus the encoder's delay and padding.
    expect(scan.frames).toBeGreaterThanOrEqual(84);
    expect(scan.frames).toBeLessThanOrEqual(88);

    // Pieces of 1000 bytes (headers and frames cut anywhere), frames taken in runs of 7 as they come.
    const cutter = new Mp3FrameCutter(512);
    const runs: Buffer[] = [];
    for (let at = 0; at < stream.length; at += 1000) {
      const seen = cutter.push(stream.subarray(at, at + 1000));
      while (seen - cutter.framesTaken >= 7) runs.push(cutter.take(7));
    }
    runs.push(cutter.take(Infinity));
    expect(cutter.framesSeen).toBe(scan.frames);
    expect(cutter.framesTaken).toBe(scan.frames);
    expect(cutter.leftover).toBe(0);
    expect(runs.slice(0, -1).every((run) => scanMp3Frames(run).frames === 7)).toBe(true);
    expect(Buffer.concat(runs).equals(stream)).toBe(true);
    expect(cutter.take(3)).toHaveLength(0);
    // A cut-off last frame is left over.
    const cut = new Mp3FrameCutter();
    cut.push(stream.subarray(0, stream.length - 10));
    expect(cut.framesSeen).toBe(scan.frames - 1);
    expect(cut.leftover).toBe(first!.length - 10);
    expect(() => new Mp3FrameCutter().push(Buffer.from("not an mp3 frame at all"))).toThrow(/not an MP3 frame/);
    // A frame of another sample rate inside the stream is refused.
    const other = await encodeStream(tone(0.2, 22050), 22050);
    expect(() => new Mp3FrameCutter().push(Buffer.concat([stream.subarray(0, 288 * 3), other]))).toThrow(/not an MP3 frame/);
    expect(() => scanMp3Frames(Buffer.concat([stream.subarray(0, 288 * 3), other]))).toThrow(/damaged/);
  });

  it("a WAV stream of unknown length read in large packets encodes to the same bytes as the raw PCM", async () => {
    // 2.5 s: not a whole number of 64 KiB packets, so the last packet is a short one.
    const pcm = tone(2.5, 22050);
    const out: Buffer[] = [];
    await media.run(buildWavStreamToMp3StreamArgs({ encode: { bitrateKbps: 64, quality: 7, channels: 1, sampleRate: 22050 } }), {
      stdin: Readable.from([wavStreamHeader({ sampleFormat: "s16le", sampleRate: 22050, channels: 1 }), pcm.subarray(0, 1000), pcm.subarray(1000)]),
      onStdout: (chunk) => void out.push(chunk),
    });
    expect(Buffer.concat(out).equals(await encodeStream(pcm, 22050))).toBe(true);
  });

  it("an Info frame in front of copied frames gives a file ffprobe and ffmpeg read whole, with the exact duration", async () => {
    const a = await encodeStream(tone(2, 22050), 22050);
    const b = await encodeStream(tone(1.5, 22050), 22050);
    const scanA = scanMp3Frames(a);
    const scanB = scanMp3Frames(b);
    const header = scanA.header!;
    const info = buildMp3InfoFrame(header, scanA.frames + scanB.frames, a.length + b.length);
    const path = join(dir, "joined.mp3");
    await writeFile(path, Buffer.concat([info, a, b]));
    const expected = ((scanA.frames + scanB.frames) * 576) / 22050;
    expect(await readEncodedAudioDuration(path, "mp3")).toBeCloseTo(expected, 6);
    const probed = await media.probe(path);
    expect(probed.audio?.codec).toBe("mp3");
    expect(probed.durationSeconds).toBeCloseTo(expected, 2);
    // Every frame decodes: nothing on ffmpeg's error output.
    const decoded = await media.run(["-nostdin", "-hide_banner", "-loglevel", "error", "-i", path, "-f", "null", "-"], { what: "Decoding" });
    expect(decoded.stderrTail).toEqual([]);
    expect((await readFile(path)).subarray(0, info.length).includes(Buffer.from("Info"))).toBe(true);
  });

  it("keeps the voice's own sample rate when MP3 has it, else the next one up", () => {
    expect(mp3SampleRateFor(16000)).toBe(16000);
    expect(mp3SampleRateFor(22050)).toBe(22050);
    expect(mp3SampleRateFor(24000)).toBe(24000);
    expect(mp3SampleRateFor(25000)).toBe(32000);
    expect(mp3SampleRateFor(96000)).toBe(48000);
  });
});
