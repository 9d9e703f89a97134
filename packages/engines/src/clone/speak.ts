import { CloneError, LanguageNotSupportedError } from "../errors.ts";
import { isLanguage, type Language } from "../languages.ts";
import type { ResolvedVoice } from "../registry.ts";
import type { SynthesisResult, SynthesizeRequest, TtsCapabilities, TtsEngine, VoiceInfo } from "../types.ts";
import { CLONE_VOICE_PREFIX, type CloneEngine, type CloneEngineId, type ClonedVoice } from "./types.ts";

/** What each cloning engine's voices are, in plain words (voice lists and docs say it). */
export const CLONE_ENGINE_DESCRIPTIONS: Readonly<Record<CloneEngineId, string>> = {
  elevenlabs: "a voice cloned from a sample by ElevenLabs (instant voice cloning)",
  "voice-library": "a voice cloned from a sample by the configured speech server's voice library",
  match:
    "an approximation, not a clone: the offline voice nearest the sample's pitch, shifted to the sample's median pitch and speaking rate",
};

/** The voice name of a clone wherever a voice is named: `clone:<id>`. */
export function cloneVoiceName(clone: Pick<ClonedVoice, "id">): string {
  return `${CLONE_VOICE_PREFIX}${clone.id}`;
}

/**
 * The engine that speaks `clone` here: `clones` when it made the clone. A clone made by another engine
 * (the server's CLONE_ENGINE changed since, or cloning is off) cannot be spoken: `CloneError`
 * `CLONE_NOT_FOUND` in plain words.
 */
export function cloneEngineFor(clones: CloneEngine | undefined, clone: ClonedVoice): CloneEngine {
  if (clones === undefined || clones.id !== clone.engine) {
    throw new CloneError("CLONE_NOT_FOUND", `The cloned voice "${clone.name}" was made by ${clone.engine}, which this server does not run (CLONE_ENGINE).`);
  }
  return clones;
}

/** The clone's language for a request: one of the engine's languages, or `LanguageNotSupportedError`. */
export function cloneLanguage(clones: CloneEngine, clone: ClonedVoice, language: string): Language {
  if (!isLanguage(language) || !clones.languages().includes(language)) {
    throw new LanguageNotSupportedError(language, `The cloned voice "${clone.name}" cannot speak ${language}.`);
  }
  return language;
}

/** The clone as an entry of a voice list, for one language. */
export function cloneVoiceInfo(clone: ClonedVoice, language: Language): VoiceInfo {
  return {
    name: cloneVoiceName(clone),
    language,
    engine: clone.engine,
    description: `"${clone.name}": ${CLONE_ENGINE_DESCRIPTIONS[clone.engine]}`,
    quality: 100,
  };
}

/**
 * A `TtsEngine` that speaks every request in `clone` (whatever voice the request names), for code that
 * drives engines directly (the audio book's lanes). Throws `CLONE_NOT_FOUND` at once when `clones` did
 * not make the clone.
 */
export function cloneSpeaker(clones: CloneEngine | undefined, clone: ClonedVoice): TtsEngine {
  const engine = cloneEngineFor(clones, clone);
  const name = cloneVoiceName(clone);
  const capabilities = (): TtsCapabilities => {
    const languages = engine.languages();
    return { languages, voices: languages.map((l) => cloneVoiceInfo(clone, l)), cloning: true, maxInputChars: engine.maxInputChars };
  };
  return {
    id: `clone-${engine.id}`,
    capabilities,
    async synthesize(request: SynthesizeRequest): Promise<SynthesisResult> {
      const language = cloneLanguage(engine, clone, request.language);
      const result = await engine.synthesize(clone, { text: request.text, language, signal: request.signal, outPath: request.outPath });
      return { ...result, voice: name };
    },
  };
}

/** The clone as a resolved voice of `language` (`engine` speaks in the clone), like `TtsRegistry.resolve` answers. */
export function resolveClone(clones: CloneEngine | undefined, clone: ClonedVoice, language: string): ResolvedVoice {
  const engine = cloneSpeaker(clones, clone);
  return { engine, voice: cloneVoiceInfo(clone, cloneLanguage(cloneEngineFor(clones, clone), clone, language)) };
}
