/**
 * The engines one process runs, detected once at start and shared by its workers:
 * speech synthesis, translation, recognition and the ffmpeg toolkit; and the capability
 * tables the process answers on the bus, one per kind of work it runs (SUBJECTS.capabilities(kind)).
 */
import type { Config } from "@voiceloc/config";
import { createCatalogBus, type Bus, type BusSubscription } from "@voiceloc/bus";
import { BUS_CATALOG, LANGUAGES, capabilitiesFor, capabilityRequestName, type Capabilities, type CapabilityKind, type Language } from "@voiceloc/contracts";
import {
  createApertiumEngine,
  createDeepLEngine,
  createLibreTranslateEngine,
  createWhisperCppTranscriber,
  createMtRegistry,
  createOpenAiTranscriber,
  createOpenAiTranslator,
  createPocketsphinxEngine,
  createSttRegistry,
  type ApertiumOptions,
  type MtEngine,
  type MtRegistry,
  type PocketsphinxOptions,
  type SttEngine,
  type SttRegistry,
} from "@voiceloc/engines";
import type { Logger } from "@voiceloc/log";
import { createSpeechStack, voiceCatalog, type SpeechStack } from "@voiceloc/synthesis";

export interface EngineStack extends SpeechStack {
  mt: MtRegistry;
  stt: SttRegistry;
  /** The whole table of this process's engines, or the part of it one kind of work uses. */
  capabilities(kind?: CapabilityKind): Capabilities;
}

/** Settings of the engines the configuration does not carry (offline engine binaries, self-test limits), or false to switch one off. */
export interface SpeechStackExtras extends Pick<Parameters<typeof createSpeechStack>[0], "offline" | "selfTest"> {
  apertium?: Omit<ApertiumOptions, "logger"> | false | undefined;
  pocketsphinx?: Omit<PocketsphinxOptions, "logger" | "media"> | false | undefined;
}

/**
 * Detects the engines and self-tests them before anything is claimed: each language's default
 * voice speaks a sentence, each configured HTTP service answers a tiny request (one word of speech,
 * a one-word translation, a half-second WAV to transcribe). What fails is not offered (logged why).
 */
export async function createEngineStack(config: Config, logger: Logger, extras: SpeechStackExtras = {}): Promise<EngineStack> {
  const { apertium, pocketsphinx, ...speechExtras } = extras;
  const speech = await createSpeechStack({
    logger,
    ffmpegPath: config.ffmpegPath,
    openai: config.openaiTts,
    piper: config.piper,
    order: config.engineOrder.tts,
    clone: config.clone,
    ...speechExtras,
  });
  const mtEngines: MtEngine[] = [];
  // DeepL before LibreTranslate: both are neural and ties go to the engine listed first (ENGINE_ORDER_MT changes it).
  if (config.deepl) {
    try {
      mtEngines.push(await createDeepLEngine({ apiKey: config.deepl.apiKey, baseUrl: config.deepl.baseUrl, logger }));
    } catch (error) {
      logger.warn({ err: error }, "DeepL is not available; its translations are off");
    }
  }
  if (config.libreTranslate) {
    try {
      mtEngines.push(await createLibreTranslateEngine({ baseUrl: config.libreTranslate.baseUrl, apiKey: config.libreTranslate.apiKey, logger }));
    } catch (error) {
      logger.warn({ err: error }, "LibreTranslate is not available; its translations are off");
    }
  }
  if (config.openaiMt) {
    mtEngines.push(createOpenAiTranslator({ baseUrl: config.openaiMt.baseUrl, apiKey: config.openaiMt.apiKey, model: config.openaiMt.model, logger }));
  }
  if (apertium !== false) {
    try {
      mtEngines.push(await createApertiumEngine({ ...apertium, logger }));
    } catch (error) {
      logger.warn({ err: error }, "Apertium is not available; offline translation is off");
    }
  }
  const mt = createMtRegistry(mtEngines, { logger, order: config.engineOrder.mt });

  const sttEngines: SttEngine[] = [];
  if (config.whisperCpp) sttEngines.push(createWhisperCppTranscriber({ baseUrl: config.whisperCpp.baseUrl, logger, media: speech.media }));
  if (config.openaiStt) {
    sttEngines.push(
      createOpenAiTranscriber({ baseUrl: config.openaiStt.baseUrl, apiKey: config.openaiStt.apiKey, model: config.openaiStt.model, logger, media: speech.media }),
    );
  }
  if (pocketsphinx !== false) {
    try {
      sttEngines.push(await createPocketsphinxEngine({ ...pocketsphinx, logger, media: speech.media }));
    } catch (error) {
      logger.warn({ err: error }, "pocketsphinx is not available; offline recognition is off");
    }
  }
  const stt = createSttRegistry(sttEngines, { logger, order: config.engineOrder.stt });
  const [mtReport, sttReport] = await Promise.all([mt.selfTest(), stt.selfTest()]);
  if (mtReport.passed.length + mtReport.dropped.length + sttReport.passed.length + sttReport.dropped.length > 0) {
    logger.info(
      { translation: mtReport.passed, translationDropped: mtReport.dropped.map((d) => d.engine), recognition: sttReport.passed, recognitionDropped: sttReport.dropped.map((d) => d.engine) },
      "speech services self-tested",
    );
  }

  const capabilities = (kind?: CapabilityKind): Capabilities => {
    const tts = speech.registry.capabilities();
    const known = (l: string): l is Language => (LANGUAGES as readonly string[]).includes(l);
    const table: Capabilities = {
      synthesis: (() => {
        const languages = tts.languages.filter(known);
        return { languages, engines: languages.map((language) => ({ language, engines: tts.chains[language] ?? [] })) };
      })(),
      recognition: (() => {
        const table = stt.capabilities();
        const languages = table.languages.filter(known);
        return { languages, engines: languages.map((language) => ({ language, engines: table.chains[language] ?? [] })) };
      })(),
      translation: {
        pairs: mt.capabilities().pairs.map((p) => ({ source: p.source, target: p.target, pivot: p.pivot ?? null, quality: p.quality, engines: p.engines })),
      },
      // Cloned voices: the clone engine's languages (match: those with an installed offline voice).
      cloning: { available: speech.clones !== undefined, languages: speech.clones?.languages().filter(known) ?? [] },
      voices: voiceCatalog(speech.registry),
    };
    return kind ? capabilitiesFor(kind, table) : table;
  };
  return { ...speech, mt, stt, capabilities };
}

/**
 * Answers the capability table of each kind of work this process runs, each in its kind's queue group,
 * live from the engines: a voice or engine dropped after start (failing on first use or at run time) is
 * no longer claimed. A kind this process does not run is left to the processes that do.
 */
export async function serveCapabilities(bus: Bus, stack: Pick<EngineStack, "capabilities">, kinds: readonly CapabilityKind[]): Promise<BusSubscription[]> {
  const catalog = createCatalogBus(bus, BUS_CATALOG);
  const subs: BusSubscription[] = [];
  try {
    for (const kind of kinds) subs.push(await catalog.serve(capabilityRequestName(kind), () => stack.capabilities(kind)));
  } catch (error) {
    await Promise.allSettled(subs.map((s) => s.stop()));
    throw error;
  }
  return subs;
}
