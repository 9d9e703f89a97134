import type { Bus, BusSubscription, DeadLetter } from "@voiceloc/bus";
import {
  PROJECTION_DURABLE,
  STREAMS,
  SUBJECTS,
  TaskEventSchema,
  WORK_QUEUES,
  type TaskEvent,
  type Language,
  type TaskKind,
  type WorkMessage,
} from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import type { AudioBookDoc, SubtitleDoc, TaskDispatcher, VoiceStreamDoc } from "../records/kinds.ts";
import type { TaskDoc, TaskRepository } from "../records/repository.ts";

export interface TaskRepositories {
  audiobook: TaskRepository<AudioBookDoc>;
  "voice-stream": TaskRepository<VoiceStreamDoc>;
  subtitle: TaskRepository<SubtitleDoc>;
}

/** The work message for a stored record (what the worker needs, nothing more). */
export function workMessageFor(kind: TaskKind, doc: TaskDoc): WorkMessage {
  const d = doc as TaskDoc & { file: string; source_language: Language; target_language: Language };
  const base = { task_id: d.id, account_id: d.account_id, file: d.file, source_language: d.source_language, target_language: d.target_language };
  switch (kind) {
    case "audiobook": {
      const a = doc as AudioBookDoc;
      return {
        kind,
        ...base,
        name: a.name,
        preset_voice_name: a.preset_voice_name,
        use_voice_clone: a.use_voice_clone,
        voice_clone_sample: a.voice_clone_sample,
      };
    }
    case "voice-stream":
      return { kind, ...base, voice: (doc as VoiceStreamDoc).voice };
    case "subtitle": {
      const sub = doc as SubtitleDoc;
      return { kind, ...base, mode: sub.mode, subtitle_format: sub.subtitle_format };
    }
    default: {
      const unreachable: never = kind;
      throw new Error(`unknown task kind ${String(unreachable)}`);
    }
  }
}

/** Applies one progress event to its record; stale events (lower seq) change nothing. */
export async function projectEvent(repos: TaskRepositories, event: TaskEvent): Promise<boolean> {
  const set: Partial<SubtitleDoc> = {
    task_status: event.status,
    task_progress: event.status === "completed" ? 100 : event.progress,
    task_error: event.status === "failed" ? (event.error ?? "The task failed") : null,
    date_updated: event.at,
  };
  if (event.result_key !== undefined) set.result_key = event.result_key;
  if (event.kind === "subtitle" && event.subtitle_key !== undefined) set.subtitle_key = event.subtitle_key;
  const repo = repos[event.kind] as TaskRepository<TaskDoc>;
  const updated = await repo.applyIfNewer(event.task_id, event.seq, set as Partial<TaskDoc>);
  return updated !== null;
}

/**
 * The gateway's side of the task pipeline: publishes work for stored records (deduplicated by
 * task id), re-publishes records whose publish never happened (start-up and periodic sweep),
 * projects progress events into records, and marks dead-lettered tasks failed.
 */
export class TaskMesh implements TaskDispatcher {
  private readonly subscriptions: BusSubscription[] = [];
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(
    private readonly bus: Bus,
    private readonly repos: TaskRepositories,
    private readonly logger: Logger,
    private readonly options: { sweepIntervalMs?: number; sweepGraceMs?: number } = {},
  ) {}

  async start(): Promise<void> {
    await this.bus.provision({ streams: [STREAMS.work, STREAMS.events], queues: Object.values(WORK_QUEUES) });
    this.subscriptions.push(
      await this.bus.subscribeEvents(
        SUBJECTS.allTaskEvents,
        TaskEventSchema,
        async ({ data }) => {
          const applied = await projectEvent(this.repos, data);
          this.logger.debug({ taskId: data.task_id, seq: data.seq, status: data.status, progress: data.progress, applied }, "task event");
        },
        { durable: PROJECTION_DURABLE, stream: STREAMS.events.name },
      ),
    );
    for (const queue of Object.values(WORK_QUEUES)) {
      this.subscriptions.push(await this.bus.onDeadLetter(queue, (letter) => this.failDeadLetter(letter)));
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
  }

  async dispatch(kind: TaskKind, doc: TaskDoc): Promise<void> {
    await this.bus.publishWork(SUBJECTS.work(kind), workMessageFor(kind, doc), { msgId: doc.id });
    await this.repos[kind].markPublished(doc.id);
  }

  /** Publishes records stored but never published (a crash between store and publish). */
  sweep(): Promise<void> {
    this.sweeping ??= (async () => {
      try {
        const olderThan = new Date(Date.now() - (this.options.sweepGraceMs ?? 5_000)).toISOString();
        for (const kind of Object.keys(this.repos) as TaskKind[]) {
          for (const doc of await this.repos[kind].unpublished(olderThan, 500)) {
            await this.dispatch(kind, doc);
            this.logger.info({ taskId: doc.id, kind }, "re-published work that was never published");
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

  private async failDeadLetter(letter: DeadLetter): Promise<void> {
    const kind = (Object.keys(WORK_QUEUES) as TaskKind[]).find((k) => WORK_QUEUES[k].name === letter.queue);
    const taskId = letter.msgId;
    if (!kind || !taskId) {
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
  }
}
