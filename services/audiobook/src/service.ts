import { BUS_CATALOG } from "@voiceloc/contracts";
import { defineTaskService, type TaskService, type TaskServiceSettings } from "@voiceloc/worker";
import { coreCount } from "./pool.ts";
import { audioBookResumedProgress, createAudioBookHandler, translationChunkChars, type AudioBookPipelineOptions } from "./pipeline.ts";

export interface AudioBookServiceOptions extends TaskServiceSettings, AudioBookPipelineOptions {
  /** Books handled at once by this worker. Default 1 (one book already uses every core). */
  concurrency?: number;
}

export type AudioBookService = TaskService<"audiobook">;

/**
 * The audio book worker: consumes BUS_CATALOG.work.audiobook and turns each text file into one MP3
 * (pipeline.ts), resuming from the chunks earlier deliveries stored.
 */
export function createAudioBookService(options: AudioBookServiceOptions): AudioBookService {
  const partChars = translationChunkChars(options.chunkChars);
  return defineTaskService({
    settings: options,
    catalog: BUS_CATALOG,
    kind: "audiobook",
    initialProgress: (task, ctx) => audioBookResumedProgress(task, ctx, partChars),
    handle: createAudioBookHandler(options),
    describe: () => ({ parallelism: options.parallelism ?? coreCount(), chunkChars: partChars, languages: options.tts.capabilities().languages }),
  });
}
