import {
  type CloneEngine,
  createOpenAiTtsEngine,
  createTtsRegistry,
  detectOfflineEngines,
  type DetectOfflineEnginesOptions,
  type TtsEngine,
  type TtsRegistry,
  type TtsRegistryOptions,
} from "@voiceloc/engines";
import type { Logger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";

export interface OpenAiTtsSettings {
  baseUrl: string;
  apiKey?: string | undefined;
  model: string;
  voices: string[];
}

export interface SpeechStack {
  registry: TtsRegistry;
  media: MediaToolkit;
  /** The engine that makes and speaks cloned voices (CLONE_ENGINE); none when cloning is off. */
  clones?: CloneEngine | undefined;
}

export interface SpeechStackOptions {
  logger: Logger;
  ffmpegPath?: string | undefined;
  openai?: OpenAiTtsSettings | undefined;
  /** Engines to use instead of detecting the installed offline ones. */
  engines?: TtsEngine[];
  /** Settings of the offline engines (binary paths, rates), or false to switch one off. */
  offline?: Omit<DetectOfflineEnginesOptions, "logger"> | undefined;
  /** Self-test limits (time, concurrency). */
  selfTest?: Omit<TtsRegistryOptions, "logger"> | undefined;
}

/**
 * The speech engines this process can run: every installed offline engine, plus an
 * OpenAI-compatible server when one is configured; and the ffmpeg toolkit they encode with.
 * Before it is returned, each language's default voice speaks a short native sentence: a voice
 * that fails is dropped from the table (logged with the reason), so the next voice takes the
 * language or the language is honestly not offered.
 */
export async function createSpeechStack(options: SpeechStackOptions): Promise<SpeechStack> {
  const { logger } = options;
  const engines: TtsEngine[] = options.engines ?? (await detectOfflineEngines({ ...options.offline, logger }));
  if (options.openai) {
    engines.unshift(
      createOpenAiTtsEngine({
        baseUrl: options.openai.baseUrl,
        apiKey: options.openai.apiKey,
        model: options.openai.model,
        voices: options.openai.voices,
        logger,
      }),
    );
  }
  const binaries = await resolveFfmpeg({ ffmpegPath: options.ffmpegPath, logger });
  const registry = createTtsRegistry(engines, { ...options.selfTest, logger });
  const started = performance.now();
  const report = await registry.selfTest();
  logger.info(
    {
      passed: report.passed.length,
      dropped: report.dropped.map((d) => d.voice),
      uncovered: report.uncovered,
      ms: Math.round(performance.now() - started),
    },
    "speech voices self-tested",
  );
  return { registry, media: createMediaToolkit(binaries, logger) };
}
