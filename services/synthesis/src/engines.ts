import {
  type CloneEngine,
  createElevenLabsCloneEngine,
  createMatchCloneEngine,
  createOpenAiTtsEngine,
  createPiperTtsEngine,
  discoverOpenAiTtsVoices,
  OPENAI_PRESET_VOICES,
  createVoiceLibraryCloneEngine,
  createTtsRegistry,
  detectOfflineEngines,
  TtsConfigError,
  type DetectOfflineEnginesOptions,
  type TtsEngine,
  type TtsRegistry,
  type TtsRegistryOptions,
} from "@voiceloc/engines";
import type { Logger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { languageFromNameOrCode, type Language } from "@voiceloc/contracts";

export interface OpenAiTtsSettings {
  baseUrl: string;
  apiKey?: string | undefined;
  model: string;
  /** Voice ids (OPENAI_TTS_VOICES); unset: the voices the server lists, else OpenAI's preset voices. */
  voices?: string[] | undefined;
  /** Languages (names or ISO 639-1 codes) its voices are offered for (OPENAI_TTS_LANGUAGES); default every language it may speak. */
  languages?: string[] | undefined;
}

/** A Piper HTTP server (PIPER_URL) and the voices to offer per language (PIPER_VOICES; default all it lists). */
export interface PiperSettings {
  baseUrl: string;
  voices?: Array<{ language: string; voice: string; speaker?: string | undefined }> | undefined;
}

export interface SpeechStack {
  registry: TtsRegistry;
  media: MediaToolkit;
  /** The engine that makes and speaks cloned voices (CLONE_ENGINE); none when cloning is off. */
  clones?: CloneEngine | undefined;
}

/** Who makes cloned voices (config's `clone`, CLONE_ENGINE): `off` or absent makes none. */
export interface CloneStackSettings {
  engine: "elevenlabs" | "voice-library" | "match" | "off";
  elevenlabs?: { apiKey: string; baseUrl: string; model: string } | undefined;
  voiceLibrary?: { baseUrl: string; apiKey?: string | undefined } | undefined;
}

export interface SpeechStackOptions {
  logger: Logger;
  ffmpegPath?: string | undefined;
  openai?: OpenAiTtsSettings | undefined;
  /** A Piper server (PIPER_URL); left out (logged why) when it cannot be reached or offers no voice. */
  piper?: PiperSettings | undefined;
  /** Engine ids whose voices come first, in this order (ENGINE_ORDER_TTS). */
  order?: readonly string[] | undefined;
  /** Engines to use instead of detecting the installed offline ones. */
  engines?: TtsEngine[];
  /** Settings of the offline engines (binary paths, rates), or false to switch one off. */
  offline?: Omit<DetectOfflineEnginesOptions, "logger"> | undefined;
  /** Self-test limits (time, concurrency). */
  selfTest?: Omit<TtsRegistryOptions, "logger"> | undefined;
  /** The cloning engine to build (CLONE_ENGINE and its settings); none when absent or `off`. */
  clone?: CloneStackSettings | undefined;
}

/**
 * The cloning engine of the settings: `match` speaks with the self-tested offline voices of `registry`
 * and shapes them with ffmpeg; ElevenLabs and the voice library are outside services (their settings are
 * checked when the configuration is loaded). Outside engines are not self-tested: making a voice there
 * costs the account a voice slot, so their first use says whether they work.
 */
export function createCloneEngine(settings: CloneStackSettings | undefined, registry: TtsRegistry, media: MediaToolkit, logger: Logger): CloneEngine | undefined {
  if (settings === undefined) return undefined;
  switch (settings.engine) {
    case "off":
      return undefined;
    case "match":
      return createMatchCloneEngine({ registry, media, logger });
    case "elevenlabs":
      if (!settings.elevenlabs) throw new Error("CLONE_ENGINE=elevenlabs needs ELEVENLABS_API_KEY");
      return createElevenLabsCloneEngine({ ...settings.elevenlabs, logger });
    case "voice-library":
      if (!settings.voiceLibrary) throw new Error("CLONE_ENGINE=voice-library needs OPENAI_TTS_BASE_URL or OPENAI_BASE_URL");
      return createVoiceLibraryCloneEngine({ ...settings.voiceLibrary, logger });
    default: {
      const unknown: never = settings.engine;
      throw new Error(`unknown clone engine ${String(unknown)}`);
    }
  }
}

/** OPENAI_TTS_LANGUAGES as languages; a name or code that is none of ours stops the start, naming it. */
function serverLanguages(given: readonly string[]): Language[] {
  return given.map((value) => {
    const language = languageFromNameOrCode(value) ?? languageFromNameOrCode(value.toLowerCase());
    if (!language) throw new TtsConfigError(`OPENAI_TTS_LANGUAGES: "${value}" is not one of the supported languages (a name such as Spanish or a code such as es).`);
    return language;
  });
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
  if (options.piper) {
    const piper = await piperEngine(options.piper, logger);
    if (piper) engines.unshift(piper);
  }
  if (options.openai) {
    const { baseUrl, apiKey, model } = options.openai;
    // Unset OPENAI_TTS_VOICES: the voices the server lists (Kokoro-style servers), else OpenAI's presets.
    const voices = options.openai.voices ?? (await discoverOpenAiTtsVoices({ baseUrl, apiKey, model, logger })) ?? [...OPENAI_PRESET_VOICES];
    engines.unshift(
      createOpenAiTtsEngine({
        baseUrl,
        apiKey,
        model,
        voices,
        ...(options.openai.languages ? { languages: serverLanguages(options.openai.languages) } : {}),
        logger,
      }),
    );
  }
  const binaries = await resolveFfmpeg({ ffmpegPath: options.ffmpegPath, logger });
  const registry = createTtsRegistry(engines, { ...options.selfTest, order: options.order, logger });
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
  const media = createMediaToolkit(binaries, logger);
  const clones = createCloneEngine(options.clone, registry, media, logger);
  if (clones) logger.info({ engine: clones.id, languages: clones.languages() }, "voice cloning ready");
  return { registry, media, ...(clones ? { clones } : {}) };
}

/** The Piper engine of the settings, or none (logged why) when the server cannot be used. */
async function piperEngine(settings: PiperSettings, logger: Logger): Promise<TtsEngine | undefined> {
  const voices: Array<{ id: string; language: Language; speaker?: string | undefined }> = [];
  for (const entry of settings.voices ?? []) {
    const language = languageFromNameOrCode(entry.language);
    if (!language) {
      logger.warn({ language: entry.language, voice: entry.voice }, "PIPER_VOICES names a language this service does not know; the voice is not offered");
      continue;
    }
    voices.push({ id: entry.voice, language, ...(entry.speaker === undefined ? {} : { speaker: entry.speaker }) });
  }
  if (settings.voices && settings.voices.length > 0 && voices.length === 0) return undefined;
  try {
    return await createPiperTtsEngine({ baseUrl: settings.baseUrl, voices: voices.length > 0 ? voices : undefined, logger });
  } catch (error) {
    logger.warn({ err: error }, "the Piper server is not available; its voices are off");
    return undefined;
  }
}
