import { createCatalogBus, type Bus, type BusSubscription, type CatalogBus, type DeadLetter, type WorkPayload } from "@voiceloc/bus";
import {
  BUS_CATALOG,
  PROJECTION_DURABLE,
  STREAMS,
  TASK_KINDS,
  type BusCatalogue,
  type TaskEvent,
  type Language,
  type TaskKind,
  type WorkMessage,
} from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import type { AudioBookDoc, SubtitleDoc, TaskDispatcher, VoiceStreamDoc } from "../records/kinds.ts";
import { FINISHED_STATUSES, type TaskDoc, type TaskRepository } from "../records/repository.ts";
import type { DispatchSlots } from "./slots.ts";

export interface TaskRepositories {
  audiobook: TaskRepository<AudioBookDoc>;
  "voice-stream": TaskRepository<VoiceStreamDoc>;
  subtitle: TaskRepository<SubtitleDoc>;
}

type BaseWork = Pick<WorkMessage, "task_id" | "account_id" | "file" | "source_language" | "target_language">;

function baseWork(doc: TaskDoc): BaseWork {
  const d = doc as TaskDoc & { file: string; source_language: Language; target_language: Language };
  return { task_id: d.id, account_id: d.account_id, file: d.file, source_language: d.source_language, target_language: d.target_language };
}

/**
 * The work message of each kind for a stored record (what the worker needs, nothing more), typed by the
 * catalogue: a builder whose message does not fit its queue's payload fails to compile.
 */
const WORK_MESSAGES: { [K in TaskKind]: (doc: TaskDoc) => WorkPayload<BusCatalogue, K> } = {
  audiobook: (doc) => {
    const a = doc as AudioBookDoc;
    return {
      kind: "audiobook",
      ...baseWork(doc),
      name: a.name,
      preset_voice_name: a.preset_voice_name,
      use_voice_clone: a.use_voice_clone,
      voice_clone_sample: a.voice_clone_sample,
    };
  },
  "voice-stream": (doc) => ({ kind: "voice-stream", ...baseWork(doc), voice: (doc as VoiceStreamDoc).voice }),
  subtitle: (doc) => {
    const sub = doc as SubtitleDoc;
    return { kind: "subtitle", ...baseWork(doc), mode: sub.mode, subtitle_format: sub.subtitle_format };
  },
};

/** The work message for a stored record of this kind. */
export function workMessageFor<K extends TaskKind>(kind: K, doc: TaskDoc): WorkPayload<BusCatalogue, K> {
  return WORK_MESSAGES[kind](doc);
}

/**
 * Applies one progress event to its record: status follows the newest event (stale ones, with a
 * lower seq, change no status), progress only rises (a redelivery opening at 0 never lowers it),
 * completion means 100 and a failure keeps the highest progress reached.
 */
export async function projectEvent(repos: TaskRepositories, event: TaskEvent): Promise<boolean> {
  const set: Partial<SubtitleDoc> = {
    task_status: event.status,
    task_error: event.status === "failed" ? (event.error ?? "The task failed") : null,
    date_updated: event.at,
  };
  if (event.result_key !== undefined) set.result_key = event.result_key;
  if (event.kind === "subtitle" && event.subtitle_key !== undefined) set.subtitle_key = event.subtitle_key;
  const repo = repos[event.kind] as TaskRepository<TaskDoc>;
  return repo.applyEvent(event.task_id, event.seq, set as Partial<TaskDoc>, event.status === "completed" ? 100 : event.progress);
}

/** A record after this process projected an event (or a dead letter) into it, as stored then. */
export interface RecordChange {
  kind: TaskKind;
  record: TaskDoc;
  /**
   * This very change moved the record to `completed` or `failed` (true once per record, whatever the
   * number of deliveries: a redelivered final event is not applied again). Progress-only and stale
   * events come with `false`.
   */
  finishedNow: boolean;
}

export type RecordChangeListener = (change: RecordChange) => void;

