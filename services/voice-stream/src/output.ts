/**
 * The output stage of a voice stream: the placed speech becomes the result file.
 *
 * - Audio in, `original_audio: drop`: the speech on silence, MP3 (as before).
 * - Audio in, `duck`: the speech over the input's own sound, lowered while each line plays, MP3.
 * - Video in: the same kind of container (MP4 for MP4/MOV, Matroska otherwise) with the picture copied,
 *   the dubbed audio first (default, target language) and the original audio second (source language).
 *
 * The speech is placed on a WAV track first (our own file, audio only); the mix with the original and
 * the mux with its picture are then one ffmpeg run over the input.
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { BlobStore } from "@voiceloc/blobs";
import { ISO_639_2_CODES, type OriginalAudioMode, type VoiceStreamWork } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import {
  buildDubbedAudioArgs,
  buildDubbedVideoArgs,
  dubContainerFor,
  DUB_SAMPLE_RATE,
  maxVideoPixels,
  MediaError,
  originalAudioNeedsEncoding,
  videoExtension,
  withTempOutput,
  type DubContainer,
  type MediaInfo,
  type MediaToolkit,
} from "@voiceloc/media";
import { pictureTooLarge, taskFailure } from "@voiceloc/worker";

export interface PlacedClip {
  path: string;
  startSeconds: number;
  durationSeconds: number;
}

/** What the input holds, as far as the output needs it (probed; the picture's size decoded, bounded). */
export interface OriginalMedia {
  path: string;
  audio?: { codec: string; channels: number };
  video?: { codec: string; container: DubContainer };
}

export interface VoiceStreamOutputRequest {
  task: Pick<VoiceStreamWork, "source_language" | "target_language" | "original_audio">;
  /** The input, inspected by `inspectOriginal`. */
  original: OriginalMedia;
  clips: readonly PlacedClip[];
  /** Decoded length of the input's sound, seconds: the length of a dubbed video's tracks. */
  originalSeconds: number;
  /** Length of an audio result: at least the original's, longer when the last line runs past its end. */
  trackSeconds: number;
  workDir: string;
  media: MediaToolkit;
  blobs: BlobStore;
  resultKey: (extension: string) => string;
  /** Longest video output, seconds (MAX_MEDIA_SECONDS): what a lying file can make us copy. */
  maxSeconds: number;
  /** Speech-only MP3 (drop, audio in): sample rate and bitrate, as before. */
  sampleRate: number;
  bitrateKbps: number;
  signal: AbortSignal;
  logger: Logger;
  /** Fraction 0–1 of the output stage done. */
  onProgress?: (fraction: number) => void;
}

export interface VoiceStreamOutput {
  key: string;
  contentType: string;
  kind: "audio" | "video";
}

const CONTENT_TYPES: Record<DubContainer, string> = { mp4: "video/mp4", matroska: "video/x-matroska" };

/** The original-audio mode of a work message (older gateways send none: `drop`). */
export const originalAudioMode = (task: Pick<VoiceStreamWork, "original_audio">): OriginalAudioMode => task.original_audio ?? "drop";

/**
 * Probes the input (ordinary containers only, headers not trusted for sizes) and, when it has a
 * picture, decodes its first frame bounded by MAX_VIDEO_PIXELS: a picture over the limit or one that
 * cannot be decoded fails the task in plain words before anything is muxed.
 */
export async function inspectOriginal(media: MediaToolkit, path: string, options: { signal: AbortSignal; maxPixels?: number }): Promise<OriginalMedia> {
  let info: MediaInfo;
  try {
    info = await media.probe(path, { signal: options.signal });
  } catch (error) {
    throw taskFailure(error, { scope: "input" });
  }
  const original: OriginalMedia = { path };
  if (info.audio) original.audio = { codec: info.audio.codec, channels: info.audio.channels };
  if (info.video) {
    try {
      await media.firstFrame(path, { maxPixels: options.maxPixels ?? maxVideoPixels(), signal: options.signal });
    } catch (error) {
      if (error instanceof MediaError && error.code === "MEDIA_TOO_LARGE") {
        throw pictureTooLarge(error);
      }
      throw taskFailure(error, { scope: "input" });
    }
    original.video = { codec: info.video.codec, container: dubContainerFor(info.format, info.video.codec) };
  }
  return original;
}

