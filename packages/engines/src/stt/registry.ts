import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "@voiceloc/log";
import { timeEngine } from "@voiceloc/telemetry";
import { withScratchDir } from "../cli.ts";
import { isLanguage, LANGUAGES, type Language } from "../languages.ts";
import { encodePcm16Wav } from "../wav.ts";
import { RecognitionNotSupportedError, SttConfigError, SttError, type SttErrorCode } from "./errors.ts";
import type { SttEngine, SttEngineKind, Transcript } from "./types.ts";

export interface SttCapabilityTable {
  /** Languages at least one engine recognises, in the service's language order. */
  languages: Language[];
  /** The engine used for each language: service engines before offline ones, then in the order given. */
  engines: Partial<Record<Language, { id: string; kind: SttEngineKind }>>;
  /** Every working engine for each language, in the order they are tried. */
  chains: Partial<Record<Language, string[]>>;
}

export interface SttRegistryTranscribeRequest {
  path: string;
  /** A language name; anything else is refused with RecognitionNotSupportedError. */
  language: string;
  signal?: AbortSignal | undefined;
}

export interface SttSelfTestReport {
  passed: string[];
  dropped: { engine: string; reason: string }[];
}

export interface SttRegistry {
  readonly engines: readonly SttEngine[];
  /** The best working engine for a language, if any. */
  engineFor(language: Language): SttEngine | undefined;
  capabilities(): SttCapabilityTable;
  /**
   * Recognises speech with the best engine for the language; when it fails (not for the input's
   * sake: a crash, an HTTP 404/5xx, a timeout) the next engine for the language tries. Throws
   * RecognitionNotSupportedError when none covers it.
   */
  transcribe(request: SttRegistryTranscribeRequest): Promise<Transcript>;
  /** Sends a tiny generated WAV to every service engine; one that fails is dropped (logged why). */
  selfTest(): Promise<SttSelfTestReport>;
}

export interface SttRegistryOptions {
  logger?: Logger | undefined;
  /** Time limit of one self-test request. Default 30 s. */
  selfTestTimeoutMs?: number | undefined;
  /** Engine ids tried first, in this order, for every language they cover (ENGINE_ORDER_STT); the others follow, services first. */
  order?: readonly string[] | undefined;
}

/** Whether another engine may succeed where this error came from (the input's faults never are). */
const STT_FALLS_BACK: Record<SttErrorCode, boolean> = {
  RECOGNITION_NOT_SUPPORTED: false,
  RECOGNITION_MEDIA_UNUSABLE: false,
  RECOGNITION_NO_SPEECH: false,
  RECOGNITION_CANCELLED: false,
  RECOGNITION_AUDIO_TOO_LARGE: true,
  RECOGNITION_OUT_OF_MEMORY: false,
  STT_ENGINE_UNAVAILABLE: true,
  STT_CONFIG_INVALID: true,
  RECOGNITION_FAILED: true,
  RECOGNITION_SERVICE_AUTH: true,
  RECOGNITION_SERVICE_REJECTED: true,
  RECOGNITION_SERVICE_RATE_LIMITED: true,
  RECOGNITION_SERVICE_UNAVAILABLE: true,
  RECOGNITION_SERVICE_TIMEOUT: true,
  RECOGNITION_SERVICE_BAD_RESPONSE: true,
};

function fallsBack(error: unknown): boolean {
  return error instanceof SttError ? STT_FALLS_BACK[error.code] : true;
}

/** Half a second of a quiet 440 Hz tone, 16 kHz mono: the self-test upload. */
function selfTestWav(): Buffer {
  const rate = 16_000;
  const samples = new Int16Array(rate / 2);
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round(2000 * Math.sin((2 * Math.PI * 440 * i) / rate));
  return encodePcm16Wav(samples, rate);
}

