import type { Logger } from "@voiceloc/log";
import { timeEngine } from "@voiceloc/telemetry";
import { isLanguage, LANGUAGES, type Language } from "../languages.ts";
import { selfTestWord } from "../samples.ts";
import { MtConfigError, MtError, TranslationNotSupportedError, type MtErrorCode } from "./errors.ts";
import type { MtEngine, MtPair, MtQuality, TranslationRequest } from "./types.ts";

/** A pair in the registry's table, with the engine chosen for it. */
export interface MtRegistryPair extends MtPair {
  /** Id of the engine that translates this pair. */
  engine: string;
  /** Every working engine for this pair, in the order they are tried (the first is `engine`). */
  engines: string[];
}

export interface MtCapabilityTable {
  /** One entry per pair (source order, then target order of LANGUAGES), with the best engine for it. */
  pairs: MtRegistryPair[];
}

export interface ResolvedTranslator {
  engine: MtEngine;
  pair: MtPair;
}

export interface MtSelfTestReport {
  passed: string[];
  dropped: { engine: string; reason: string }[];
}

export interface MtRegistry {
  readonly engines: readonly MtEngine[];
  /** Every pair a working engine offers, with the best engine per pair. */
  capabilities(): MtCapabilityTable;
  /** True when the text can be translated from `source` to `target` (always true for the same language). */
  supports(source: Language, target: Language): boolean;
  /** The engine used for a pair; throws TranslationNotSupportedError when none covers it. */
  resolve(source: Language, target: Language): ResolvedTranslator;
  /**
   * Translates with the best engine for the pair; when it fails (not for the input's sake: a
   * crash, an HTTP 404/5xx, a timeout) the next engine that covers the pair translates instead.
   * Returns the text unchanged when source and target are the same language; throws
   * TranslationNotSupportedError (naming both languages) when no engine covers the pair.
   */
  translate(request: TranslationRequest): Promise<string>;
  /** Translates one word with every remote service engine; one that fails is dropped (logged why). */
  selfTest(): Promise<MtSelfTestReport>;
}

export interface MtRegistryOptions {
  logger?: Logger | undefined;
  /** Time limit of one self-test request. Default 30 s. */
  selfTestTimeoutMs?: number | undefined;
  /** Engine ids tried first, in this order, for every pair they cover (ENGINE_ORDER_MT); the others follow by quality. */
  order?: readonly string[] | undefined;
}

const QUALITY_RANK: Record<MtQuality, number> = { llm: 3, neural: 2, "rule-based": 1 };

/** Higher is better: llm > neural > rule-based, and for the same kind a direct pair beats a pivot. */
export function mtPairRank(pair: MtPair): number {
  return QUALITY_RANK[pair.quality] * 2 + (pair.pivot === undefined ? 1 : 0);
}

/** Whether another engine may succeed where this error came from (the input's faults never are). */
const MT_FALLS_BACK: Record<MtErrorCode, boolean> = {
  TRANSLATION_NOT_SUPPORTED: false,
  TRANSLATION_CANCELLED: false,
  MT_ENGINE_UNAVAILABLE: true,
  MT_CONFIG_INVALID: true,
  TRANSLATION_FAILED: true,
  TRANSLATION_OUT_OF_MEMORY: false,
  TRANSLATION_SERVICE_AUTH: true,
  TRANSLATION_SERVICE_REJECTED: true,
  TRANSLATION_SERVICE_RATE_LIMITED: true,
  TRANSLATION_SERVICE_UNAVAILABLE: true,
  TRANSLATION_SERVICE_TIMEOUT: true,
  TRANSLATION_SERVICE_BAD_RESPONSE: true,
};

function fallsBack(error: unknown): boolean {
  return error instanceof MtError ? MT_FALLS_BACK[error.code] : true;
}

interface Candidate {
  engine: MtEngine;
  pair: MtPair;
  rank: number;
  order: number;
}

