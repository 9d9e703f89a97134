/**
 * The NATS adapter: JetStream (nats-server >= 2.9) via @nats-io/transport-node + @nats-io/jetstream v3.
 */
import {
  connect,
  nanos,
  RequestError,
  TimeoutError,
  ClosedConnectionError,
  DrainingConnectionError,
  headers as natsHeaders,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
} from "@nats-io/transport-node";
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  jetstreamManager,
  type ConsumerConfig,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type StreamConfig,
} from "@nats-io/jetstream";
import type { Logger } from "@voiceloc/log";
import { TRACE_HEADERS } from "@voiceloc/telemetry";
import { createBusOnEngine } from "./core.ts";
import { LOG_ID_HEADERS } from "./log-ids.ts";
import type { ConsumerSpec, CoreMessage, CoreSubscription, Engine, Puller, RawDelivery, StoredMessage } from "./engine.ts";
import {
  BusClosedError,
  BusError,
  NoRespondersError,
  NotProvisionedError,
  ProvisionError,
  PublishError,
  RequestTimeoutError,
  errorMessage,
} from "./errors.ts";
import type { Bus, StreamSpec } from "./types.ts";

export interface NatsBusOptions {
  /** One server URL, e.g. nats://127.0.0.1:4222 (or use `servers`). */
  url?: string;
  servers?: string | string[];
  logger: Logger;
  /** Connection name shown by the server (e.g. the service name). */
  name: string;
  /** Connect timeout and JetStream API timeout. Default 10 000 ms. */
  timeoutMs?: number;
  /** See BusSettings.workAckWaitMs: the ack wait of every work queue, replacing the queues' own. */
  workAckWaitMs?: number;
  /** Reconnect back-off: first delay, doubling per failed attempt up to maxMs (plus up to 20 % jitter). Default 250 ms → 5 s. */
  reconnectBackoff?: { initialMs: number; maxMs: number };
}

/**
 * The wait before reconnect attempt `attempt + 1` after `attempt` failed ones: exponential from
 * initialMs, capped at maxMs, plus a jitter fixed per attempt (0–20 %) so many clients do not dial at once.
 */
export function reconnectDelayMs(attempt: number, backoff: { initialMs: number; maxMs: number }, jitter: number): number {
  const base = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.max(0, Math.min(attempt - 1, 30)));
  return Math.round(base * (1 + 0.2 * Math.min(1, Math.max(0, jitter))));
}

const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60_000;
const DEFAULT_EVENTS_MAX_AGE_MS = 7 * 24 * 3_600_000;
/** JetStream API error: stream name already in use with a different configuration. */
const STREAM_NAME_IN_USE = 10058;
/** JetStream API error (>= 2.10): consumer already exists (create action). */
const CONSUMER_ALREADY_EXISTS = 10148;

function apiCode(error: unknown): number | undefined {
  return error instanceof JetStreamApiError ? error.code : undefined;
}

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  let current: unknown = error;
  while (current !== undefined && current !== null && chain.length < 5) {
    chain.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  return chain;
}

function isNoResponders(error: unknown): boolean {
  return causes(error).some(
    (e) => (e instanceof RequestError && e.isNoResponders()) || (e instanceof Error && e.name === "NoRespondersError"),
  );
}

function isClosed(error: unknown): boolean {
  return causes(error).some((e) => e instanceof ClosedConnectionError || e instanceof DrainingConnectionError);
}

/** The headers of a message among `names`, when it has any. */
function namedHeaders(m: Pick<Msg, "headers">, names: readonly string[]): Record<string, string> | undefined {
  if (m.headers === undefined) return undefined;
  let found: Record<string, string> | undefined;
  for (const name of names) {
    const value = m.headers.get(name);
    if (value) (found ??= {})[name] = value;
  }
  return found;
}

