import { execFile } from "node:child_process";
import { constants, createWriteStream } from "node:fs";
import { open, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "@voiceloc/log";
import { makeTestVideo, makeToneWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FfmpegFailedError, MediaCancelledError } from "./errors.ts";
import { resolveFfmpeg } from "./resolve.ts";
import { createMediaToolkit, type MediaToolkit } from "./toolkit.ts";
import type { FfmpegProgress } from "./run.ts";
import { buildBurnInArgs } from "./subtitles.ts";

const exec = promisify(execFile);

let media: MediaToolkit;
let dir: string;
let cleanup: () => Promise<void>;
let tone: string;

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-media-test-"));
  media = createMediaToolkit(await resolveFfmpeg({ logger: silentLogger() }), silentLogger());
  tone = await makeToneWav(2, join(dir, "tone.wav"), { sampleRate: 22050 });
});
afterAll(async () => cleanup());

/** Decodes to 8 kHz mono signed 16-bit samples for exact inspection. */
async function samples(path: string, rate = 8000): Promise<Int16Array> {
  const { stdout } = await exec(
    "ffmpeg",
    ["-nostdin", "-hide_banner", "-loglevel", "error", "-i", path, "-ac", "1", "-ar", String(rate), "-f", "s16le", "-c:a", "pcm_s16le", "pipe:1"],
    { encoding: "buffer", maxBuffer: 64 * 1024 * 1024 },
  );
  return new Int16Array(stdout.buffer, stdout.byteOffset, stdout.byteLength / 2);
}

/** A mono 16-bit WAV file in memory. */
function sineWav(seconds: number, frequency: number, rate: number): Buffer {
  const n = Math.round(seconds * rate);
  const wav = Buffer.alloc(44 + n * 2);
  wav.write("RIFF", 0, "ascii");
  wav.writeUInt32LE(36 + n * 2, 4);
  wav.write("WAVEfmt ", 8, "ascii");
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20);
  wav.writeUInt16LE(1, 22);
  wav.writeUInt32LE(rate, 24);
  wav.writeUInt32LE(rate * 2, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write("data", 36, "ascii");
  wav.writeUInt32LE(n * 2, 40);
  for (let i = 0; i < n; i++) wav.writeInt16LE(Math.round(10000 * Math.sin((2 * Math.PI * frequency * i) / rate)), 44 + i * 2);
  return wav;
}

function firstNonSilent(pcm: Int16Array, from: number, threshold = 50): number {
  for (let i = from; i < pcm.length; i++) if (Math.abs(pcm[i] ?? 0) > threshold) return i;
  return -1;
}

function peak(pcm: Int16Array, from: number, to: number): number {
  let max = 0;
  for (let i = from; i < Math.min(to, pcm.length); i++) max = Math.max(max, Math.abs(pcm[i] ?? 0));
  return max;
}

async function noTempFiles(): Promise<void> {
  expect((await readdir(dir)).filter((f) => f.endsWith(".tmp"))).toEqual([]);
}

