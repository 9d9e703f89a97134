/**
 * Pure builders of ffmpeg argument arrays. Nothing here touches the file system or spawns anything,
 * so every command line can be unit-tested exactly.
 *
 * Safety rules applied to every invocation:
 * - `-nostdin -hide_banner -nostats`: ffmpeg never reads our stdin, and stderr holds only diagnostics.
 * - Every input is preceded by `-max_pixels` (decoders refuse bigger pictures before allocating them,
 *   whatever the headers say), `-protocol_whitelist file,pipe` (ffmpeg only opens local files) and a
 *   `-format_whitelist` of demuxers. Untrusted uploads may only be demuxed by ordinary container
 *   demuxers: playlist-style demuxers (hls, concat, image2, ...) that could make ffmpeg read other
 *   local files are refused.
 * - Paths are made absolute, so a file name can never be read as an option or a protocol.
 * - Outputs always name their muxer with `-f` and are written with `-y` to a path the caller picks
 *   (the runner uses a temporary name and renames it into place).
 */
import { isAbsolute, resolve } from "node:path";
import { MediaRequestError } from "./errors.ts";

export const AUDIO_FORMATS = ["mp3", "wav", "ogg", "flac"] as const;
export type AudioFormat = (typeof AUDIO_FORMATS)[number];

export function isAudioFormat(value: unknown): value is AudioFormat {
  return typeof value === "string" && (AUDIO_FORMATS as readonly string[]).includes(value);
}

/** Global options that start every ffmpeg command line. */
export const GLOBAL_ARGS: readonly string[] = ["-nostdin", "-hide_banner", "-nostats"];

/** Only local files (and pipes) may be opened by any input. */
export const PROTOCOL_WHITELIST = "file,pipe";

/**
 * Demuxers allowed for media uploaded by users: ordinary audio and video containers.
 * Names are ffmpeg demuxer names (a demuxer matches when any of its aliases is listed).
 */
export const UNTRUSTED_MEDIA_DEMUXERS: readonly string[] = [
  "mov", "mp4", "m4a", "3gp", "matroska", "webm", "avi", "flv", "mpegts", "mpeg", "asf",
  "ogg", "mp3", "wav", "w64", "flac", "aac", "amr", "aiff", "caf", "wv",
];

/** Demuxers allowed for audio clips (speech made by engines, or audio produced by this package). */
export const AUDIO_CLIP_DEMUXERS: readonly string[] = ["wav", "w64", "mp3", "ogg", "flac"];

/** Our own intermediate files. */
export const WAV_DEMUXERS: readonly string[] = ["wav"];

const OPUS_SAMPLE_RATES = new Set([8000, 12000, 16000, 24000, 48000]);

/** An absolute path without characters that would break list files or filter graphs. */
export function safePath(path: string, what = "file"): string {
  if (path === "" || /[\0\r\n]/.test(path)) {
    throw new MediaRequestError(`The ${what} path is empty or contains a line break, which is not allowed.`);
  }
  return isAbsolute(path) ? path : resolve(path);
}

/**
 * Crops a frame of odd width or height by its last column or row: x264 with 4:2:0 chroma takes only
 * even sizes, and a 721×1281 phone video would otherwise fail its burn-in ("width not divisible by 2").
 */
export const EVEN_FRAME = "crop=trunc(iw/2)*2:trunc(ih/2)*2:0:0";

/** Default largest picture any decoder may produce (MAX_VIDEO_PIXELS): 8192×4320 (8K), 35.4 megapixels. */
export const DEFAULT_MAX_VIDEO_PIXELS = 8192 * 4320;

let maxPixels = DEFAULT_MAX_VIDEO_PIXELS;

/**
 * Sets the largest picture (width × height) any decoder of any input may produce, from then on. A
 * decoder refuses a bigger picture before it allocates it, whatever the file's headers claimed: a
 * small file of huge frames cannot take the machine's memory. Set once by the process entry
 * (MAX_VIDEO_PIXELS); a task may ask for less (`maxPixels` of the builders that read a video).
 */
export function setMaxVideoPixels(pixels: number): void {
  if (!Number.isSafeInteger(pixels) || pixels < 1 || pixels > 2_147_483_647) {
    throw new RangeError("The largest video picture must be a whole number of pixels from 1 to 2147483647.");
  }
  maxPixels = pixels;
}