/** Header fields as NATS headers (undefined when there are none). */
function toNatsHeaders(fields: Record<string, string> | undefined): MsgHdrs | undefined {
  let hdrs: MsgHdrs | undefined;
  for (const [name, value] of Object.entries(fields ?? {})) (hdrs ??= natsHeaders()).set(name, value);
  return hdrs;
}

function toDelivery(m: JsMsg): RawDelivery {
  return {
    // the W3C trace context, when it carries one
    headers: namedHeaders(m, TRACE_HEADERS),
    subject: m.subject,
    body: m.string(),
    streamSeq: m.seq,
    deliveryCount: m.info.deliveryCount,
    msgId: m.headers?.get("Nats-Msg-Id") || undefined,
    ack: () => m.ack(),
    nak: (delayMs) => m.nak(Math.max(1, delayMs)),
    // No reason: nats-server < 2.11 ignores "+TERM <reason>" entirely and redelivers.
    term: () => m.term(),
    working: () => m.working(),
  };
}

function streamConfig(spec: StreamSpec): Partial<StreamConfig> & { name: string } {
  const events = spec.kind === "events";
  return {
    name: spec.name,
    subjects: [...spec.subjects],
    retention: events ? RetentionPolicy.Limits : RetentionPolicy.Workqueue,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    num_replicas: 1,
    duplicate_window: nanos(spec.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS),
    max_age: nanos(spec.maxAgeMs ?? (events ? DEFAULT_EVENTS_MAX_AGE_MS : 0)),
    max_msgs: spec.maxMsgs ?? -1,
    max_bytes: spec.maxBytes ?? -1,
  };
}

class NatsEngine implements Engine {
  readonly #nc: NatsConnection;
  readonly #jsm: JetStreamManager;
  readonly #js: JetStreamClient;
  readonly #logger: Logger;

  constructor(nc: NatsConnection, jsm: JetStreamManager, logger: Logger) {
    this.#nc = nc;
    this.#jsm = jsm;
    this.#js = jsm.jetstream();
    this.#logger = logger;
  }

