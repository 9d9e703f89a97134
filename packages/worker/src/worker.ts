import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DEFAULT_BACKOFF_MS,
  createCatalogBus,
  outcome,
  type Bus,
  type BusCatalog,
  type BusSubscription,
  type EventContract,
  type StopOptions,
  type WorkContext,
  type WorkContract,
  type WorkName,
  type WorkOutcome,
  type WorkPayload,
} from "@voiceloc/bus";
import type { BlobStore } from "@voiceloc/blobs";
import type { TaskEvent, TaskKind } from "@voiceloc/contracts";
import { withLogContext, type Logger } from "@voiceloc/log";
import { cleanupCheckpoints, createCheckpoints, type DeliveryCheckpoints, type TaskCheckpoints } from "./checkpoints.ts";
import { InvalidWorkerArgumentError, TaskInputError, WorkerStoppedError, errorMessage } from "./errors.ts";
import { DeliveryEvents } from "./events.ts";
import { isValidTaskId, resultKeyFor } from "./keys.ts";
import { classifyFailure } from "./policy.ts";
import { plainReason } from "./reason.ts";
import { startTaskTelemetry, traceIdOf } from "@voiceloc/telemetry";

/** What a handler returns on success: blob keys carried by the `completed` event. */
export interface TaskResult {
  /** Blob key of the result (usually `ctx.resultKey(ext)`), or null when the task has no result file. */
  resultKey: string | null;
  /** Blob key of a subtitle file (subtitle tasks). */
  subtitleKey?: string | null;
  /** Chapters of a finished audio book, carried by the `completed` event to the record. */
  chapters?: Array<{ title: string; start_seconds: number; end_seconds: number }>;
  /** What went wrong without failing the task, in plain words, carried to the record. */
  warnings?: string[];
  /** How a voice stream's lines were fitted to their slots (voice streams). */
  timing?: { lines_sped_up: number; largest_factor: number };
}

/** Everything a handler gets besides the task itself; valid during one delivery. */
export interface TaskContext {
  taskId: string;
  kind: TaskKind;
  /** 1 on the first delivery. */
  deliveryCount: number;
  /** The last delivery: a failure now fails the task instead of retrying it. */
  lastAttempt: boolean;
  /**
   * Aborted when the lease was lost (the task is being redelivered elsewhere: stop, nothing more is
   * published) or when stop() ran out of grace. Pass it to child processes and fetches.
   */
  signal: AbortSignal;
  /** Child logger carrying taskId, subject and deliveryCount. */
  logger: Logger;
  /** A fresh temp dir, removed (with everything in it) after the delivery. */
  workDir: string;
  /**
   * Reports progress as a `processing` event: percent clamped to 0–100 and never below the last one
   * published in this delivery, throttled (first and latest values always go out). `stage` is logged only
   * (the task event has no field for it). Never throws; publishing failures are logged.
   */
  progress(percent: number, stage?: string): void;
  /** In-progress ack; the runtime also sends one every ackWait/4 while the handler runs. */
  working(): void;
  checkpoints: TaskCheckpoints;
  /** `results/<kind>/<task id>.<ext>` */
  resultKey(ext: string): string;
}

/**
 * Does the work of one task. Return the result keys on success; throw to fail the delivery. What a
 * thrown error means is decided by the one failure policy (`classifyFailure`, policy.ts): engine,
 * media, fetch, storage and bus errors are classified by their codes; a TaskInputError fails the task
 * at once, a RetryableTaskError is retried with back-off, anything unknown is a bug (retried, reported
 * as an internal error). A bare string is shorthand for `{ resultKey }`.
 */
export type TaskHandler<T> = (task: T, ctx: TaskContext) => Promise<TaskResult | string>;

/** What `initialProgress` may read: the task's checkpoints, before the opening event is published. */
export interface ResumeContext {
  taskId: string;
  deliveryCount: number;
  checkpoints: TaskCheckpoints;
  logger: Logger;
  signal: AbortSignal;
}

/**
 * What the worker needs of a bus catalogue: work queues named after task kinds whose payloads carry a
 * task id (other queues, e.g. webhook deliveries, may sit beside them), and the task event family.
 * `BUS_CATALOG` (contracts) is one; tests give one with their own queues.
 */
