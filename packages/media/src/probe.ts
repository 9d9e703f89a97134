import type { Logger } from "@voiceloc/log";
import { buildDecodeDurationArgs, inputArgs, UNTRUSTED_MEDIA_DEMUXERS } from "./args.ts";
import { MediaError, MediaProbeError } from "./errors.ts";
import { runProcess, type ProcessResult } from "./process.ts";
import { ffmpegResultError, pictureOverLimit, pictureOverLimitReason, runFfmpeg } from "./run.ts";

export interface AudioStreamInfo {
  codec: string;
  sampleRate: number;
  channels: number;
}

export interface VideoStreamInfo {
  codec: string;
  /**
   * The stored picture's size as the headers state it, 0 when unknown (a decoder that refused a
   * picture over the pixel limit leaves it unknown). Headers lie: the decoded size is
   * `MediaToolkit.firstFrame`'s; see `uprightFrameSize` for the frames filters and players see.
   */
  width: number;
  height: number;
  /**
   * The quarter turn the file asks players to show the picture at: the display matrix's angle as
   * ffprobe states it (or an old `rotate` tag's), in degrees, 90, 180 or 270; absent when upright.
   * Phones store portrait video this way. Only whether the sides swap is used here.
   */
  rotation?: 90 | 180 | 270;
}

/**
 * The size of the decoded frames after ffmpeg turns them upright (it applies the display rotation
 * before any filter, unless told not to): width and height swapped for a quarter turn.
 */
export function uprightFrameSize(video: Pick<VideoStreamInfo, "width" | "height" | "rotation">): { width: number; height: number } {
  return video.rotation === 90 || video.rotation === 270 ? { width: video.height, height: video.width } : { width: video.width, height: video.height };
}

