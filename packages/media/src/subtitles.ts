/**
 * Pure builders and checks for subtitle work on untrusted videos: the container check on a probe
 * result, a length-capped speech extraction, burning subtitles into the picture with the audio copied,
 * and adding a soft subtitle track without re-encoding anything.
 */
import { escapeFilterValue, EVEN_FRAME, forceStyleString, GLOBAL_ARGS, inputArgs, safePath, UNTRUSTED_MEDIA_DEMUXERS, type SubtitleStyle } from "./args.ts";
import { MediaProbeError, MediaRequestError } from "./errors.ts";
import type { MediaInfo } from "./probe.ts";

/**
 * Demuxers that read other files or URLs named inside the input (playlists, concat lists, image
 * sequences, …). Never allowed for untrusted input, even when a caller's whitelist lists them.
 */
export const REFERENCING_DEMUXERS: readonly string[] = [
  "hls", "applehttp", "dash", "concat", "ffconcat", "image2", "image2pipe", "mpl2", "tee", "data",
  "lavfi", "sdp", "rtsp", "rtp", "imf", "webm_dash_manifest", "ffmetadata",
];

/** Subtitle demuxers for the subtitle files this service writes itself. */
export const SUBTITLE_FILE_DEMUXERS: readonly string[] = ["srt", "webvtt"];

/**
 * Refuses a probe result whose container is not one ordinary local media file: every alias in
 * ffprobe's `format_name` (e.g. "mov,mp4,m4a,3gp,3g2,mj2") is checked, one listed alias is needed and
 * a referencing demuxer (playlist, concat list, …) fails it outright.
 */
export function assertSingleMediaFile(info: Pick<MediaInfo, "format">, allowed: readonly string[] = UNTRUSTED_MEDIA_DEMUXERS): void {
  const aliases = info.format.split(",").map((name) => name.trim().toLowerCase()).filter(Boolean);
  if (aliases.some((alias) => REFERENCING_DEMUXERS.includes(alias))) {
    throw new MediaProbeError("MEDIA_FORMAT_NOT_ALLOWED", "The file is a playlist or a list of other files, which is not accepted: send one media file.");
  }
  if (!aliases.some((alias) => allowed.includes(alias))) {
    throw new MediaProbeError("MEDIA_FORMAT_NOT_ALLOWED", "The file is not in a supported audio or video format.");
  }
}

export interface CappedSpeechWavArgs {
  input: string;
  output: string;
  /** Decode at most this many seconds (the caller refuses the file when the WAV reaches it). */
  maxSeconds: number;
  /** Default 16000 Hz. */
  sampleRate?: number;
  /** Largest picture the video's decoders may produce (default and ceiling: `maxVideoPixels()`). */
  maxPixels?: number;
}

/**
 * 16 kHz mono 16-bit WAV of the first audio track, decoding at most `maxSeconds`: its length is the
 * decoded length of the sound (headers are not trusted) and a long file costs no more than the limit.
 */
export function buildCappedSpeechWavArgs(spec: CappedSpeechWavArgs): string[] {
  if (!Number.isFinite(spec.maxSeconds) || spec.maxSeconds <= 0) throw new MediaRequestError("The length limit must be a positive number of seconds.");
  const rate = spec.sampleRate ?? 16000;
  if (!Number.isInteger(rate) || rate < 8000 || rate > 48000) throw new MediaRequestError("The sample rate must be between 8000 and 48000 Hz.");
  return [
    ...GLOBAL_ARGS,
    ...inputArgs(spec.input, UNTRUSTED_MEDIA_DEMUXERS, undefined, spec.maxPixels),
    "-map", "0:a:0",
    "-t", seconds(spec.maxSeconds),
    "-vn", "-sn", "-dn", "-map_metadata", "-1",
    "-c:a", "pcm_s16le", "-ac", "1", "-ar", String(rate),
    "-f", "wav",
    "-y", safePath(spec.output, "output"),
  ];
}

/** Audio codecs the MP4 muxer carries as they are (copied, not re-encoded). */
export const MP4_COPYABLE_AUDIO_CODECS: readonly string[] = ["aac", "mp3", "opus", "ac3", "eac3", "alac", "flac", "mp2"];

/** Video codecs the MP4 muxer carries as they are (a soft subtitle track needs no re-encoding). */
export const MP4_COPYABLE_VIDEO_CODECS: readonly string[] = ["h264", "hevc", "mpeg4", "mpeg2video", "mpeg1video", "vp9", "av1", "mjpeg"];

/** "mp4" when the audio (if any) can be copied into MP4 as it is, otherwise "matroska". */
export function videoContainerFor(audioCodec: string | undefined): "mp4" | "matroska" {
  return audioCodec === undefined || MP4_COPYABLE_AUDIO_CODECS.includes(audioCodec) ? "mp4" : "matroska";
}

/** File extension of a container chosen by `videoContainerFor`. */
export function videoExtension(container: "mp4" | "matroska"): "mp4" | "mkv" {
  return container === "mp4" ? "mp4" : "mkv";
}

