import { createCatalogBus, type BusSubscription } from "@voiceloc/bus";
import { BUS_CATALOG } from "@voiceloc/contracts";
import { defineTaskService, type TaskService, type TaskServiceSettings } from "@voiceloc/worker";
import { rewrapBookCover } from "./cover.ts";
import { coreCount } from "./pool.ts";
import { audioBookResumedProgress, createAudioBookHandler, translationChunkChars, type AudioBookPipelineOptions } from "./pipeline.ts";

export interface AudioBookServiceOptions extends TaskServiceSettings, AudioBookPipelineOptions {
  /** Books handled at once by this worker. Default 1 (one book already uses every core). */
  concurrency?: number;
}

export type AudioBookService = TaskService<"audiobook">;

/**
 * The audio book worker: consumes BUS_CATALOG.work.audiobook and turns each text file into one MP3
 * (pipeline.ts), resuming from the chunks earlier deliveries stored. While it runs it also answers
 * `audiobook.cover` (cover.ts): a finished book re-wrapped with a new cover, no speech made again.
 */
export function createAudioBookService(options: AudioBookServiceOptions): AudioBookService {
  const partChars = translationChunkChars(options.chunkChars);
  const tasks = defineTaskService({
    settings: options,
    catalog: BUS_CATALOG,
    kind: "audiobook",
    initialProgress: (task, ctx) => audioBookResumedProgress(task, ctx, partChars),
    handle: createAudioBookHandler(options),
    describe: () => ({ parallelism: options.parallelism ?? coreCount(), chunkChars: partChars, languages: options.tts.capabilities().languages }),
  });
  const logger = options.logger.child({ component: "audiobook-cover" });
  const coverDeps = { blobs: options.blobs, media: options.media, fetch: options.fetch, workRoot: options.workRoot };
  let covers: Promise<BusSubscription> | undefined;
  return {
    name: tasks.name,
    async start() {
      await tasks.start();
      covers ??= createCatalogBus(options.bus, BUS_CATALOG).serve(
        "audiobook.cover",
        async (request, { refuse }) => {
          const log = logger.child({ requestId: request.request_id, account: request.account_id, taskId: request.task_id });
          const outcome = await rewrapBookCover(coverDeps, request, log);
          return outcome.ok ? outcome.reply : refuse(outcome.code, outcome.message);
        },
        { onInternalError: (error) => logger.error({ err: error }, "re-wrapping a book's cover failed") },
      );
      covers.catch(() => (covers = undefined));
      await covers;
    },
    async stop(stopOptions) {
      const serving = covers;
      covers = undefined;
      await (await serving?.catch(() => undefined))?.stop();
      await tasks.stop(stopOptions);
    },
  };
}