/** The largest picture decoders may produce (see setMaxVideoPixels). */
export function maxVideoPixels(): number {
  return maxPixels;
}

/**
 * Arguments that open one input file under the protocol and demuxer whitelists, with its decoders
 * bounded to pictures of at most `pictureLimit` pixels (default: `maxVideoPixels()`; never above it).
 */
export function inputArgs(path: string, demuxers: readonly string[], forceFormat?: string, pictureLimit?: number): string[] {
  const limit = pictureLimit === undefined ? maxPixels : Math.min(maxPixels, Math.max(1, Math.floor(pictureLimit)));
  return [
    "-max_pixels", String(limit),
    "-protocol_whitelist", PROTOCOL_WHITELIST,
    "-format_whitelist", demuxers.join(","),
    ...(forceFormat === undefined ? [] : ["-f", forceFormat]),
    "-i", safePath(path, "input"),
  ];
}

export interface EncodeOptions {
  /** Target bitrate for lossy formats. Defaults: mp3 128 kbit/s, ogg (Opus) 64 kbit/s. */
  bitrateKbps?: number;
  /** Output sample rate. Opus only accepts 8, 12, 16, 24 or 48 kHz (default 48 kHz). */
  sampleRate?: number;
  /** Output channel count (1 or 2). Default: same as the input. */
  channels?: number;
  /**
   * MP3 only: LAME's algorithm quality, 0 (best, slowest) to 9 (fastest); ffmpeg's `-compression_level`.
   * Default: LAME's own (3).
   */
  quality?: number;
}

/** Codec, muxer and metadata arguments for one audio output format (no output path). */
export function audioEncodeArgs(format: AudioFormat, options: EncodeOptions = {}): string[] {
  const { bitrateKbps, sampleRate, channels, quality } = options;
  if (quality !== undefined && !(Number.isInteger(quality) && quality >= 0 && quality <= 9)) {
    throw new MediaRequestError("The MP3 encoding quality must be a whole number from 0 to 9.");
  }
  if (bitrateKbps !== undefined && !(Number.isInteger(bitrateKbps) && bitrateKbps >= 8 && bitrateKbps <= 512)) {
    throw new MediaRequestError("The audio bitrate must be a whole number of kbit/s between 8 and 512.");
  }
  if (sampleRate !== undefined && !(Number.isInteger(sampleRate) && sampleRate >= 8000 && sampleRate <= 192000)) {
    throw new MediaRequestError("The audio sample rate must be a whole number of Hz between 8000 and 192000.");
  }
  if (channels !== undefined && channels !== 1 && channels !== 2) {
    throw new MediaRequestError("Audio output must have 1 or 2 channels.");
  }
  const shape: string[] = [];
  if (channels !== undefined) shape.push("-ac", String(channels));
  const common = ["-vn", "-sn", "-dn", "-map_metadata", "-1"];
  switch (format) {
    case "mp3":
      if (sampleRate !== undefined) shape.push("-ar", String(sampleRate));
      return [
        ...common,
        "-c:a", "libmp3lame", "-b:a", `${bitrateKbps ?? 128}k`,
        ...(quality === undefined ? [] : ["-compression_level", String(quality)]),
        ...shape, "-f", "mp3",
      ];
    case "wav":
      if (sampleRate !== undefined) shape.push("-ar", String(sampleRate));
      return [...common, "-c:a", "pcm_s16le", ...shape, "-f", "wav"];
    case "flac":
      if (sampleRate !== undefined) shape.push("-ar", String(sampleRate));
      return [...common, "-c:a", "flac", ...shape, "-f", "flac"];
    case "ogg": {
      const rate = sampleRate ?? 48000;
      if (!OPUS_SAMPLE_RATES.has(rate)) {
        throw new MediaRequestError("Ogg (Opus) audio must use a sample rate of 8000, 12000, 16000, 24000 or 48000 Hz.");
      }
      shape.push("-ar", String(rate));
      return [...common, "-c:a", "libopus", "-b:a", `${bitrateKbps ?? 64}k`, ...shape, "-f", "ogg"];
    }
  }
}