export interface MediaInfo {
  /**
   * The length the container states (or, when it states none, the decoded length). Containers can lie:
   * never size work or outputs of untrusted media from it; measure with `MediaToolkit.decodeAudio`.
   */
  durationSeconds: number;
  /** ffprobe's format name, e.g. "wav", "mp3", "ogg", "mov,mp4,m4a,3gp,3g2,mj2". */
  format: string;
  audio?: AudioStreamInfo;
  video?: VideoStreamInfo;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** ffprobe writes numbers both as JSON numbers and as strings ("44100", "12.345000", "N/A"). */
function num(value: unknown): number | undefined {
  const n = typeof value === "number" ? value : typeof value === "string" && value.trim() !== "" ? Number(value) : Number.NaN;
  return Number.isFinite(n) ? n : undefined;
}

/**
 * The display rotation of a video stream (the display matrix's, else an old `rotate` tag) as 90, 180
 * or 270 degrees; undefined when upright or not within a degree of a quarter turn (ffmpeg then keeps
 * the frame's size).
 */
function rotationOf(stream: Json): 90 | 180 | 270 | undefined {
  const sideData = Array.isArray(stream.side_data_list) ? stream.side_data_list.filter(isObject) : [];
  const matrix = sideData.find((d) => d.side_data_type === "Display Matrix");
  const tags = isObject(stream.tags) ? stream.tags : {};
  const degrees = num(matrix?.rotation) ?? num(tags.rotate);
  if (degrees === undefined) return undefined;
  const turned = ((degrees % 360) + 360) % 360;
  const quarter = Math.round(turned / 90) * 90;
  if (Math.abs(turned - quarter) > 1) return undefined;
  return quarter === 90 || quarter === 180 || quarter === 270 ? quarter : undefined;
}

function positiveInt(value: unknown): number | undefined {
  const n = num(value);
  return n !== undefined && Number.isInteger(n) && n > 0 ? n : undefined;
}

/**
 * Reads `ffprobe -print_format json -show_format -show_streams` output without trusting its shape.
 * `durationSeconds` is undefined when neither the container nor a stream states it.
 */
export function parseProbeJson(json: unknown): Omit<MediaInfo, "durationSeconds"> & { durationSeconds: number | undefined } {
  if (!isObject(json)) throw new MediaProbeError("PROBE_FAILED", "The media file could not be inspected: ffprobe gave no description of it.");
  const format = isObject(json.format) ? json.format : {};
  const streams = Array.isArray(json.streams) ? json.streams.filter(isObject) : [];
  const info: Omit<MediaInfo, "durationSeconds"> & { durationSeconds: number | undefined } = {
    durationSeconds: undefined,
    format: str(format.format_name) ?? "unknown",
  };
  let duration = num(format.duration);
  for (const stream of streams) {
    const type = str(stream.codec_type);
    const disposition = isObject(stream.disposition) ? stream.disposition : {};
    if (type === "audio" && info.audio === undefined) {
      const sampleRate = positiveInt(stream.sample_rate);
      const channels = positiveInt(stream.channels);
      if (sampleRate !== undefined && channels !== undefined) {
        info.audio = { codec: str(stream.codec_name) ?? "unknown", sampleRate, channels };
        if (duration === undefined) duration = num(stream.duration);
      }
    } else if (type === "video" && info.video === undefined && num(disposition.attached_pic) !== 1) {
      // 0×0 when the size is unknown: not stated, or its decoder refused a picture over `-max_pixels`.
      info.video = { codec: str(stream.codec_name) ?? "unknown", width: positiveInt(stream.width) ?? 0, height: positiveInt(stream.height) ?? 0 };
      const rotation = rotationOf(stream);
      if (rotation !== undefined) info.video.rotation = rotation;
      if (duration === undefined) duration = num(stream.duration);
    }
  }
  if (duration !== undefined && duration >= 0) info.durationSeconds = duration;
  return info;
}

/** ffprobe's JSON answer, read; `subject` names what was inspected ("The media file") if it is not JSON. */
function ffprobeJson(result: ProcessResult, subject: string): unknown {
  try {
    return JSON.parse(result.stdout.toString("utf8"));
  } catch (cause) {
    throw new MediaProbeError("PROBE_FAILED", `${subject} could not be inspected: ffprobe's answer was not readable.`, { cause });
  }
}

export interface ProbeOptions {
  ffprobePath: string;
  /** Used to measure the duration by decoding when the file's headers do not state it. */
  ffmpegPath?: string | undefined;
  signal?: AbortSignal | undefined;
  logger?: Logger | undefined;
  /** Demuxers allowed for this file. Default: ordinary audio and video containers. */
  demuxers?: readonly string[] | undefined;
}

/** Describes a media file. Refuses files whose container is not an ordinary audio/video format. */
export async function probe(path: string, options: ProbeOptions): Promise<MediaInfo> {
  const demuxers = options.demuxers ?? UNTRUSTED_MEDIA_DEMUXERS;
  const args = ["-v", "error", "-hide_banner", "-print_format", "json", "-show_format", "-show_streams", ...inputArgs(path, demuxers)];
  const result = await runProcess(options.ffprobePath, args, { signal: options.signal, collectStdout: true, maxStdoutBytes: 8 * 1024 * 1024 });
  const error = ffmpegResultError("ffprobe", options.ffprobePath, result, "Inspecting the media file", args);
  if (error) throw error;
  const parsed = parseProbeJson(ffprobeJson(result, "The media file"));
  if (parsed.audio === undefined && parsed.video === undefined) {
    throw new MediaProbeError("MEDIA_UNREADABLE", "The file contains neither audio nor video that could be read.");
  }
  let durationSeconds = parsed.durationSeconds;
  if (durationSeconds === undefined && parsed.audio !== undefined && options.ffmpegPath !== undefined) {
    options.logger?.debug({ path }, "duration not in headers; decoding to measure it");
    let measured = 0;
    await runFfmpeg(buildDecodeDurationArgs(path, demuxers), {
      ffmpegPath: options.ffmpegPath,
      signal: options.signal,
      what: "Measuring the media duration",
      onProgress: (p) => {
        measured = Math.max(measured, p.outTimeSeconds);
      },
    });
    durationSeconds = measured;
  }
  if (durationSeconds === undefined) {
    throw new MediaProbeError("PROBE_FAILED", "The length of the media file could not be determined.");
  }
  const info: MediaInfo = { durationSeconds, format: parsed.format };
  if (parsed.audio) info.audio = parsed.audio;
  if (parsed.video) info.video = parsed.video;
  return info;
}

/** The first picture of a video as decoded (not as its headers state it). */
export interface DecodedFrameSize {
  width: number;
  height: number;
}

export interface FirstFrameOptions {
  ffprobePath: string;
  /** Largest picture accepted, in pixels (width × height); the decoder refuses a bigger one before allocating it. */
  maxPixels: number;
  signal?: AbortSignal | undefined;
  /** Stop after this long (default 60 s): one frame's decoding never needs more. */
  timeoutMs?: number | undefined;
  demuxers?: readonly string[] | undefined;
  /**
   * The demuxer to read the file with, not probed (`-f`): a single picture named `.jpg` is otherwise
   * probed as `image2` (the file-pattern demuxer, refused) instead of `jpeg_pipe`.
   */
  forceFormat?: string | undefined;
}

/**
 * Decodes the first picture of the first video stream with its decoder bounded to `maxPixels` and
 * answers its decoded size. Headers can state 640×480 for frames of 16000×16000: the decoder reads the
 * size from the picture itself and refuses it before allocating it. Fails with `MEDIA_TOO_LARGE`
 * (naming both sizes) for a bigger picture and `MEDIA_UNREADABLE` when no picture can be decoded
 * (a file without a video stream included).
 */
export async function decodeFirstFrame(path: string, options: FirstFrameOptions): Promise<DecodedFrameSize> {
  const demuxers = options.demuxers ?? UNTRUSTED_MEDIA_DEMUXERS;
  const args = [
    "-v", "error", "-hide_banner",
    "-select_streams", "v:0", "-read_intervals", "%+#1", "-show_entries", "frame=width,height", "-print_format", "json",
    ...inputArgs(path, demuxers, options.forceFormat, options.maxPixels),
  ];
  const result = await runProcess(options.ffprobePath, args, {
    signal: options.signal,
    collectStdout: true,
    maxStdoutBytes: 1024 * 1024,
    timeoutMs: options.timeoutMs ?? 60_000,
  });
  // ffprobe exits 0 or 1 after a refused picture, depending on the decoder: the refusal is the answer either way.
  const refused = pictureOverLimit(result.stderrTail);
  if (refused && !result.aborted && !result.timedOut) {
    throw new MediaError("MEDIA_TOO_LARGE", `${pictureOverLimitReason(refused, "The video's")}.`);
  }
  const error = ffmpegResultError("ffprobe", options.ffprobePath, result, "Decoding the first picture", args);
  if (error) throw error;
  const json = ffprobeJson(result, "The video");
  const frames = isObject(json) && Array.isArray(json.frames) ? json.frames.filter(isObject) : [];
  const first = frames[0];
  const width = positiveInt(first?.width);
  const height = positiveInt(first?.height);
  if (width === undefined || height === undefined) {
    throw new MediaProbeError("MEDIA_UNREADABLE", "The video's first picture could not be decoded.");
  }
  return { width, height };
}