export interface TaskCatalog extends BusCatalog {
  readonly work: { readonly [K in TaskKind]?: WorkContract<{ task_id: string }> } & { readonly [name: string]: WorkContract<unknown> };
  readonly events: { readonly task: EventContract<TaskEvent> };
}

/** A work queue of the catalogue named after a task kind. */
export type TaskWorkName<C extends TaskCatalog> = WorkName<C> & TaskKind;

export interface TaskWorkerOptions<C extends TaskCatalog, K extends TaskWorkName<C>> {
  /** The untyped bus; the worker goes through `createCatalogBus(bus, catalog)` only. */
  bus: Bus;
  /**
   * The bus catalogue (`BUS_CATALOG`): the worker consumes `catalog.work[kind]` (provisioned; its
   * payload schema parses each message, a payload it rejects is dead-lettered by the bus; its
   * backoffMs drives retries) and publishes `catalog.events.task`.
   */
  catalog: C;
  blobs: BlobStore;
  kind: K;
  logger: Logger;
  /** Tasks handled at once by this worker. Default 1. */
  concurrency?: number;
  handle: TaskHandler<WorkPayload<C, K>>;
  /**
   * The percent already done, from the checkpoints of earlier deliveries; it becomes the progress of
   * the delivery's opening event (0 without it). Keep it cheap (it runs before the handler) and never
   * above what the handler's own reports would say for the same checkpoints. Errors are logged and
   * count as 0.
   */
  initialProgress?: (task: WorkPayload<C, K>, ctx: ResumeContext) => Promise<number> | number;
  /** Minimum time between two progress events of a delivery. Default 250 ms. */
  progressIntervalMs?: number;
  /** Parent of the per-delivery work dirs. Default the OS temp dir. */
  workRoot?: string;
  /** Passed to consumeWork (how long one pull waits on the server). */
  pullExpiresMs?: number;
}

export interface TaskWorker {
  /** Starts consuming the queue. Idempotent; rejects after stop(). */
  start(): Promise<void>;
  /**
   * Stops pulling and waits for in-flight tasks to settle (drain). With graceMs, handlers still running
   * after it are aborted (their signal) and their tasks redelivered, without a failed event. Idempotent.
   */
  stop(options?: StopOptions): Promise<void>;
}

/** How one delivery ended, before settling; the closed set the runtime switches over. */
type Verdict =
  | { kind: "completed"; result: TaskResult }
  | { kind: "input_error"; error: unknown; reason: string }
  | { kind: "error"; error: unknown; reason: string; retryAfterMs: number | undefined; bug: boolean }
  | { kind: "lease_lost"; reason: unknown }
  | { kind: "overtaken"; error: unknown }
  | { kind: "stopping"; error: unknown };

const KIND_LABELS: Record<TaskKind, string> = {
  audiobook: "The audio book",
  "voice-stream": "The voice stream",
  subtitle: "The subtitles",
};