function outputArgs(output: string): string[] {
  return ["-y", safePath(output, "output")];
}

export interface ConvertAudioArgs {
  input: string;
  output: string;
  format: AudioFormat;
  encode?: EncodeOptions;
  /** Demuxers allowed for the input. Default: any ordinary media container. */
  inputDemuxers?: readonly string[];
}

/** Convert (or encode) the first audio track of any media file to one audio format. */
export function buildConvertAudioArgs(spec: ConvertAudioArgs): string[] {
  return [
    ...GLOBAL_ARGS,
    ...inputArgs(spec.input, spec.inputDemuxers ?? UNTRUSTED_MEDIA_DEMUXERS),
    "-map", "0:a:0",
    ...audioEncodeArgs(spec.format, spec.encode),
    ...outputArgs(spec.output),
  ];
}

/** Raw PCM as ffmpeg reads it from a pipe. */
export interface PcmFormat {
  /** ffmpeg's raw sample format name. */
  sampleFormat: "u8" | "s16le" | "s24le" | "s32le";
  sampleRate: number;
  channels: number;
}

/** The raw PCM format of integer WAV samples of `bitsPerSample` bits, or undefined for other depths. */
export function pcmFormatForWav(bitsPerSample: number, sampleRate: number, channels: number): PcmFormat | undefined {
  const sampleFormat = ({ 8: "u8", 16: "s16le", 24: "s24le", 32: "s32le" } as const)[bitsPerSample as 8 | 16 | 24 | 32];
  if (sampleFormat === undefined || !(sampleRate >= 1000 && sampleRate <= 384000) || !(channels >= 1 && channels <= 8)) return undefined;
  return { sampleFormat, sampleRate, channels };
}

/** An MP3 stream's output options: frames written unflushed, no Xing frame, no ID3 tag (chunks are joined later). */
const MP3_STREAM_OUTPUT = [
  "-flush_packets", "0",
  "-write_xing", "0",
  "-id3v2_version", "0",
] as const;

/**
 * Encode raw PCM read from standard input into a stream of bare MP3 frames on standard output: no
 * ID3 tag and no Xing frame (the stream is cut into pieces and joined later; the join writes the
 * Info frame for the whole). Only the pipes may be opened.
 *
 * `-flush_packets 0`: on a pipe ffmpeg otherwise writes every packet on its own (one write of ~200
 * bytes per MP3 frame: ~250,000 writes for a 100,000-character book, measured at 1.7 s of the
 * encoder's system CPU plus the reader's cost of as many pieces); unflushed it writes its 32 KiB
 * buffer at a time. The bytes are the same.
 */
export function buildPcmToMp3StreamArgs(spec: { input: PcmFormat; encode?: EncodeOptions }): string[] {
  const { sampleFormat, sampleRate, channels } = spec.input;
  return [
    ...GLOBAL_ARGS,
    "-protocol_whitelist", "pipe",
    "-f", sampleFormat, "-ar", String(sampleRate), "-ac", String(channels),
    "-i", "pipe:0",
    "-map", "0:a:0",
    ...audioEncodeArgs("mp3", spec.encode),
    ...MP3_STREAM_OUTPUT,
    "pipe:1",
  ];
}

/** Bits per sample of a raw PCM format. */
const PCM_BITS: Record<PcmFormat["sampleFormat"], number> = { u8: 8, s16le: 16, s24le: 24, s32le: 32 };

/**
 * The 44-byte header of a WAV stream of `format` whose length is not known yet (RIFF and data sizes
 * 0: ffmpeg's wav demuxer then reads the samples up to the end of the pipe). Written in front of the
 * samples streamed to `buildWavStreamToMp3StreamArgs`.
 */
export function wavStreamHeader(format: PcmFormat): Buffer {
  const bits = PCM_BITS[format.sampleFormat];
  const blockAlign = (format.channels * bits) / 8;
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "ascii");
  header.writeUInt32LE(0, 4);
  header.write("WAVEfmt ", 8, "ascii");
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // integer PCM
  header.writeUInt16LE(format.channels, 22);
  header.writeUInt32LE(format.sampleRate, 24);
  header.writeUInt32LE(format.sampleRate * blockAlign, 28);
  header.writeUInt16LE(blockAlign, 32);
  header.writeUInt16LE(bits, 34);
  header.write("data", 36, "ascii");
  header.writeUInt32LE(0, 40);
  return header;
}