/** Combines recognition engines. A configured service engine wins over offline engines for its languages. */
export function createSttRegistry(given: readonly SttEngine[], options: SttRegistryOptions = {}): SttRegistry {
  // Every call is timed (voiceloc_engine_duration_seconds) and traced.
  const engines = given.map((engine) => timeEngine(engine, ["transcribe"]));
  const ids = new Set<string>();
  for (const engine of engines) {
    if (ids.has(engine.id)) throw new SttConfigError(`Two speech recognition engines share the id "${engine.id}".`);
    ids.add(engine.id);
  }
  const log = options.logger?.child({ component: "stt-registry" });
  const dropped = new Set<SttEngine>();
  const chosen = (engine: SttEngine): number => {
    const at = options.order?.indexOf(engine.id) ?? -1;
    return at === -1 ? Number.MAX_SAFE_INTEGER : at;
  };
  const ranked = engines
    .map((engine, order) => ({ engine, order, caps: engine.capabilities() }))
    .sort((a, b) => chosen(a.engine) - chosen(b.engine) || Number(b.caps.kind === "service") - Number(a.caps.kind === "service") || a.order - b.order);
  const chainFor = (language: Language) => ranked.filter((e) => !dropped.has(e.engine) && e.caps.languages.includes(language));
  const liveLanguages = () => LANGUAGES.filter((l) => chainFor(l).length > 0);

  return {
    engines,
    engineFor: (language) => chainFor(language)[0]?.engine,
    capabilities() {
      const languages = liveLanguages();
      const table: SttCapabilityTable = { languages, engines: {}, chains: {} };
      for (const language of languages) {
        const chain = chainFor(language);
        const entry = chain[0];
        if (entry) table.engines[language] = { id: entry.engine.id, kind: entry.caps.kind };
        table.chains[language] = chain.map((e) => e.engine.id);
      }
      return table;
    },
    async transcribe(request) {
      const { language } = request;
      if (!isLanguage(language)) {
        throw new RecognitionNotSupportedError(language, `"${language}" is not a language this service knows. Known languages: ${LANGUAGES.join(", ")}.`);
      }
      const chain = chainFor(language);
      if (chain.length === 0) {
        const languages = liveLanguages();
        const offered = languages.length > 0 ? ` Speech can be recognised in: ${languages.join(", ")}.` : "";
        throw new RecognitionNotSupportedError(language, `Speech recognition in ${language} is not available: no installed recognition engine understands ${language}.${offered}`);
      }
      let first: unknown;
      for (const entry of chain) {
        try {
          return await entry.engine.transcribe({ path: request.path, language, signal: request.signal });
        } catch (error) {
          if (!fallsBack(error) || request.signal?.aborted) throw error;
          first ??= error;
          log?.warn(
            { engine: entry.engine.id, language, reason: error instanceof Error ? error.message : String(error) },
            "recognition engine failed; trying the next engine for the language",
          );
        }
      }
      throw first;
    },
    async selfTest() {
      const report: SttSelfTestReport = { passed: [], dropped: [] };
      await Promise.all(
        ranked
          .filter((entry) => entry.caps.kind === "service")
          .map(async ({ engine, caps }) => {
            const language = caps.languages.includes("English") ? "English" : caps.languages[0];
            if (language === undefined) return;
            try {
              await withScratchDir(async (dir) => {
                const path = join(dir, "self-test.wav");
                await writeFile(path, selfTestWav());
                await engine.transcribe({ path, language, signal: AbortSignal.timeout(options.selfTestTimeoutMs ?? 30_000) });
              });
              report.passed.push(engine.id);
            } catch (error) {
              // A tone has no words: a service that says so answered properly.
              if (error instanceof SttError && error.code === "RECOGNITION_NO_SPEECH") {
                report.passed.push(engine.id);
                return;
              }
              const reason = error instanceof Error ? error.message : String(error);
              dropped.add(engine);
              report.dropped.push({ engine: engine.id, reason });
              log?.warn({ engine: engine.id, reason }, "recognition engine failed its self-test and is not offered");
            }
          }),
      );
      return report;
    },
  };
}
