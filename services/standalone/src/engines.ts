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

export async function createEngineStack(config: Config, logger: Logger): Promise<EngineStack> {
  const speech = await createSpeechStack({ logger, ffmpegPath: config.ffmpegPath, openai: config.openaiTts });
  const mtEngines: MtEngine[] = [];
  if (config.openaiMt) {
    mtEngines.push(createOpenAiTranslator({ baseUrl: config.openaiMt.baseUrl, apiKey: config.openaiMt.apiKey, model: config.openaiMt.model, logger }));
  }
  try {
    mtEngines.push(await createApertiumEngine({ logger }));
  } catch (error) {
    logger.warn({ err: error }, "Apertium is not available; offline translation is off");
  }
  const mt = createMtRegistry(mtEngines);

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
  const stt = createSttRegistry(sttEngines);

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