/** Bytes of samples per packet ffmpeg's wav demuxer reads from a WAV stream (its default is 4096). */
export const WAV_STREAM_PACKET_BYTES = 65_536;

/**
 * Like `buildPcmToMp3StreamArgs`, for PCM sent as a WAV stream (`wavStreamHeader`, then the samples)
 * read in packets of WAV_STREAM_PACKET_BYTES: the same samples reach the same encoder (the MP3 bytes
 * are identical), but the encoder process handles 32 times fewer packets than from raw PCM (1,024
 * samples a packet): measured 7.9 s of CPU instead of 8.3 s for the 87 minutes of a 100,000-character
 * book. The last packet, shorter than the others, is reported as "corrupt" on stderr and encoded like
 * the rest. With `output`, the frames go to that file (written 32 KiB at a time) instead of stdout.
 */
export function buildWavStreamToMp3StreamArgs(spec: { encode?: EncodeOptions; output?: string } = {}): string[] {
  return [
    ...GLOBAL_ARGS,
    "-protocol_whitelist", "pipe",
    "-f", "wav", "-max_size", String(WAV_STREAM_PACKET_BYTES),
    "-i", "pipe:0",
    "-map", "0:a:0",
    ...audioEncodeArgs("mp3", spec.encode),
    ...MP3_STREAM_OUTPUT,
    ...(spec.output === undefined ? ["pipe:1"] : outputArgs(spec.output)),
  ];
}

/**
 * Content of a concat-demuxer list file naming `paths` in order. Paths are absolute and quoted
 * (`'` becomes `'\''`), so any file name is taken literally.
 */
export function concatListContent(paths: readonly string[]): string {
  if (paths.length === 0) throw new MediaRequestError("There are no audio chunks to join.");
  const lines = ["ffconcat version 1.0"];
  for (const path of paths) lines.push(`file '${safePath(path, "chunk").replaceAll("'", "'\\''")}'`);
  return `${lines.join("\n")}\n`;
}

export interface ConcatAudioArgs {
  /** A list file written with `concatListContent`. */
  listFile: string;
  output: string;
  format: AudioFormat;
  encode?: EncodeOptions;
  /** Demuxers allowed for the listed files. Default: WAV only. */
  chunkDemuxers?: readonly string[];
}

/**
 * Join many audio files (same codec, rate and channels, e.g. WAV chunks of one voice) into one
 * encoded output. The concat demuxer opens one chunk at a time, so memory does not grow with
 * the number of chunks.
 */
export function buildConcatAudioArgs(spec: ConcatAudioArgs): string[] {
  const demuxers = ["concat", ...(spec.chunkDemuxers ?? WAV_DEMUXERS)];
  return [
    ...GLOBAL_ARGS,
    "-safe", "0",
    ...inputArgs(spec.listFile, demuxers, "concat"),
    "-map", "0:a:0",
    ...audioEncodeArgs(spec.format, spec.encode),
    ...outputArgs(spec.output),
  ];
}

export interface ExtractSpeechWavArgs {
  input: string;
  output: string;
  /** Default 16000 Hz, what speech recognisers expect. */
  sampleRate?: number;
  /**
   * Stop writing after this many seconds of decoded audio (`-t`), whatever the container claims:
   * decoding a file whose real length is beyond a limit costs no more than the limit.
   */
  maxSeconds?: number;
}

/** 16 kHz (by default) mono 16-bit WAV of the first audio track of any media file, for recognition. */
export function buildExtractSpeechWavArgs(spec: ExtractSpeechWavArgs): string[] {
  const max = spec.maxSeconds;
  if (max !== undefined && !(Number.isFinite(max) && max > 0)) throw new MediaRequestError("maxSeconds must be a positive number of seconds.");
  return [
    ...GLOBAL_ARGS,
    ...inputArgs(spec.input, UNTRUSTED_MEDIA_DEMUXERS),
    "-map", "0:a:0",
    ...(max === undefined ? [] : ["-t", String(max)]),
    ...audioEncodeArgs("wav", { channels: 1, sampleRate: spec.sampleRate ?? 16000 }),
    ...outputArgs(spec.output),
  ];
}