/** Combines translation engines; for each pair the best one wins (engines listed first win ties), the others stand by. */
export function createMtRegistry(given: readonly MtEngine[], options: MtRegistryOptions = {}): MtRegistry {
  // Every call is timed (voiceloc_engine_duration_seconds) and traced.
  const engines = given.map((engine) => timeEngine(engine, ["translate"]));
  const ids = new Set<string>();
  for (const engine of engines) {
    if (ids.has(engine.id)) throw new MtConfigError(`Two translation engines share the id "${engine.id}".`);
    ids.add(engine.id);
  }
  const log = options.logger?.child({ component: "mt-registry" });
  const dropped = new Set<MtEngine>();
  const byPair = new Map<string, Candidate[]>();
  for (const [order, engine] of engines.entries()) {
    for (const pair of engine.capabilities().pairs) {
      if (pair.source === pair.target) continue;
      const key = `${pair.source}>${pair.target}`;
      const list = byPair.get(key) ?? [];
      list.push({ engine, pair, rank: mtPairRank(pair), order });
      byPair.set(key, list);
    }
  }
  const chosen = (engine: MtEngine): number => {
    const at = options.order?.indexOf(engine.id) ?? -1;
    return at === -1 ? Number.MAX_SAFE_INTEGER : at;
  };
  for (const list of byPair.values()) list.sort((a, b) => chosen(a.engine) - chosen(b.engine) || b.rank - a.rank || a.order - b.order);
  const candidates = (source: string, target: string): Candidate[] => (byPair.get(`${source}>${target}`) ?? []).filter((c) => !dropped.has(c.engine));

  function resolve(source: Language, target: Language): ResolvedTranslator {
    const entry = candidates(source, target)[0];
    if (!entry) {
      const known = isLanguage(source) && isLanguage(target);
      throw new TranslationNotSupportedError(
        String(source),
        String(target),
        known ? undefined : `Translation from ${String(source)} to ${String(target)} is not available: ${isLanguage(source) ? String(target) : String(source)} is not a supported language.`,
      );
    }
    return { engine: entry.engine, pair: entry.pair };
  }

  return {
    engines: [...engines],
    capabilities() {
      const pairs: MtRegistryPair[] = [];
      for (const source of LANGUAGES) {
        for (const target of LANGUAGES) {
          const chain = candidates(source, target);
          const entry = chain[0];
          if (entry) pairs.push({ ...entry.pair, engine: entry.engine.id, engines: chain.map((c) => c.engine.id) });
        }
      }
      return { pairs };
    },
    supports: (source, target) => (source === target && isLanguage(source)) || candidates(source, target).length > 0,
    resolve,
    async translate(request) {
      if (request.source === request.target && isLanguage(request.source)) return request.text;
      const chain = candidates(request.source, request.target);
      if (chain.length === 0) resolve(request.source, request.target);
      let first: unknown;
      for (const candidate of chain) {
        try {
          return await candidate.engine.translate(request);
        } catch (error) {
          if (!fallsBack(error) || request.signal?.aborted) throw error;
          first ??= error;
          log?.warn(
            { engine: candidate.engine.id, source: request.source, target: request.target, reason: error instanceof Error ? error.message : String(error) },
            "translation engine failed; trying the next engine for the pair",
          );
        }
      }
      throw first;
    },
    async selfTest() {
      const report: MtSelfTestReport = { passed: [], dropped: [] };
      await Promise.all(
        engines
          .filter((engine) => engine.capabilities().remote === true)
          .map(async (engine) => {
            const pairs = engine.capabilities().pairs;
            const pair = pairs.find((p) => p.source === "English" && p.target === "Spanish") ?? pairs[0];
            if (!pair) return;
            try {
              const out = await engine.translate({
                text: selfTestWord(pair.source),
                source: pair.source,
                target: pair.target,
                signal: AbortSignal.timeout(options.selfTestTimeoutMs ?? 30_000),
              });
              if (out.trim() === "") throw new Error("it answered with an empty translation");
              report.passed.push(engine.id);
            } catch (error) {
              const reason = error instanceof Error ? error.message : String(error);
              dropped.add(engine);
              report.dropped.push({ engine: engine.id, reason });
              log?.warn({ engine: engine.id, reason }, "translation engine failed its self-test and is not offered");
            }
          }),
      );
      return report;
    },
  };
}