export interface TaskMeshOptions {
  /** Re-publish sweep period. Default 30 000 ms. */
  sweepIntervalMs?: number;
  /** Records younger than this are left to the request that created them. Default 5 000 ms. */
  sweepGraceMs?: number;
  /** Called after each event is projected, with the record as stored then (tests sample it). */
  onProjected?: (event: TaskEvent, record: TaskDoc | null) => void;
}

/**
 * The gateway's side of the task pipeline: publishes work for stored records (deduplicated by
 * task id) as long as the account has a free place in flight for that kind (`DispatchSlots`;
 * the rest wait `queued` in the store and go out, oldest first, as the account's earlier tasks
 * finish), re-publishes records whose publish never happened (start-up and periodic sweep, within
 * the same limit), projects progress events into records, and marks dead-lettered tasks failed.
 */
export class TaskMesh implements TaskDispatcher {
  private readonly subscriptions: BusSubscription[] = [];
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  /** One pump per kind and account at a time in this process (the store decides across processes). */
  private readonly pumps = new Map<string, Promise<void>>();
  /** The bus typed by the catalogue: work, events and dead letters by name, payloads checked. */
  private readonly bus: CatalogBus<BusCatalogue>;
  private readonly changeListeners = new Set<RecordChangeListener>();

  constructor(
    bus: Bus,
    private readonly repos: TaskRepositories,
    private readonly slots: DispatchSlots,
    private readonly logger: Logger,
    private readonly options: TaskMeshOptions = {},
  ) {
    this.bus = createCatalogBus(bus, BUS_CATALOG);
  }

  async start(): Promise<void> {
    await this.bus.bus.provision({ streams: [...BUS_CATALOG.streams], queues: TASK_KINDS.map((kind) => BUS_CATALOG.work[kind].queue) });
    this.subscriptions.push(
      await this.bus.subscribeEvents("task", ({ data }) => this.onEvent(data), {
        durable: PROJECTION_DURABLE,
        stream: STREAMS.events.name,
      }),
    );
    for (const kind of TASK_KINDS) {
      this.subscriptions.push(await this.bus.onDeadLetter(kind, (letter) => this.failDeadLetter(kind, letter)));
    }
    await this.sweep();
    const interval = this.options.sweepIntervalMs ?? 30_000;
    this.sweepTimer = setInterval(() => void this.sweep(), interval);
    this.sweepTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await this.sweeping;
    for (const sub of this.subscriptions.splice(0).reverse()) await sub.stop({ graceMs: 5_000 });
    await Promise.allSettled([...this.pumps.values()]);
  }

  /** Publishes the record's work if its account has a free place; otherwise it waits queued. */
  async dispatch(kind: TaskKind, doc: TaskDoc): Promise<void> {
    if (!(await this.slots.claim(kind, doc.account_id, doc.id))) {
      this.logger.debug({ taskId: doc.id, kind, accountId: doc.account_id, limit: this.slots.limit }, "task waits for a place in flight");
      return;
    }
    await this.publish(kind, doc);
  }

  /** Publishes waiting records (crash between store and publish, or places freed) and frees places of finished tasks. */
  sweep(): Promise<void> {
    this.sweeping ??= (async () => {
      try {
        const olderThan = new Date(Date.now() - (this.options.sweepGraceMs ?? 5_000)).toISOString();
        await this.freeFinishedSlots(olderThan);
        for (const kind of Object.keys(this.repos) as TaskKind[]) {
          let account: string | undefined;
          while ((account = await this.repos[kind].nextWaitingAccount(account, olderThan)) !== undefined) {
            await this.pump(kind, account);
          }
        }
      } catch (error) {
        this.logger.warn({ err: error }, "re-publish sweep failed; will retry");
      } finally {
        this.sweeping = undefined;
      }
    })();
    return this.sweeping;
  }

  private async publish<K extends TaskKind>(kind: K, doc: TaskDoc): Promise<void> {
    await this.bus.publishWork(kind, workMessageFor(kind, doc));
    await this.repos[kind].markPublished(doc.id);
  }

