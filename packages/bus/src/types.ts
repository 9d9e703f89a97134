/**
 * The bus port: transport-agnostic work queues, dead letters, events and request/reply.
 * Payloads are JSON; every consumer parses through a caller-supplied structural schema
 * (a zod schema fits), so publishers and consumers share the contracts package.
 */

/** Anything with a zod-like `parse` that throws on bad input. */
export interface Schema<T> {
  parse(input: unknown): T;
}

// ---------------------------------------------------------------- topology

/**
 * A stream. `work` streams use work-queue retention (a message is removed once acked or terminated);
 * `events` streams use limits retention (kept until max age / max messages, replayable).
 */
export interface StreamSpec {
  /** Stream name: letters, digits, `_` and `-`. */
  name: string;
  /** Subjects captured, e.g. ["work.>"] or ["events.>"]. Streams must not overlap. */
  subjects: string[];
  kind: "work" | "events";
  /** Window within which a repeated msgId is dropped as a duplicate. Default 2 minutes. */
  duplicateWindowMs?: number;
  /** Drop messages older than this. Default: unlimited for work, 7 days for events. */
  maxAgeMs?: number;
  /** Keep at most this many messages (oldest dropped). Default unlimited (in-process: 100 000 for events). */
  maxMsgs?: number;
  /** Keep at most this many bytes. Default unlimited. */
  maxBytes?: number;
}

/** A work queue: a durable pull consumer with explicit ack on one subject of a work stream. */
export interface WorkQueueSpec {
  /** The work stream holding the subject. */
  stream: string;
  /** Durable consumer name (letters, digits, `_`, `-`); every worker of this queue shares it. */
  name: string;
  /** Filter subject, e.g. "work.audiobook". Queues on one work stream must not overlap. */
  subject: string;
  /** Redeliver a message when neither settled nor working() within this time. */
  ackWaitMs: number;
  /** Deliveries before the message is dead-lettered (>= 1). */
  maxDeliver: number;
  /**
   * Delays before redelivering after a thrown handler, indexed by deliveryCount - 1 (the last entry repeats).
   * Default [1 s, 5 s, 15 s, 60 s]. Applied by the runtime with nak(delay); not set on the server consumer.
   */
  backoffMs?: number[];
  /** Server-side cap on unacked messages across all workers of the queue. Default 1000. */
  maxAckPending?: number;
}

/** What provision() creates or updates. */
export interface Topology {
  streams?: StreamSpec[];
  queues?: WorkQueueSpec[];
}

// ---------------------------------------------------------------- work

/** The closed set of outcomes a work handler returns; the runtime settles explicitly. */
export type WorkOutcome =
  | { kind: "ack" }
  | { kind: "retry"; delayMs: number; reason?: string }
  | { kind: "term"; reason: string };

export interface WorkContext<T> {
  data: T;
  /** 1 on first delivery. */
  deliveryCount: number;
  /** The msgId given to publishWork (the task id). */
  msgId: string | undefined;
  subject: string;
  /** Stream sequence of the message. */
  streamSeq: number;
  /** W3C trace context the publisher sent with the message (`traceparent`, `tracestate`); empty without. */
  headers: Readonly<Record<string, string>>;
  /** True when this is the last delivery before dead-lettering (deliveryCount >= maxDeliver). */
  lastAttempt: boolean;
  /** In-progress ack: resets the ack-wait timer. Call it periodically during long steps. */
  working(): void;
  /**
   * Aborted when the lease expired (no working() within ackWait: the message is being redelivered and
   * this handler's outcome will be ignored), or when stop()/close() ran out of grace time.
   */
  signal: AbortSignal;
}

export type WorkHandler<T> = (ctx: WorkContext<T>) => Promise<WorkOutcome>;

export interface ConsumeWorkOptions {
  /** Messages handled at once; the runtime pulls one message per free slot. Default 1. */
  concurrency?: number;
  /** Call working() automatically every ackWait/4 while the handler runs. Default false. */
  heartbeat?: boolean;
  /** How long one pull waits on the server before re-pulling (>= 1000). Default 10 000. */
  pullExpiresMs?: number;
}

export interface StopOptions {
  /**
   * How long to wait for in-flight handlers before aborting their signals. Default: wait indefinitely.
   * After aborting, waits at most another 5 s; messages still unsettled are then redelivered after ack wait.
   */
  graceMs?: number;
}

export interface BusSubscription {
  /** Stops pulling/receiving and waits for in-flight handlers to settle. Idempotent. */
  stop(options?: StopOptions): Promise<void>;
}

export interface PublishResult {
  stream: string;
  seq: number;
  /** True when the msgId was seen within the duplicate window and the message was dropped. */
  duplicate: boolean;
}

// ---------------------------------------------------------------- dead letters

/** A work message that will not be processed again. */
export interface DeadLetter {
  /**
   * `terminated`: the handler returned term, or the payload failed to parse.
   * `max_deliveries`: retried/thrown on its last delivery, or lost (ack wait expired) on every delivery.
   */
  kind: "terminated" | "max_deliveries";
  reason: string;
  stream: string;
  /** Work queue (durable consumer) name. */
  queue: string;
  subject: string;
  streamSeq: number;
  msgId: string | undefined;
  deliveryCount: number;
  /** The payload as JSON, or undefined when it is not valid JSON. */
  payload: unknown;
  /** The payload as published. */
  raw: string;
}

/** Throwing makes the dead letter come back later (it is durable, at least once). */
export type DeadLetterHandler = (deadLetter: DeadLetter) => Promise<void>;

// ---------------------------------------------------------------- events

export interface EventContext<T> {
  subject: string;
  data: T;
  /** Stream sequence (durable subscriptions only). */
  seq: number | undefined;
  deliveryCount: number;
}

