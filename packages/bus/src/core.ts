/**
 * The bus, written once against the internal Engine; both adapters share these semantics.
 */
import { withLogContext, type Logger } from "@voiceloc/log";
import { logIdHeaders, logIdsOf } from "./log-ids.ts";
import { startPublish } from "@voiceloc/telemetry";
import {
  BusClosedError,
  BusError,
  InvalidArgumentError,
  LeaseExpiredError,
  NotProvisionedError,
  RemoteError,
  errorMessage,
} from "./errors.ts";
import {
  DEAD_LETTER_CONSUMER,
  MAX_DELIVERIES_ADVISORY_PREFIX,
  deadLetterStreamName,
  deadLetterSubject,
  maxDeliveriesAdvisorySubject,
  type CoreMessage,
  type Engine,
  type RawDelivery,
} from "./engine.ts";
import { startPool } from "./pool.ts";
import { assertName, assertSubject, subjectMatches } from "./subject.ts";
import type {
  Bus,
  BusSubscription,
  ConsumeWorkOptions,
  DeadLetter,
  DeadLetterHandler,
  EventHandler,
  NoticeHandler,
  PublishEventOptions,
  PublishResult,
  RequestHandler,
  RequestOptions,
  Schema,
  ServeOptions,
  StopOptions,
  StreamSpec,
  SubscribeEventsOptions,
  Topology,
  WorkHandler,
  WorkOutcome,
  WorkQueueSpec,
} from "./types.ts";

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

export const DEFAULT_BACKOFF_MS = [1_000, 5_000, 15_000, 60_000];
const EVENT_BACKOFF_MS = [250, 1_000, 5_000, 15_000, 30_000];
const DEAD_LETTER_BACKOFF_MS = [1_000, 5_000, 15_000, 30_000];
const DEFAULT_PULL_EXPIRES_MS = 10_000;
const DEFAULT_EVENT_ACK_WAIT_MS = 30_000;
const DEAD_LETTER_ACK_WAIT_MS = 30_000;
const DEAD_LETTER_MAX_AGE_MS = 30 * 24 * 3_600_000;

function pick(list: readonly number[], deliveryCount: number): number {
  const index = Math.min(Math.max(deliveryCount - 1, 0), list.length - 1);
  return list[index] ?? 1_000;
}

export function encodeJson(payload: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(payload);
  } catch (error) {
    throw new InvalidArgumentError(`payload is not JSON-serializable: ${errorMessage(error)}`);
  }
  if (text === undefined) throw new InvalidArgumentError("payload is not JSON-serializable");
  return text;
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isOutcome(value: unknown): value is WorkOutcome {
  if (typeof value !== "object" || value === null) return false;
  const o = value as { kind?: unknown; delayMs?: unknown; reason?: unknown };
  if (o.kind === "ack") return true;
  if (o.kind === "retry") return typeof o.delayMs === "number" && Number.isFinite(o.delayMs);
  if (o.kind === "term") return typeof o.reason === "string";
  return false;
}

/** Calls `beat` every intervalMs until the returned function is called. */
function heartbeat(intervalMs: number, beat: () => void): () => void {
  const timer = setInterval(beat, Math.max(50, intervalMs));
  return () => clearInterval(timer);
}

interface DeadLetterRecord {
  kind: DeadLetter["kind"];
  reason: string;
  stream: string;
  queue: string;
  subject: string;
  streamSeq: number;
  msgId?: string;
  deliveryCount: number;
  raw: string;
}

function validateStream(spec: StreamSpec): void {
  assertName("stream", spec.name);
  if (spec.kind !== "work" && spec.kind !== "events") throw new InvalidArgumentError(`stream ${spec.name}: kind must be "work" or "events"`);
  if (spec.subjects.length === 0) throw new InvalidArgumentError(`stream ${spec.name} needs at least one subject`);
  for (const subject of spec.subjects) assertSubject(subject, { wildcards: true });
}

