/**
 * MPEG audio Layer III frames, read and written without a process: splitting an encoder's output
 * stream into frames, counting the frames of headerless MP3 files, and the Xing "Info" frame that
 * states a CBR file's frame count (what ffmpeg's mp3 muxer writes with `-write_xing 1`), so files
 * joined by copying frames report their exact duration.
 */
import { MediaError } from "./errors.ts";

export interface Mp3FrameHeader {
  /** MPEG-1 (32–48 kHz) frames hold 1152 samples; MPEG-2 and 2.5 (8–24 kHz) hold 576. */
  mpeg1: boolean;
  /** The 2-bit version id of the header (3 = MPEG-1, 2 = MPEG-2, 0 = MPEG-2.5). */
  versionId: number;
  sampleRate: number;
  samplesPerFrame: number;
  bitrateKbps: number;
  /** 1 for mono, 2 otherwise. */
  channels: number;
  /** The 2-bit channel mode (3 = mono). */
  channelMode: number;
  /** Bytes of the whole frame, header included. */
  length: number;
}

const SAMPLE_RATES: Record<number, readonly number[]> = {
  3: [44100, 48000, 32000],
  2: [22050, 24000, 16000],
  0: [11025, 12000, 8000],
};
const BITRATES_V1 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const BITRATES_V2 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];

/** Sample rates the MP3 format (and LAME) can encode. */
export const MP3_SAMPLE_RATES: readonly number[] = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000];

/** The MP3 sample rate to encode audio of `rate` Hz at: the rate itself when MP3 has it (no resampling), else the next one up. */
export function mp3SampleRateFor(rate: number): number {
  return MP3_SAMPLE_RATES.find((r) => r >= rate) ?? 48000;
}

/** The Layer III frame header at `offset`, or undefined when there is none (free-format frames included). */
export function parseMp3FrameHeader(buffer: Uint8Array, offset = 0): Mp3FrameHeader | undefined {
  if (offset + 4 > buffer.length) return undefined;
  const b0 = buffer[offset] ?? 0;
  const b1 = buffer[offset + 1] ?? 0;
  const b2 = buffer[offset + 2] ?? 0;
  const b3 = buffer[offset + 3] ?? 0;
  if (b0 !== 0xff || (b1 & 0xe0) !== 0xe0) return undefined;
  const versionId = (b1 >> 3) & 3;
  const layer = (b1 >> 1) & 3;
  if (layer !== 1 || versionId === 1) return undefined;
  const sampleRate = SAMPLE_RATES[versionId]?.[(b2 >> 2) & 3];
  const mpeg1 = versionId === 3;
  const bitrateKbps = (mpeg1 ? BITRATES_V1 : BITRATES_V2)[b2 >> 4];
  if (sampleRate === undefined || bitrateKbps === undefined || bitrateKbps === 0) return undefined;
  const padding = (b2 >> 1) & 1;
  const channelMode = b3 >> 6;
  const length = Math.floor(((mpeg1 ? 144_000 : 72_000) * bitrateKbps) / sampleRate) + padding;
  return { mpeg1, versionId, sampleRate, samplesPerFrame: mpeg1 ? 1152 : 576, bitrateKbps, channels: channelMode === 3 ? 1 : 2, channelMode, length };
}

/** True when two frames can follow each other in one stream (same version, sample rate and channel mode). */
export function sameMp3Stream(a: Mp3FrameHeader, b: Mp3FrameHeader): boolean {
  return a.versionId === b.versionId && a.sampleRate === b.sampleRate && a.channelMode === b.channelMode;
}

/**
 * Cuts a stream of MP3 frames (an encoder's output, no tags) into whole frames as bytes arrive.
 * Anything that is not a frame where a frame must start is an error: the stream is ours.
 */
export class Mp3FrameSplitter {
  private pending: Buffer = Buffer.alloc(0);
  private first: Mp3FrameHeader | undefined;

