import type { Logger } from "@voiceloc/log";
import { createEspeakEngine, type EspeakOptions } from "./espeak.ts";
import { TtsEngineUnavailableError } from "./errors.ts";
import { createFestivalEngine, type FestivalOptions } from "./festival.ts";
import { createFliteEngine, type FliteOptions } from "./flite.ts";
import type { TtsEngine } from "./types.ts";

export interface DetectOfflineEnginesOptions {
  logger: Logger;
  espeak?: Omit<EspeakOptions, "logger"> | false;
  flite?: Omit<FliteOptions, "logger"> | false;
  festival?: Omit<FestivalOptions, "logger"> | false;
}

/**
 * Creates every offline engine that is installed (flite, festival, espeak-ng, in that order of
 * preference); missing ones are logged and skipped.
 */
export async function detectOfflineEngines(options: DetectOfflineEnginesOptions): Promise<TtsEngine[]> {
  const { logger } = options;
  const attempts: [string, (() => Promise<TtsEngine>) | undefined][] = [
    ["flite", options.flite === false ? undefined : () => createFliteEngine({ ...options.flite, logger })],
    ["festival", options.festival === false ? undefined : () => createFestivalEngine({ ...options.festival, logger })],
    ["espeak", options.espeak === false ? undefined : () => createEspeakEngine({ ...options.espeak, logger })],
  ];
  const found = await Promise.all(
    attempts.map(async ([name, create]) => {
      if (!create) return undefined;
      try {
        return await create();
      } catch (error) {
        if (!(error instanceof TtsEngineUnavailableError)) throw error;
        logger.info({ engine: name, reason: error.message }, "speech engine not available");
        return undefined;
      }
    }),
  );
  return found.filter((e): e is TtsEngine => e !== undefined);
}