/** Decode the first audio track through `volumedetect`; results appear on stderr. */
export function buildVolumeDetectArgs(input: string, demuxers: readonly string[] = UNTRUSTED_MEDIA_DEMUXERS): string[] {
  return [
    ...GLOBAL_ARGS,
    ...inputArgs(input, demuxers),
    "-map", "0:a:0",
    "-af", "volumedetect",
    "-f", "null", "-",
  ];
}

/** Decode every packet of the first audio track, to measure a duration that headers do not state. */
export function buildDecodeDurationArgs(input: string, demuxers: readonly string[] = UNTRUSTED_MEDIA_DEMUXERS): string[] {
  return [...GLOBAL_ARGS, ...inputArgs(input, demuxers), "-map", "0:a:0", "-f", "null", "-"];
}

// ---------------------------------------------------------------------------------------------
// Placing clips on a silent track
// ---------------------------------------------------------------------------------------------

export interface ClipPlacement {
  path: string;
  startSeconds: number;
  /** Length of the clip's audio; the runner measures it when omitted. */
  durationSeconds: number;
  /** Gain applied to this clip, in dB (default 0). */
  gainDb?: number;
}

export interface PlacedClip {
  path: string;
  /** Start relative to the part's first sample. */
  offsetSamples: number;
  lengthSamples: number;
  gainDb: number;
}

/** A contiguous stretch of one lane, rendered by one ffmpeg run. */
export interface TimelinePart {
  startSample: number;
  endSample: number;
  clips: PlacedClip[];
}

export interface TimelinePlan {
  sampleRate: number;
  totalSamples: number;
  /** Clips in one lane never overlap; overlapping clips go to further lanes that are summed. */
  lanes: TimelinePart[][];
  /** Clips that start at or after the end of the track (left out). */
  droppedClips: number;
  /** Clips cut short because they run past the end of the track. */
  truncatedClips: number;
}

export interface PlanTimelineOptions {
  durationSeconds: number;
  sampleRate: number;
  /** Most clips one ffmpeg run opens at once. Default 48. */
  maxClipsPerPass?: number;
}

/** Most lanes (clips audible at the same moment) that can be summed in one pass. */
export const MAX_OVERLAPPING_CLIPS = 64;

/**
 * Plans a track of `durationSeconds` with each clip starting at its time, to the sample.
 * Clips never get scaled against each other (no amix normalisation): non-overlapping clips are
 * concatenated with exact silent gaps, and overlapping clips go to separate lanes that are summed.
 * The cost grows with the number of lanes times the track length, not with the number of clips.
 */
