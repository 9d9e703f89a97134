/**
 * The output stage of dubbing: the new speech track (our own WAV, lines placed at their times) mixed
 * with the input's own sound and muxed with its picture, in ONE ffmpeg run over the input.
 *
 * - Video in → video out: the picture is copied (`-c:v copy`, never decoded or re-encoded); the dubbed
 *   audio is the first, default audio track, tagged with the target language; the input's own audio is
 *   kept as the second track, tagged with the source language (copied when the container carries its
 *   codec, otherwise AAC).
 * - `duck`: the input's sound stays under the new speech, at full level between lines and lowered by
 *   `depthDb` while a line plays, with a ramp before each line (attack) and after it (release). The
 *   gain is volume automation from the known line times rather than a sidechain compressor keyed by
 *   the speech: the depth is exactly the one asked for whatever the voice's loudness, the bed does not
 *   pump back up in the pauses between words, and the lines' times are known exactly anyway.
 */
import { GLOBAL_ARGS, inputArgs, safePath, UNTRUSTED_MEDIA_DEMUXERS, WAV_DEMUXERS } from "./args.ts";
import { MediaRequestError } from "./errors.ts";
import { MP4_COPYABLE_AUDIO_CODECS, MP4_COPYABLE_VIDEO_CODECS } from "./subtitles.ts";

export type DubContainer = "mp4" | "matroska";

/** One stretch of new speech on the track, in seconds from its start. */
export interface DuckInterval {
  start: number;
  end: number;
}

export interface DuckShape {
  /** How far the original sound is lowered while new speech plays, in dB (default 18). */
  depthDb?: number;
  /** Ramp down before each line, seconds (default 0.15). */
  attackSeconds?: number;
  /** Ramp back up after each line, seconds (default 0.35). */
  releaseSeconds?: number;
}

export const DEFAULT_DUCK_DEPTH_DB = 18;
const DEFAULT_ATTACK_SECONDS = 0.15;
const DEFAULT_RELEASE_SECONDS = 0.35;
/** Sample rate of every dubbed track. */
export const DUB_SAMPLE_RATE = 48_000;

/**
 * The container of a dubbed video, from ffprobe's format name and the video codec: MP4 for MP4/MOV
 * input whose picture MP4 can carry as it is, Matroska otherwise (MKV, WebM and any other container:
 * Matroska carries every codec, so the picture is always copied).
 */
export function dubContainerFor(format: string, videoCodec: string): DubContainer {
  const names = format.split(",");
  const movFamily = names.includes("mov") || names.includes("mp4");
  return movFamily && MP4_COPYABLE_VIDEO_CODECS.includes(videoCodec) ? "mp4" : "matroska";
}

/** Whether the input's own audio must be re-encoded to go into `container` (MP4 carries a fixed set of codecs; Matroska all). */
export function originalAudioNeedsEncoding(container: DubContainer, audioCodec: string): boolean {
  return container === "mp4" && !MP4_COPYABLE_AUDIO_CODECS.includes(audioCodec);
}

function fixed(value: number): string {
  return (Math.round(value * 1000) / 1000).toFixed(3);
}

/**
 * Line times merged where their ramps would meet (a gap shorter than attack + release stays ducked),
 * sorted; invalid or empty stretches dropped.
 */
export function mergeDuckIntervals(intervals: readonly DuckInterval[], shape: DuckShape = {}): DuckInterval[] {
  const attack = shape.attackSeconds ?? DEFAULT_ATTACK_SECONDS;
  const release = shape.releaseSeconds ?? DEFAULT_RELEASE_SECONDS;
  const sorted = intervals
    .filter((i) => Number.isFinite(i.start) && Number.isFinite(i.end) && i.end > i.start)
    .map((i) => ({ start: Math.max(0, i.start), end: i.end }))
    .sort((a, b) => a.start - b.start);
  const merged: DuckInterval[] = [];
  for (const interval of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && interval.start - last.end < attack + release) {
      last.end = Math.max(last.end, interval.end);
    } else {
      merged.push({ ...interval });
    }
  }
  return merged;
}

/**
 * The `volume` filter's gain expression (of `t`, seconds) that ducks the sound by `depthDb` during
 * each interval: the duck amount rises linearly over `attack` before a line, holds through it and
 * falls over `release` after it; the gain follows it in dB, so the fades sound even. Intervals are
 * merged first so the terms never overlap and their sum is the duck amount (0–1).
 */
export function duckVolumeExpression(intervals: readonly DuckInterval[], shape: DuckShape = {}): string {
  const depth = shape.depthDb ?? DEFAULT_DUCK_DEPTH_DB;
  const attack = shape.attackSeconds ?? DEFAULT_ATTACK_SECONDS;
  const release = shape.releaseSeconds ?? DEFAULT_RELEASE_SECONDS;
  if (!(depth > 0 && depth <= 60)) throw new MediaRequestError("The duck depth must be between 0 and 60 dB.");
  if (!(attack > 0 && attack <= 5 && release > 0 && release <= 5)) throw new MediaRequestError("The duck attack and release must be between 0 and 5 seconds.");
  const merged = mergeDuckIntervals(intervals, shape);
  if (merged.length === 0) return "1";
  const terms = merged.map(
    (i) => `clip(min((t-${fixed(i.start - attack)})/${fixed(attack)},(${fixed(i.end + release)}-t)/${fixed(release)}),0,1)`,
  );
  return `pow(10,-${fixed(depth / 20)}*(${terms.join("+")}))`;
}