function validateQueue(queue: WorkQueueSpec): void {
  assertName("stream", queue.stream);
  assertName("queue", queue.name);
  assertSubject(queue.subject, { wildcards: true });
  if (!(queue.ackWaitMs >= 100)) throw new InvalidArgumentError(`queue ${queue.name}: ackWaitMs must be >= 100`);
  if (!Number.isInteger(queue.maxDeliver) || queue.maxDeliver < 1) {
    throw new InvalidArgumentError(`queue ${queue.name}: maxDeliver must be an integer >= 1`);
  }
  if (queue.backoffMs?.some((ms) => !(ms >= 0))) throw new InvalidArgumentError(`queue ${queue.name}: backoffMs must be >= 0`);
}

/** Settings every adapter shares. */
export interface BusSettings {
  /**
   * Ack wait of every work queue, replacing each queue's own `ackWaitMs` both on the server consumer and
   * for the client-side lease: how soon a task whose worker vanished (SIGKILL, lost host) is redelivered.
   * Heartbeats (`working()`) every quarter of it keep long tasks alive. The server consumer keeps the ack
   * wait it was created with: a process provisioning it with another one logs both values (once per queue)
   * and runs its leases and heartbeats by the consumer's.
   */
  workAckWaitMs?: number;
}

export function createBusOnEngine(engine: Engine, logger: Logger, settings: BusSettings = {}): Bus {
  const { workAckWaitMs } = settings;
  if (workAckWaitMs !== undefined && !(Number.isFinite(workAckWaitMs) && workAckWaitMs >= 100)) {
    throw new InvalidArgumentError("workAckWaitMs must be >= 100");
  }
  /** The queue as this process is configured: its ack wait replaced by workAckWaitMs when set. */
  const configured = (queue: WorkQueueSpec): WorkQueueSpec => (workAckWaitMs === undefined ? queue : { ...queue, ackWaitMs: workAckWaitMs });
  /** The ack wait of each provisioned consumer that differs from this process's configuration. */
  const consumerAckWaitMs = new Map<string, number>();
  /** The queue as this bus runs it: the consumer's ack wait, when provisioning found one of another value. */
  const effective = (queue: WorkQueueSpec): WorkQueueSpec => {
    const own = configured(queue);
    const kept = consumerAckWaitMs.get(`${own.stream}/${own.name}`);
    return kept === undefined ? own : { ...own, ackWaitMs: kept };
  };
  const subscriptions = new Set<BusSubscription>();
  let closing: Promise<void> | undefined;

  function assertOpen(): void {
    if (closing) throw new BusClosedError();
  }

  function track(subscription: BusSubscription): BusSubscription {
    let stopping: Promise<void> | undefined;
    const tracked: BusSubscription = {
      stop(options?: StopOptions) {
        stopping ??= subscription.stop(options).finally(() => subscriptions.delete(tracked));
        return stopping;
      },
    };
    subscriptions.add(tracked);
    return tracked;
  }

  /**
   * Runs the queue by the ack wait its consumer has (another process created it with its own), and
   * says so once per queue: both values, and that the consumer keeps its own.
   */
  function keepConsumerAckWait(queue: WorkQueueSpec, ackWaitMs: number): void {
    const key = `${queue.stream}/${queue.name}`;
    if (ackWaitMs === queue.ackWaitMs) {
      consumerAckWaitMs.delete(key);
      return;
    }
    const told = consumerAckWaitMs.get(key) === ackWaitMs;
    consumerAckWaitMs.set(key, ackWaitMs);
    if (told) return;
    logger.warn(
      { queue: queue.name, stream: queue.stream, consumerAckWaitMs: ackWaitMs, configuredAckWaitMs: queue.ackWaitMs },
      `the work queue ${queue.name} keeps the ack wait it was created with (${ackWaitMs} ms), not this process's ${queue.ackWaitMs} ms; this process runs by the queue's`,
    );
  }

  // ------------------------------------------------------------ work

  function workProcessor<T>(queue: WorkQueueSpec, schema: Schema<T>, handler: WorkHandler<T>, options: ConsumeWorkOptions) {
    const log = logger.child({ queue: queue.name, stream: queue.stream });
    const backoff = queue.backoffMs && queue.backoffMs.length > 0 ? queue.backoffMs : DEFAULT_BACKOFF_MS;
    const workingMinIntervalMs = Math.min(1_000, queue.ackWaitMs / 10);

    async function giveUp(d: RawDelivery, kind: DeadLetter["kind"], reason: string): Promise<void> {
      const record: DeadLetterRecord = {
        kind,
        reason,
        stream: queue.stream,
        queue: queue.name,
        subject: d.subject,
        streamSeq: d.streamSeq,
        deliveryCount: d.deliveryCount,
        raw: d.body,
        ...(d.msgId === undefined ? {} : { msgId: d.msgId }),
      };
      try {
        // Recorded durably before the message is terminated, so no task is left "processing".
        await engine.publish(deadLetterSubject(queue.stream, queue.name), JSON.stringify(record), {
          msgId: `${queue.stream}.${queue.name}.${d.streamSeq}`,
        });
      } catch (error) {
        const delayMs = pick(backoff, d.deliveryCount);
        log.error({ err: error, msgId: d.msgId, seq: d.streamSeq }, "could not record a dead letter; retrying the message later");
        d.nak(Math.max(1, delayMs));
        return;
      }
      log.warn({ msgId: d.msgId, seq: d.streamSeq, deliveryCount: d.deliveryCount, kind, reason }, "work message dead-lettered");
      d.term();
    }

    return async function process(d: RawDelivery, stopSignal: AbortSignal): Promise<void> {
      let data: T;
      try {
        data = schema.parse(JSON.parse(d.body) as unknown);
      } catch (error) {
        await giveUp(d, "terminated", `invalid payload: ${errorMessage(error)}`);
        return;
      }

      const lastAttempt = d.deliveryCount >= queue.maxDeliver;
      const controller = new AbortController();
      const onStop = () => controller.abort(stopSignal.reason);
      if (stopSignal.aborted) onStop();
      else stopSignal.addEventListener("abort", onStop, { once: true });

      let finished = false;
      let leaseExpired = false;
      let leaseTimer: ReturnType<typeof setTimeout> | undefined;
      const armLease = () => {
        clearTimeout(leaseTimer);
        leaseTimer = setTimeout(() => {
          leaseExpired = true;
          controller.abort(new LeaseExpiredError(queue.ackWaitMs));
        }, queue.ackWaitMs);
      };
      armLease();
      let lastWorking = 0;
      const working = () => {
        if (finished || leaseExpired) return;
        const now = Date.now();
        if (now - lastWorking < workingMinIntervalMs) return;
        lastWorking = now;
        d.working();
        armLease();
      };
      // a quarter of the ack wait: a process starved of CPU for up to three quarters of it keeps its lease
      const stopHeartbeat = options.heartbeat ? heartbeat(queue.ackWaitMs / 4, working) : () => undefined;

      let result: WorkOutcome | undefined;
      let failure: unknown;
      try {
        const returned: unknown = await handler({
          data,
          deliveryCount: d.deliveryCount,
          msgId: d.msgId,
          subject: d.subject,
          streamSeq: d.streamSeq,
          headers: d.headers ?? NO_HEADERS,
          lastAttempt,
          working,
          signal: controller.signal,
        });
        if (isOutcome(returned)) result = returned;
        else failure = new InvalidArgumentError(`handler returned an invalid outcome: ${String(JSON.stringify(returned))}`);
      } catch (error) {
        failure = error;
      } finally {
        finished = true;
        clearTimeout(leaseTimer);
        stopHeartbeat();
        stopSignal.removeEventListener("abort", onStop);
      }

      if (leaseExpired) {
        // The message is being (or was) redelivered; settling this stale delivery could ack the new one.
        log.warn({ msgId: d.msgId, seq: d.streamSeq, deliveryCount: d.deliveryCount }, "handler finished after its lease expired; outcome ignored");
        return;
      }

      if (result?.kind === "ack") {
        d.ack();
        return;
      }
      if (result?.kind === "term") {
        await giveUp(d, "terminated", result.reason);
        return;
      }
      const reason = result?.kind === "retry" ? (result.reason ?? "retry requested") : errorMessage(failure);
      if (lastAttempt) {
        await giveUp(d, "max_deliveries", `gave up after ${d.deliveryCount} deliveries: ${reason}`);
        return;
      }
      if (result?.kind === "retry") {
        d.nak(Math.max(1, Math.round(result.delayMs)));
        log.debug({ msgId: d.msgId, deliveryCount: d.deliveryCount, delayMs: result.delayMs }, "work retry requested");
      } else {
        const delayMs = Math.max(1, pick(backoff, d.deliveryCount));
        log.warn({ err: failure, msgId: d.msgId, deliveryCount: d.deliveryCount, delayMs }, `work handler failed: ${reason}`);
        d.nak(delayMs);
      }
    };
  }

  // ------------------------------------------------------------ dead letters

  async function toDeadLetter(d: RawDelivery, log: Logger): Promise<{ deadLetter: DeadLetter; fromAdvisory: boolean } | null> {
    const parsed = tryJson(d.body);
    if (typeof parsed !== "object" || parsed === null) {
      log.error({ subject: d.subject }, "unreadable dead-letter record dropped");
      return null;
    }
    if (d.subject.startsWith(MAX_DELIVERIES_ADVISORY_PREFIX)) {
      const advisory = parsed as { stream?: unknown; consumer?: unknown; stream_seq?: unknown; deliveries?: unknown };
      if (typeof advisory.stream !== "string" || typeof advisory.consumer !== "string" || typeof advisory.stream_seq !== "number") {
        log.error({ subject: d.subject }, "unreadable max-deliveries advisory dropped");
        return null;
      }
      const stored = await engine.getMessage(advisory.stream, advisory.stream_seq);
      if (stored === null) {
        log.info({ stream: advisory.stream, seq: advisory.stream_seq }, "max-deliveries advisory for a message no longer in the stream; ignored");
        return null;
      }
      const deliveries = typeof advisory.deliveries === "number" ? advisory.deliveries : 0;
      return {
        fromAdvisory: true,
        deadLetter: {
          kind: "max_deliveries",
          reason: `not settled after ${deliveries} deliveries (handler lost, crashed or exceeded ack wait without working())`,
          stream: advisory.stream,
          queue: advisory.consumer,
          subject: stored.subject,
          streamSeq: stored.seq,
          msgId: stored.msgId,
          deliveryCount: deliveries,
          payload: tryJson(stored.body),
          raw: stored.body,
        },
      };
    }
    const r = parsed as Partial<DeadLetterRecord>;
    if (
      (r.kind !== "terminated" && r.kind !== "max_deliveries") ||
      typeof r.stream !== "string" ||
      typeof r.queue !== "string" ||
      typeof r.streamSeq !== "number" ||
      typeof r.raw !== "string"
    ) {
      log.error({ subject: d.subject }, "unreadable dead-letter record dropped");
      return null;
    }
    return {
      fromAdvisory: false,
      deadLetter: {
        kind: r.kind,
        reason: typeof r.reason === "string" ? r.reason : "",
        stream: r.stream,
        queue: r.queue,
        subject: typeof r.subject === "string" ? r.subject : "",
        streamSeq: r.streamSeq,
        msgId: typeof r.msgId === "string" ? r.msgId : undefined,
        deliveryCount: typeof r.deliveryCount === "number" ? r.deliveryCount : 0,
        payload: tryJson(r.raw),
        raw: r.raw,
      },
    };
  }

  async function onDeadLetter(queue: WorkQueueSpec, handler: DeadLetterHandler): Promise<BusSubscription> {
    assertOpen();
    validateQueue(queue);
    const log = logger.child({ queue: queue.name, stream: queue.stream, deadLetters: true });
    const stream = deadLetterStreamName(queue.stream, queue.name);
    const puller = await engine.puller(stream, DEAD_LETTER_CONSUMER);
    const pool = startPool({
      concurrency: 1,
      puller,
      pullExpiresMs: DEFAULT_PULL_EXPIRES_MS,
      logger: log,
      afterStop: () => engine.flush(),
      async process(d) {
        const stopHeartbeat = heartbeat(DEAD_LETTER_ACK_WAIT_MS / 2, () => d.working());
        try {
          let found: Awaited<ReturnType<typeof toDeadLetter>>;
          try {
            found = await toDeadLetter(d, log);
          } catch (error) {
            log.warn({ err: error }, `could not read a dead letter: ${errorMessage(error)}`);
            d.nak(pick(DEAD_LETTER_BACKOFF_MS, d.deliveryCount));
            return;
          }
          if (found === null) {
            d.ack();
            return;
          }
          try {
            await handler(found.deadLetter);
          } catch (error) {
            log.warn({ err: error, msgId: found.deadLetter.msgId }, `dead-letter handler failed: ${errorMessage(error)}`);
            d.nak(pick(DEAD_LETTER_BACKOFF_MS, d.deliveryCount));
            return;
          }
          if (found.fromAdvisory) {
            // Work-queue retention keeps an exhausted message forever; it has been handled now.
            await engine.deleteMessage(found.deadLetter.stream, found.deadLetter.streamSeq).catch((error: unknown) => {
              log.warn({ err: error }, `could not delete a dead-lettered message: ${errorMessage(error)}`);
            });
          }
          d.ack();
        } finally {
          stopHeartbeat();
        }
      },
    });
    return track(pool);
  }

  // ------------------------------------------------------------ events

  async function subscribeDurable<T>(
    pattern: string,
    schema: Schema<T>,
    handler: EventHandler<T>,
    durable: string,
    options: SubscribeEventsOptions,
  ): Promise<BusSubscription> {
    assertName("durable", durable);
    const stream = options.stream ?? (await engine.findStream(pattern));
    if (stream === undefined) throw new NotProvisionedError(`no stream captures ${pattern}`);
    const ackWaitMs = options.ackWaitMs ?? DEFAULT_EVENT_ACK_WAIT_MS;
    await engine.ensureConsumer(stream, {
      name: durable,
      filterSubject: pattern,
      ackWaitMs,
      maxDeliver: -1,
      // One unacked event at a time: a failing event is retried before later ones, keeping order.
      maxAckPending: 1,
      deliverPolicy: options.deliver ?? "all",
    });
    const puller = await engine.puller(stream, durable);
    const log = logger.child({ durable, stream });
    const pool = startPool({
      concurrency: 1,
      puller,
      pullExpiresMs: DEFAULT_PULL_EXPIRES_MS,
      logger: log,
      afterStop: () => engine.flush(),
      async process(d) {
        let data: T;
        try {
          data = schema.parse(JSON.parse(d.body) as unknown);
        } catch (error) {
          log.error({ subject: d.subject, seq: d.streamSeq, err: error }, "invalid event payload skipped");
          d.term();
          return;
        }
        const stopHeartbeat = heartbeat(ackWaitMs / 2, () => d.working());
        try {
          await handler({ subject: d.subject, data, seq: d.streamSeq, deliveryCount: d.deliveryCount });
          d.ack();
        } catch (error) {
          const delayMs = pick(EVENT_BACKOFF_MS, d.deliveryCount);
          log.warn({ err: error, seq: d.streamSeq, deliveryCount: d.deliveryCount, delayMs }, `event handler failed: ${errorMessage(error)}`);
          d.nak(delayMs);
        } finally {
          stopHeartbeat();
        }
      },
    });
    return track(pool);
  }

  async function subscribeLive<T>(pattern: string, schema: Schema<T>, handler: EventHandler<T>, what = "event"): Promise<BusSubscription> {
    const log = logger.child(what === "event" ? { events: pattern } : { notices: pattern });
    let chain: Promise<void> = Promise.resolve();
    let stopped = false;
    const handle = async (message: CoreMessage) => {
      if (stopped) return;
      let data: T;
      try {
        data = schema.parse(JSON.parse(message.body) as unknown);
      } catch (error) {
        log.error({ subject: message.subject, err: error }, `invalid ${what} payload skipped`);
        return;
      }
      try {
        await handler({ subject: message.subject, data, seq: undefined, deliveryCount: 1 });
      } catch (error) {
        log.warn({ err: error, subject: message.subject }, `${what} handler failed: ${errorMessage(error)}`);
      }
    };
    const sub = await engine.subscribe(pattern, {}, (message) => {
      // Handlers run one at a time, in arrival order.
      chain = chain.then(() => handle(message));
    });
    return track({
      async stop() {
        await sub.unsubscribe();
        await chain;
        stopped = true;
      },
    });
  }

  // ------------------------------------------------------------ request/reply

  function replyError(code: string, message: string): string {
    return JSON.stringify({ error: { code, message } });
  }

  const bus: Bus = {
    async provision(topology: Topology) {
      assertOpen();
      const streams = topology.streams ?? [];
      const queues = (topology.queues ?? []).map(configured);
      streams.forEach(validateStream);
      queues.forEach(validateQueue);
      for (const queue of queues) {
        const spec = streams.find((s) => s.name === queue.stream);
        if (spec && spec.kind !== "work") throw new InvalidArgumentError(`queue ${queue.name}: stream ${spec.name} is not a work stream`);
        if (spec && !spec.subjects.some((s) => subjectMatches(s, queue.subject) || s === queue.subject)) {
          throw new InvalidArgumentError(`queue ${queue.name}: subject ${queue.subject} is not captured by stream ${spec.name}`);
        }
      }
      for (const stream of streams) await engine.ensureStream(stream);
      for (const queue of queues) {
        const consumer = await engine.ensureConsumer(queue.stream, {
          name: queue.name,
          filterSubject: queue.subject,
          ackWaitMs: queue.ackWaitMs,
          maxDeliver: queue.maxDeliver,
          maxAckPending: queue.maxAckPending ?? 1_000,
          deliverPolicy: "all",
        });
        keepConsumerAckWait(queue, consumer.ackWaitMs);
        const dlq = deadLetterStreamName(queue.stream, queue.name);
        await engine.ensureStream({
          name: dlq,
          kind: "events",
          subjects: [maxDeliveriesAdvisorySubject(queue.stream, queue.name), deadLetterSubject(queue.stream, queue.name)],
          maxAgeMs: DEAD_LETTER_MAX_AGE_MS,
        });
        await engine.ensureConsumer(dlq, {
          name: DEAD_LETTER_CONSUMER,
          filterSubject: ">",
          ackWaitMs: DEAD_LETTER_ACK_WAIT_MS,
          maxDeliver: -1,
          maxAckPending: 1,
          deliverPolicy: "all",
        });
      }
      logger.debug({ streams: streams.map((s) => s.name), queues: queues.map((q) => q.name) }, "bus provisioned");
    },

    async publishWork(subject, payload, options) {
      assertOpen();
      assertSubject(subject, { wildcards: false });
      if (typeof options.msgId !== "string" || options.msgId === "") throw new InvalidArgumentError("publishWork needs a msgId");
      const body = encodeJson(payload);
      // With tracing on: a producer span, its W3C context sent as message headers to the worker.
      const traced = startPublish(subject, { "messaging.message.id": options.msgId });
      let result: PublishResult;
      try {
        result = await engine.publish(subject, body, { msgId: options.msgId, headers: traced?.headers });
      } catch (error) {
        traced?.end(error);
        throw error;
      }
      traced?.end();
      if (result.duplicate) logger.debug({ subject, msgId: options.msgId }, "duplicate work publish dropped");
      return result;
    },

    async consumeWork<T>(queue: WorkQueueSpec, schema: Schema<T>, handler: WorkHandler<T>, options: ConsumeWorkOptions = {}) {
      assertOpen();
      queue = effective(queue);
      validateQueue(queue);
      const concurrency = options.concurrency ?? 1;
      if (!Number.isInteger(concurrency) || concurrency < 1) throw new InvalidArgumentError("concurrency must be an integer >= 1");
      const pullExpiresMs = options.pullExpiresMs ?? DEFAULT_PULL_EXPIRES_MS;
      if (!(pullExpiresMs >= 1_000)) throw new InvalidArgumentError("pullExpiresMs must be >= 1000");
      const puller = await engine.puller(queue.stream, queue.name);
      const pool = startPool({
        concurrency,
        puller,
        pullExpiresMs,
        logger: logger.child({ queue: queue.name, stream: queue.stream }),
        afterStop: () => engine.flush(),
        process: workProcessor(queue, schema, handler, options),
      });
      return track(pool);
    },

    onDeadLetter,
    onMaxDeliveries: onDeadLetter,

    async publishEvent(subject: string, payload: unknown, options: PublishEventOptions = {}): Promise<PublishResult> {
      assertOpen();
      assertSubject(subject, { wildcards: false });
      return engine.publish(subject, encodeJson(payload), options.msgId === undefined ? {} : { msgId: options.msgId });
    },

    async subscribeEvents<T>(pattern: string, schema: Schema<T>, handler: EventHandler<T>, options: SubscribeEventsOptions = {}) {
      assertOpen();
      assertSubject(pattern, { wildcards: true });
      return options.durable === undefined
        ? subscribeLive(pattern, schema, handler)
        : subscribeDurable(pattern, schema, handler, options.durable, options);
    },

    async notify(subject: string, payload: unknown): Promise<void> {
      assertOpen();
      assertSubject(subject, { wildcards: false });
      await engine.notify(subject, encodeJson(payload));
    },

    async subscribeNotices<T>(pattern: string, schema: Schema<T>, handler: NoticeHandler<T>) {
      assertOpen();
      assertSubject(pattern, { wildcards: true });
      return subscribeLive(pattern, schema, ({ subject, data }) => handler({ subject, data }), "notice");
    },

    async serve<Req, Res>(subject: string, schema: Schema<Req>, handler: RequestHandler<Req, Res>, options: ServeOptions = {}) {
      assertOpen();
      assertSubject(subject, { wildcards: true });
      const log = logger.child({ serve: subject });
      const inFlight = new Set<Promise<void>>();
      const handle = async (message: CoreMessage) => {
        let request: Req;
        try {
          request = schema.parse(JSON.parse(message.body) as unknown);
        } catch (error) {
          message.respond(replyError("invalid_request", errorMessage(error)));
          return;
        }
        let reply: string;
        try {
          const result = await handler(request, { subject: message.subject });
          reply = JSON.stringify({ result });
        } catch (error) {
          const code = typeof (error as { code?: unknown } | null)?.code === "string" ? (error as { code: string }).code : "internal";
          log.debug({ err: error, subject: message.subject }, "request handler failed");
          reply = replyError(code, errorMessage(error));
        }
        message.respond(reply);
      };
      const sub = await engine.subscribe(subject, { queue: options.queue ?? subject }, (message) => {
        const ids = logIdsOf(message.headers);
        const running = (ids === undefined ? handle(message) : withLogContext(ids, () => handle(message))).catch((error: unknown) => {
          log.error({ err: error }, `replying failed: ${errorMessage(error)}`);
        });
        inFlight.add(running);
        void running.finally(() => inFlight.delete(running));
      });
      return track({
        async stop() {
          await sub.unsubscribe();
          await Promise.all([...inFlight]);
          await engine.flush().catch(() => undefined);
        },
      });
    },

    async request<T = unknown>(subject: string, payload: unknown, options: RequestOptions<T>): Promise<T> {
      assertOpen();
      assertSubject(subject, { wildcards: false });
      if (!(options.timeoutMs > 0)) throw new InvalidArgumentError("timeoutMs must be > 0");
      const text = await engine.request(subject, encodeJson(payload), options.timeoutMs, logIdHeaders());
      const reply = tryJson(text);
      if (typeof reply !== "object" || reply === null) throw new BusError("bad_reply", `unreadable reply on ${subject}`);
      const envelope = reply as { result?: unknown; error?: { code?: unknown; message?: unknown } };
      if (envelope.error !== undefined) {
        const code = typeof envelope.error?.code === "string" ? envelope.error.code : "internal";
        const message = typeof envelope.error?.message === "string" ? envelope.error.message : "remote error";
        throw new RemoteError(subject, code, message);
      }
      if (options.schema === undefined) return envelope.result as T;
      try {
        return options.schema.parse(envelope.result);
      } catch (error) {
        throw new BusError("bad_reply", `reply on ${subject} failed validation: ${errorMessage(error)}`, { cause: error });
      }
    },

    async queueStats(queues) {
      assertOpen();
      return Promise.all(queues.map(async (q) => ({ queue: q.name, ...(await engine.consumerStats(q.stream, q.name)) })));
    },

    async ping(options?: { timeoutMs?: number }): Promise<number> {
      assertOpen();
      return engine.ping(options?.timeoutMs ?? 2_000);
    },

    close(options?: StopOptions) {
      closing ??= (async () => {
        await Promise.all([...subscriptions].map((s) => s.stop(options)));
        await engine.close();
      })();
      return closing;
    },
  };
  return bus;
}
