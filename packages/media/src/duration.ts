/**
 * Durations read from the container of an audio file this package encoded, computed the way
 * ffprobe computes `format.duration` for it, so no ffprobe process is needed. Each reader checks
 * the structure it relies on and returns undefined on anything unexpected (an encoder that does not
 * write a Xing frame, a streamed WAV with placeholder sizes, ...); callers then ask ffprobe.
 *
 * - WAV:  samples in the data chunk (data size / block align) / sample rate.
 * - FLAC: STREAMINFO total samples / sample rate (ffmpeg rewrites STREAMINFO when it finishes).
 * - MP3:  frames stated by the Xing/Info frame × samples per frame / sample rate (ffmpeg's mp3
 *         demuxer does the same; encoder delay and padding are counted, as ffprobe does).
 * - Ogg Opus: granule position of the last page minus the start time ffmpeg derives from the first
 *         audio page (its granule minus the samples of its packets), over 48 kHz.
 */
import { open } from "node:fs/promises";
import type { AudioFormat } from "./args.ts";

/** Bytes read from the start of WAV, FLAC and MP3 files. */
const HEAD_BYTES = 64 * 1024;
/** Ogg files up to this size are read whole and walked page by page; larger ones are left to ffprobe. */
const MAX_OGG_BYTES = 32 * 1024 * 1024;

/** WAV: duration from the fmt and data chunks; undefined unless both are present and consistent. */
export function wavDurationFromHeader(buffer: Buffer, fileSize: number): number | undefined {
  if (buffer.length < 12 || buffer.toString("ascii", 0, 4) !== "RIFF" || buffer.toString("ascii", 8, 12) !== "WAVE") return undefined;
  let offset = 12;
  let sampleRate = 0;
  let blockAlign = 0;
  while (offset + 8 <= buffer.length) {
    const id = buffer.toString("ascii", offset, offset + 4);
    const size = buffer.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === "fmt ") {
      if (size < 16 || body + 16 > buffer.length) return undefined;
      sampleRate = buffer.readUInt32LE(body + 4);
      blockAlign = buffer.readUInt16LE(body + 12);
    } else if (id === "data") {
      if (sampleRate === 0 || blockAlign === 0) return undefined;
      // A size beyond the file is a placeholder (streamed output): the header cannot be trusted.
      if (size === 0xffffffff || body + size > fileSize) return undefined;
      return Math.floor(size / blockAlign) / sampleRate;
    }
    offset = body + size + (size % 2);
  }
  return undefined;
}

/** FLAC: total samples / sample rate from STREAMINFO; undefined when the total is not stated (0). */
export function flacDurationFromHeader(buffer: Buffer): number | undefined {
  if (buffer.length < 8 + 34 || buffer.toString("ascii", 0, 4) !== "fLaC") return undefined;
  const type = (buffer[4] ?? 0) & 0x7f;
  const length = buffer.readUIntBE(5, 3);
  if (type !== 0 || length !== 34) return undefined;
  const info = 8;
  // 20 bits sample rate, 3 bits channels - 1, 5 bits bits per sample - 1, 36 bits total samples.
  const sampleRate = buffer.readUIntBE(info + 10, 3) >>> 4;
  const totalSamples = ((buffer[info + 13] ?? 0) & 0x0f) * 2 ** 32 + buffer.readUInt32BE(info + 14);
  if (sampleRate === 0 || totalSamples === 0) return undefined;
  return totalSamples / sampleRate;
}

const MP3_SAMPLE_RATES: Record<number, readonly number[]> = {
  3: [44100, 48000, 32000], // MPEG-1
  2: [22050, 24000, 16000], // MPEG-2
  0: [11025, 12000, 8000], // MPEG-2.5
};

/** Size of an ID3v2 tag at `offset` (header, body and footer), 0 when there is none. */
function id3v2Size(buffer: Buffer, offset: number): number | undefined {
  if (buffer.length < offset + 10 || buffer.toString("latin1", offset, offset + 3) !== "ID3") return 0;
  let size = 0;
  for (let i = 0; i < 4; i++) {
    const byte = buffer[offset + 6 + i] ?? 0xff;
    if (byte & 0x80) return undefined;
    size = size * 128 + byte;
  }
  const footer = ((buffer[offset + 5] ?? 0) & 0x10) !== 0 ? 10 : 0;
  return 10 + size + footer;
}

/** MP3 (Layer III): the frame count of the Xing/Info frame that starts the audio; undefined without one. */
export function mp3DurationFromHeader(buffer: Buffer): number | undefined {
  const tag = id3v2Size(buffer, 0);
  if (tag === undefined) return undefined;
  const at = tag;
  if (buffer.length < at + 4) return undefined;
  const b1 = buffer[at + 1] ?? 0;
  const b2 = buffer[at + 2] ?? 0;
  const b3 = buffer[at + 3] ?? 0;
  if (buffer[at] !== 0xff || (b1 & 0xe0) !== 0xe0) return undefined;
  const version = (b1 >> 3) & 3;
  const layer = (b1 >> 1) & 3;
  const rateIndex = (b2 >> 2) & 3;
  const sampleRate = MP3_SAMPLE_RATES[version]?.[rateIndex];
  if (layer !== 1 || sampleRate === undefined) return undefined;
  const mpeg1 = version === 3;
  const mono = (b3 >> 6) === 3;
  // The Xing tag follows the 4-byte header and the side information.
  const sideInfo = mpeg1 ? (mono ? 17 : 32) : mono ? 9 : 17;
  const xing = at + 4 + sideInfo;
  if (buffer.length < xing + 12) return undefined;
  const id = buffer.toString("latin1", xing, xing + 4);
  if (id !== "Xing" && id !== "Info") return undefined;
  const flags = buffer.readUInt32BE(xing + 4);
  if ((flags & 1) === 0) return undefined;
  const frames = buffer.readUInt32BE(xing + 8);
  if (frames === 0) return undefined;
  return (frames * (mpeg1 ? 1152 : 576)) / sampleRate;
}

