/**
 * Test media made on the spot, with no network: speech (flite or espeak-ng), tones and small videos
 * (ffmpeg lavfi). Uses the system `ffmpeg`, `flite` and `espeak-ng` unless other binaries are given.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { crc32, createDeflate } from "node:zlib";

export interface ToolOptions {
  /** ffmpeg binary; default "ffmpeg" from PATH. */
  ffmpeg?: string;
}

function run(command: string, args: readonly string[], input?: string): Promise<void> {
  return new Promise((done, fail) => {
    const child = execFile(command, [...args], { maxBuffer: 4 * 1024 * 1024 }, (error, _stdout, stderr) => {
      if (error) {
        fail(new Error(`${command} failed while making test media: ${String(stderr).trim().split("\n").slice(-3).join(" / ") || error.message}`, { cause: error }));
      } else {
        done();
      }
    });
    if (input !== undefined) child.stdin?.end(input);
    else child.stdin?.end();
  });
}

const FFMPEG_BASE = ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"];

export type TestVoice = `flite:${string}` | `espeak:${string}`;

export interface SpeechOptions extends ToolOptions {
  /** "flite:slt" (default; clearest English for recognition), another flite voice, or "espeak:<voice>". */
  voice?: TestVoice;
  /** Where to write the WAV. */
  path: string;
}

/** Speaks `text` into a mono WAV (flite: 16 kHz, espeak-ng: 22.05 kHz). Returns the path. */
export async function makeSpeechWav(text: string, options: SpeechOptions): Promise<string> {
  const voice = options.voice ?? "flite:slt";
  const path = resolve(options.path);
  const [engine, name] = [voice.slice(0, voice.indexOf(":")), voice.slice(voice.indexOf(":") + 1)];
  if (!/^[A-Za-z0-9_+-]+$/.test(name)) throw new Error(`invalid test voice name "${name}"`);
  if (engine === "espeak") {
    await run("espeak-ng", ["-b", "1", "-v", name, "-w", path, "--stdin"], text);
    return path;
  }
  const dir = await mkdtemp(join(tmpdir(), "voiceloc-speech-"));
  try {
    const textFile = join(dir, "text.txt");
    await writeFile(textFile, text, "utf8");
    await run("flite", ["-voice", name, "-f", textFile, "-o", path]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return path;
}

export interface ToneOptions extends ToolOptions {
  frequency?: number;
  sampleRate?: number;
  channels?: 1 | 2;
}

/** A sine tone WAV (default 440 Hz, 16 kHz mono) of exactly `seconds`. Returns the path. */
export async function makeToneWav(seconds: number, path: string, options: ToneOptions = {}): Promise<string> {
  const out = resolve(path);
  const rate = options.sampleRate ?? 16000;
  await run(options.ffmpeg ?? "ffmpeg", [
    ...FFMPEG_BASE,
    "-f", "lavfi", "-i", `sine=frequency=${options.frequency ?? 440}:sample_rate=${rate}:duration=${seconds}`,
    "-ac", String(options.channels ?? 1), "-c:a", "pcm_s16le", "-f", "wav", out,
  ]);
  return out;
}

export interface TestVideoOptions extends ToolOptions {
  /** An audio file (e.g. from makeSpeechWav) used as the soundtrack, padded with silence or cut to length. */
  withSpeechFrom?: string;
  /** Frame size, default "320x240". */
  size?: string;
  /** Leave the audio track out entirely. */
  noAudio?: boolean;
}

/** An MP4 (H.264 test pattern + AAC) of `seconds`; the soundtrack is a tone unless `withSpeechFrom` is given. */
export async function makeTestVideo(seconds: number, path: string, options: TestVideoOptions = {}): Promise<string> {
  const out = resolve(path);
  const size = options.size ?? "320x240";
  if (!/^\d+x\d+$/.test(size)) throw new Error(`invalid video size "${size}"`);
  const video = ["-f", "lavfi", "-i", `testsrc=duration=${seconds}:size=${size}:rate=25`];
  const audio = options.noAudio
    ? []
    : options.withSpeechFrom !== undefined
      ? ["-i", resolve(options.withSpeechFrom)]
      : ["-f", "lavfi", "-i", `sine=frequency=330:sample_rate=48000:duration=${seconds}`];
  const audioOut = options.noAudio ? ["-an"] : ["-map", "1:a:0", "-af", `apad,atrim=end=${seconds}`, "-c:a", "aac", "-b:a", "96k"];
  await run(options.ffmpeg ?? "ffmpeg", [
    ...FFMPEG_BASE,
    ...video,
    ...audio,
    "-map", "0:v:0",
    ...audioOut,
    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
    "-t", String(seconds),
    "-movflags", "+faststart",
    "-f", "mp4", out,
  ]);
  return out;
}

/** One PNG chunk: length, type, data, CRC-32 of type and data. */
function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "latin1");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
  return Buffer.concat([head, data, crc]);
}