export interface DubArgs {
  /** The user's media (untrusted): its picture and its own sound. */
  original: string;
  /** The new speech track, mono WAV written by us, as long as the result should be. */
  speech: string;
  output: string;
  /** Length of the dubbed track, in seconds (the decoded length of the input's sound). */
  durationSeconds: number;
  /** `drop`: the dubbed track is the new speech alone; `duck`: the original sound stays under it. */
  mode: "drop" | "duck";
  /** The new speech's stretches (for `duck`). */
  lines?: readonly DuckInterval[];
  duck?: DuckShape;
  /** The input has an audio stream (ducked under the speech, and kept as the second track of a video). */
  originalHasAudio: boolean;
  /** Channels of the dubbed track: 1, or 2 to keep a stereo original's image under the speech. */
  channels: 1 | 2;
  /** Decoders of the original bounded to this many pixels (`-max_pixels`). */
  maxPixels?: number;
}

export interface DubVideoArgs extends DubArgs {
  container: DubContainer;
  /** ISO 639-2 tags of the dubbed track (target) and of the original one (source). */
  targetLanguage: string;
  sourceLanguage: string;
  /** Re-encode the original audio (see `originalAudioNeedsEncoding`): AAC. */
  encodeOriginalAudio: boolean;
  /** Longest output written, in seconds (bounds what a lying file can make us copy). */
  maxSeconds: number;
}

/** The filter graph that makes `[dub]` from input 0 (the original) and input 1 (the speech). */
function dubGraph(spec: DubArgs): string {
  if (!(spec.durationSeconds > 0) || !Number.isFinite(spec.durationSeconds)) throw new MediaRequestError("The dubbed track must have a positive length.");
  const layout = spec.channels === 2 ? "stereo" : "mono";
  const shape = `aformat=sample_fmts=fltp:sample_rates=${DUB_SAMPLE_RATE}:channel_layouts=${layout}`;
  const end = fixed(spec.durationSeconds);
  const speech = `[1:a:0]aresample=${DUB_SAMPLE_RATE},${shape},asetpts=PTS-STARTPTS,apad,atrim=end=${end}`;
  if (spec.mode === "drop" || !spec.originalHasAudio) return `${speech}[dub]`;
  const gain = duckVolumeExpression(spec.lines ?? [], spec.duck);
  // 480-sample frames (10 ms) so the gain, evaluated per frame, moves in small steps through a ramp.
  const bed = `[0:a:0]aresample=${DUB_SAMPLE_RATE},${shape},asetpts=PTS-STARTPTS,apad,atrim=end=${end},asetnsamples=n=480:p=0,volume='${gain}':eval=frame`;
  return `${bed}[bed];${speech}[speech];[bed][speech]amix=inputs=2:duration=first:dropout_transition=0:normalize=0[dub]`;
}

function tag(code: string, what: string): string {
  if (!/^[a-z]{3}$/.test(code)) throw new MediaRequestError(`The ${what} language must be a three-letter ISO 639-2 code.`);
  return code;
}

/**
 * One ffmpeg run: the picture of `original` copied, the dubbed audio (first, default, `targetLanguage`)
 * and the original audio (second, `sourceLanguage`), in `container`. The dubbed track is AAC in MP4 and
 * Opus in Matroska.
 */
export function buildDubbedVideoArgs(spec: DubVideoArgs): string[] {
  const target = tag(spec.targetLanguage, "target");
  const source = tag(spec.sourceLanguage, "source");
  const mp4 = spec.container === "mp4";
  const keepOriginal = spec.originalHasAudio;
  return [
    ...GLOBAL_ARGS,
    ...inputArgs(spec.original, UNTRUSTED_MEDIA_DEMUXERS, undefined, spec.maxPixels),
    ...inputArgs(spec.speech, WAV_DEMUXERS),
    "-filter_complex", dubGraph(spec),
    // `V`: a video stream that is not an attached picture (cover art).
    "-map", "0:V:0",
    "-map", "[dub]",
    ...(keepOriginal ? ["-map", "0:a:0"] : []),
    "-t", fixed(spec.maxSeconds),
    "-c:v", "copy",
    ...(mp4 ? ["-c:a:0", "aac", "-b:a:0", spec.channels === 2 ? "160k" : "128k"] : ["-c:a:0", "libopus", "-b:a:0", spec.channels === 2 ? "128k" : "96k"]),
    ...(keepOriginal ? (spec.encodeOriginalAudio ? ["-c:a:1", "aac", "-b:a:1", "160k"] : ["-c:a:1", "copy"]) : []),
    "-metadata:s:a:0", `language=${target}`,
    "-disposition:a:0", "default",
    ...(keepOriginal ? ["-metadata:s:a:1", `language=${source}`, "-disposition:a:1", "0"] : []),
    "-sn", "-dn", "-map_metadata", "-1", "-map_chapters", "-1",
    ...(mp4 ? ["-movflags", "+faststart", "-f", "mp4"] : ["-f", "matroska"]),
    "-y", safePath(spec.output, "output"),
  ];
}

/** One ffmpeg run: the dubbed audio alone (audio in → audio out), MP3. */
export function buildDubbedAudioArgs(spec: DubArgs & { bitrateKbps?: number }): string[] {
  return [
    ...GLOBAL_ARGS,
    ...inputArgs(spec.original, UNTRUSTED_MEDIA_DEMUXERS, undefined, spec.maxPixels),
    ...inputArgs(spec.speech, WAV_DEMUXERS),
    "-filter_complex", dubGraph(spec),
    "-map", "[dub]",
    "-c:a", "libmp3lame", "-b:a", `${spec.bitrateKbps ?? (spec.channels === 2 ? 128 : 64)}k`,
    "-vn", "-sn", "-dn", "-map_metadata", "-1", "-map_chapters", "-1",
    "-f", "mp3",
    "-y", safePath(spec.output, "output"),
  ];
}
