import type { TaskEvent, TaskKind } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import { errorMessage } from "./errors.ts";
import { SEQ_DELIVERY_SPAN, taskEventSeq } from "./seq.ts";

export interface DeliveryEventsOptions {
  /**
   * Publishes one task event through the bus catalogue (`catalog.publishEvent("task", event)`), which
   * derives its subject (`events.task.<kind>.<task id>`) and deduplication id (`<task id>:<seq>`).
   */
  publish(event: TaskEvent): Promise<unknown>;
  kind: TaskKind;
  taskId: string;
  deliveryCount: number;
  /** Once aborted, no more progress is published. */
  signal: AbortSignal;
  logger: Logger;
  /** Minimum time between two progress events. */
  intervalMs: number;
}

export type TerminalEvent =
  | {
      status: "completed";
      resultKey: string | null;
      subtitleKey?: string | null;
      chapters?: Array<{ title: string; start_seconds: number; end_seconds: number }>;
      warnings?: string[];
      timing?: { lines_sped_up: number; largest_factor: number };
    }
  | { status: "failed"; error: string };

/**
 * The events of one delivery of one task, published one after another (in order) with rising sequence
 * numbers (see seq.ts):
 *
 * 1. the opening `processing` event: the delivery has started. Its progress is what is already done
 *    (the handler's `initialProgress`, computed from the checkpoints of earlier deliveries; 0 for a
 *    fresh task), so a redelivery does not claim to start from nothing;
 * 2. `processing` events as the handler reports progress: throttled, never below the opening value
 *    or an earlier report of this delivery;
 * 3. one terminal event: `completed` (progress 100) or `failed` (the last progress, and the reason).
 *
 * A later delivery's events outrank an earlier one's by seq; its progress may still be lower than
 * what an earlier delivery reported (work not checkpointed is redone), so consumers that show progress
 * keep the highest value seen for a task (the gateway's projection does).
 */
export class DeliveryEvents {
  private counter = 0;
  /** Last percent published (or queued for publishing) in this delivery. */
  private lastPercent = 0;
  private lastAt = 0;
  private handlerReported = false;
  private pending: number | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: DeliveryEventsOptions) {}

  /** Percent of the last progress event published or queued. */
  get progressPercent(): number {
    return this.lastPercent;
  }

  /**
   * Publishes the opening `processing` event with the progress already done (clamped to 0–99);
   * throws when publishing fails.
   */
  async start(initialPercent = 0): Promise<void> {
    const percent = typeof initialPercent === "number" && Number.isFinite(initialPercent) ? Math.min(99, Math.max(0, initialPercent)) : 0;
    this.lastPercent = percent;
    this.lastAt = Date.now();
    await this.publish(this.event("processing", percent, this.nextSeq(false) ?? SEQ_DELIVERY_SPAN - 1));
  }

  /**
   * Queues a `processing` event: percent clamped to 0–100 and never below the last one published; the
   * first report of the handler goes out at once, later ones at most once per interval, and the latest
   * value held back by the throttle goes out at the end of the interval (or before the terminal event).
   */
  progress(percent: number, stage?: string): void {
    if (this.closed || this.options.signal.aborted) return;
    if (typeof percent !== "number" || Number.isNaN(percent)) return;
    const value = Math.max(this.lastPercent, this.pending ?? 0, Math.min(100, Math.max(0, percent)));
    if (stage !== undefined) this.options.logger.debug({ progress: value, stage }, "task progress");
    const first = !this.handlerReported;
    this.handlerReported = true;
    if (value === this.lastPercent && !first) return;
    const wait = this.lastAt + this.options.intervalMs - Date.now();
    if (first || wait <= 0) {
      this.pending = undefined;
      this.clearTimer();
      this.emit(value);
      return;
    }
    this.pending = value;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.flushPending();
    }, wait);
  }

  /** Publishes the held-back progress value (if any) and waits for queued events. */
  async flush(): Promise<void> {
    this.clearTimer();
    this.flushPending();
    await this.chain;
  }

  /** Drops held-back progress, publishes nothing more, waits for events already queued. Idempotent. */
  async abandon(): Promise<void> {
    this.closed = true;
    this.pending = undefined;
    this.clearTimer();
    await this.chain;
  }

  /** Flushes progress, then publishes the terminal event; throws when publishing it fails. */
  async finish(terminal: TerminalEvent): Promise<void> {
    await this.flush();
    this.closed = true;
    const seq = this.nextSeq(true) ?? SEQ_DELIVERY_SPAN - 1;
    const event: TaskEvent =
      terminal.status === "completed"
        ? {
            ...this.event("completed", 100, seq),
            result_key: terminal.resultKey,
            ...(terminal.subtitleKey === undefined ? {} : { subtitle_key: terminal.subtitleKey }),
            ...(terminal.chapters === undefined ? {} : { chapters: terminal.chapters }),
            ...(terminal.warnings === undefined ? {} : { warnings: terminal.warnings }),
            ...(terminal.timing === undefined ? {} : { timing: terminal.timing }),
          }
        : { ...this.event("failed", this.lastPercent, seq), error: terminal.error };
    await this.publish(event);
  }

  private flushPending(): void {
    const value = this.pending;
    this.pending = undefined;
    if (value === undefined || this.closed || this.options.signal.aborted) return;
    if (value > this.lastPercent) this.emit(value);
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private emit(percent: number): void {
    const seq = this.nextSeq(false);
    if (seq === undefined) return;
    this.lastPercent = percent;
    this.lastAt = Date.now();
    const event = this.event("processing", percent, seq);
    this.chain = this.chain.then(async () => {
      if (this.options.signal.aborted) return;
      try {
        await this.publish(event);
      } catch (error) {
        this.options.logger.warn({ err: error, seq, progress: percent }, `progress event not published: ${errorMessage(error)}`);
      }
    });
  }

  /** The next seq; progress may not take the last counter value, which is kept for the terminal event. */
  private nextSeq(terminal: boolean): number | undefined {
    const limit = terminal ? SEQ_DELIVERY_SPAN : SEQ_DELIVERY_SPAN - 1;
    if (this.counter >= limit) return undefined;
    return taskEventSeq(this.options.deliveryCount, this.counter++);
  }

  private event(status: TaskEvent["status"], progress: number, seq: number): TaskEvent {
    return { task_id: this.options.taskId, kind: this.options.kind, seq, status, progress, at: new Date().toISOString() };
  }

  private async publish(event: TaskEvent): Promise<void> {
    await this.options.publish(event);
  }
}
