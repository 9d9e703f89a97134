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
  createOpenAiTranslator,
  type MtEngine,
  type MtRegistry,
} from "@voiceloc/engines";
import type { Logger } from "@voiceloc/log";
import { createSpeechStack, type SpeechStack } from "@voiceloc/synthesis";

export interface EngineStack extends SpeechStack {
  mt: MtRegistry;
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

  const capabilities = (): Capabilities => {
    const tts = speech.registry.capabilities();
    const known = (l: string): l is Language => (LANGUAGES as readonly string[]).includes(l);
    return {
      synthesis: { languages: tts.languages.filter(known) },
      recognition: { languages: [] },
      translation: {
        pairs: mt.capabilities().pairs.map((p) => ({ source: p.source, target: p.target, pivot: p.pivot ?? null, quality: p.quality })),
      },
      cloning: { available: tts.cloning, languages: tts.cloning ? tts.languages.filter(known) : [] },
      voices: tts.voices.filter((v) => known(v.language)).map((v) => ({
        name: v.name,
        language: v.language,
        engine: v.engine,
        gender: v.gender ?? null,
        description: v.description,
        default: tts.defaults[v.language] === v.name,
      })),
    };
  };
  return { ...speech, mt, capabilities };
}
