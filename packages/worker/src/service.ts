import type { BlobStore } from "@voiceloc/blobs";
import { createCatalogBus, type Bus, type BusSubscription, type StopOptions } from "@voiceloc/bus";
import { BUS_CATALOG, STREAMS, capabilityRequestName, type Capabilities, type TaskKind } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import { InvalidWorkerArgumentError } from "./errors.ts";
import { createTaskWorker, type TaskCatalog, type TaskWorker, type TaskWorkerOptions, type TaskWorkName } from "./worker.ts";

/** How long stop() lets running tasks finish before aborting them (they are redelivered and resume from their checkpoints). */
export const DEFAULT_STOP_GRACE_MS = 10_000;

/** The settings every queue worker service shares (its own options add its engines and limits). */
export interface TaskServiceSettings {
  bus: Bus;
  blobs: BlobStore;
  logger: Logger;
  /** Tasks handled at once by this process. Default 1 (every kind of task keeps the cores busy). */
  concurrency?: number;
  /** Parent of the per-delivery work dirs. Default the OS temp dir. */
  workRoot?: string;
  /** Minimum time between two progress events of a delivery. Default 250 ms. */
  progressIntervalMs?: number;
  /** How long stop() without options lets running tasks finish before aborting them. Default 10 s. */
  stopGraceMs?: number;
  /**
   * The capability table of this kind of work, answered on `capabilities.<kind>` while the service
   * runs (read at each request, so an engine dropped at run time is no longer claimed). Not answered without it.
   */
  capabilities?: () => Capabilities;
}

export interface TaskServiceDefinition<C extends TaskCatalog, K extends TaskWorkName<C>> extends Pick<TaskWorkerOptions<C, K>, "handle" | "initialProgress"> {
  /** The service's options (they extend the shared settings). */
  settings: TaskServiceSettings;
  /** The bus catalogue whose `work[kind]` queue the service consumes (`BUS_CATALOG`; tests give their own). */
  catalog: C;
  kind: K;
  /** What the "ready" log line says besides the kind (languages, limits…). */
  describe?: () => Record<string, unknown>;
}

/** A queue worker as the process runs it. */
export interface TaskService<K extends TaskKind = TaskKind> {
  readonly name: K;
  /**
   * Provisions the work and event streams and the kind's queue (idempotent), then consumes it and
   * answers its capabilities. Idempotent while running; after stop() it starts again (waiting for the
   * stop to end). A failed start may be tried again.
   */
  start(): Promise<void>;
  /**
   * Stops taking tasks and waits for the running ones, up to `graceMs` (default the service's
   * stopGraceMs); those still running then are aborted and redelivered. Idempotent.
   */
  stop(options?: StopOptions): Promise<void>;
}

interface Running {
  worker: TaskWorker;
  capabilities: BusSubscription | undefined;
}

/**
 * The skeleton every queue worker (audio book, voice stream, subtitles) is built on: provisioning,
 * the task worker runtime (createTaskWorker), the capability answers, a restartable start and a stop
 * with grace. The service itself only brings its handler (its pipeline) and what it logs when ready.
 */
export function defineTaskService<const C extends TaskCatalog, K extends TaskWorkName<C>>(definition: TaskServiceDefinition<C, K>): TaskService<K> {
  const { kind, catalog, settings } = definition;
  const { bus } = settings;
  const contract = catalog.work[kind];
  if (contract === undefined) throw new InvalidWorkerArgumentError(`the bus catalogue has no work queue for ${kind}`);
  const queue = contract.queue;
  const concurrency = Math.max(1, Math.floor(settings.concurrency ?? 1));
  const graceMs = settings.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
  const logger = settings.logger.child({ component: kind });

  async function begin(): Promise<Running> {
    await bus.provision({ streams: [STREAMS.work, STREAMS.events], queues: [queue] });
    const worker = createTaskWorker({
      bus,
      catalog,
      blobs: settings.blobs,
      kind,
      logger: settings.logger,
      concurrency,
      handle: definition.handle,
      ...(definition.initialProgress === undefined ? {} : { initialProgress: definition.initialProgress }),
      ...(settings.progressIntervalMs === undefined ? {} : { progressIntervalMs: settings.progressIntervalMs }),
      ...(settings.workRoot === undefined ? {} : { workRoot: settings.workRoot }),
    });
    let capabilities: BusSubscription | undefined;
    try {
      await worker.start();
      const table = settings.capabilities;
      if (table !== undefined) capabilities = await createCatalogBus(bus, BUS_CATALOG).serve(capabilityRequestName<TaskKind>(kind), () => table());
    } catch (error) {
      await worker.stop({ graceMs: 0 });
      throw error;
    }
    logger.info({ concurrency, ...definition.describe?.() }, `${kind} service ready`);
    return { worker, capabilities };
  }

  let running: Promise<Running> | undefined;
  let stopping: Promise<void> = Promise.resolve();

  return {
    name: kind,
    async start() {
      if (running === undefined) {
        const previousStop = stopping;
        const attempt = previousStop.catch(() => undefined).then(begin);
        running = attempt;
        // A failed start (e.g. the bus was unreachable) may be tried again.
        attempt.catch(() => {
          if (running === attempt) running = undefined;
        });
      }
      await running;
    },
    stop(options) {
      const attempt = running;
      if (attempt === undefined) return stopping;
      running = undefined;
      stopping = (async () => {
        const started = await attempt.catch(() => undefined);
        if (started === undefined) return;
        await started.capabilities?.stop();
        await started.worker.stop(options ?? { graceMs });
        logger.info(`${kind} service stopped`);
      })();
      return stopping;
    },
  };
}