describe("convertAudio", () => {
  it.each([
    ["mp3", "mp3", "mp3"],
    ["wav", "pcm_s16le", "wav"],
    ["ogg", "opus", "ogg"],
    ["flac", "flac", "flac"],
  ] as const)("encodes %s with the right codec", async (format, codec, container) => {
    const out = join(dir, `tone.${format}`);
    const progress: FfmpegProgress[] = [];
    await media.convertAudio({ input: tone, outPath: out, format, onProgress: (p) => progress.push(p) });
    const info = await media.probe(out);
    expect(info.format).toBe(container);
    expect(info.audio?.codec).toBe(codec);
    expect(info.audio?.channels).toBe(1);
    expect(info.durationSeconds).toBeGreaterThan(1.9);
    expect(info.durationSeconds).toBeLessThan(2.2);
    expect(info.video).toBeUndefined();
    expect(progress.at(-1)?.done).toBe(true);
    await noTempFiles();
  });

  it("fails with a readable error and ffmpeg's last lines on a file that is not media", async () => {
    const bogus = join(dir, "notes.mp3");
    await writeFile(bogus, "this is not audio at all\n".repeat(50));
    const out = join(dir, "never.mp3");
    const error = await media.convertAudio({ input: bogus, outPath: out, format: "mp3" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FfmpegFailedError);
    const failed = error as FfmpegFailedError;
    expect(failed.name).toBe("FfmpegFailedError");
    expect(failed.code).toBe("MEDIA_UNREADABLE");
    expect(failed.message).toBe("Encoding the audio failed: the file is damaged or is not a media file.");
    expect(failed.stderrTail.at(-1)).toContain(bogus);
    await expect(stat(out)).rejects.toThrow();
    await noTempFiles();
  });

  it("refuses playlists disguised as media (no reading of other local files)", async () => {
    const evil = join(dir, "evil.mp4");
    await writeFile(evil, "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:10.0,\n/etc/passwd\n#EXT-X-ENDLIST\n");
    await expect(media.convertAudio({ input: evil, outPath: join(dir, "evil.wav"), format: "wav" })).rejects.toMatchObject({
      code: "MEDIA_FORMAT_NOT_ALLOWED",
      message: "Encoding the audio failed: the file is not in a supported audio or video format.",
    });
    await expect(media.probe(evil)).rejects.toMatchObject({ code: "MEDIA_FORMAT_NOT_ALLOWED" });
  });

  it("reports a video without sound as having no audio track", async () => {
    const silentVideo = await makeTestVideo(1, join(dir, "mute.mp4"), { noAudio: true });
    await expect(media.convertAudio({ input: silentVideo, outPath: join(dir, "mute.wav"), format: "wav" })).rejects.toMatchObject({
      code: "MEDIA_NO_AUDIO",
    });
  });

  it("stops when cancelled", async () => {
    // an endless WAV stream through a named pipe keeps ffmpeg busy until it is cancelled
    const fifo = join(dir, "endless.wav");
    await exec("mkfifo", [fifo]);
    const header = sineWav(0, 440, 8000);
    header.writeUInt32LE(0xffffffff, 4);
    header.writeUInt32LE(0xffffffff, 40);
    const writer = createWriteStream(fifo);
    writer.on("error", () => undefined); // EPIPE once ffmpeg is gone
    writer.write(header);
    const feed = setInterval(() => writer.write(Buffer.alloc(1600)), 20);
    const controller = new AbortController();
    try {
      const run = media.convertAudio({ input: fifo, outPath: join(dir, "endless.flac"), format: "flac", signal: controller.signal });
      setTimeout(() => controller.abort(), 200);
      const error = await run.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MediaCancelledError);
      expect(error).toMatchObject({ code: "MEDIA_CANCELLED", message: "Encoding the audio was cancelled." });
    } finally {
      clearInterval(feed);
      // release the writer's open() should ffmpeg never have opened the pipe
      await open(fifo, constants.O_RDONLY | constants.O_NONBLOCK).then((handle) => handle.close());
      writer.destroy();
    }
    await expect(stat(join(dir, "endless.flac"))).rejects.toThrow();
    await noTempFiles();
  });
});

describe("concatAudio", () => {
  it("joins many WAV chunks in order into one encoded file", async () => {
    const chunks: string[] = [];
    for (let i = 0; i < 120; i++) {
      const path = join(dir, `chunk ${i}'s.wav`);
      await writeFile(path, sineWav(0.1, 200 + i * 10, 22050));
      chunks.push(path);
    }
    const out = join(dir, "joined.mp3");
    await media.concatAudio({ inputs: chunks, outPath: out, format: "mp3", encode: { bitrateKbps: 64 } });
    const info = await media.probe(out);
    expect(info.audio?.codec).toBe("mp3");
    expect(info.durationSeconds).toBeGreaterThan(11.9);
    expect(info.durationSeconds).toBeLessThan(12.2);
  });
});

describe("placeClips", () => {
  it("places each clip at its start time, to the sample, at its own level", async () => {
    const clipA = await makeToneWav(0.5, join(dir, "a.wav"), { frequency: 500, sampleRate: 16000 });
    const clipB = await makeToneWav(0.25, join(dir, "b.wav"), { frequency: 700, sampleRate: 22050 });
    const out = join(dir, "track.wav");
    const result = await media.placeClips({
      clips: [
        { path: clipB, startSeconds: 2.5 },
        { path: clipA, startSeconds: 1, durationSeconds: 0.5 },
      ],
      durationSeconds: 4,
      outPath: out,
      format: "wav",
      sampleRate: 8000,
    });
    expect(result).toEqual({ path: out, droppedClips: 0, truncatedClips: 0 });
    const pcm = await samples(out);
    expect(pcm.length).toBe(32000);
    expect(firstNonSilent(pcm, 0)).toBeGreaterThanOrEqual(8000);
    expect(firstNonSilent(pcm, 0)).toBeLessThanOrEqual(8003);
    expect(peak(pcm, 12010, 19990)).toBe(0);
    expect(firstNonSilent(pcm, 12010)).toBeGreaterThanOrEqual(20000);
    expect(firstNonSilent(pcm, 12010)).toBeLessThanOrEqual(20003);
    // not scaled down by mixing: same peak as the clip on its own
    const alone = peak(await samples(clipA), 0, 4000);
    expect(Math.abs(peak(pcm, 8000, 12000) - alone)).toBeLessThan(alone * 0.06);
  });

  it("sums overlapping clips and renders long lanes in parts without drift", async () => {
    const clips = [];
    for (let i = 0; i < 7; i++) {
      clips.push({ path: await makeToneWav(0.3, join(dir, `p${i}.wav`), { frequency: 400, sampleRate: 16000 }), startSeconds: 0.5 + i * 0.7 });
    }
    const overlap = { path: await makeToneWav(1, join(dir, "over.wav"), { frequency: 400, sampleRate: 16000 }), startSeconds: 0.4 };
    const out = join(dir, "mixed.flac");
    await media.placeClips({ clips: [...clips, overlap], durationSeconds: 6, outPath: out, format: "flac", sampleRate: 8000, maxClipsPerPass: 2 });
    const info = await media.probe(out);
    expect(info.audio?.codec).toBe("flac");
    const pcm = await samples(out);
    expect(pcm.length).toBe(48000);
    const single = peak(await samples(clips[0]?.path ?? ""), 0, 2400);
    // the last clip (third part of its lane) starts exactly at 0.5 + 6 * 0.7 = 4.7 s
    expect(peak(pcm, 34400 + 40, 37600 - 5)).toBe(0);
    const start = firstNonSilent(pcm, 36000);
    expect(start).toBeGreaterThanOrEqual(37600);
    expect(start).toBeLessThanOrEqual(37603);
    // where the 1 s clip overlaps the first clip, both are heard at full level (summed, not averaged)
    expect(peak(pcm, 4000, 6400)).toBeGreaterThan(single * 1.5);
  });
});

