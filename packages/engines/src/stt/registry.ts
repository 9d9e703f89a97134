import { isLanguage, LANGUAGES, type Language } from "../languages.ts";
import { RecognitionNotSupportedError, SttConfigError } from "./errors.ts";
import type { SttEngine, SttEngineKind, Transcript } from "./types.ts";

export interface SttCapabilityTable {
  /** Languages at least one engine recognises, in the service's language order. */
  languages: Language[];
  /** The engine used for each language: service engines before offline ones, then in the order given. */
  engines: Partial<Record<Language, { id: string; kind: SttEngineKind }>>;
}

export interface SttRegistryTranscribeRequest {
  path: string;
  /** A language name; anything else is refused with RecognitionNotSupportedError. */
  language: string;
  signal?: AbortSignal | undefined;
}

export interface SttRegistry {
  readonly engines: readonly SttEngine[];
  /** The best engine for a language, if any. */
  engineFor(language: Language): SttEngine | undefined;
  capabilities(): SttCapabilityTable;
  /** Recognises speech with the best engine for the language; throws RecognitionNotSupportedError when none covers it. */
  transcribe(request: SttRegistryTranscribeRequest): Promise<Transcript>;
}

/** Combines recognition engines. A configured service engine wins over offline engines for its languages. */
export function createSttRegistry(engines: readonly SttEngine[]): SttRegistry {
  const ids = new Set<string>();
  for (const engine of engines) {
    if (ids.has(engine.id)) throw new SttConfigError(`Two speech recognition engines share the id "${engine.id}".`);
    ids.add(engine.id);
  }
  const ranked = engines
    .map((engine, order) => ({ engine, order, caps: engine.capabilities() }))
    .sort((a, b) => Number(b.caps.kind === "service") - Number(a.caps.kind === "service") || a.order - b.order);
  const best = new Map<Language, (typeof ranked)[number]>();
  for (const entry of ranked) {
    for (const language of entry.caps.languages) if (!best.has(language)) best.set(language, entry);
  }
  const languages = LANGUAGES.filter((l) => best.has(l));

  return {
    engines,
    engineFor: (language) => best.get(language)?.engine,
    capabilities() {
      const table: SttCapabilityTable = { languages: [...languages], engines: {} };
      for (const language of languages) {
        const entry = best.get(language);
        if (entry) table.engines[language] = { id: entry.engine.id, kind: entry.caps.kind };
      }
      return table;
    },
    async transcribe(request) {
      const { language } = request;
      if (!isLanguage(language)) {
        throw new RecognitionNotSupportedError(language, `"${language}" is not a language this service knows. Known languages: ${LANGUAGES.join(", ")}.`);
      }
      const entry = best.get(language);
      if (!entry) {
        const offered = languages.length > 0 ? ` Speech can be recognised in: ${languages.join(", ")}.` : "";
        throw new RecognitionNotSupportedError(language, `Speech recognition in ${language} is not available: no installed recognition engine understands ${language}.${offered}`);
      }
      return entry.engine.transcribe({ path: request.path, language, signal: request.signal });
    },
  };
}
