import { LanguageNotSupportedError, TtsConfigError, UnknownVoiceError, VoiceLanguageMismatchError } from "./errors.ts";
import { isLanguage, LANGUAGES, type Language } from "./languages.ts";
import type { TtsEngine, VoiceInfo } from "./types.ts";

export interface TtsCapabilityTable {
  /** Languages with at least one voice, in the service's language order. */
  languages: Language[];
  /** Every voice, best first within each language. */
  voices: VoiceInfo[];
  /** The default voice name per supported language. */
  defaults: Partial<Record<Language, string>>;
  /** Whether any engine can clone a voice. */
  cloning: boolean;
}

export interface ResolvedVoice {
  engine: TtsEngine;
  voice: VoiceInfo;
}

export interface TtsRegistry {
  readonly engines: readonly TtsEngine[];
  /** Voices for a language, most natural first. */
  voicesFor(language: Language): VoiceInfo[];
  /** The most natural installed voice for a language (flite/festival before espeak-ng), if any. */
  defaultVoice(language: Language): VoiceInfo | undefined;
  /**
   * The engine and voice for a request. Throws LanguageNotSupportedError, UnknownVoiceError or
   * VoiceLanguageMismatchError (all naming the language or voice).
   */
  resolve(language: string, voiceName?: string): ResolvedVoice;
  capabilities(): TtsCapabilityTable;
}

/** Combines engines into one table of voices. Engines listed first win ties in quality. */
export function createTtsRegistry(engines: readonly TtsEngine[]): TtsRegistry {
  const ids = new Set<string>();
  for (const engine of engines) {
    if (ids.has(engine.id)) throw new TtsConfigError(`Two speech engines share the id "${engine.id}".`);
    ids.add(engine.id);
  }
  const entries: { voice: VoiceInfo; engine: TtsEngine; order: number }[] = [];
  for (const engine of engines) {
    for (const voice of engine.capabilities().voices) entries.push({ voice, engine, order: entries.length });
  }
  entries.sort((a, b) => b.voice.quality - a.voice.quality || a.order - b.order);
  const byLanguage = new Map<Language, typeof entries>();
  for (const entry of entries) {
    const list = byLanguage.get(entry.voice.language) ?? [];
    list.push(entry);
    byLanguage.set(entry.voice.language, list);
  }
  const languages = LANGUAGES.filter((l) => byLanguage.has(l));
  const defaults: Partial<Record<Language, string>> = {};
  for (const language of languages) {
    const best = byLanguage.get(language)?.[0];
    if (best) defaults[language] = best.voice.name;
  }
  const allVoices = languages.flatMap((l) => (byLanguage.get(l) ?? []).map((e) => e.voice));
  const cloning = engines.some((e) => e.capabilities().cloning);

  return {
    engines,
    voicesFor: (language) => (byLanguage.get(language) ?? []).map((e) => e.voice),
    defaultVoice: (language) => byLanguage.get(language)?.[0]?.voice,
    resolve(language, voiceName) {
      if (!isLanguage(language)) {
        throw new LanguageNotSupportedError(language, `"${language}" is not a language this service knows. Known languages: ${LANGUAGES.join(", ")}.`);
      }
      const candidates = byLanguage.get(language) ?? [];
      if (voiceName === undefined || voiceName === "") {
        const best = candidates[0];
        if (!best) throw new LanguageNotSupportedError(language);
        return { engine: best.engine, voice: best.voice };
      }
      const match = candidates.find((e) => e.voice.name === voiceName);
      if (match) return { engine: match.engine, voice: match.voice };
      const elsewhere = entries.filter((e) => e.voice.name === voiceName);
      if (elsewhere.length > 0) {
        throw new VoiceLanguageMismatchError(voiceName, language, [...new Set(elsewhere.map((e) => e.voice.language))]);
      }
      throw new UnknownVoiceError(voiceName, candidates.map((e) => e.voice.name));
    },
    capabilities: () => ({ languages: [...languages], voices: [...allVoices], defaults: { ...defaults }, cloning }),
  };
}