export function planTimeline(clips: readonly ClipPlacement[], options: PlanTimelineOptions): TimelinePlan {
  const { sampleRate, durationSeconds } = options;
  const maxPerPass = options.maxClipsPerPass ?? 48;
  if (!Number.isInteger(sampleRate) || sampleRate < 8000 || sampleRate > 192000) {
    throw new MediaRequestError("The track sample rate must be a whole number of Hz between 8000 and 192000.");
  }
  if (!Number.isFinite(durationSeconds) || durationSeconds <= 0) {
    throw new MediaRequestError("The track duration must be a positive number of seconds.");
  }
  if (!Number.isInteger(maxPerPass) || maxPerPass < 1) throw new MediaRequestError("maxClipsPerPass must be at least 1.");
  const totalSamples = Math.round(durationSeconds * sampleRate);
  let droppedClips = 0;
  let truncatedClips = 0;

  const timed = clips.map((clip, index) => {
    if (!Number.isFinite(clip.startSeconds) || clip.startSeconds < 0) {
      throw new MediaRequestError(`Clip ${index + 1} has an invalid start time; it must be zero or more seconds.`);
    }
    if (!Number.isFinite(clip.durationSeconds) || clip.durationSeconds < 0) {
      throw new MediaRequestError(`Clip ${index + 1} has an invalid duration.`);
    }
    const gainDb = clip.gainDb ?? 0;
    if (!Number.isFinite(gainDb) || Math.abs(gainDb) > 60) {
      throw new MediaRequestError(`Clip ${index + 1} has an invalid gain; it must be between -60 and 60 dB.`);
    }
    const start = Math.round(clip.startSeconds * sampleRate);
    let length = Math.round(clip.durationSeconds * sampleRate);
    if (start + length > totalSamples) {
      if (start < totalSamples) truncatedClips++;
      length = Math.max(0, totalSamples - start);
    }
    return { path: safePath(clip.path, "clip"), start, length, gainDb, index };
  });
  const usable = timed.filter((clip) => {
    if (clip.length > 0) return true;
    if (clip.start >= totalSamples) droppedClips++;
    return false;
  });
  usable.sort((a, b) => a.start - b.start || a.index - b.index);

  const laneClips: (typeof usable)[] = [];
  const laneEnds: number[] = [];
  for (const clip of usable) {
    let lane = laneEnds.findIndex((end) => end <= clip.start);
    if (lane === -1) {
      lane = laneClips.length;
      laneClips.push([]);
      laneEnds.push(0);
    }
    laneClips[lane]?.push(clip);
    laneEnds[lane] = clip.start + clip.length;
  }
  if (laneClips.length > MAX_OVERLAPPING_CLIPS) {
    throw new MediaRequestError(
      `More than ${MAX_OVERLAPPING_CLIPS} clips would play at the same moment; the track cannot be mixed.`,
    );
  }

  const lanes: TimelinePart[][] = laneClips.map((lane) => {
    const parts: TimelinePart[] = [];
    for (let i = 0; i < lane.length; i += maxPerPass) {
      const group = lane.slice(i, i + maxPerPass);
      const next = lane[i + maxPerPass];
      const startSample = parts.length === 0 ? 0 : (parts[parts.length - 1]?.endSample ?? 0);
      const endSample = next === undefined ? totalSamples : next.start;
      parts.push({
        startSample,
        endSample,
        clips: group.map((clip) => ({
          path: clip.path,
          offsetSamples: clip.start - startSample,
          lengthSamples: clip.length,
          gainDb: clip.gainDb,
        })),
      });
    }
    return parts;
  });
  if (lanes.length === 0) lanes.push([{ startSample: 0, endSample: totalSamples, clips: [] }]);
  return { sampleRate, totalSamples, lanes, droppedClips, truncatedClips };
}

export interface TimelinePartArgs {
  part: TimelinePart;
  sampleRate: number;
  output: string;
  format: AudioFormat;
  encode?: EncodeOptions;
  clipDemuxers?: readonly string[];
}

/**
 * One ffmpeg run rendering one lane part: exact silent gaps (`anullsrc` trimmed to the sample)
 * and clips (resampled to mono, padded or cut to their planned length) joined by `concat`.
 */
export function buildTimelinePartArgs(spec: TimelinePartArgs): string[] {
  const { part, sampleRate } = spec;
  const fmt = `aformat=sample_fmts=fltp:sample_rates=${sampleRate}:channel_layouts=mono`;
  const silence = (samples: number, label: string): string =>
    `anullsrc=r=${sampleRate}:cl=mono,${fmt},atrim=end_sample=${samples}[${label}]`;
  const partLength = part.endSample - part.startSample;
  const chains: string[] = [];
  const labels: string[] = [];
  const inputs: string[] = [];
  let cursor = 0;
  part.clips.forEach((clip, i) => {
    if (clip.offsetSamples < cursor) throw new MediaRequestError("Clips of one lane overlap; plan the track with planTimeline.");
    if (clip.offsetSamples > cursor) {
      chains.push(silence(clip.offsetSamples - cursor, `g${i}`));
      labels.push(`[g${i}]`);
    }
    inputs.push(...inputArgs(clip.path, spec.clipDemuxers ?? AUDIO_CLIP_DEMUXERS));
    const gain = clip.gainDb === 0 ? "" : `,volume=${clip.gainDb}dB`;
    chains.push(`[${i}:a:0]aresample=${sampleRate},${fmt},apad,atrim=end_sample=${clip.lengthSamples}${gain}[c${i}]`);
    labels.push(`[c${i}]`);
    cursor = clip.offsetSamples + clip.lengthSamples;
  });
  if (cursor > partLength) throw new MediaRequestError("A clip runs past the end of its part of the track.");
  if (cursor < partLength) {
    chains.push(silence(partLength - cursor, "gend"));
    labels.push("[gend]");
  }
  chains.push(`${labels.join("")}concat=n=${labels.length}:v=0:a=1[out]`);
  return [
    ...GLOBAL_ARGS,
    ...inputs,
    "-filter_complex", chains.join(";"),
    "-map", "[out]",
    ...audioEncodeArgs(spec.format, spec.encode),
    ...outputArgs(spec.output),
  ];
}