export interface BurnInArgs {
  video: string;
  /** An SRT or ASS file written by us. */
  subtitles: string;
  output: string;
  /** Output muxer; see `videoContainerFor`. Default "mp4". */
  container?: "mp4" | "matroska";
  /** Extra font directory for libass (system fonts through fontconfig are always used). */
  fontsDir?: string;
  style?: SubtitleStyle;
  /** Output length cap in seconds (the task's limit). */
  maxSeconds?: number;
  crf?: number;
  preset?: "ultrafast" | "superfast" | "veryfast" | "faster" | "fast" | "medium";
  /** Largest picture the video's decoder may produce (default and ceiling: `maxVideoPixels()`). */
  maxPixels?: number;
}

/**
 * Draws the subtitles into the picture with libass (H.264) and copies the first audio track unchanged.
 * The subtitle path, fonts directory and style are escaped for the filter graph.
 */
export function buildBurnInArgs(spec: BurnInArgs): string[] {
  const crf = spec.crf ?? 20;
  if (!Number.isInteger(crf) || crf < 0 || crf > 51) throw new MediaRequestError("The video quality (CRF) must be between 0 and 51.");
  const options = [`filename=${escapeFilterValue(safePath(spec.subtitles, "subtitles"))}`];
  if (spec.fontsDir !== undefined) options.push(`fontsdir=${escapeFilterValue(safePath(spec.fontsDir, "fonts directory"))}`);
  if (spec.style !== undefined) {
    const forced = forceStyleString(spec.style);
    if (forced !== "") options.push(`force_style=${escapeFilterValue(forced)}`);
  }
  const container = spec.container ?? "mp4";
  return [
    ...GLOBAL_ARGS,
    ...inputArgs(spec.video, UNTRUSTED_MEDIA_DEMUXERS, undefined, spec.maxPixels),
    "-map", "0:v:0",
    "-map", "0:a:0?",
    ...(spec.maxSeconds === undefined ? [] : ["-t", seconds(spec.maxSeconds)]),
    "-vf", `${EVEN_FRAME},subtitles=${options.join(":")}`,
    "-c:v", "libx264", "-preset", spec.preset ?? "veryfast", "-crf", String(crf), "-pix_fmt", "yuv420p",
    "-c:a", "copy",
    "-sn", "-dn", "-map_metadata", "-1", "-map_chapters", "-1",
    ...(container === "mp4" ? ["-movflags", "+faststart"] : []),
    "-f", container,
    "-y", safePath(spec.output, "output"),
  ];
}

export interface SoftSubtitleTrackArgs {
  video: string;
  /** An SRT or WebVTT file written by us. */
  subtitles: string;
  output: string;
  /** ISO 639-2 code of the subtitles' language, e.g. "eng", "spa", "urd". */
  language: string;
  /** Track title shown by players, e.g. "English". */
  title?: string;
  /** Output length cap in seconds. */
  maxSeconds?: number;
  /** Encode the audio to AAC instead of copying it (for codecs MP4 cannot carry; see `videoContainerFor`). */
  encodeAudio?: boolean;
  /** Largest picture the video's decoder may produce while ffmpeg inspects it (default and ceiling: `maxVideoPixels()`). */
  maxPixels?: number;
}

/**
 * An MP4 with the video's picture and first audio track copied (no re-encoding) and the subtitles
 * added as a `mov_text` track tagged with its language.
 */
export function buildSoftSubtitleTrackArgs(spec: SoftSubtitleTrackArgs): string[] {
  if (!/^[a-z]{3}$/.test(spec.language)) throw new MediaRequestError("The subtitle language must be a three-letter ISO 639-2 code.");
  if (spec.title !== undefined && !/^[\p{L}\p{N} ()_-]{1,60}$/u.test(spec.title)) {
    throw new MediaRequestError("The subtitle track title may only contain letters, digits, spaces and ()_-.");
  }
  return [
    ...GLOBAL_ARGS,
    ...inputArgs(spec.video, UNTRUSTED_MEDIA_DEMUXERS, undefined, spec.maxPixels),
    ...inputArgs(spec.subtitles, SUBTITLE_FILE_DEMUXERS),
    "-map", "0:v:0",
    "-map", "0:a:0?",
    "-map", "1:s:0",
    ...(spec.maxSeconds === undefined ? [] : ["-t", seconds(spec.maxSeconds)]),
    "-c:v", "copy",
    ...(spec.encodeAudio === true ? ["-c:a", "aac", "-b:a", "160k"] : ["-c:a", "copy"]),
    "-c:s", "mov_text",
    "-metadata:s:s:0", `language=${spec.language}`,
    ...(spec.title === undefined ? [] : ["-metadata:s:s:0", `title=${spec.title}`]),
    "-disposition:s:0", "default",
    "-dn", "-map_metadata", "-1", "-map_chapters", "-1",
    "-movflags", "+faststart",
    "-f", "mp4",
    "-y", safePath(spec.output, "output"),
  ];
}

function seconds(value: number): string {
  return value.toFixed(3);
}
