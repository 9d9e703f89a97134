import { NoRespondersError, RequestTimeoutError, createCatalogBus, type Bus, type ReplyErrorCode } from "@voiceloc/bus";
import {
  BUS_CATALOG,
  CAPABILITY_KINDS,
  capabilityRequestName,
  mergeCapabilities,
  type BusCatalogue,
  type Capabilities,
  type CapabilityKind,
} from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import { HttpProblem } from "../http/errors.ts";

export interface CapabilitySource {
  /**
   * With a kind: the capability table of that kind's workers, or null when none answers (scaled to zero,
   * not started yet: nothing to check against, the task waits in its queue). Without: the union of the
   * tables of every kind that answers (what at least one operation can do), or null when none answers.
   */
  get(kind?: CapabilityKind): Promise<Capabilities | null>;
}

/** The capability tables have no refusals of their own: only the bus's system codes, each a worker's fault. */
const CAPABILITY_ANSWERS: Record<ReplyErrorCode<BusCatalogue, "capabilities.synthesis">, () => HttpProblem> = {
  invalid_request: () => new HttpProblem(502, "capabilities_failed", "The capability table could not be read: the worker did not accept the request."),
  internal: () => new HttpProblem(502, "capabilities_failed", "The capability table could not be read: the worker failed. Retry later."),
};

/**
 * Asks the workers of each kind for their capability table over the bus (one queue group per kind, so a
 * synthesis worker never answers for the audio book workers); each kind's answer is cached for a short while.
 */
export function busCapabilities(bus: Bus, logger: Logger, ttlMs = 30_000): CapabilitySource {
  const catalog = createCatalogBus(bus, BUS_CATALOG);
  const cached = new Map<CapabilityKind, { at: number; value: Capabilities }>();
  const ofKind = async (kind: CapabilityKind): Promise<Capabilities | null> => {
    const hit = cached.get(kind);
    if (hit && Date.now() - hit.at < ttlMs) return hit.value;
    let result;
    try {
      result = await catalog.request(capabilityRequestName(kind), {});
    } catch (error) {
      if (error instanceof NoRespondersError || error instanceof RequestTimeoutError) {
        logger.debug({ err: error, kind }, "no worker answered the capability request");
        return null;
      }
      throw error;
    }
    if (!result.ok) throw CAPABILITY_ANSWERS[result.code]();
    cached.set(kind, { at: Date.now(), value: result.reply });
    return result.reply;
  };
  return {
    async get(kind) {
      if (kind) return ofKind(kind);
      const tables = (await Promise.all(CAPABILITY_KINDS.map(ofKind))).filter((t): t is Capabilities => t !== null);
      return tables.length > 0 ? mergeCapabilities(tables) : null;
    },
  };
}