export type EventHandler<T> = (event: EventContext<T>) => Promise<void> | void;

export interface SubscribeEventsOptions {
  /**
   * Durable consumer name: events are delivered at least once, in order, one at a time, and survive a
   * restart of the subscriber (and of nats-server). A throwing handler gets the same event again after a
   * back-off, blocking later events. Without it: a live, at-most-once subscription (no replay).
   * Subscriptions sharing a durable name share its events; different names each get every event.
   */
  durable?: string;
  /** Stream of the events (durable only). Default: the stream capturing the pattern. */
  stream?: string;
  /** Where a new durable starts: every retained event ("all", default) or only new ones. */
  deliver?: "all" | "new";
  /** Durable only: redeliver when not acked within this time; heartbeats run meanwhile. Default 30 000. */
  ackWaitMs?: number;
}

export interface PublishEventOptions {
  /** Deduplicates a retried publish within the stream's duplicate window. */
  msgId?: string;
}

// ---------------------------------------------------------------- notices

/** A notice as received: fire-and-forget, at most once, to every subscriber connected at the time. */
export interface NoticeContext<T> {
  subject: string;
  data: T;
}

export type NoticeHandler<T> = (notice: NoticeContext<T>) => Promise<void> | void;

// ---------------------------------------------------------------- request/reply

export interface ServeOptions {
  /** Queue group: each request goes to one member. Default: the subject. */
  queue?: string;
}

export type RequestHandler<Req, Res> = (request: Req, ctx: { subject: string }) => Promise<Res> | Res;

export interface RequestOptions<T> {
  timeoutMs: number;
  /** Parses the reply; default: returned as is. */
  schema?: Schema<T>;
}

// ---------------------------------------------------------------- the bus

export interface Bus {
  /** Creates or updates streams, work-queue consumers and their dead-letter streams. Idempotent. */
  provision(topology: Topology): Promise<void>;

  /** Publishes work; `msgId` (the task id) deduplicates a retried publish within the duplicate window. */
  publishWork(subject: string, payload: unknown, options: { msgId: string }): Promise<PublishResult>;

  /** Consumes a provisioned queue (throws NotProvisionedError otherwise). */
  consumeWork<T>(
    queue: WorkQueueSpec,
    schema: Schema<T>,
    handler: WorkHandler<T>,
    options?: ConsumeWorkOptions,
  ): Promise<BusSubscription>;

  /**
   * Receives the queue's dead letters (durable: dead letters wait until someone listens).
   * One listener per queue is expected; several share the dead letters.
   */
  onDeadLetter(queue: WorkQueueSpec, handler: DeadLetterHandler): Promise<BusSubscription>;
  /** Same as onDeadLetter. */
  onMaxDeliveries(queue: WorkQueueSpec, handler: DeadLetterHandler): Promise<BusSubscription>;

  publishEvent(subject: string, payload: unknown, options?: PublishEventOptions): Promise<PublishResult>;

  subscribeEvents<T>(
    subjectPattern: string,
    schema: Schema<T>,
    handler: EventHandler<T>,
    options?: SubscribeEventsOptions,
  ): Promise<BusSubscription>;

  /**
   * Publishes a notice: a core (non-persistent) message, not captured by any stream and never replayed,
   * delivered at most once to every `subscribeNotices` subscriber connected at the time (none: dropped).
   * For cheap hints between processes (e.g. "this record changed, re-read it"), never for work or facts
   * that must not be lost. Resolves once the message left this process (NATS: written to the connection).
   */
  notify(subject: string, payload: unknown): Promise<void>;

  /**
   * Receives notices on a subject pattern (`*`, `>` wildcards), live only: nothing published before the
   * subscription is active (when the promise resolves) or while disconnected is delivered. Every
   * subscriber gets every notice (no queue group); handlers run one at a time in arrival order; a
   * payload failing the schema is skipped (logged); a throwing handler is logged and the next notice
   * handled.
   */
  subscribeNotices<T>(subjectPattern: string, schema: Schema<T>, handler: NoticeHandler<T>): Promise<BusSubscription>;

  /** Serves requests; a thrown error is replied as `{ error: { code, message } }` (code from `error.code`). */
  serve<Req, Res>(
    subject: string,
    schema: Schema<Req>,
    handler: RequestHandler<Req, Res>,
    options?: ServeOptions,
  ): Promise<BusSubscription>;

  /** Throws RequestTimeoutError, NoRespondersError or RemoteError. */
  request<T = unknown>(subject: string, payload: unknown, options: RequestOptions<T>): Promise<T>;

  /**
   * The backlog of work queues (their durable consumers' info, one round trip each): messages not yet
   * delivered, delivered and unsettled, redelivered and unsettled. For metrics and autoscaling.
   */
  queueStats(queues: readonly WorkQueueSpec[]): Promise<Array<{ queue: string; pending: number; ackPending: number; redelivered: number }>>;

  /**
   * One round trip to the bus (NATS: PING/PONG with the server; in-process: answers while open), for
   * readiness checks. Resolves with the round-trip time in ms; throws BusError with code "timeout" when
   * no answer came within `timeoutMs` (default 2 000), BusClosedError after close().
   */
  ping(options?: { timeoutMs?: number }): Promise<number>;

  /** Stops every subscription (draining handlers) and closes the connection. Idempotent. */
  close(options?: StopOptions): Promise<void>;
}

/** Builders for outcomes. */
export const outcome = {
  ack: (): WorkOutcome => ({ kind: "ack" }),
  retry: (delayMs: number, reason?: string): WorkOutcome =>
    reason === undefined ? { kind: "retry", delayMs } : { kind: "retry", delayMs, reason },
  term: (reason: string): WorkOutcome => ({ kind: "term", reason }),
};
