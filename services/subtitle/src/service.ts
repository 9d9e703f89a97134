import type { BlobStore } from "@voiceloc/blobs";
import type { Bus, StopOptions } from "@voiceloc/bus";
import { BUS_CATALOG } from "@voiceloc/contracts";
import type { MtRegistry, SttRegistry } from "@voiceloc/engines";
import type { Logger } from "@voiceloc/log";
import type { MediaToolkit } from "@voiceloc/media";
import { createTaskWorker, type TaskWorker } from "@voiceloc/worker";
import {
  createSubtitleHandler,
  DEFAULT_SUBTITLE_MAX_SECONDS,
  subtitleResumedProgress,
  type BurnInSettings,
  type SubtitleFetchSettings,
} from "./pipeline.ts";

export interface SubtitleServiceOptions {
  bus: Bus;
  blobs: BlobStore;
  /** Translation (skipped when source and target are the same language). */
  mt: MtRegistry;
  /** Speech recognition (the source language). */
  stt: SttRegistry;
  media: MediaToolkit;
  /** Where videos may come from: paths under `mediaRoot`, http(s) (SSRF-guarded), s3:// and gs://. */
  fetch: SubtitleFetchSettings;
  logger: Logger;
  /** Longest video accepted, in seconds (SUBTITLE_MAX_SECONDS). Default 3600. */
  maxSeconds?: number;
  /** Longest video of a sandbox task (SANDBOX_MAX_MEDIA_SECONDS). */
  sandboxMaxSeconds?: number;
  /** Largest decoded picture, in pixels (MAX_VIDEO_PIXELS). Default: the media package's `maxVideoPixels()`. */
  maxPixels?: number;
  /** Largest decoded picture of a sandbox task (SANDBOX_MAX_VIDEO_PIXELS). */
  sandboxMaxPixels?: number;
  burnIn?: BurnInSettings;
  /** Tasks handled at once by this process. Default 1 (recognition and encoding are CPU-bound). */
  concurrency?: number;
  /** Parent of the per-task work dirs. Default the OS temp dir. */
  workRoot?: string;
  /** How long stop() lets running tasks finish before aborting them (they resume from checkpoints). Default 10 s. */
  stopGraceMs?: number;
}

export interface SubtitleService {
  readonly name: "subtitle";
  /** Provisions the work and event streams and the subtitle queue, then consumes it. Idempotent. */
  start(): Promise<void>;
  /** Stops taking tasks and waits for running ones (up to the grace period). Idempotent. */
  stop(options?: StopOptions): Promise<void>;
}

/**
 * The subtitle worker: consumes WORK_QUEUES.subtitle and turns each video into a subtitle file (SRT or
 * WebVTT) and a video with the subtitles burned in or carried as a soft track.
 */
export function createSubtitleService(options: SubtitleServiceOptions): SubtitleService {
  const { bus, blobs } = options;
  const logger = options.logger.child({ component: "subtitle" });
  const queue = BUS_CATALOG.work.subtitle.queue;
  const maxSeconds = options.maxSeconds ?? DEFAULT_SUBTITLE_MAX_SECONDS;
  const worker: TaskWorker = createTaskWorker({
    bus,
    catalog: BUS_CATALOG,
    blobs,
    kind: "subtitle",
    logger,
    concurrency: options.concurrency ?? 1,
    ...(options.workRoot === undefined ? {} : { workRoot: options.workRoot }),
    initialProgress: subtitleResumedProgress,
    handle: createSubtitleHandler({
      blobs,
      mt: options.mt,
      stt: options.stt,
      media: options.media,
      fetch: options.fetch,
      maxSeconds,
      ...(options.sandboxMaxSeconds === undefined ? {} : { sandboxMaxSeconds: options.sandboxMaxSeconds }),
      ...(options.maxPixels === undefined ? {} : { maxPixels: options.maxPixels }),
      ...(options.sandboxMaxPixels === undefined ? {} : { sandboxMaxPixels: options.sandboxMaxPixels }),
      ...(options.burnIn === undefined ? {} : { burnIn: options.burnIn }),
    }),
  });
  let starting: Promise<void> | undefined;
  return {
    name: "subtitle",
    start() {
      starting ??= (async () => {
        await bus.provision({ streams: [...BUS_CATALOG.streams], queues: [queue] });
        await worker.start();
        logger.info(
          { recognition: options.stt.capabilities().languages, translationPairs: options.mt.capabilities().pairs.length, maxSeconds },
          "subtitle service ready",
        );
      })();
      const started = starting;
      // A failed start may be tried again.
      started.catch(() => {
        if (starting === started) starting = undefined;
      });
      return started;
    },
    stop(stopOptions) {
      return worker.stop(stopOptions ?? { graceMs: options.stopGraceMs ?? 10_000 });
    },
  };
}
