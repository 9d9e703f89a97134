import type { CloneEngine, MtRegistry, SttRegistry, TtsRegistry } from "@voiceloc/engines";
import type { MediaToolkit } from "@voiceloc/media";
import { BUS_CATALOG } from "@voiceloc/contracts";
import { defineTaskService, type TaskService, type TaskServiceSettings } from "@voiceloc/worker";
import { createVoiceStreamHandler, voiceStreamResumedProgress, type VoiceStreamFetchSettings } from "./pipeline.ts";
import type { TimingOptions } from "./timing.ts";

export interface VoiceStreamServiceOptions extends TaskServiceSettings {
  /** Speech synthesis (the target language's voices). */
  tts: TtsRegistry;
  /** Translation (skipped when source and target are the same language). */
  mt: MtRegistry;
  /** Speech recognition (the source language). */
  stt: SttRegistry;
  media: MediaToolkit;
  /** The engine of cloned voices (CLONE_ENGINE); none when cloning is off. */
  clones?: CloneEngine | undefined;
  /** Where task files may come from: paths under `mediaRoot`, http(s) (SSRF-guarded), s3:// and gs://. */
  fetch: VoiceStreamFetchSettings;
  /** How a translated clip is fitted into the time the original speech took (see timing.ts). */
  timing?: TimingOptions;
  /** Output MP3 shape. Default 24000 Hz mono, 64 kbit/s. */
  output?: { sampleRate?: number; bitrateKbps?: number };
  /** Longest input in decoded seconds (MAX_MEDIA_SECONDS); longer media fails the task. Default 7200. */
  maxMediaSeconds?: number;
  /** Longest recording of a sandbox task (SANDBOX_MAX_MEDIA_SECONDS). */
  sandboxMaxMediaSeconds?: number;
}

export type VoiceStreamService = TaskService<"voice-stream">;

/**
 * The voice stream worker: consumes BUS_CATALOG.work["voice-stream"] and turns each recording into speech
 * in the target language that follows the original's timing (an MP3 at the task's result key).
 */
export function createVoiceStreamService(options: VoiceStreamServiceOptions): VoiceStreamService {
  const { tts, mt, stt, media, clones, fetch, timing, output, maxMediaSeconds, sandboxMaxMediaSeconds } = options;
  return defineTaskService({
    settings: options,
    catalog: BUS_CATALOG,
    kind: "voice-stream",
    initialProgress: voiceStreamResumedProgress,
    handle: createVoiceStreamHandler({
      blobs: options.blobs,
      tts,
      mt,
      stt,
      media,
      clones,
      fetch,
      ...(timing === undefined ? {} : { timing }),
      ...(output === undefined ? {} : { output }),
      ...(maxMediaSeconds === undefined ? {} : { maxMediaSeconds }),
      ...(sandboxMaxMediaSeconds === undefined ? {} : { sandboxMaxMediaSeconds }),
    }),
    describe: () => ({
      recognition: stt.capabilities().languages,
      translationPairs: mt.capabilities().pairs.length,
      synthesis: tts.capabilities().languages,
    }),
  });
}