export interface MixLanesArgs {
  /** One input per lane: either a WAV file or a concat list file (`concat: true`) of WAV parts. */
  lanes: readonly { path: string; concat: boolean }[];
  output: string;
  format: AudioFormat;
  encode?: EncodeOptions;
}

/** Sum lanes sample by sample (amerge + pan: no normalisation, so each clip keeps its level). */
export function buildMixLanesArgs(spec: MixLanesArgs): string[] {
  const n = spec.lanes.length;
  if (n === 0) throw new MediaRequestError("There is nothing to mix.");
  if (n > MAX_OVERLAPPING_CLIPS) throw new MediaRequestError(`At most ${MAX_OVERLAPPING_CLIPS} lanes can be mixed.`);
  const inputs = spec.lanes.flatMap((lane) =>
    lane.concat ? ["-safe", "0", ...inputArgs(lane.path, ["concat", "wav"], "concat")] : inputArgs(lane.path, WAV_DEMUXERS),
  );
  const graph =
    n === 1
      ? ["-map", "0:a:0"]
      : [
          "-filter_complex",
          `${spec.lanes.map((_, i) => `[${i}:a:0]`).join("")}amerge=inputs=${n},pan=mono|c0=${spec.lanes.map((_, i) => `c${i}`).join("+")}[out]`,
          "-map", "[out]",
        ];
  return [...GLOBAL_ARGS, ...inputs, ...graph, ...audioEncodeArgs(spec.format, spec.encode), ...outputArgs(spec.output)];
}

// ---------------------------------------------------------------------------------------------
// Burning subtitles
// ---------------------------------------------------------------------------------------------

