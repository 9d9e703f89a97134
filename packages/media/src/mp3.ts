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

/** Bytes of a Layer III frame without its padding byte. */
function frameBytes(mpeg1: boolean, bitrateKbps: number, sampleRate: number): number {
  return Math.floor(((mpeg1 ? 144_000 : 72_000) * bitrateKbps) / sampleRate);
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
  const length = frameBytes(mpeg1, bitrateKbps, sampleRate) + padding;
  return { mpeg1, versionId, sampleRate, samplesPerFrame: mpeg1 ? 1152 : 576, bitrateKbps, channels: channelMode === 3 ? 1 : 2, channelMode, length };
}

/** True when two frames can follow each other in one stream (same version, sample rate and channel mode). */
export function sameMp3Stream(a: Mp3FrameHeader, b: Mp3FrameHeader): boolean {
  return a.versionId === b.versionId && a.sampleRate === b.sampleRate && a.channelMode === b.channelMode;
}

/**
 * The byte lengths of frames shaped like one first frame, by the second and third header bytes, so
 * that a long stream is walked frame by frame without an object per frame.
 */
class FrameShape {
  /** Header byte 1 without the protection bit: sync, version, layer. */
  private readonly b1: number;
  /** Sample-rate bits of header byte 2. */
  private readonly rateBits: number;
  private readonly mode: number;
  /** Frame length without padding, by bitrate index (0 where the index is not allowed). */
  private readonly lengths: number[];

  constructor(
    readonly header: Mp3FrameHeader,
    buffer: Uint8Array,
    offset: number,
  ) {
    this.b1 = (buffer[offset + 1] ?? 0) & 0xfe;
    this.rateBits = (buffer[offset + 2] ?? 0) & 0x0c;
    this.mode = header.channelMode;
    const table = header.mpeg1 ? BITRATES_V1 : BITRATES_V2;
    this.lengths = table.map((kbps) => (kbps === 0 ? 0 : frameBytes(header.mpeg1, kbps, header.sampleRate)));
  }

  /**
   * The length of the frame at `offset` when a frame of this stream starts there (same version, layer,
   * sample rate and channel mode: what sameMp3Stream asks), 0 when something else does, -1 when fewer
   * than 4 bytes are left.
   */
  lengthAt(buffer: Uint8Array, offset: number): number {
    if (offset + 4 > buffer.length) return -1;
    const b2 = buffer[offset + 2]!;
    if (buffer[offset] !== 0xff || (buffer[offset + 1]! & 0xfe) !== this.b1 || (b2 & 0x0c) !== this.rateBits || buffer[offset + 3]! >> 6 !== this.mode) return 0;
    const length = this.lengths[b2 >> 4] ?? 0;
    return length === 0 ? 0 : length + ((b2 >> 1) & 1);
  }
}

const NOT_A_FRAME = "Encoding the audio failed: the encoder wrote something that is not an MP3 frame.";

/**
 * Cuts a stream of MP3 frames (an encoder's output, no tags) into runs of whole frames as bytes
 * arrive, with no allocation per frame: the bytes are gathered in one buffer (grown when a run of
 * frames not taken yet needs it, then reused), the frame ends are kept as numbers, and `take(count)`
 * hands out the next `count` frames as one Buffer. Anything
 * that is not a frame where a frame must start is an error: the stream is ours.
 */
export class Mp3FrameCutter {
  private buffer: Buffer;
  /** Bytes of `buffer` filled. */
  private filled = 0;
  /** Where the next frame starts in `buffer` (all before it is cut into frames). */
  private scanned = 0;
  /** End offsets in `buffer` of the frames not taken yet (the first `pending` entries; reused). */
  private ends = new Float64Array(16 * 1024);
  private pending = 0;
  private shape: FrameShape | undefined;
  private seen = 0;
  private taken = 0;

  constructor(initialBytes = 1024 * 1024) {
    this.buffer = Buffer.allocUnsafe(initialBytes);
  }

  /** Adds bytes of the stream; returns the number of whole frames seen so far. */
  push(chunk: Uint8Array): number {
    if (this.filled + chunk.length > this.buffer.length) this.grow(this.filled + chunk.length);
    this.buffer.set(chunk, this.filled);
    this.filled += chunk.length;
    return this.scan();
  }

