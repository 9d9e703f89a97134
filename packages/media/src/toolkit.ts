import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "@voiceloc/log";
import {
  AUDIO_CLIP_DEMUXERS,
  buildConcatAudioArgs,
  buildConvertAudioArgs,
  buildExtractSpeechWavArgs,
  buildMixLanesArgs,
  buildTimelinePartArgs,
  buildVolumeDetectArgs,
  concatListContent,
  planTimeline,
  UNTRUSTED_MEDIA_DEMUXERS,
  type AudioFormat,
  type ClipPlacement,
  type EncodeOptions,
} from "./args.ts";
import { bookFileOperations, type BookFileOperations } from "./chapters.ts";
import { readEncodedAudioDuration } from "./duration.ts";
import { MediaCancelledError, MediaError, MediaRequestError } from "./errors.ts";
import { decodeFirstFrame, probe, type DecodedFrameSize, type MediaInfo } from "./probe.ts";
import type { FfmpegBinaries } from "./resolve.ts";
import { runFfmpeg, withTempOutput, type FfmpegProgress, type FfmpegRunResult, type RunFfmpegOptions } from "./run.ts";

export interface OperationOptions {
  signal?: AbortSignal | undefined;
  onProgress?: ((progress: FfmpegProgress) => void) | undefined;
}

export interface VolumeStats {
  /** Mean volume in dBFS; -91 dB means digital silence. */
  meanVolumeDb: number;
  maxVolumeDb: number;
}

export interface ClipInput extends Omit<ClipPlacement, "durationSeconds"> {
  /** Measured with ffprobe when omitted. */
  durationSeconds?: number;
}

export interface DecodedAudio {
  path: string;
  /** Length of the decoded audio, in seconds (at most a little over `maxSeconds`). */
  durationSeconds: number;
  /** True when the media holds more than `maxSeconds` of audio (the WAV was cut just past the limit). */
  overLimit: boolean;
}

/** Decoding stops this much past `maxSeconds`, so a file exactly at the limit is not refused. */
const DECODE_LIMIT_MARGIN_SECONDS = 0.5;

export interface PlaceClipsRequest extends OperationOptions {
  clips: readonly ClipInput[];
  /** Length of the resulting track (e.g. the video's duration). Clips past the end are cut. */
  durationSeconds: number;
  outPath: string;
  format: AudioFormat;
  /** Track sample rate, default 48000 Hz (mono). */
  sampleRate?: number;
  encode?: EncodeOptions;
  /** Most clips opened by one ffmpeg run; longer lanes are rendered in parts. Default 48. */
  maxClipsPerPass?: number;
}

/** The media operations; the audio book file operations (chapters, tags, cover) are `BookFileOperations`. */
export interface MediaToolkit extends BookFileOperations {
  readonly binaries: FfmpegBinaries;
  /** Runs ffmpeg with a built argument array. */
  run(
    args: readonly string[],
    options?: OperationOptions & { what?: string; expectedDurationSeconds?: number; stdin?: RunFfmpegOptions["stdin"]; onStdout?: RunFfmpegOptions["onStdout"] },
  ): Promise<FfmpegRunResult>;
  probe(path: string, options?: { signal?: AbortSignal; demuxers?: readonly string[] }): Promise<MediaInfo>;
  /**
   * The decoded size of a video's first picture, refused (`MEDIA_TOO_LARGE`) above `maxPixels` before
   * the decoder allocates it: check it before any filter or encoder runs on an untrusted video.
   */
  firstFrame(path: string, options: { maxPixels: number; signal?: AbortSignal }): Promise<DecodedFrameSize>;
  /**
   * Duration in seconds of a file this toolkit encoded to `format`, as ffprobe states it: read from
   * the container when it has the structure ffmpeg writes (no process started), otherwise probed.
   */
  encodedAudioDuration(path: string, format: AudioFormat, options?: { signal?: AbortSignal }): Promise<number>;
  /** Encodes the first audio track of `input` into `outPath` (written under a temporary name, then renamed). */
  convertAudio(request: { input: string; outPath: string; format: AudioFormat; encode?: EncodeOptions; inputDemuxers?: readonly string[] } & OperationOptions): Promise<string>;
  /** Joins audio files of identical shape (WAV chunks by default) into one encoded file, streaming. */
  concatAudio(request: { inputs: readonly string[]; outPath: string; format: AudioFormat; encode?: EncodeOptions; chunkDemuxers?: readonly string[] } & OperationOptions): Promise<string>;
  /** Places clips at their start times on a silent mono track; each clip keeps its own level. */
  placeClips(request: PlaceClipsRequest): Promise<{ path: string; droppedClips: number; truncatedClips: number }>;
  /** 16 kHz mono WAV of any media's first audio track, for speech recognition (at most `maxSeconds` of it). */
  extractSpeechWav(request: { input: string; outPath: string; sampleRate?: number; maxSeconds?: number } & OperationOptions): Promise<string>;
  /**
   * Decodes the first audio track of untrusted media to a mono WAV (16 kHz by default) and measures the
   * decoded length: the length to trust, unlike `probe().durationSeconds`, which is what the container
   * claims (a header can claim 600 s for 3 s of sound, or far more). With `maxSeconds`, decoding stops
   * just past the limit and `overLimit` says the media is longer than it.
   */
  decodeAudio(request: { input: string; outPath: string; sampleRate?: number; maxSeconds?: number } & OperationOptions): Promise<DecodedAudio>;
  measureVolume(path: string, options?: { signal?: AbortSignal; demuxers?: readonly string[] }): Promise<VolumeStats>;
}

