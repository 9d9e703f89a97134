import { NoRespondersError, RequestTimeoutError, type Bus } from "@voiceloc/bus";
import { CapabilitiesSchema, SUBJECTS, type Capabilities } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";

export interface CapabilitySource {
  /** The engines' capability table, or null when no worker answers (nothing to check against). */
  get(): Promise<Capabilities | null>;
}

/** Asks the workers for their capability table over the bus; cached for a short while. */
export function busCapabilities(bus: Bus, logger: Logger, ttlMs = 30_000): CapabilitySource {
  let cached: { at: number; value: Capabilities } | undefined;
  return {
    async get() {
      if (cached && Date.now() - cached.at < ttlMs) return cached.value;
      try {
        const value = await bus.request(SUBJECTS.capabilities, {}, { timeoutMs: 10_000, schema: CapabilitiesSchema });
        cached = { at: Date.now(), value };
        return value;
      } catch (error) {
        if (error instanceof NoRespondersError || error instanceof RequestTimeoutError) {
          logger.debug({ err: error }, "no worker answered the capability request");
          return null;
        }
        throw error;
      }
    },
  };
}