function abortCode(signal: AbortSignal): string | undefined {
  if (!signal.aborted) return undefined;
  const code = (signal.reason as { code?: unknown } | null | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}

/** The task id of a parsed work payload (every task catalogue's payloads carry one; checked by isValidTaskId). */
function taskIdOf(data: unknown): string {
  const id = typeof data === "object" && data !== null ? (data as { task_id?: unknown }).task_id : undefined;
  return typeof id === "string" ? id : "";
}

function toResult(value: unknown): TaskResult | undefined {
  if (typeof value === "string") return { resultKey: value };
  if (typeof value !== "object" || value === null) return undefined;
  const r = value as { resultKey?: unknown; subtitleKey?: unknown; timing?: TaskResult["timing"] };
  const keyOk = (k: unknown) => k === null || typeof k === "string";
  if (!keyOk(r.resultKey)) return undefined;
  if (r.subtitleKey !== undefined && !keyOk(r.subtitleKey)) return undefined;
  const resultKey = r.resultKey as string | null;
  const extra = value as Pick<TaskResult, "chapters" | "warnings">;
  return {
    resultKey,
    ...(r.subtitleKey === undefined ? {} : { subtitleKey: r.subtitleKey as string | null }),
    ...(Array.isArray(extra.chapters) ? { chapters: extra.chapters } : {}),
    ...(Array.isArray(extra.warnings) ? { warnings: extra.warnings } : {}),
    ...(r.timing === undefined ? {} : { timing: r.timing }),
  };
}

function classify(error: unknown, signal: AbortSignal): Verdict {
  const aborted = abortCode(signal);
  if (aborted === "lease_expired") return { kind: "lease_lost", reason: signal.reason };
  if (signal.aborted && !(error instanceof TaskInputError)) return { kind: "stopping", error };
  const failure = classifyFailure(error);
  switch (failure.class) {
    case "input":
      return { kind: "input_error", error, reason: failure.reason };
    case "retryable":
      return { kind: "error", error, reason: failure.reason, retryAfterMs: failure.retryAfterMs, bug: false };
    case "bug":
      return { kind: "error", error, reason: failure.reason, retryAfterMs: undefined, bug: true };
    default: {
      const unreachable: never = failure;
      throw new Error(`unhandled failure ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * The runtime shared by every worker service: consumes a work queue with bounded concurrency and
 * heartbeats, runs `handle` per delivery with progress events, checkpoints and a work dir, and settles
 * every delivery explicitly:
 *
 * - success → `completed` event (progress 100, result keys), checkpoints deleted, ack;
 * - an input failure (policy.ts) → `failed` event with its plain reason, checkpoints deleted, ack (no retry);
 * - a retryable failure or a bug → retry after the queue's back-off; on the last delivery a `failed`
 *   event ("… could not be completed after N attempts: <reason>"), checkpoints deleted, ack;
 * - lease lost → nothing more is published (the redelivery owns the task);
 * - overtaken (a failure after the task's checkpoints were removed under this delivery: another delivery
 *   finished the task) → nothing more is published, ack, an info line (the failure was the missing files);
 * - aborted by stop() → retried promptly (on the last delivery the bus dead-letters it).
 *
 * If the terminal event cannot be published, the delivery is retried (on the last one the bus
 * dead-letters it and the gateway fails the task).
 */
export function createTaskWorker<const C extends TaskCatalog, K extends TaskWorkName<C>>(options: TaskWorkerOptions<C, K>): TaskWorker {
  type T = WorkPayload<C, K>;
  const { blobs, kind, handle } = options;
  const bus = createCatalogBus(options.bus, options.catalog);
  // Task events through a catalogue holding only their family: its payload type is TaskEvent itself.
  const taskEvents = createCatalogBus(options.bus, { work: {}, events: { task: options.catalog.events.task }, requests: {} });
  const contract = options.catalog.work[kind as TaskKind];
  if (contract === undefined) throw new InvalidWorkerArgumentError(`the bus catalogue has no work queue for ${kind}`);
  const queue = contract.queue;
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new InvalidWorkerArgumentError("concurrency must be an integer >= 1");
  const intervalMs = options.progressIntervalMs ?? 250;
  if (!(intervalMs >= 0)) throw new InvalidWorkerArgumentError("progressIntervalMs must be >= 0");
  const backoff = queue.backoffMs && queue.backoffMs.length > 0 ? queue.backoffMs : DEFAULT_BACKOFF_MS;
  const workRoot = options.workRoot ?? tmpdir();
  const log = options.logger.child({ component: "worker", kind, queue: queue.name });

  const backoffFor = (deliveryCount: number): number => {
    const index = Math.min(Math.max(deliveryCount - 1, 0), backoff.length - 1);
    return backoff[index] ?? 1_000;
  };

  async function deleteCheckpoints(taskId: string, dlog: Logger): Promise<void> {
    try {
      const deleted = await cleanupCheckpoints(blobs, taskId);
      if (deleted > 0) dlog.debug({ deleted }, "checkpoints deleted");
    } catch (error) {
      dlog.warn({ err: error }, "could not delete checkpoints");
    }
  }

  async function settle(verdict: Verdict, work: WorkContext<T>, events: DeliveryEvents, taskId: string, dlog: Logger): Promise<WorkOutcome> {
    const terminal = async (publish: () => Promise<void>, what: string): Promise<WorkOutcome | undefined> => {
      try {
        await publish();
        return undefined;
      } catch (error) {
        const delayMs = backoffFor(work.deliveryCount);
        dlog.error({ err: error, delayMs, event: what }, "could not publish the terminal event; retrying the task");
        // The reason travels with a dead letter into the task's error: plain words only.
        return outcome.retry(delayMs, `the server could not record the ${what} state of the task.`);
      }
    };

    /** The one place a failure is written: always plain words (reason.ts). */
    const fail = (reason: string) => terminal(() => events.finish({ status: "failed", error: plainReason(reason) }), "failed");

    switch (verdict.kind) {
      case "completed": {
        const failedPublish = await terminal(
          () =>
            events.finish({
              status: "completed",
              resultKey: verdict.result.resultKey,
              ...(verdict.result.subtitleKey === undefined ? {} : { subtitleKey: verdict.result.subtitleKey }),
              ...(verdict.result.chapters === undefined ? {} : { chapters: verdict.result.chapters }),
              ...(verdict.result.warnings === undefined ? {} : { warnings: verdict.result.warnings }),
              ...(verdict.result.timing === undefined ? {} : { timing: verdict.result.timing }),
            }),
          "completed",
        );
        if (failedPublish) return failedPublish;
        await deleteCheckpoints(taskId, dlog);
        dlog.info({ resultKey: verdict.result.resultKey }, "task completed");
        return outcome.ack();
      }
      case "input_error": {
        const failedPublish = await fail(verdict.reason);
        if (failedPublish) return failedPublish;
        await deleteCheckpoints(taskId, dlog);
        dlog.info({ reason: verdict.reason, err: verdict.error }, "task failed: its input is at fault");
        return outcome.ack();
      }
      case "error": {
        const level = verdict.bug ? "error" : "warn";
        if (work.lastAttempt) {
          const failedPublish = await fail(`${KIND_LABELS[kind]} could not be completed after ${work.deliveryCount} attempts: ${verdict.reason}`);
          if (failedPublish) return failedPublish;
          await deleteCheckpoints(taskId, dlog);
          dlog.error({ err: verdict.error, reason: verdict.reason, bug: verdict.bug }, "task failed on its last attempt");
          return outcome.ack();
        }
        await events.abandon();
        const delayMs = verdict.retryAfterMs ?? backoffFor(work.deliveryCount);
        dlog[level]({ err: verdict.error, reason: verdict.reason, bug: verdict.bug, delayMs }, "task attempt failed; retrying");
        return outcome.retry(delayMs, plainReason(verdict.reason));
      }
      case "lease_lost": {
        await events.abandon();
        dlog.warn({ reason: errorMessage(verdict.reason) }, "lease lost; the task is being redelivered, this delivery publishes nothing more");
        // The bus ignores the outcome of a delivery whose lease expired.
        return outcome.retry(0, "lease lost");
      }
      case "overtaken": {
        await events.abandon();
        // What failed was the files the other delivery removed, not the task: nothing to warn about, nothing to publish.
        dlog.info("another delivery finished this task while this one ran; this delivery ends without a verdict");
        dlog.debug({ err: verdict.error }, "what failed once the other delivery had removed the task's checkpoints");
        return outcome.ack();
      }
      case "stopping": {
        await events.abandon();
        dlog.warn({ err: verdict.error }, "task aborted by shutdown; it will be redelivered");
        return outcome.retry(0, "worker stopping");
      }
      default: {
        const unreachable: never = verdict;
        throw new Error(`unhandled verdict ${JSON.stringify(unreachable)}`);
      }
    }
  }

  async function resumedProgress(task: T, ctx: ResumeContext): Promise<number> {
    if (options.initialProgress === undefined) return 0;
    try {
      const percent = await options.initialProgress(task, ctx);
      return typeof percent === "number" && Number.isFinite(percent) ? percent : 0;
    } catch (error) {
      ctx.logger.warn({ err: error }, "could not compute the progress already done; opening at 0");
      return 0;
    }
  }

  async function handleDelivery(work: WorkContext<T>): Promise<WorkOutcome> {
    const taskId = taskIdOf(work.data);
    const dlog = log.child({ taskId, subject: work.subject, deliveryCount: work.deliveryCount, ...traceIdOf(work.headers) });
    if (!isValidTaskId(taskId)) {
      dlog.error({ taskId: taskId.slice(0, 200) }, "work message with an unusable task id; dead-lettering it");
      return outcome.term("the work message has an unusable task id.");
    }
    // Counts and times the delivery and its stages; a span continuing the publisher's trace when tracing is on.
    const telemetry = startTaskTelemetry({ kind, taskId, deliveryCount: work.deliveryCount, headers: work.headers });
    const events = new DeliveryEvents({ publish: (event) => taskEvents.publishEvent("task", event), kind, taskId, deliveryCount: work.deliveryCount, signal: work.signal, logger: dlog, intervalMs });
    let workDir: string | undefined;
    let checkpoints: DeliveryCheckpoints | undefined;
    try {
      let verdict: Verdict;
      try {
        workDir = await mkdtemp(join(workRoot, `voiceloc-${kind}-`));
        const dir = workDir;
        checkpoints = createCheckpoints({ blobs, taskId, localDir: dir, signal: work.signal, working: () => work.working(), logger: dlog });
        const initial = await resumedProgress(work.data, { taskId, deliveryCount: work.deliveryCount, checkpoints, logger: dlog, signal: work.signal });
        await events.start(initial);
        dlog.debug({ lastAttempt: work.lastAttempt, initialProgress: initial }, "task delivery started");
        const ctx: TaskContext = {
          taskId,
          kind,
          deliveryCount: work.deliveryCount,
          lastAttempt: work.lastAttempt,
          signal: work.signal,
          logger: dlog,
          workDir: dir,
          progress: (percent, stage) => {
            if (stage !== undefined) telemetry.stage(stage);
            events.progress(percent, stage);
          },
          working: () => work.working(),
          checkpoints,
          resultKey: (ext) => resultKeyFor(kind, taskId, ext),
        };
        const returned: unknown = await telemetry.run(() => handle(work.data, ctx));
        const result = toResult(returned);
        verdict =
          result === undefined
            ? classify(new InvalidWorkerArgumentError(`handler returned an invalid result: ${errorMessage(returned)}`), work.signal)
            : { kind: "completed", result };
      } catch (error) {
        verdict = classify(error, work.signal);
      }
      if (abortCode(work.signal) === "lease_expired") verdict = { kind: "lease_lost", reason: work.signal.reason };
      // A redelivery whose task another delivery finished meanwhile (its checkpoints are gone) failed for that alone.
      if ((verdict.kind === "input_error" || verdict.kind === "error") && (await checkpoints?.vanished())) verdict = { kind: "overtaken", error: verdict.error };
      const settled = await settle(verdict, work, events, taskId, dlog);
      telemetry.end(settled.kind === "retry" || verdict.kind === "overtaken" ? "retried" : settled.kind === "ack" && verdict.kind === "completed" ? "completed" : "failed");
      return settled;
    } finally {
      telemetry.end("retried"); // settling threw: the bus hands the message back
      await events.abandon();
      if (workDir !== undefined) {
        await rm(workDir, { recursive: true, force: true }).catch((error: unknown) => {
          dlog.warn({ err: error, workDir }, "could not remove the work dir");
        });
      }
    }
  }

  /** A delivery with its task's id and kind on every line logged while it runs: engines, media, bus and store included. */
  function deliver(work: WorkContext<T>): Promise<WorkOutcome> {
    const taskId = taskIdOf(work.data);
    return isValidTaskId(taskId) ? withLogContext({ taskId, kind }, () => handleDelivery(work)) : handleDelivery(work);
  }

  let starting: Promise<void> | undefined;
  let subscription: BusSubscription | undefined;
  let stopping: Promise<void> | undefined;

  return {
    start() {
      if (stopping) return Promise.reject(new WorkerStoppedError());
      starting ??= (async () => {
        subscription = await bus.consumeWork(kind, deliver, {
          concurrency,
          heartbeat: true,
          ...(options.pullExpiresMs === undefined ? {} : { pullExpiresMs: options.pullExpiresMs }),
        });
        log.info({ concurrency }, "task worker started");
      })();
      return starting;
    },
    stop(stopOptions) {
      stopping ??= (async () => {
        await starting?.catch(() => undefined);
        if (subscription === undefined) return;
        await subscription.stop(stopOptions);
        log.info("task worker stopped");
      })();
      return stopping;
    },
  };
}