  /** The frames completed by `chunk`, in order. */
  push(chunk: Buffer): Buffer[] {
    const data = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const frames: Buffer[] = [];
    let offset = 0;
    while (offset + 4 <= data.length) {
      const header = parseMp3FrameHeader(data, offset);
      if (header === undefined || (this.first !== undefined && !sameMp3Stream(this.first, header))) {
        throw new MediaError("FFMPEG_FAILED", "Encoding the audio failed: the encoder wrote something that is not an MP3 frame.");
      }
      this.first ??= header;
      if (offset + header.length > data.length) break;
      frames.push(data.subarray(offset, offset + header.length));
      offset += header.length;
    }
    this.pending = Buffer.from(data.subarray(offset));
    return frames;
  }

  /** Bytes left over at the end of the stream (a cut-off frame); 0 for a whole stream. */
  get leftover(): number {
    return this.pending.length;
  }

  /** The header of the first frame seen. */
  get header(): Mp3FrameHeader | undefined {
    return this.first;
  }
}

export interface Mp3FrameScan {
  /** Undefined for a file with no frames. */
  header: Mp3FrameHeader | undefined;
  frames: number;
  bytes: number;
}

/**
 * Counts the frames of a headerless MP3 file (frames only, as this package's encoders stream them),
 * checking that every frame follows the first one's shape; throws on anything else.
 */
export function scanMp3Frames(buffer: Uint8Array): Mp3FrameScan {
  let offset = 0;
  let frames = 0;
  let first: Mp3FrameHeader | undefined;
  while (offset < buffer.length) {
    const header = parseMp3FrameHeader(buffer, offset);
    if (header === undefined || offset + header.length > buffer.length || (first !== undefined && !sameMp3Stream(first, header))) {
      throw new MediaError("MEDIA_UNREADABLE", `The MP3 data is damaged: no whole frame at byte ${offset}.`);
    }
    first ??= header;
    frames++;
    offset += header.length;
  }
  return { header: first, frames, bytes: buffer.length };
}

/**
 * A Xing "Info" frame (the CBR form of the Xing header) for a stream of `frames` audio frames shaped
 * like `like`, whose audio takes `audioBytes` bytes. It is a valid silent frame placed before the audio;
 * readers (ffmpeg among them) take the frame count from it and do not play it.
 */
export function buildMp3InfoFrame(like: Mp3FrameHeader, frames: number, audioBytes: number): Buffer {
  const sideInfo = like.mpeg1 ? (like.channels === 1 ? 17 : 32) : like.channels === 1 ? 9 : 17;
  const needed = 4 + sideInfo + 16; // "Info", flags, frames, bytes
  const table = like.mpeg1 ? BITRATES_V1 : BITRATES_V2;
  // The audio's own bitrate when its frame has room for the tag, else the smallest that does.
  let index = table.indexOf(like.bitrateKbps);
  const lengthAt = (i: number) => Math.floor(((like.mpeg1 ? 144_000 : 72_000) * (table[i] ?? 0)) / like.sampleRate);
  while (index < table.length - 1 && lengthAt(index) < needed) index++;
  const length = lengthAt(index);
  if (index < 1 || length < needed) throw new MediaError("FFMPEG_FAILED", "The MP3 stream has a shape no Info frame fits.");
  const frame = Buffer.alloc(length);
  const rateIndex = SAMPLE_RATES[like.versionId]?.indexOf(like.sampleRate) ?? 0;
  frame[0] = 0xff;
  frame[1] = 0xe0 | (like.versionId << 3) | (1 << 1) | 1; // Layer III, no CRC
  frame[2] = (index << 4) | (rateIndex << 2); // no padding, private bit 0
  frame[3] = like.channelMode << 6;
  const tag = 4 + sideInfo;
  frame.write("Info", tag, "latin1");
  frame.writeUInt32BE(0x3, tag + 4); // frames and bytes fields present
  frame.writeUInt32BE(frames, tag + 8);
  frame.writeUInt32BE(Math.min(0xffffffff, length + audioBytes), tag + 12);
  return frame;
}
