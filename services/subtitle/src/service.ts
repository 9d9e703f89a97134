import { BUS_CATALOG } from "@voiceloc/contracts";
import type { MtRegistry, SttRegistry } from "@voiceloc/engines";
import type { MediaToolkit } from "@voiceloc/media";
import { defineTaskService, type TaskService, type TaskServiceSettings } from "@voiceloc/worker";
import {
  createSubtitleHandler,
  DEFAULT_SUBTITLE_MAX_SECONDS,
  subtitleResumedProgress,
  type BurnInSettings,
  type SubtitleFetchSettings,
} from "./pipeline.ts";

export interface SubtitleServiceOptions extends TaskServiceSettings {
  /** Translation (skipped when source and target are the same language). */
  mt: MtRegistry;
  /** Speech recognition (the source language). */
  stt: SttRegistry;
  media: MediaToolkit;
  /** Where videos may come from: paths under `mediaRoot`, http(s) (SSRF-guarded), s3:// and gs://. */
  fetch: SubtitleFetchSettings;
  /** Longest video accepted, in seconds (SUBTITLE_MAX_SECONDS). Default 3600. */
  maxSeconds?: number;
  /** Longest video of a sandbox task (SANDBOX_MAX_MEDIA_SECONDS). */
  sandboxMaxSeconds?: number;
  /** Largest decoded picture, in pixels (MAX_VIDEO_PIXELS). Default: the media package's `maxVideoPixels()`. */
  maxPixels?: number;
  /** Largest decoded picture of a sandbox task (SANDBOX_MAX_VIDEO_PIXELS). */
  sandboxMaxPixels?: number;
  burnIn?: BurnInSettings;
}

export type SubtitleService = TaskService<"subtitle">;

/**
 * The subtitle worker: consumes WORK_QUEUES.subtitle and turns each video into a subtitle file (SRT or
 * WebVTT) and a video with the subtitles burned in or carried as a soft track.
 */
export function createSubtitleService(options: SubtitleServiceOptions): SubtitleService {
  const { mt, stt, media, fetch, maxSeconds = DEFAULT_SUBTITLE_MAX_SECONDS, sandboxMaxSeconds, maxPixels, sandboxMaxPixels, burnIn } = options;
  return defineTaskService({
    settings: options,
    catalog: BUS_CATALOG,
    kind: "subtitle",
    initialProgress: subtitleResumedProgress,
    handle: createSubtitleHandler({
      blobs: options.blobs,
      mt,
      stt,
      media,
      fetch,
      maxSeconds,
      ...(sandboxMaxSeconds === undefined ? {} : { sandboxMaxSeconds }),
      ...(maxPixels === undefined ? {} : { maxPixels }),
      ...(sandboxMaxPixels === undefined ? {} : { sandboxMaxPixels }),
      ...(burnIn === undefined ? {} : { burnIn }),
    }),
    describe: () => ({ recognition: stt.capabilities().languages, translationPairs: mt.capabilities().pairs.length, maxSeconds }),
  });
}