describe("extractSpeechWav and probe", () => {
  it("extracts 16 kHz mono WAV from a video and describes both", async () => {
    const video = await makeTestVideo(2, join(dir, "clip.mp4"));
    const info = await media.probe(video);
    expect(info).toMatchObject({ video: { codec: "h264", width: 320, height: 240 }, audio: { codec: "aac" } });
    expect(info.durationSeconds).toBeGreaterThan(1.9);
    const out = await media.extractSpeechWav({ input: video, outPath: join(dir, "speech16k.wav") });
    expect(await media.probe(out)).toMatchObject({ format: "wav", audio: { codec: "pcm_s16le", sampleRate: 16000, channels: 1 } });
  });

  it("measures the duration by decoding when the headers do not state it", async () => {
    const streamed = join(dir, "streamed.webm");
    const { stdout } = await exec(
      "ffmpeg",
      ["-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "sine=duration=3", "-c:a", "libopus", "-f", "webm", "pipe:1"],
      { encoding: "buffer", maxBuffer: 16 * 1024 * 1024 },
    );
    await writeFile(streamed, stdout);
    const info = await media.probe(streamed);
    expect(info.audio?.codec).toBe("opus");
    expect(info.durationSeconds).toBeGreaterThan(2.9);
    expect(info.durationSeconds).toBeLessThan(3.1);
  });

  it("measures loudness: silence is -91 dB", async () => {
    const silence = join(dir, "silence.wav");
    await media.placeClips({ clips: [], durationSeconds: 1, outPath: silence, format: "wav", sampleRate: 16000 });
    expect((await media.measureVolume(silence)).meanVolumeDb).toBeLessThanOrEqual(-90);
    expect((await media.measureVolume(tone)).meanVolumeDb).toBeGreaterThan(-40);
  });
});

describe("burning subtitles (buildBurnInArgs, as the subtitle service runs it)", () => {
  it("draws subtitles from a file whose name needs escaping", async () => {
    const black = join(dir, "black.mp4");
    await exec("ffmpeg", [
      "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "color=black:size=320x240:rate=10:duration=3",
      "-f", "lavfi", "-i", "sine=duration=3", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", black,
    ]);
    const srt = join(dir, "it's: a, [weird]; name.srt");
    await writeFile(srt, "1\n00:00:01,000 --> 00:00:02,000\nHELLO WORLD\n");
    const out = join(dir, "subbed.mp4");
    await media.run(buildBurnInArgs({ video: black, subtitles: srt, output: out, style: { fontName: "DejaVu Sans", fontSize: 40, outline: 0 } }), {
      what: "Drawing the subtitles onto the video",
    });
    const info = await media.probe(out);
    expect(info).toMatchObject({ video: { codec: "h264", width: 320, height: 240 }, audio: { codec: "aac" } });
    const frameAt = async (seconds: number): Promise<number> => {
      const { stdout } = await exec("ffmpeg", ["-nostdin", "-loglevel", "error", "-ss", String(seconds), "-i", out, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"], {
        encoding: "buffer",
        maxBuffer: 4 * 1024 * 1024,
      });
      return Math.max(...stdout);
    };
    expect(await frameAt(1.5)).toBeGreaterThan(200);
    expect(await frameAt(0.3)).toBeLessThan(60);
    expect((await readFile(out)).length).toBeGreaterThan(1000);
  });
});
