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
      clone: a.clone ?? null,
      output_format: a.output_format ?? "mp3",
      audio_book_cover: a.audio_book_cover,
      ...(a.lexicons && a.lexicons.length > 0 ? { lexicons: a.lexicons } : {}),
    };
  },
  "voice-stream": (doc) => {
    const v = doc as VoiceStreamDoc;
    return {
      kind: "voice-stream",
      ...baseWork(doc),
      voice: v.voice,
      clone: v.clone ?? null,
      use_voice_clone: v.use_voice_clone ?? false,
      voice_clone_sample: v.voice_clone_sample ?? null,
      original_audio: v.original_audio ?? "drop",
      ...(v.speakers === undefined ? {} : { speakers: v.speakers }),
      ...(v.lexicons && v.lexicons.length > 0 ? { lexicons: v.lexicons } : {}),
    };
  },
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
  if (event.kind === "audiobook") {
    const book = set as Partial<AudioBookDoc>;
    if (event.chapters !== undefined) book.chapters = event.chapters;
    if (event.warnings !== undefined) book.warnings = event.warnings;
  }
  if (event.kind === "voice-stream" && event.timing !== undefined) (set as Partial<VoiceStreamDoc>).timing = event.timing;
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
  /** Places claimed less than this long ago belong to a pass still under way: the sweep leaves them. Default 5 000 ms. */
  sweepGraceMs?: number;
  /** Called after each event is projected, with the record as stored then (tests sample it). */
  onProjected?: (event: TaskEvent, record: TaskDoc | null) => void;
}

/** An account with records waiting to be published, as one scheduling pass sees it. */
interface WaitingAccount {
  accountId: string;
  /** Its tasks of the kind published and unfinished. */
  inFlight: number;
  /** When it last had a task of the kind published ("" when never). */
  lastTurn: string;
  /** Its records waiting to be published, oldest first (those this pass has not handed out yet). */
  waiting: TaskDoc[];
}

/** Orders accounts by whose turn comes first: fewest tasks in flight, then the longest since its last turn, then the oldest waiting record. */
function turnOrder(a: WaitingAccount, b: WaitingAccount): number {
  if (a.inFlight !== b.inFlight) return a.inFlight - b.inFlight;
  if (a.lastTurn !== b.lastTurn) return a.lastTurn < b.lastTurn ? -1 : 1;
  const [oldestA, oldestB] = [a.waiting[0]!.date_created, b.waiting[0]!.date_created];
  return oldestA < oldestB ? -1 : oldestA > oldestB ? 1 : 0;
}

/**
 * The account whose turn it is, of those with a record waiting: the one with the fewest tasks in
 * flight, then the one whose last turn is the longest ago (never first), then the one whose oldest
 * record waits longest. Accounts take turns this way whatever order their records came in: one
 * account's twelve records and four others' one each go out one account at a time.
 */
function nextTurn(accounts: readonly WaitingAccount[]): WaitingAccount | undefined {
  return accounts.filter((a) => a.waiting.length > 0).sort(turnOrder)[0];
}

/**
 * The gateway's side of the task pipeline: hands stored records' work to the workers (deduplicated by
 * task id) in turns across accounts, projects progress events into records, and marks dead-lettered
 * tasks failed. A record is published when its kind's work queue has a free place (at most
 * QUEUE_MAX_UNSTARTED_TASKS published and not yet started, all accounts together) and its account a
 * free place in flight (ACCOUNT_MAX_TASKS_IN_FLIGHT published and unfinished); both are claims in the
 * store (`DispatchSlots`), so they hold across gateways. The rest wait `queued` in the store. Each free
 * place in the queue goes to the account with the fewest tasks in flight, then the one whose last
 * turn is the longest ago (`nextTurn`), so one account's many records never hold up another's few:
 * the short queue is first in, first out, the turns are taken here. A pass runs on every new record,
 * every start and finish of a task (their events reach the projection of every gateway) and on the
 * periodic sweep, which also publishes records whose publish never happened and frees the places of
 * tasks whose events were lost.
 */