  async ensureStream(spec: StreamSpec): Promise<void> {
    const wanted = streamConfig(spec);
    try {
      let info = await this.#jsm.streams.info(spec.name).catch((error: unknown) => {
        if (apiCode(error) === JetStreamApiCodes.StreamNotFound) return undefined;
        throw error;
      });
      if (info === undefined) {
        try {
          await this.#jsm.streams.add(wanted);
          return;
        } catch (error) {
          if (apiCode(error) !== STREAM_NAME_IN_USE) throw error;
          info = await this.#jsm.streams.info(spec.name);
        }
      }
      const current = info.config;
      if (current.retention !== wanted.retention) {
        throw new ProvisionError(`stream ${spec.name} exists with ${current.retention} retention, wanted ${wanted.retention}`);
      }
      const same =
        [...current.subjects].sort().join(" ") === [...(wanted.subjects ?? [])].sort().join(" ") &&
        current.duplicate_window === wanted.duplicate_window &&
        current.max_age === wanted.max_age &&
        current.max_msgs === wanted.max_msgs &&
        current.max_bytes === wanted.max_bytes;
      if (!same) {
        await this.#jsm.streams.update(spec.name, {
          subjects: wanted.subjects ?? [],
          duplicate_window: wanted.duplicate_window ?? 0,
          max_age: wanted.max_age ?? 0,
          max_msgs: wanted.max_msgs ?? -1,
          max_bytes: wanted.max_bytes ?? -1,
        });
        this.#logger.info({ stream: spec.name }, "stream updated");
      }
    } catch (error) {
      if (error instanceof BusError) throw error;
      throw new ProvisionError(`could not provision stream ${spec.name}: ${errorMessage(error)}`, { cause: error });
    }
  }

  async ensureConsumer(stream: string, spec: ConsumerSpec): Promise<{ ackWaitMs: number }> {
    const filter = spec.filterSubject === ">" ? undefined : spec.filterSubject;
    // What provisioning keeps in step on an existing consumer: not its ack wait (see Engine.ensureConsumer).
    const updatable = {
      max_deliver: spec.maxDeliver,
      max_ack_pending: spec.maxAckPending,
      ...(filter === undefined ? {} : { filter_subject: filter }),
    };
    const full: Partial<ConsumerConfig> = {
      durable_name: spec.name,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: spec.deliverPolicy === "new" ? DeliverPolicy.New : DeliverPolicy.All,
      ack_wait: nanos(spec.ackWaitMs),
      ...updatable,
    };
    try {
      let info = await this.#jsm.consumers.info(stream, spec.name).catch((error: unknown) => {
        if (apiCode(error) === JetStreamApiCodes.ConsumerNotFound) return undefined;
        throw error;
      });
      if (info === undefined) {
        try {
          await this.#jsm.consumers.add(stream, full);
          return { ackWaitMs: spec.ackWaitMs };
        } catch (error) {
          if (apiCode(error) !== CONSUMER_ALREADY_EXISTS) throw error;
        }
        // Another process created it meanwhile.
        info = await this.#jsm.consumers.info(stream, spec.name);
      }
      const c = info.config;
      const same =
        c.max_deliver === updatable.max_deliver && c.max_ack_pending === updatable.max_ack_pending && (c.filter_subject || undefined) === filter;
      if (!same) {
        await this.#jsm.consumers.update(stream, spec.name, updatable);
        this.#logger.info({ stream, consumer: spec.name }, "consumer updated");
      }
      return { ackWaitMs: c.ack_wait === undefined ? spec.ackWaitMs : Math.round(c.ack_wait / 1_000_000) };
    } catch (error) {
      throw new ProvisionError(`could not provision consumer ${stream}/${spec.name}: ${errorMessage(error)}`, { cause: error });
    }
  }

  async puller(stream: string, consumer: string): Promise<Puller> {
    let pull;
    try {
      pull = await this.#js.consumers.get(stream, consumer);
    } catch (error) {
      const code = apiCode(error);
      if (code === JetStreamApiCodes.ConsumerNotFound || code === JetStreamApiCodes.StreamNotFound) {
        throw new NotProvisionedError(`consumer ${stream}/${consumer} does not exist; call provision() first`, { cause: error });
      }
      if (isClosed(error)) throw new BusClosedError({ cause: error });
      throw error;
    }
    const c = pull;
    return {
      async next(signal: AbortSignal, expiresMs: number): Promise<RawDelivery | null> {
        if (signal.aborted) return null;
        const messages = await c.fetch({ max_messages: 1, expires: expiresMs });
        const onAbort = () => {
          void messages.close();
        };
        signal.addEventListener("abort", onAbort, { once: true });
        if (signal.aborted) onAbort();
        try {
          for await (const m of messages) return toDelivery(m);
          return null;
        } finally {
          signal.removeEventListener("abort", onAbort);
        }
      },
    };
  }

  async publish(subject: string, body: string, options: { msgId?: string; headers?: Record<string, string> | undefined }) {
    try {
      const hdrs = toNatsHeaders(options.headers);
      const ack = await this.#js.publish(subject, body, {
        ...(options.msgId === undefined ? {} : { msgID: options.msgId }),
        ...(hdrs === undefined ? {} : { headers: hdrs }),
      });
      return { stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate };
    } catch (error) {
      if (isClosed(error)) throw new BusClosedError({ cause: error });
      if (isNoResponders(error)) {
        throw new PublishError("no_stream", subject, `no stream captures ${subject} (or JetStream is unavailable)`, { cause: error });
      }
      throw new PublishError("publish_failed", subject, `publish on ${subject} failed: ${errorMessage(error)}`, { cause: error });
    }
  }

  async consumerStats(stream: string, consumer: string) {
    const info = await this.#jsm.consumers.info(stream, consumer);
    return { pending: info.num_pending, ackPending: info.num_ack_pending, redelivered: info.num_redelivered };
  }

  async getMessage(stream: string, seq: number): Promise<StoredMessage | null> {
    try {
      const m = await this.#jsm.streams.getMessage(stream, { seq });
      if (m === null) return null;
      return { subject: m.subject, body: m.string(), seq: m.seq, msgId: m.header?.get("Nats-Msg-Id") || undefined };
    } catch (error) {
      if (apiCode(error) === JetStreamApiCodes.StreamNotFound) {
        throw new NotProvisionedError(`stream ${stream} does not exist`, { cause: error });
      }
      throw error;
    }
  }

  async deleteMessage(stream: string, seq: number): Promise<void> {
    try {
      await this.#jsm.streams.deleteMessage(stream, seq, false);
    } catch (error) {
      if (apiCode(error) === JetStreamApiCodes.NoMessageFound) return;
      // 2.9 reports a missing sequence as a generic 10057 ("no message found" / "sequence > last sequence").
      if (/no message|not found|sequence/i.test(errorMessage(error))) return;
      throw error;
    }
  }

  async findStream(pattern: string): Promise<string | undefined> {
    try {
      return await this.#jsm.streams.find(pattern);
    } catch {
      return undefined;
    }
  }

  async subscribe(pattern: string, options: { queue?: string }, callback: (message: CoreMessage) => void): Promise<CoreSubscription> {
    const sub = this.#nc.subscribe(pattern, {
      ...(options.queue === undefined ? {} : { queue: options.queue }),
      callback: (error, msg: Msg) => {
        if (error) {
          this.#logger.warn({ err: error, subject: pattern }, `subscription error: ${errorMessage(error)}`);
          return;
        }
        callback({
          subject: msg.subject,
          body: msg.string(),
          headers: namedHeaders(msg, LOG_ID_HEADERS),
          respond: (body) => {
            if (msg.reply) msg.respond(body);
          },
        });
      },
    });
    await this.#nc.flush();
    return {
      unsubscribe: async () => {
        if (this.#nc.isClosed()) return;
        await sub.drain().catch(() => undefined);
      },
    };
  }

  async notify(subject: string, body: string): Promise<void> {
    try {
      this.#nc.publish(subject, body);
    } catch (error) {
      if (isClosed(error)) throw new BusClosedError({ cause: error });
      throw new PublishError("publish_failed", subject, `notice on ${subject} failed: ${errorMessage(error)}`, { cause: error });
    }
  }

  async request(subject: string, body: string, timeoutMs: number, headers?: Record<string, string>): Promise<string> {
    try {
      const hdrs = toNatsHeaders(headers);
      const reply = await this.#nc.request(subject, body, { timeout: timeoutMs, ...(hdrs === undefined ? {} : { headers: hdrs }) });
      return reply.string();
    } catch (error) {
      if (isNoResponders(error)) throw new NoRespondersError(subject, { cause: error });
      if (causes(error).some((e) => e instanceof TimeoutError)) throw new RequestTimeoutError(subject, timeoutMs, { cause: error });
      if (isClosed(error)) throw new BusClosedError({ cause: error });
      throw new BusError("publish_failed", `request on ${subject} failed: ${errorMessage(error)}`, { cause: error });
    }
  }

  async ping(timeoutMs: number): Promise<number> {
    if (this.#nc.isClosed()) throw new BusClosedError();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BusError("timeout", `the NATS server did not answer a ping within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      // PING/PONG with the server; while disconnected it waits for a reconnect, so the timeout decides.
      return await Promise.race([this.#nc.rtt(), timedOut]);
    } catch (error) {
      if (error instanceof BusError) throw error;
      if (isClosed(error)) throw new BusClosedError({ cause: error });
      throw new BusError("timeout", `the NATS server did not answer a ping: ${errorMessage(error)}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  async flush(): Promise<void> {
    if (this.#nc.isClosed() || this.#nc.isDraining()) return;
    await this.#nc.flush();
  }

  async close(): Promise<void> {
    if (this.#nc.isClosed()) return;
    try {
      await this.#nc.drain();
    } catch (error) {
      this.#logger.warn({ err: error }, `drain failed: ${errorMessage(error)}`);
      await this.#nc.close();
    }
  }
}

export interface NatsConnectOptions {
  /** One server URL or several. */
  servers: string | string[];
  /** Connection name shown by the server. */
  name: string;
  logger: Logger;
  /** Connect timeout. Default 10 000 ms. */
  timeoutMs?: number;
  /** Reconnect back-off: first delay, doubling per failed attempt up to maxMs (plus up to 20 % jitter). Default 250 ms → 5 s. */
  reconnectBackoff?: { initialMs: number; maxMs: number };
}

/**
 * A NATS connection that reconnects forever with a capped exponential back-off, logging the loss, each
 * attempt (`attempt`, `delayMs`: the wait before the next one should it fail) and the return. The bus
 * uses it; so can other clients of the same server (e.g. the blob store on JetStream).
 */
export async function connectNats(options: NatsConnectOptions): Promise<NatsConnection> {
  const logger = options.logger;
  const backoff = options.reconnectBackoff ?? { initialMs: 250, maxMs: 5_000 };
  // Failed reconnect attempts since the connection was lost; one jitter draw per attempt (the client
  // asks for the delay more than once per attempt).
  let attempt = 0;
  let jitter = Math.random();
  let disconnectedAt = 0;
  const delay = () => reconnectDelayMs(attempt, backoff, jitter);
  const nc = await connect({
    servers: options.servers,
    name: options.name,
    timeout: options.timeoutMs ?? 10_000,
    maxReconnectAttempts: -1,
    reconnectDelayHandler: delay,
  });
  void (async () => {
    for await (const status of nc.status()) {
      switch (status.type) {
        case "disconnect":
          attempt = 0;
          disconnectedAt = Date.now();
          logger.warn({ server: status.server }, "nats disconnected; reconnecting with back-off");
          break;
        case "reconnecting":
          // the client dials now; the first dial after a disconnect goes out at once
          attempt += 1;
          jitter = Math.random();
          logger.info({ attempt, delayMs: delay() }, "nats reconnect attempt");
          break;
        case "reconnect":
          logger.info({ server: status.server, attempts: attempt, downMs: disconnectedAt ? Date.now() - disconnectedAt : undefined }, "nats reconnected");
          attempt = 0;
          break;
        case "error":
          logger.warn({ err: status.error }, "nats error");
          break;
        default:
          break;
      }
    }
  })().catch(() => undefined);
  return nc;
}

/** Connects to NATS (reconnecting forever, see connectNats) and returns the bus. Needs JetStream enabled on the server. */
export async function createNatsBus(options: NatsBusOptions): Promise<Bus> {
  const servers = options.servers ?? options.url;
  if (servers === undefined) throw new BusError("invalid_argument", "createNatsBus needs url or servers");
  const timeout = options.timeoutMs ?? 10_000;
  const logger = options.logger.child({ component: "bus", bus: "nats" });
  const nc = await connectNats({
    servers,
    name: options.name,
    logger,
    timeoutMs: timeout,
    ...(options.reconnectBackoff === undefined ? {} : { reconnectBackoff: options.reconnectBackoff }),
  });
  let jsm: JetStreamManager;
  try {
    jsm = await jetstreamManager(nc, { timeout });
  } catch (error) {
    await nc.close();
    throw new BusError("provision_failed", `JetStream is not available: ${errorMessage(error)}`, { cause: error });
  }
  logger.info({ server: nc.getServer(), version: nc.info?.version }, "nats bus connected");
  return createBusOnEngine(new NatsEngine(nc, jsm, logger), logger, options.workAckWaitMs === undefined ? {} : { workAckWaitMs: options.workAckWaitMs });
}