/** Writes the result file of the task and stores it; answers its key and content type. */
export async function writeVoiceStreamOutput(request: VoiceStreamOutputRequest): Promise<VoiceStreamOutput> {
  const { original, media, blobs, signal } = request;
  const mode = originalAudioMode(request.task);
  const video = original.video;
  const progress = (fraction: number | undefined) => {
    if (fraction !== undefined) request.onProgress?.(Math.min(1, Math.max(0, fraction)));
  };

  if (video === undefined && (mode === "drop" || original.audio === undefined)) {
    // Audio in, nothing of the original kept: the speech on silence, as before.
    const outPath = join(request.workDir, "voice-stream.mp3");
    await media.placeClips({
      clips: request.clips,
      durationSeconds: request.trackSeconds,
      outPath,
      format: "mp3",
      sampleRate: request.sampleRate,
      encode: { channels: 1, bitrateKbps: request.bitrateKbps },
      signal,
      onProgress: (p) => progress(p.fraction),
    });
    const key = request.resultKey("mp3");
    await blobs.put(key, { path: outPath }, { contentType: "audio/mpeg" });
    return { key, contentType: "audio/mpeg", kind: "audio" };
  }

  const seconds = video ? request.originalSeconds : request.trackSeconds;
  const speech = join(request.workDir, "speech-track.wav");
  await media.placeClips({
    clips: request.clips,
    durationSeconds: seconds,
    outPath: speech,
    format: "wav",
    sampleRate: DUB_SAMPLE_RATE,
    encode: { channels: 1 },
    signal,
    onProgress: (p) => progress(p.fraction === undefined ? undefined : p.fraction * 0.3),
  });

  const channels: 1 | 2 = mode === "duck" && (original.audio?.channels ?? 1) >= 2 ? 2 : 1;
  const common = {
    original: original.path,
    speech,
    durationSeconds: seconds,
    mode,
    lines: request.clips.map((c) => ({ start: c.startSeconds, end: c.startSeconds + c.durationSeconds })),
    originalHasAudio: original.audio !== undefined,
    channels,
  };
  let outPath: string;
  let args: (output: string) => string[];
  let contentType: string;
  let extension: string;
  if (video) {
    extension = videoExtension(video.container);
    outPath = join(request.workDir, `voice-stream.${extension}`);
    contentType = CONTENT_TYPES[video.container];
    const encodeOriginalAudio = original.audio !== undefined && originalAudioNeedsEncoding(video.container, original.audio.codec);
    args = (output) =>
      buildDubbedVideoArgs({
        ...common,
        output,
        container: video.container,
        targetLanguage: ISO_639_2_CODES[request.task.target_language],
        sourceLanguage: ISO_639_2_CODES[request.task.source_language],
        encodeOriginalAudio,
        maxSeconds: Math.max(request.maxSeconds, seconds),
      });
    request.logger.info({ container: video.container, videoCodec: video.codec, originalAudio: original.audio?.codec ?? null, encodeOriginalAudio, mode }, "muxing the dubbed video");
  } else {
    extension = "mp3";
    outPath = join(request.workDir, "voice-stream.mp3");
    contentType = "audio/mpeg";
    args = (output) => buildDubbedAudioArgs({ ...common, output });
  }
  try {
    await withTempOutput(outPath, (temp) =>
      media.run(args(temp), {
        signal,
        what: video ? "Putting the dubbed sound into the video" : "Mixing the speech with the original sound",
        expectedDurationSeconds: seconds,
        onProgress: (p) => progress(p.fraction === undefined ? undefined : 0.3 + 0.7 * p.fraction),
      }),
    );
  } catch (error) {
    // The original is read again here: a file that cannot be demuxed or decoded is the input's fault.
    throw taskFailure(error, { scope: "input" });
  } finally {
    await rm(speech, { force: true });
  }
  const key = request.resultKey(extension);
  await blobs.put(key, { path: outPath }, { contentType });
  return { key, contentType, kind: video ? "video" : "audio" };
}