/** Samples (at 48 kHz) in one Opus packet, from its TOC byte (RFC 6716 §3.1). */
export function opusPacketSamples(packet: Buffer): number | undefined {
  const toc = packet[0];
  if (toc === undefined) return undefined;
  const config = toc >> 3;
  const frameSize =
    config < 12 ? [480, 960, 1920, 2880][config & 3] : config < 16 ? [480, 960][config & 1] : [120, 240, 480, 960][config & 3];
  const code = toc & 3;
  const frames = code === 0 ? 1 : code === 3 ? (packet[1] ?? 0) & 0x3f : 2;
  if (frameSize === undefined || frames === 0 || (code === 3 && packet.length < 2)) return undefined;
  return frameSize * frames;
}

interface OggPage {
  headerType: number;
  granule: bigint;
  serial: number;
  /** Packets completed on this page (a packet continued from earlier pages is included whole). */
  packets: Buffer[];
}

/**
 * Ogg Opus with a single logical stream, walked page by page from the start of the whole file.
 * Matches ffmpeg's ogg demuxer: duration = last granule − (first audio page granule − its packets'
 * samples), except when the first audio page is also the last (ffmpeg then leaves the start at 0).
 */
export function oggOpusDuration(file: Buffer): number | undefined {
  const pages: OggPage[] = [];
  let partial: Buffer[] = [];
  let offset = 0;
  while (offset < file.length) {
    if (offset + 27 > file.length || file.toString("latin1", offset, offset + 4) !== "OggS" || file[offset + 4] !== 0) return undefined;
    const headerType = file[offset + 5] ?? 0;
    const granule = file.readBigInt64LE(offset + 6);
    const serial = file.readUInt32LE(offset + 14);
    const segments = file[offset + 26] ?? 0;
    const lacing = file.subarray(offset + 27, offset + 27 + segments);
    if (lacing.length !== segments) return undefined;
    let body = offset + 27 + segments;
    const packets: Buffer[] = [];
    // A packet cut off, or a continuation of nothing: not a file ffmpeg wrote.
    if (((headerType & 1) === 0) !== (partial.length === 0)) return undefined;
    for (const size of lacing) {
      if (body + size > file.length) return undefined;
      partial.push(file.subarray(body, body + size));
      body += size;
      if (size < 255) {
        packets.push(Buffer.concat(partial));
        partial = [];
      }
    }
    if (pages.length > 0 && serial !== pages[0]?.serial) return undefined; // chained or multiplexed
    pages.push({ headerType, granule, serial, packets });
    offset = body;
  }
  const head = pages[0]?.packets[0];
  if (head === undefined || head.length < 19 || head.toString("latin1", 0, 8) !== "OpusHead") return undefined;
  let index = 0;
  let start: bigint | undefined;
  for (const page of pages) {
    const first = index;
    index += page.packets.length;
    if (index <= 2 || page.granule === -1n) continue; // OpusHead, OpusTags
    if ((page.headerType & 4) !== 0) {
      start = 0n;
      break;
    }
    let samples = 0;
    for (const [k, packet] of page.packets.entries()) {
      if (first + k < 2) continue;
      const n = opusPacketSamples(packet);
      if (n === undefined) return undefined;
      samples += n;
    }
    start = page.granule - BigInt(samples);
    break;
  }
  const last = pages.findLast((page) => page.granule !== -1n && page.granule !== 0n);
  if (start === undefined || last === undefined) return undefined;
  const duration = Number(last.granule - start) / 48000;
  return Number.isFinite(duration) && duration > 0 ? duration : undefined;
}

/**
 * The duration of an audio file encoded by this package (`convertAudio`, `concatAudio`, ...), read
 * from its container without starting ffprobe. Undefined when the file does not have the expected
 * structure; measure it with `probe` then.
 */
export async function readEncodedAudioDuration(path: string, format: AudioFormat): Promise<number | undefined> {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    const length = format === "ogg" ? (size <= MAX_OGG_BYTES ? size : 0) : Math.min(size, HEAD_BYTES);
    if (length === 0) return undefined;
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, 0);
    const data = buffer.subarray(0, bytesRead);
    switch (format) {
      case "wav":
        return wavDurationFromHeader(data, size);
      case "flac":
        return flacDurationFromHeader(data);
      case "mp3":
        return mp3DurationFromHeader(data);
      case "ogg":
        return bytesRead === size ? oggOpusDuration(data) : undefined;
    }
  } finally {
    await handle.close();
  }
}
