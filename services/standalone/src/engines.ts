/**
 * The engines one process runs, detected once at start and shared by its workers:
 * speech synthesis, translation, recognition and the ffmpeg toolkit; and the capability
 * table the process answers on the bus (SUBJECTS.capabilities).
 */
import type { Config } from "@voiceloc/config";
import { LANGUAGES, type Capabilities, type Language } from "@voiceloc/contracts";
import {
  createApertiumEngine,
  createMtRegistry,
  createOpenAiTranscriber,
  createOpenAiTranslator,
  createPocketsphinxEngine,
  createSttRegistry,
  type MtEngine,
  type MtRegistry,
  type SttEngine,
  type SttRegistry,
} from "@voiceloc/engines";
import type { Logger } from "@voiceloc/log";
import { createSpeechStack, voiceCatalog, type SpeechStack } from "@voiceloc/synthesis";

export interface EngineStack extends SpeechStack {
  mt: MtRegistry;
  stt: SttRegistry;
  capabilities(): Capabilities;
}

/** Settings of the speech stack the configuration does not carry (offline engine binaries, self-test limits). */
export type SpeechStackExtras = Pick<Parameters<typeof createSpeechStack>[0], "offline" | "selfTest">;

/**
 * Detects the engines and self-tests them before anything is claimed: each language's default
 * voice speaks a sentence, each configured HTTP service answers a tiny request (one word of speech,
 * a one-word translation, a half-second WAV to transcribe). What fails is not offered (logged why).
 */
export async function createEngineStack(config: Config, logger: Logger, extras: SpeechStackExtras = {}): Promise<EngineStack> {
  const speech = await createSpeechStack({ logger, ffmpegPath: config.ffmpegPath, openai: config.openaiTts, ...extras });
  const mtEngines: MtEngine[] = [];
  if (config.openaiMt) {
    mtEngines.push(createOpenAiTranslator({ baseUrl: config.openaiMt.baseUrl, apiKey: config.openaiMt.apiKey, model: config.openaiMt.model, logger }));
  }
  try {
    mtEngines.push(await createApertiumEngine({ logger }));
  } catch (error) {
    logger.warn({ err: error }, "Apertium is not available; offline translation is off");
  }
  const mt = createMtRegistry(mtEngines, { logger });

  const sttEngines: SttEngine[] = [];
  if (config.openaiStt) {
    sttEngines.push(
      createOpenAiTranscriber({ baseUrl: config.openaiStt.baseUrl, apiKey: config.openaiStt.apiKey, model: config.openaiStt.model, logger, media: speech.media }),
    );
  }
  try {
    sttEngines.push(await createPocketsphinxEngine({ logger, media: speech.media }));
  } catch (error) {
    logger.warn({ err: error }, "pocketsphinx is not available; offline recognition is off");
  }
  const stt = createSttRegistry(sttEngines, { logger });
  const [mtReport, sttReport] = await Promise.all([mt.selfTest(), stt.selfTest()]);
  if (mtReport.passed.length + mtReport.dropped.length + sttReport.passed.length + sttReport.dropped.length > 0) {
    logger.info(
      { translation: mtReport.passed, translationDropped: mtReport.dropped.map((d) => d.engine), recognition: sttReport.passed, recognitionDropped: sttReport.dropped.map((d) => d.engine) },
      "speech services self-tested",
    );
  }

  const capabilities = (): Capabilities => {
    const tts = speech.registry.capabilities();
    const known = (l: string): l is Language => (LANGUAGES as readonly string[]).includes(l);
    return {
      synthesis: { languages: tts.languages.filter(known) },
      recognition: { languages: stt.capabilities().languages.filter(known) },
      translation: {
        pairs: mt.capabilities().pairs.map((p) => ({ source: p.source, target: p.target, pivot: p.pivot ?? null, quality: p.quality })),
      },
      cloning: { available: tts.cloning, languages: tts.cloning ? tts.languages.filter(known) : [] },
      voices: voiceCatalog(speech.registry),
    };
  };
  return { ...speech, mt, stt, capabilities };
}