function parseDb(lines: readonly string[], key: string): number | undefined {
  for (let i = lines.length - 1; i >= 0; i--) {
    const match = new RegExp(`${key}:\\s*(-?[0-9.]+|-inf) dB`).exec(lines[i] ?? "");
    if (match?.[1] !== undefined) return match[1] === "-inf" ? Number.NEGATIVE_INFINITY : Number(match[1]);
  }
  return undefined;
}

async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T);
    }
  });
  await Promise.all(workers);
  return results;
}

/** Binds the media operations to resolved binaries and a logger. */
export function createMediaToolkit(binaries: FfmpegBinaries, logger: Logger): MediaToolkit {
  const log = logger.child({ component: "media" });
  const run: MediaToolkit["run"] = (args, options = {}) =>
    runFfmpeg(args, {
      ffmpegPath: binaries.ffmpeg,
      signal: options.signal,
      onProgress: options.onProgress,
      expectedDurationSeconds: options.expectedDurationSeconds,
      what: options.what,
      stdin: options.stdin,
      onStdout: options.onStdout,
      logger: log,
    });
  const probeFile: MediaToolkit["probe"] = (path, options = {}) =>
    probe(path, { ffprobePath: binaries.ffprobe, ffmpegPath: binaries.ffmpeg, signal: options.signal, logger: log, demuxers: options.demuxers });

  const firstFrame: MediaToolkit["firstFrame"] = (path, options) =>
    decodeFirstFrame(path, { ffprobePath: binaries.ffprobe, maxPixels: options.maxPixels, signal: options.signal });

  const withWorkDir = async <T>(fn: (dir: string) => Promise<T>): Promise<T> => {
    const dir = await mkdtemp(join(tmpdir(), "voiceloc-media-"));
    try {
      return await fn(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };

  const concatAudio: MediaToolkit["concatAudio"] = async (request) => {
    const list = concatListContent(request.inputs);
    return withWorkDir(async (dir) => {
      const listFile = join(dir, "chunks.ffconcat");
      await writeFile(listFile, list, "utf8");
      await withTempOutput(request.outPath, (temp) =>
        run(buildConcatAudioArgs({ listFile, output: temp, format: request.format, encode: request.encode, chunkDemuxers: request.chunkDemuxers }), {
          signal: request.signal,
          onProgress: request.onProgress,
          what: "Joining the audio",
        }),
      );
      return request.outPath;
    });
  };

  const placeClips: MediaToolkit["placeClips"] = async (request) => {
    const sampleRate = request.sampleRate ?? 48000;
    const clips: ClipPlacement[] = await mapLimit(request.clips, 4, async (clip) => {
      if (clip.durationSeconds !== undefined) return { ...clip, durationSeconds: clip.durationSeconds };
      const info = await probeFile(clip.path, { signal: request.signal, demuxers: AUDIO_CLIP_DEMUXERS });
      if (!info.audio) throw new MediaRequestError("One of the audio clips has no audio track.");
      return { ...clip, durationSeconds: info.durationSeconds };
    });
    const plan = planTimeline(clips, { durationSeconds: request.durationSeconds, sampleRate, maxClipsPerPass: request.maxClipsPerPass });
    if (plan.droppedClips > 0 || plan.truncatedClips > 0) {
      log.info({ dropped: plan.droppedClips, truncated: plan.truncatedClips }, "clips past the end of the track were cut");
    }
    const stats = { path: request.outPath, droppedClips: plan.droppedClips, truncatedClips: plan.truncatedClips };
    const only = plan.lanes.length === 1 && plan.lanes[0]?.length === 1 ? plan.lanes[0][0] : undefined;
    if (only) {
      await withTempOutput(request.outPath, (temp) =>
        run(buildTimelinePartArgs({ part: only, sampleRate, output: temp, format: request.format, encode: request.encode }), {
          signal: request.signal,
          onProgress: request.onProgress,
          expectedDurationSeconds: request.durationSeconds,
          what: "Placing the speech on the track",
        }),
      );
      return stats;
    }
    return withWorkDir(async (dir) => {
      const lanes: { path: string; concat: boolean }[] = [];
      for (const [laneIndex, parts] of plan.lanes.entries()) {
        const partFiles: string[] = [];
        for (const [partIndex, part] of parts.entries()) {
          const file = join(dir, `lane${laneIndex}-part${partIndex}.wav`);
          await run(buildTimelinePartArgs({ part, sampleRate, output: file, format: "wav" }), {
            signal: request.signal,
            what: "Placing the speech on the track",
          });
          partFiles.push(file);
        }
        if (partFiles.length === 1 && partFiles[0] !== undefined) {
          lanes.push({ path: partFiles[0], concat: false });
        } else {
          const listFile = join(dir, `lane${laneIndex}.ffconcat`);
          await writeFile(listFile, concatListContent(partFiles), "utf8");
          lanes.push({ path: listFile, concat: true });
        }
      }
      await withTempOutput(request.outPath, (temp) =>
        run(buildMixLanesArgs({ lanes, output: temp, format: request.format, encode: request.encode }), {
          signal: request.signal,
          onProgress: request.onProgress,
          expectedDurationSeconds: request.durationSeconds,
          what: "Mixing the speech track",
        }),
      );
      return stats;
    });
  };

  const extractSpeechWav: MediaToolkit["extractSpeechWav"] = async (request) => {
    await withTempOutput(request.outPath, (temp) =>
      run(buildExtractSpeechWavArgs({ input: request.input, output: temp, sampleRate: request.sampleRate, maxSeconds: request.maxSeconds }), {
        signal: request.signal,
        onProgress: request.onProgress,
        what: "Extracting the audio for recognition",
      }),
    );
    return request.outPath;
  };

  const encodedAudioDuration: MediaToolkit["encodedAudioDuration"] = async (path, format, options = {}) => {
    if (options.signal?.aborted) throw new MediaCancelledError("Measuring the audio duration");
    const read = await readEncodedAudioDuration(path, format).catch((error: unknown) => {
      log.debug({ err: error, path }, "could not read the duration from the container");
      return undefined;
    });
    if (read !== undefined) return read;
    log.debug({ path, format }, "duration not readable from the container; probing");
    return (await probeFile(path, { signal: options.signal })).durationSeconds;
  };

  const books = bookFileOperations({
    binaries,
    run,
    probe: probeFile,
    firstFrame: (path, options) =>
      decodeFirstFrame(path, { ffprobePath: binaries.ffprobe, maxPixels: options.maxPixels, signal: options.signal, demuxers: options.demuxers, forceFormat: options.forceFormat }),
    withWorkDir,
    log,
  });

  return {
    ...books,
    binaries,
    run,
    probe: probeFile,
    firstFrame,
    encodedAudioDuration,
    async convertAudio(request) {
      await withTempOutput(request.outPath, (temp) =>
        run(
          buildConvertAudioArgs({ input: request.input, output: temp, format: request.format, encode: request.encode, inputDemuxers: request.inputDemuxers }),
          { signal: request.signal, onProgress: request.onProgress, what: "Encoding the audio" },
        ),
      );
      return request.outPath;
    },
    concatAudio,
    placeClips,
    extractSpeechWav,
    async decodeAudio(request) {
      const max = request.maxSeconds;
      await extractSpeechWav({ ...request, ...(max === undefined ? {} : { maxSeconds: max + DECODE_LIMIT_MARGIN_SECONDS }) });
      const durationSeconds = await readEncodedAudioDuration(request.outPath, "wav");
      if (durationSeconds === undefined) throw new MediaError("FFMPEG_FAILED", "Decoding the audio failed: the decoded audio could not be measured.");
      return { path: request.outPath, durationSeconds, overLimit: max !== undefined && durationSeconds > max };
    },
    async measureVolume(path, options = {}) {
      const result = await run(buildVolumeDetectArgs(path, options.demuxers ?? UNTRUSTED_MEDIA_DEMUXERS), {
        signal: options.signal,
        what: "Measuring the loudness",
      });
      const meanVolumeDb = parseDb(result.stderrTail, "mean_volume");
      const maxVolumeDb = parseDb(result.stderrTail, "max_volume");
      if (meanVolumeDb === undefined || maxVolumeDb === undefined) {
        throw new MediaError("FFMPEG_FAILED", "Measuring the loudness failed: ffmpeg did not report a volume.");
      }
      return { meanVolumeDb, maxVolumeDb };
    },
  };
}