  /** Publishes the account's waiting records of this kind, oldest first, while it has free places. */
  private pump(kind: TaskKind, accountId: string): Promise<void> {
    const key = `${kind}:${accountId}`;
    const running = this.pumps.get(key);
    if (running) return running.then(() => this.pump(kind, accountId));
    const run = (async () => {
      try {
        const seen = new Set<string>();
        for (;;) {
          const waiting = (await this.repos[kind].waiting(accountId, this.slots.limit)).filter((doc) => !seen.has(doc.id));
          for (const doc of waiting) {
            seen.add(doc.id);
            if (!(await this.slots.claim(kind, accountId, doc.id))) return;
            await this.publish(kind, doc);
            this.logger.info({ taskId: doc.id, kind, accountId }, "published waiting work");
          }
          if (waiting.length === 0) return;
        }
      } finally {
        this.pumps.delete(key);
      }
    })();
    this.pumps.set(key, run);
    return run;
  }

  /**
   * Calls `listener` after every change this process projects into a record (live progress streams,
   * webhooks). Listeners run synchronously and must not throw or block; returns the unsubscribe.
   */
  onChange(listener: RecordChangeListener): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  private emitChange(kind: TaskKind, record: TaskDoc | null, finishedNow: boolean): void {
    if (!record || this.changeListeners.size === 0) return;
    const change: RecordChange = { kind, record, finishedNow: finishedNow && FINISHED_STATUSES.includes(record.task_status) };
    for (const listener of this.changeListeners) {
      try {
        listener(change);
      } catch (error) {
        this.logger.error({ err: error, taskId: record.id }, "record change listener failed");
      }
    }
  }

  private async onEvent(event: TaskEvent): Promise<void> {
    const applied = await projectEvent(this.repos, event);
    this.logger.debug({ taskId: event.task_id, seq: event.seq, status: event.status, progress: event.progress, applied }, "task event");
    const wanted = this.options.onProjected !== undefined || this.changeListeners.size > 0;
    const record = wanted ? await this.repos[event.kind].get(event.task_id) : null;
    if (this.options.onProjected) this.options.onProjected(event, record);
    this.emitChange(event.kind, record, applied && (event.status === "completed" || event.status === "failed"));
    if (event.status === "completed" || event.status === "failed") await this.finished(event.task_id);
  }

  /** Frees a finished task's place and hands it to the account's oldest waiting task. */
  private async finished(taskId: string): Promise<void> {
    try {
      const slot = await this.slots.release(taskId);
      if (slot) await this.pump(slot.kind, slot.account_id);
    } catch (error) {
      // the sweep frees the place and publishes the waiting work later
      this.logger.warn({ err: error, taskId }, "could not hand a freed place to waiting work");
    }
  }

  /** Places whose task finished (or vanished) without the place being freed, e.g. a crash in between. */
  private async freeFinishedSlots(olderThan: string): Promise<void> {
    for (const slot of await this.slots.claimedBefore(olderThan, 5_000)) {
      const doc = await this.repos[slot.kind].get(slot.task_id);
      if (doc && !FINISHED_STATUSES.includes(doc.task_status)) continue;
      await this.slots.release(slot.task_id);
      this.logger.info({ taskId: slot.task_id, kind: slot.kind, accountId: slot.account_id }, "freed the place of a finished task");
    }
  }

  private async failDeadLetter(kind: TaskKind, letter: DeadLetter): Promise<void> {
    const taskId = letter.msgId;
    if (!taskId) {
      this.logger.warn({ queue: letter.queue, streamSeq: letter.streamSeq }, "dead letter without a task id");
      return;
    }
    const reason =
      letter.kind === "max_deliveries"
        ? `The task could not be completed after ${letter.deliveryCount} attempts: ${letter.reason}`
        : `The task could not be processed: ${letter.reason}`;
    const repo = this.repos[kind] as TaskRepository<TaskDoc>;
    const failed = await repo.failIfUnfinished(taskId, reason, new Date().toISOString());
    this.logger.warn({ taskId, kind, reason, applied: failed }, "task dead-lettered");
    if (failed && this.changeListeners.size > 0) this.emitChange(kind, await repo.get(taskId), true);
    await this.finished(taskId);
  }
}