/** Escape a value for one option of one filter inside a filter graph (both escaping levels). */
export function escapeFilterValue(value: string): string {
  const optionLevel = value.replace(/[\\':]/g, (c) => `\\${c}`);
  return optionLevel.replace(/[\\'[\],;]/g, (c) => `\\${c}`);
}

/**
 * ASS overrides applied to every subtitle line (libass `force_style`): the script's play resolution
 * and the style. Sizes and margins are in script pixels, which libass scales to the frame: font size,
 * outline and vertical positions by frame height / `playResY`, horizontal positions and the wrap width
 * by frame width / `playResX`. Without a play resolution an SRT is laid out on ffmpeg's default
 * 384×288 script, so text is sized from the frame's height whatever its shape; see
 * `subtitlePlayResolution` for one that sizes it from the shorter side.
 */
export interface SubtitleStyle {
  /** Script width and height (`PlayResX`/`PlayResY`); give both, in the frame's proportions. */
  playResX?: number;
  playResY?: number;
  /** Font family, e.g. "Noto Sans CJK SC"; see `recommendedSubtitleFont`. */
  fontName?: string;
  fontSize?: number;
  /** ASS colour `&HAABBGGRR`, e.g. `&H00FFFFFF` for opaque white. */
  primaryColour?: string;
  outlineColour?: string;
  outline?: number;
  shadow?: number;
  bold?: boolean;
  /** Vertical margin from the bottom edge, in script pixels. */
  marginV?: number;
  /** Left and right margins, in script pixels: a line wider than the frame less these is wrapped. */
  marginL?: number;
  marginR?: number;
  /** ASS numpad alignment (2 = bottom centre). */
  alignment?: number;
}

const ASS_COLOUR = /^&H[0-9A-Fa-f]{6,8}&?$/;

export function forceStyleString(style: SubtitleStyle): string {
  const fields: string[] = [];
  const num = (name: string, value: number | undefined, min: number, max: number): void => {
    if (value === undefined) return;
    if (!Number.isFinite(value) || value < min || value > max) {
      throw new MediaRequestError(`The subtitle ${name} must be a number between ${min} and ${max}.`);
    }
    fields.push(`${name}=${value}`);
  };
  if ((style.playResX === undefined) !== (style.playResY === undefined)) {
    throw new MediaRequestError("The subtitle play resolution needs both a width and a height.");
  }
  for (const [name, value] of [["PlayResX", style.playResX], ["PlayResY", style.playResY]] as const) {
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < 1 || value > MAX_PLAY_RES) {
      throw new MediaRequestError(`The subtitle ${name} must be a whole number between 1 and ${MAX_PLAY_RES}.`);
    }
    fields.push(`${name}=${value}`);
  }
  if (style.fontName !== undefined) {
    if (!/^[\p{L}\p{N} _-]{1,100}$/u.test(style.fontName)) {
      throw new MediaRequestError("The subtitle font name may only contain letters, digits, spaces, '-' and '_'.");
    }
    fields.push(`FontName=${style.fontName}`);
  }
  num("FontSize", style.fontSize, 4, 400);
  for (const [name, value] of [["PrimaryColour", style.primaryColour], ["OutlineColour", style.outlineColour]] as const) {
    if (value === undefined) continue;
    if (!ASS_COLOUR.test(value)) throw new MediaRequestError(`The subtitle ${name} must look like &H00FFFFFF.`);
    fields.push(`${name}=${value}`);
  }
  num("Outline", style.outline, 0, 20);
  num("Shadow", style.shadow, 0, 20);
  if (style.bold !== undefined) fields.push(`Bold=${style.bold ? -1 : 0}`);
  num("MarginV", style.marginV, 0, 2000);
  num("MarginL", style.marginL, 0, 2000);
  num("MarginR", style.marginR, 0, 2000);
  num("Alignment", style.alignment, 1, 9);
  return fields.join(",");
}

/** Largest script side `forceStyleString` accepts. */
const MAX_PLAY_RES = 1_000_000;

/** The shorter side of the script `subtitlePlayResolution` lays subtitles out on (ffmpeg's default script is 384×288). */
export const SUBTITLE_SCRIPT_SHORT_SIDE = 288;

/**
 * A libass play resolution in the frame's proportions whose shorter side is `shortSide` script
 * pixels: text, outline and margins are then sized from the frame's shorter side (a 720×1280 portrait
 * frame draws the same pixel sizes as a 1280×720 one), and the script is as wide as the frame, so the
 * wrap width is the frame's. A landscape frame gets `shortSide` as its height, as with ffmpeg's
 * default 384×288 script (same font size and vertical positions). Odd sizes round to the nearest
 * whole script pixel (a 721×1279 frame: 288×511).
 */
export function subtitlePlayResolution(width: number, height: number, shortSide: number = SUBTITLE_SCRIPT_SHORT_SIDE): { playResX: number; playResY: number } {
  for (const [what, value] of [["frame's width", width], ["frame's height", height], ["script's shorter side", shortSide]] as const) {
    if (!Number.isInteger(value) || value < 1) throw new MediaRequestError(`The subtitle ${what} must be a whole number of pixels, at least 1.`);
  }
  const short = Math.min(width, height);
  const scale = (side: number) => Math.min(MAX_PLAY_RES, Math.max(1, Math.round((side * shortSide) / short)));
  return { playResX: scale(width), playResY: scale(height) };
}

/**
 * Font families that cover each language's script once the Noto fonts are installed
 * (`fonts-noto-core fonts-noto-cjk`). With only DejaVu, CJK, Devanagari and Ethiopic show as boxes.
 */
export const RECOMMENDED_SUBTITLE_FONTS: Readonly<Record<string, string>> = {
  Chinese: "Noto Sans CJK SC",
  Japanese: "Noto Sans CJK JP",
  Korean: "Noto Sans CJK KR",
  Hindi: "Noto Sans Devanagari",
  Amharic: "Noto Sans Ethiopic",
  Arabic: "Noto Naskh Arabic",
  Urdu: "Noto Nastaliq Urdu",
};

/** Font family for a language name (one of the service's language names), "Noto Sans" otherwise. */
export function recommendedSubtitleFont(language: string): string {
  return RECOMMENDED_SUBTITLE_FONTS[language] ?? "Noto Sans";
}