export class TaskMesh implements TaskDispatcher {
  private readonly subscriptions: BusSubscription[] = [];
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  /** One scheduling pass per kind at a time in this process (the store decides across processes), and the one asked for meanwhile. */
  private readonly fills = new Map<TaskKind, Promise<void>>();
  private readonly refills = new Map<TaskKind, Promise<void>>();
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
    await Promise.allSettled([...this.fills.values(), ...this.refills.values()]);
  }

  /** Publishes the stored record's work when its turn comes: now if the queue and its account have room; otherwise it waits queued. */
  async dispatch(kind: TaskKind, doc: TaskDoc): Promise<void> {
    await this.fill(kind);
    this.logger.debug({ taskId: doc.id, kind, accountId: doc.account_id }, "task handed to the scheduler");
  }

  /** Publishes waiting records (crash between store and publish, or places freed) and frees places of started and finished tasks. */
  sweep(): Promise<void> {
    this.sweeping ??= (async () => {
      try {
        await this.freeStalePlaces(new Date(Date.now() - (this.options.sweepGraceMs ?? 5_000)).toISOString());
        for (const kind of TASK_KINDS) await this.fill(kind);
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

  /**
   * Runs a scheduling pass for the kind; while one runs in this process, the next starts after it
   * (one for every caller meanwhile: each record stored before the call is considered).
   */
  private fill(kind: TaskKind): Promise<void> {
    const queued = this.refills.get(kind);
    if (queued) return queued;
    const running = this.fills.get(kind);
    if (running) {
      const again = () => {
        this.refills.delete(kind);
        return this.fill(kind);
      };
      const next = running.then(again, again);
      this.refills.set(kind, next);
      return next;
    }
    const run = this.fillQueue(kind).finally(() => this.fills.delete(kind));
    this.fills.set(kind, run);
    return run;
  }

  /** Hands waiting records to the kind's queue, one account's turn at a time, while the queue has free places. */
  private async fillQueue(kind: TaskKind): Promise<void> {
    if (await this.slots.queueFull(kind)) return;
    const accounts = await this.waitingAccounts(kind);
    for (let turn = nextTurn(accounts); turn !== undefined; turn = nextTurn(accounts)) {
      const doc = turn.waiting.shift()!;
      if (!(await this.slots.claimQueued(kind, turn.accountId, doc.id))) return;
      if (!(await this.slots.claim(kind, turn.accountId, doc.id))) {
        // the account's places in flight are all taken (maybe by another gateway meanwhile)
        await this.slots.leaveQueue(doc.id);
        turn.waiting = [];
        continue;
      }
      await this.publish(kind, doc);
      turn.inFlight += 1;
      turn.lastTurn = new Date().toISOString();
      await this.slots.tookTurn(kind, turn.accountId, turn.lastTurn);
      this.logger.info({ taskId: doc.id, kind, accountId: turn.accountId, inFlight: turn.inFlight }, "published waiting work");
    }
  }

  /** The accounts with records of the kind waiting to be published, each with its tasks in flight and its oldest waiting records. */
  private async waitingAccounts(kind: TaskKind): Promise<WaitingAccount[]> {
    const accounts: WaitingAccount[] = [];
    let accountId: string | undefined;
    while ((accountId = await this.repos[kind].nextWaitingAccount(accountId)) !== undefined) {
      // a record may hold a place in flight already (a crash between claim and publish): it is read too, and goes out
      const waiting = await this.repos[kind].waiting(accountId, this.slots.limit);
      if (waiting.length > 0) {
        accounts.push({ accountId, inFlight: await this.slots.inFlight(kind, accountId), lastTurn: await this.slots.lastTurn(kind, accountId), waiting });
      }
    }
    return accounts;
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
    else await this.started(event.kind, event.task_id);
  }

  /** A worker started the task (any of its progress events says so): its place in the queue goes to the next turn. */
  private async started(kind: TaskKind, taskId: string): Promise<void> {
    try {
      if (await this.slots.leaveQueue(taskId)) await this.fill(kind);
    } catch (error) {
      // the sweep frees the place and publishes the waiting work later
      this.logger.warn({ err: error, taskId }, "could not hand a place in the queue to waiting work");
    }
  }

  /** Frees a finished task's places (in flight, and in the queue if it never started) and hands them to the next turn. */
  private async finished(taskId: string): Promise<void> {
    try {
      const slot = await this.slots.release(taskId);
      const queued = await this.slots.leaveQueue(taskId);
      const kind = slot?.kind ?? queued?.kind;
      if (kind) await this.fill(kind);
    } catch (error) {
      // the sweep frees the place and publishes the waiting work later
      this.logger.warn({ err: error, taskId }, "could not hand a freed place to waiting work");
    }
  }

  /**
   * Places a crash or a lost event left taken: in flight, of a task that finished (or vanished); in the
   * queue, of a task that started, finished or vanished, or was never published (its next turn claims
   * one again).
   */
  private async freeStalePlaces(olderThan: string): Promise<void> {
    for (const slot of await this.slots.claimedBefore(olderThan, 5_000)) {
      const doc = await this.repos[slot.kind].get(slot.task_id);
      if (doc && !FINISHED_STATUSES.includes(doc.task_status)) continue;
      await this.slots.release(slot.task_id);
      this.logger.info({ taskId: slot.task_id, kind: slot.kind, accountId: slot.account_id }, "freed the place of a finished task");
    }
    for (const place of await this.slots.queuedBefore(olderThan, 5_000)) {
      const doc = await this.repos[place.kind].get(place.task_id);
      if (doc?.task_status === "queued" && doc.published) continue;
      await this.slots.leaveQueue(place.task_id);
      this.logger.info({ taskId: place.task_id, kind: place.kind, status: doc?.task_status ?? null }, "freed the place in the queue of a task no longer waiting in it");
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
