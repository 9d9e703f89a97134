import type { BlobStore } from "@voiceloc/blobs";
import type { Bus, StopOptions } from "@voiceloc/bus";
import { BUS_CATALOG } from "@voiceloc/contracts";
import type { MtRegistry, SttRegistry, TtsRegistry } from "@voiceloc/engines";
import type { Logger } from "@voiceloc/log";
import type { MediaToolkit } from "@voiceloc/media";
import { createTaskWorker, type TaskWorker } from "@voiceloc/worker";
import { createVoiceStreamHandler, voiceStreamResumedProgress, type VoiceStreamFetchSettings } from "./pipeline.ts";
import type { TimingOptions } from "./timing.ts";

export interface VoiceStreamServiceOptions {
  bus: Bus;
  blobs: BlobStore;
  /** Speech synthesis (the target language's voices). */
  tts: TtsRegistry;
  /** Translation (skipped when source and target are the same language). */
  mt: MtRegistry;
  /** Speech recognition (the source language). */
  stt: SttRegistry;
  media: MediaToolkit;
  /** Where task files may come from: paths under `mediaRoot`, http(s) (SSRF-guarded), s3:// and gs://. */
  fetch: VoiceStreamFetchSettings;
  logger: Logger;
  /** Tasks handled at once by this process. Default 1 (recognition and synthesis are CPU-bound). */
  concurrency?: number;
  /** Parent of the per-task work dirs. Default the OS temp dir. */
  workRoot?: string;
  /** How a translated clip is fitted into the time the original speech took (see timing.ts). */
  timing?: TimingOptions;
  /** Output MP3 shape. Default 24000 Hz mono, 64 kbit/s. */
  output?: { sampleRate?: number; bitrateKbps?: number };
  /** Longest input in decoded seconds (MAX_MEDIA_SECONDS); longer media fails the task. Default 7200. */
  maxMediaSeconds?: number;
  /** Longest recording of a sandbox task (SANDBOX_MAX_MEDIA_SECONDS). */
  sandboxMaxMediaSeconds?: number;
  /**
   * How long stop() lets running tasks finish before aborting them (they are redelivered and resume
   * from their checkpoints). Default 10 s.
   */
  stopGraceMs?: number;
}

export interface VoiceStreamService {
  readonly name: "voice-stream";
  /** Provisions the work and event streams and the voice-stream queue, then consumes it. Idempotent. */
  start(): Promise<void>;
  /** Stops taking tasks and waits for running ones (up to the grace period). Idempotent. */
  stop(options?: StopOptions): Promise<void>;
}

/**
 * The voice stream worker: consumes BUS_CATALOG.work["voice-stream"] and turns each recording into speech
 * in the target language that follows the original's timing (an MP3 at the task's result key).
 */
export function createVoiceStreamService(options: VoiceStreamServiceOptions): VoiceStreamService {
  const { bus, blobs } = options;
  const logger = options.logger.child({ component: "voice-stream" });
  const queue = BUS_CATALOG.work["voice-stream"].queue;
  const worker: TaskWorker = createTaskWorker({
    bus,
    catalog: BUS_CATALOG,
    blobs,
    kind: "voice-stream",
    logger,
    concurrency: options.concurrency ?? 1,
    ...(options.workRoot === undefined ? {} : { workRoot: options.workRoot }),
    initialProgress: voiceStreamResumedProgress,
    handle: createVoiceStreamHandler({
      blobs,
      tts: options.tts,
      mt: options.mt,
      stt: options.stt,
      media: options.media,
      fetch: options.fetch,
      ...(options.timing === undefined ? {} : { timing: options.timing }),
      ...(options.output === undefined ? {} : { output: options.output }),
      ...(options.maxMediaSeconds === undefined ? {} : { maxMediaSeconds: options.maxMediaSeconds }),
      ...(options.sandboxMaxMediaSeconds === undefined ? {} : { sandboxMaxMediaSeconds: options.sandboxMaxMediaSeconds }),
    }),
  });
  let starting: Promise<void> | undefined;
  return {
    name: "voice-stream",
    start() {
      starting ??= (async () => {
        await bus.provision({ streams: [...BUS_CATALOG.streams], queues: [queue] });
        await worker.start();
        logger.info(
          {
            recognition: options.stt.capabilities().languages,
            translationPairs: options.mt.capabilities().pairs.length,
            synthesis: options.tts.capabilities().languages,
          },
          "voice stream service ready",
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
