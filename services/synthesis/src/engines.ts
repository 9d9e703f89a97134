import {
  createOpenAiTtsEngine,
  createTtsRegistry,
  detectOfflineEngines,
  type TtsEngine,
  type TtsRegistry,
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
}

/**
 * The speech engines this process can run: every installed offline engine, plus an
 * OpenAI-compatible server when one is configured; and the ffmpeg toolkit they encode with.
 */
export async function createSpeechStack(options: {
  logger: Logger;
  ffmpegPath?: string | undefined;
  openai?: OpenAiTtsSettings | undefined;
  engines?: TtsEngine[];
}): Promise<SpeechStack> {
  const { logger } = options;
  const engines: TtsEngine[] = options.engines ?? (await detectOfflineEngines({ logger }));
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
  return { registry: createTtsRegistry(engines), media: createMediaToolkit(binaries, logger) };
}
