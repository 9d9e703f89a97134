import { NoRespondersError, RequestTimeoutError, createCatalogBus, type Bus, type ReplyErrorCode } from "@voiceloc/bus";
import { BUS_CATALOG, type BusCatalogue, type Capabilities } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import { HttpProblem } from "../http/errors.ts";

export interface CapabilitySource {
  /** The engines' capability table, or null when no worker answers (nothing to check against). */
  get(): Promise<Capabilities | null>;
}

/** The capability table has no refusals of its own: only the bus's system codes, each a worker's fault. */
const CAPABILITY_ANSWERS: Record<ReplyErrorCode<BusCatalogue, "capabilities">, () => HttpProblem> = {
  invalid_request: () => new HttpProblem(502, "capabilities_failed", "The capability table could not be read: the worker did not accept the request."),
  internal: () => new HttpProblem(502, "capabilities_failed", "The capability table could not be read: the worker failed. Retry later."),
};

/** Asks the workers for their capability table over the bus; cached for a short while. */
export function busCapabilities(bus: Bus, logger: Logger, ttlMs = 30_000): CapabilitySource {
  const catalog = createCatalogBus(bus, BUS_CATALOG);
  let cached: { at: number; value: Capabilities } | undefined;
  return {
    async get() {
      if (cached && Date.now() - cached.at < ttlMs) return cached.value;
      let result;
      try {
        result = await catalog.request("capabilities", {});
      } catch (error) {
        if (error instanceof NoRespondersError || error instanceof RequestTimeoutError) {
          logger.debug({ err: error }, "no worker answered the capability request");
          return null;
        }
        throw error;
      }
      if (!result.ok) throw CAPABILITY_ANSWERS[result.code]();
      cached = { at: Date.now(), value: result.reply };
      return result.reply;
    },
  };
}
