import { isLanguage, LANGUAGES, type Language } from "../languages.ts";
import { MtConfigError, TranslationNotSupportedError } from "./errors.ts";
import type { MtEngine, MtPair, MtQuality, TranslationRequest } from "./types.ts";

/** A pair in the registry's table, with the engine chosen for it. */
export interface MtRegistryPair extends MtPair {
  /** Id of the engine that translates this pair. */
  engine: string;
}

export interface MtCapabilityTable {
  /** One entry per pair (source order, then target order of LANGUAGES), with the best engine for it. */
  pairs: MtRegistryPair[];
}

export interface ResolvedTranslator {
  engine: MtEngine;
  pair: MtPair;
}

export interface MtRegistry {
  readonly engines: readonly MtEngine[];
  /** Every pair any engine offers, with the best engine per pair. */
  capabilities(): MtCapabilityTable;
  /** True when the text can be translated from `source` to `target` (always true for the same language). */
  supports(source: Language, target: Language): boolean;
  /** The engine used for a pair; throws TranslationNotSupportedError when none covers it. */
  resolve(source: Language, target: Language): ResolvedTranslator;
  /**
   * Translates with the best engine for the pair. Returns the text unchanged when source and target
   * are the same language; throws TranslationNotSupportedError (naming both languages) when no
   * engine covers the pair.
   */
  translate(request: TranslationRequest): Promise<string>;
}

const QUALITY_RANK: Record<MtQuality, number> = { llm: 3, neural: 2, "rule-based": 1 };

/** Higher is better: llm > neural > rule-based, and for the same kind a direct pair beats a pivot. */
export function mtPairRank(pair: MtPair): number {
  return QUALITY_RANK[pair.quality] * 2 + (pair.pivot === undefined ? 1 : 0);
}

/** Combines translation engines; for each pair the best one wins (engines listed first win ties). */
export function createMtRegistry(engines: readonly MtEngine[]): MtRegistry {
  const ids = new Set<string>();
  for (const engine of engines) {
    if (ids.has(engine.id)) throw new MtConfigError(`Two translation engines share the id "${engine.id}".`);
    ids.add(engine.id);
  }
  const best = new Map<string, { engine: MtEngine; pair: MtPair; rank: number }>();
  for (const engine of engines) {
    for (const pair of engine.capabilities().pairs) {
      if (pair.source === pair.target) continue;
      const key = `${pair.source}>${pair.target}`;
      const rank = mtPairRank(pair);
      const current = best.get(key);
      if (!current || rank > current.rank) best.set(key, { engine, pair, rank });
    }
  }
  const pairs: MtRegistryPair[] = [];
  for (const source of LANGUAGES) {
    for (const target of LANGUAGES) {
      const entry = best.get(`${source}>${target}`);
      if (entry) pairs.push({ ...entry.pair, engine: entry.engine.id });
    }
  }
  const table: MtCapabilityTable = { pairs };

  function resolve(source: Language, target: Language): ResolvedTranslator {
    const entry = best.get(`${source}>${target}`);
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
    capabilities: () => table,
    supports: (source, target) => (source === target && isLanguage(source)) || best.has(`${source}>${target}`),
    resolve,
    async translate(request) {
      if (request.source === request.target && isLanguage(request.source)) return request.text;
      const { engine } = resolve(request.source, request.target);
      return engine.translate(request);
    },
  };
}