  /**
   * Room for at least `min` more bytes of the stream at the end of the cutter's own buffer, to read
   * them straight into it (no buffer of the caller's in between); `commit` the bytes written.
   */
  space(min: number): Buffer {
    if (this.filled + min > this.buffer.length) this.grow(this.filled + min);
    return this.buffer.subarray(this.filled);
  }

  /** Adds the first `bytes` of the last `space`; returns the number of whole frames seen so far. */
  commit(bytes: number): number {
    if (!(Number.isInteger(bytes) && bytes >= 0 && this.filled + bytes <= this.buffer.length)) throw new RangeError("commit: more bytes than the space given");
    this.filled += bytes;
    return this.scan();
  }

  private scan(): number {
    const data = this.buffer.subarray(0, this.filled);
    let offset = this.scanned;
    while (offset + 4 <= data.length) {
      if (this.shape === undefined) {
        const header = parseMp3FrameHeader(data, offset);
        if (header === undefined) throw new MediaError("FFMPEG_FAILED", NOT_A_FRAME);
        this.shape = new FrameShape(header, data, offset);
      }
      const length = this.shape.lengthAt(data, offset);
      if (length === 0) throw new MediaError("FFMPEG_FAILED", NOT_A_FRAME);
      if (offset + length > data.length) break;
      offset += length;
      if (this.pending === this.ends.length) {
        const more = new Float64Array(this.ends.length * 2);
        more.set(this.ends);
        this.ends = more;
      }
      this.ends[this.pending++] = offset;
      this.seen++;
    }
    this.scanned = offset;
    return this.seen;
  }

  /** Bytes of the next `count` whole frames (fewer when fewer were seen): what `take(count)` returns. */
  bytesOf(count: number): number {
    const n = Math.max(0, Math.min(count, this.seen - this.taken));
    return n === 0 ? 0 : this.ends[n - 1]!;
  }

  /**
   * The next `count` whole frames (fewer when fewer were seen) as one Buffer of their bytes (a copy:
   * later pushes never write into it): the start of `into` when it is large enough (`bytesOf(count)`),
   * else a new Buffer. The cutter's own buffer is kept and reused.
   */
  take(count: number, into?: Buffer): Buffer {
    const n = Math.max(0, Math.min(count, this.seen - this.taken));
    if (n === 0) return Buffer.alloc(0);
    const cut = this.ends[n - 1]!;
    const out = into !== undefined && into.length >= cut ? into.subarray(0, cut) : Buffer.allocUnsafe(cut);
    this.buffer.copy(out, 0, 0, cut);
    this.buffer.copyWithin(0, cut, this.filled);
    this.filled -= cut;
    this.scanned -= cut;
    this.ends.copyWithin(0, n, this.pending);
    this.pending -= n;
    for (let i = 0; i < this.pending; i++) this.ends[i]! -= cut;
    this.taken += n;
    return out;
  }

  /** Whole frames seen since the start of the stream. */
  get framesSeen(): number {
    return this.seen;
  }

  /** Frames handed out by `take`. */
  get framesTaken(): number {
    return this.taken;
  }

  /** Bytes after the last whole frame (a cut-off frame at the end of the stream); 0 for a whole stream. */
  get leftover(): number {
    return this.filled - this.scanned;
  }

  /** The header of the first frame seen. */
  get header(): Mp3FrameHeader | undefined {
    return this.shape?.header;
  }

  private grow(needed: number): void {
    let size = this.buffer.length * 2;
    while (size < needed) size *= 2;
    const bigger = Buffer.allocUnsafe(size);
    this.buffer.copy(bigger, 0, 0, this.filled);
    this.buffer = bigger;
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
  let shape: FrameShape | undefined;
  while (offset < buffer.length) {
    const first = shape === undefined ? parseMp3FrameHeader(buffer, offset) : undefined;
    if (first !== undefined) shape = new FrameShape(first, buffer, offset);
    const length = shape === undefined ? 0 : shape.lengthAt(buffer, offset);
    if (length <= 0 || offset + length > buffer.length) {
      throw new MediaError("MEDIA_UNREADABLE", `The MP3 data is damaged: no whole frame at byte ${offset}.`);
    }
    frames++;
    offset += length;
  }
  return { header: shape?.header, frames, bytes: buffer.length };
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