/**
 * A grey 8-bit PNG of `width`×`height`, written without ever holding the picture: its rows are
 * deflated as they are made, so a 16000×16000 picture (256 megapixels) costs a few MB here and a
 * few hundred KB on disk, while a decoder that believes it needs the whole picture in memory.
 */
export async function makeHugePng(width: number, height: number, path: string, grey = 96): Promise<string> {
  const out = resolve(path);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.writeUInt8(8, 8); // bit depth
  header.writeUInt8(0, 9); // greyscale
  const row = Buffer.alloc(width + 1, grey);
  row[0] = 0; // filter: none
  const chunks: Buffer[] = [];
  const deflate = createDeflate({ level: 9 });
  deflate.on("data", (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise<void>((ok, fail) => {
    deflate.on("end", ok);
    deflate.on("error", fail);
  });
  await pipeline(
    Readable.from((function* rows() {
      for (let y = 0; y < height; y++) yield row;
    })()),
    deflate,
  );
  await done;
  const png = Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", header),
    pngChunk("IDAT", Buffer.concat(chunks)),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
  await writeFile(out, png);
  return out;
}

export interface HugeFrameVideoOptions extends ToolOptions {
  /** Soundtrack (e.g. from makeSpeechWav), cut or padded to `seconds`; a tone otherwise. */
  withSpeechFrom?: string;
  /** Length, default 3 s (frames at 2 per second, every one the huge picture). */
  seconds?: number;
}

/**
 * An MP4 whose every frame is a `width`×`height` PNG (copied, never decoded here beyond ffmpeg's own
 * look at the first), with an AAC soundtrack: a small file of pictures big enough to take a machine's
 * memory in any filter or encoder. Combine with `withClaimedMp4PictureSize` to make its headers lie.
 */
export async function makeHugeFrameVideo(width: number, height: number, path: string, options: HugeFrameVideoOptions = {}): Promise<string> {
  const out = resolve(path);
  const seconds = options.seconds ?? 3;
  const dir = await mkdtemp(join(tmpdir(), "voiceloc-huge-"));
  try {
    const png = await makeHugePng(width, height, join(dir, "frame.png"));
    const audio = options.withSpeechFrom !== undefined ? ["-i", resolve(options.withSpeechFrom)] : ["-f", "lavfi", "-i", `sine=frequency=330:sample_rate=48000:duration=${seconds}`];
    await run(options.ffmpeg ?? "ffmpeg", [
      ...FFMPEG_BASE,
      "-framerate", "2", "-loop", "1", "-i", png,
      ...audio,
      "-map", "0:v:0", "-map", "1:a:0",
      "-c:v", "copy",
      "-af", `apad,atrim=end=${seconds}`, "-c:a", "aac", "-b:a", "64k",
      "-t", String(seconds),
      "-f", "mp4", out,
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}
