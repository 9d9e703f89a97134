/**
 * The in-process adapter for single-machine mode: a small in-memory JetStream with the semantics the bus
 * relies on (work-queue and limits retention, msgId dedup window, durable pull consumers with ack wait,
 * nak delay, term, in-progress acks, max deliveries advisories) plus core pub/sub and request/reply.
 * Nothing survives the process.
 */
import type { Logger } from "@voiceloc/log";
import { createBusOnEngine, type BusSettings } from "./core.ts";
import {
  maxDeliveriesAdvisorySubject,
  type ConsumerSpec,
  type CoreMessage,
  type CoreSubscription,
  type Engine,
  type Puller,
  type RawDelivery,
  type StoredMessage,
} from "./engine.ts";
import {
  BusClosedError,
  NoRespondersError,
  NotProvisionedError,
  ProvisionError,
  PublishError,
  RequestTimeoutError,
} from "./errors.ts";
import { subjectMatches, subjectsOverlap } from "./subject.ts";
import type { Bus, StreamSpec } from "./types.ts";

export interface InProcessBusOptions extends BusSettings {
  logger: Logger;
}

const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60_000;
const DEFAULT_EVENTS_MAX_AGE_MS = 7 * 24 * 3_600_000;
const DEFAULT_EVENTS_MAX_MSGS = 100_000;

interface MemMessage {
  seq: number;
  subject: string;
  body: string;
  msgId: string | undefined;
  at: number;
  headers?: Record<string, string> | undefined;
}

interface PendingEntry {
  seq: number;
  deliveryCount: number;
  /**
   * `inflight`: delivered, its ack wait running; `delayed`: settled with a delay (nak) or its ack wait
   * over, waiting for its timer; `ready`: due for redelivery. Only the entry's timer makes it ready:
   * comparing Date.now() with a due time would leave it waiting whenever a timer fires before the wall
   * clock reaches that time (timers keep a monotonic clock of whole milliseconds, so they often fire a
   * millisecond "early" by Date.now(), and the wall clock can be stepped back), and nothing would hand
   * it out before the consumer's next pull.
   */
  state: "inflight" | "delayed" | "ready";
  deliveryId: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

interface Waiter {
  resolve(delivery: RawDelivery | null): void;
}

function unrefTimer(timer: ReturnType<typeof setTimeout>): ReturnType<typeof setTimeout> {
  (timer as { unref?: () => void }).unref?.();
  return timer;
}

class MemStream {
  spec: StreamSpec;
  readonly messages = new Map<number, MemMessage>();
  readonly dedup = new Map<string, { seq: number; at: number }>();
  readonly consumers = new Map<string, MemConsumer>();
  lastSeq = 0;
  bytes = 0;

  constructor(spec: StreamSpec) {
    this.spec = spec;
  }

  get workQueue(): boolean {
    return this.spec.kind === "work";
  }

  captures(subject: string): boolean {
    return this.spec.subjects.some((pattern) => subjectMatches(pattern, subject));
  }

  store(subject: string, body: string, msgId: string | undefined, now: number, headers?: Record<string, string>): { seq: number; duplicate: boolean } {
    const windowMs = this.spec.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
    for (const [id, entry] of this.dedup) {
      if (entry.at >= now - windowMs) break;
      this.dedup.delete(id);
    }
    if (msgId !== undefined) {
      const seen = this.dedup.get(msgId);
      if (seen) return { seq: seen.seq, duplicate: true };
    }
    const seq = ++this.lastSeq;
    this.messages.set(seq, { seq, subject, body, msgId, at: now, ...(headers === undefined ? {} : { headers }) });
    this.bytes += body.length;
    if (msgId !== undefined) this.dedup.set(msgId, { seq, at: now });
    this.enforceLimits(now);
    return { seq, duplicate: false };
  }

  enforceLimits(now: number): void {
    const events = this.spec.kind === "events";
    const maxAge = this.spec.maxAgeMs ?? (events ? DEFAULT_EVENTS_MAX_AGE_MS : 0);
    const maxMsgs = this.spec.maxMsgs ?? (events ? DEFAULT_EVENTS_MAX_MSGS : -1);
    const maxBytes = this.spec.maxBytes ?? -1;
    for (const message of this.messages.values()) {
      const tooOld = maxAge > 0 && message.at < now - maxAge;
      const tooMany = maxMsgs > 0 && this.messages.size > maxMsgs;
      const tooBig = maxBytes > 0 && this.bytes > maxBytes;
      if (!tooOld && !tooMany && !tooBig) break;
      this.remove(message.seq);
    }
  }

  remove(seq: number): boolean {
    const message = this.messages.get(seq);
    if (!message) return false;
    this.messages.delete(seq);
    this.bytes -= message.body.length;
    for (const consumer of this.consumers.values()) consumer.forget(seq);
    return true;
  }
}

class MemConsumer {
  spec: ConsumerSpec;
  readonly stream: MemStream;
  readonly pending = new Map<number, PendingEntry>();
  readonly waiters: Waiter[] = [];
  nextSeq: number;
  readonly #engine: InProcessEngine;
  #deliveryIds = 0;

  constructor(engine: InProcessEngine, stream: MemStream, spec: ConsumerSpec) {
    this.#engine = engine;
    this.stream = stream;
    this.spec = spec;
    this.nextSeq = spec.deliverPolicy === "new" ? stream.lastSeq + 1 : 1;
  }

  forget(seq: number): void {
    const entry = this.pending.get(seq);
    if (!entry) return;
    clearTimeout(entry.timer);
    this.pending.delete(seq);
  }

  #exhausted(entry: PendingEntry): boolean {
    return this.spec.maxDeliver > 0 && entry.deliveryCount >= this.spec.maxDeliver;
  }

  /** Like nats-server: the message stays in the stream, is never redelivered, and an advisory is published. */
  #exhaust(entry: PendingEntry): void {
    this.forget(entry.seq);
    this.#engine.advisory(maxDeliveriesAdvisorySubject(this.stream.spec.name, this.spec.name), {
      type: "io.nats.jetstream.advisory.v1.max_deliver",
      stream: this.stream.spec.name,
      consumer: this.spec.name,
      stream_seq: entry.seq,
      deliveries: entry.deliveryCount,
    });
  }

  /** Makes an entry due for redelivery after `delayMs`, when its timer fires (and dispatches). */
  #redeliverAfter(entry: PendingEntry, delayMs: number): void {
    clearTimeout(entry.timer);
    entry.state = "delayed";
    entry.timer = unrefTimer(
      setTimeout(() => {
        entry.timer = undefined;
        if (this.pending.get(entry.seq) !== entry || entry.state !== "delayed") return;
        entry.state = "ready";
        if (this.#exhausted(entry)) this.#exhaust(entry);
        this.dispatch();
      }, Math.max(0, delayMs)),
    );
  }

  #nextFresh(): MemMessage | undefined {
    while (this.nextSeq <= this.stream.lastSeq) {
      const message = this.stream.messages.get(this.nextSeq);
      this.nextSeq++;
      if (message && subjectMatches(this.spec.filterSubject, message.subject)) return message;
    }
    return undefined;
  }

  #nextRedelivery(): PendingEntry | undefined {
    let best: PendingEntry | undefined;
    for (const entry of this.pending.values()) {
      if (entry.state !== "ready") continue;
      if (best === undefined || entry.seq < best.seq) best = entry;
    }
    return best;
  }

  dispatch(): void {
    while (this.waiters.length > 0) {
      let entry = this.#nextRedelivery();
      if (entry !== undefined && this.#exhausted(entry)) {
        this.#exhaust(entry);
        continue;
      }
      if (entry === undefined) {
        if (this.pending.size >= this.spec.maxAckPending) return;
        const fresh = this.#nextFresh();
        if (fresh === undefined) return;
        entry = { seq: fresh.seq, deliveryCount: 0, state: "ready", deliveryId: 0, timer: undefined };
        this.pending.set(fresh.seq, entry);
      }
      const message = this.stream.messages.get(entry.seq);
      if (message === undefined) {
        this.forget(entry.seq);
        continue;
      }
      const waiter = this.waiters.shift();
      waiter?.resolve(this.#deliver(entry, message));
    }
  }

  #armAckWait(entry: PendingEntry, deliveryId: number): void {
    clearTimeout(entry.timer);
    entry.timer = unrefTimer(
      setTimeout(() => {
        entry.timer = undefined;
        if (this.pending.get(entry.seq) !== entry || entry.deliveryId !== deliveryId || entry.state !== "inflight") return;
        this.#redeliverAfter(entry, 0);
      }, this.spec.ackWaitMs),
    );
  }

  #deliver(entry: PendingEntry, message: MemMessage): RawDelivery {
    clearTimeout(entry.timer);
    entry.deliveryCount++;
    entry.state = "inflight";
    const deliveryId = ++this.#deliveryIds;
    entry.deliveryId = deliveryId;
    this.#armAckWait(entry, deliveryId);
    const current = () =>
      !this.#engine.closed && this.pending.get(entry.seq) === entry && entry.deliveryId === deliveryId && entry.state === "inflight";
    const finish = () => {
      this.forget(entry.seq);
      if (this.stream.workQueue) this.stream.remove(entry.seq);
      queueMicrotask(() => this.dispatch());
    };
    return {
      subject: message.subject,
      body: message.body,
      streamSeq: message.seq,
      deliveryCount: entry.deliveryCount,
      msgId: message.msgId,
      headers: message.headers,
      ack: () => {
        if (current()) finish();
      },
      term: () => {
        if (current()) finish();
      },
      nak: (delayMs) => {
        if (current()) this.#redeliverAfter(entry, Math.max(1, delayMs));
      },
      working: () => {
        if (current()) this.#armAckWait(entry, deliveryId);
      },
    };
  }

  /** Like nats-server's consumer info: undelivered messages, delivered-unsettled, redelivered-unsettled. */
  stats(): { pending: number; ackPending: number; redelivered: number } {
    let pending = 0;
    for (let seq = this.nextSeq; seq <= this.stream.lastSeq; seq++) {
      const message = this.stream.messages.get(seq);
      if (message && subjectMatches(this.spec.filterSubject, message.subject)) pending++;
    }
    let redelivered = 0;
    for (const entry of this.pending.values()) if (entry.deliveryCount > 1 || (entry.deliveryCount === 1 && entry.state !== "inflight")) redelivered++;
    return { pending, ackPending: this.pending.size, redelivered };
  }

  close(): void {
    for (const entry of this.pending.values()) clearTimeout(entry.timer);
    for (const waiter of this.waiters.splice(0)) waiter.resolve(null);
  }
}

interface MemSubscription {
  pattern: string;
  queue: string | undefined;
  callback: (message: CoreMessage) => void;
}

class InProcessEngine implements Engine {
  readonly streams = new Map<string, MemStream>();
  readonly subscriptions = new Set<MemSubscription>();
  readonly #requests = new Set<(error: Error) => void>();
  #roundRobin = 0;
  closed = false;

  #assertOpen(): void {
    if (this.closed) throw new BusClosedError();
  }

  async ensureStream(spec: StreamSpec): Promise<void> {
    this.#assertOpen();
    for (const other of this.streams.values()) {
      if (other.spec.name === spec.name) continue;
      for (const a of other.spec.subjects) {
        for (const b of spec.subjects) {
          if (subjectsOverlap(a, b)) {
            throw new ProvisionError(`could not provision stream ${spec.name}: subjects overlap with stream ${other.spec.name}`);
          }
        }
      }
    }
    const existing = this.streams.get(spec.name);
    if (existing === undefined) {
      this.streams.set(spec.name, new MemStream({ ...spec, subjects: [...spec.subjects] }));
      return;
    }
    if (existing.spec.kind !== spec.kind) {
      throw new ProvisionError(`stream ${spec.name} exists as a ${existing.spec.kind} stream, wanted ${spec.kind}`);
    }
    existing.spec = { ...spec, subjects: [...spec.subjects] };
    existing.enforceLimits(Date.now());
  }

  async ensureConsumer(streamName: string, spec: ConsumerSpec): Promise<{ ackWaitMs: number }> {
    this.#assertOpen();
    const stream = this.streams.get(streamName);
    if (stream === undefined) throw new ProvisionError(`could not provision consumer ${streamName}/${spec.name}: stream not found`);
    if (stream.workQueue) {
      for (const other of stream.consumers.values()) {
        if (other.spec.name !== spec.name && subjectsOverlap(other.spec.filterSubject, spec.filterSubject)) {
          throw new ProvisionError(
            `could not provision consumer ${streamName}/${spec.name}: filter overlaps consumer ${other.spec.name} on a work-queue stream`,
          );
        }
      }
    }
    const existing = stream.consumers.get(spec.name);
    if (existing === undefined) {
      stream.consumers.set(spec.name, new MemConsumer(this, stream, spec));
      return { ackWaitMs: spec.ackWaitMs };
    }
    existing.spec = { ...spec, ackWaitMs: existing.spec.ackWaitMs, deliverPolicy: existing.spec.deliverPolicy };
    existing.dispatch();
    return { ackWaitMs: existing.spec.ackWaitMs };
  }

  async puller(streamName: string, consumerName: string): Promise<Puller> {
    this.#assertOpen();
    const consumer = this.streams.get(streamName)?.consumers.get(consumerName);
    if (consumer === undefined) {
      throw new NotProvisionedError(`consumer ${streamName}/${consumerName} does not exist; call provision() first`);
    }
    return {
      next: (signal, expiresMs) => {
        if (this.closed) return Promise.reject(new BusClosedError());
        if (signal.aborted) return Promise.resolve(null);
        return new Promise<RawDelivery | null>((resolve) => {
          const waiter: Waiter = {
            resolve: (delivery) => {
              clearTimeout(timer);
              signal.removeEventListener("abort", cancel);
              resolve(delivery);
            },
          };
          const cancel = () => {
            const index = consumer.waiters.indexOf(waiter);
            if (index !== -1) consumer.waiters.splice(index, 1);
            waiter.resolve(null);
          };
          const timer = setTimeout(cancel, expiresMs);
          signal.addEventListener("abort", cancel, { once: true });
          consumer.waiters.push(waiter);
          consumer.dispatch();
        });
      },
    };
  }

  #deliverCore(subject: string, body: string, reply?: (body: string) => void, headers?: Record<string, string>): number {
    const groups = new Map<string, MemSubscription[]>();
    const targets: MemSubscription[] = [];
    for (const sub of this.subscriptions) {
      if (!subjectMatches(sub.pattern, subject)) continue;
      if (sub.queue === undefined) targets.push(sub);
      else groups.set(sub.queue, [...(groups.get(sub.queue) ?? []), sub]);
    }
    for (const members of groups.values()) {
      const chosen = members[this.#roundRobin++ % members.length];
      if (chosen) targets.push(chosen);
    }
    for (const sub of targets) {
      const message: CoreMessage = { subject, body, headers, respond: (text) => reply?.(text) };
      setImmediate(() => {
        if (this.subscriptions.has(sub)) sub.callback(message);
      });
    }
    return targets.length;
  }

  /** Publishes an advisory: captured by a stream if one listens, and seen by core subscribers. */
  advisory(subject: string, payload: unknown): void {
    const body = JSON.stringify(payload);
    const stream = [...this.streams.values()].find((s) => s.captures(subject));
    if (stream) this.#append(stream, subject, body, undefined);
    this.#deliverCore(subject, body);
  }

  #append(stream: MemStream, subject: string, body: string, msgId: string | undefined, headers?: Record<string, string>): { seq: number; duplicate: boolean } {
    const result = stream.store(subject, body, msgId, Date.now(), headers);
    if (!result.duplicate) {
      for (const consumer of stream.consumers.values()) consumer.dispatch();
    }
    return result;
  }

  async publish(subject: string, body: string, options: { msgId?: string; headers?: Record<string, string> | undefined }) {
    this.#assertOpen();
    const stream = [...this.streams.values()].find((s) => s.captures(subject));
    if (stream === undefined) throw new PublishError("no_stream", subject, `no stream captures ${subject}`);
    const result = this.#append(stream, subject, body, options.msgId, options.headers);
    if (!result.duplicate) this.#deliverCore(subject, body);
    return { stream: stream.spec.name, ...result };
  }

  async consumerStats(streamName: string, consumerName: string) {
    this.#assertOpen();
    const consumer = this.#stream(streamName).consumers.get(consumerName);
    if (consumer === undefined) throw new NotProvisionedError(`consumer ${streamName}/${consumerName} does not exist`);
    return consumer.stats();
  }

  #stream(name: string): MemStream {
    const stream = this.streams.get(name);
    if (stream === undefined) throw new NotProvisionedError(`stream ${name} does not exist`);
    return stream;
  }

  async getMessage(streamName: string, seq: number): Promise<StoredMessage | null> {
    this.#assertOpen();
    const message = this.#stream(streamName).messages.get(seq);
    return message ? { subject: message.subject, body: message.body, seq: message.seq, msgId: message.msgId } : null;
  }

  async deleteMessage(streamName: string, seq: number): Promise<void> {
    this.#assertOpen();
    this.#stream(streamName).remove(seq);
  }

  async findStream(pattern: string): Promise<string | undefined> {
    return [...this.streams.values()].find((s) => s.spec.subjects.some((subject) => subjectsOverlap(subject, pattern)))?.spec.name;
  }

  async subscribe(pattern: string, options: { queue?: string }, callback: (message: CoreMessage) => void): Promise<CoreSubscription> {
    this.#assertOpen();
    const sub: MemSubscription = { pattern, queue: options.queue, callback };
    this.subscriptions.add(sub);
    return {
      unsubscribe: async () => {
        this.subscriptions.delete(sub);
      },
    };
  }

  async notify(subject: string, body: string): Promise<void> {
    this.#assertOpen();
    this.#deliverCore(subject, body);
  }

  request(subject: string, body: string, timeoutMs: number, headers?: Record<string, string>): Promise<string> {
    if (this.closed) return Promise.reject(new BusClosedError());
    return new Promise<string>((resolve, reject) => {
      let settled = false;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.#requests.delete(fail);
        fn();
      };
      const fail = (error: Error) => finish(() => reject(error));
      const timer = setTimeout(() => fail(new RequestTimeoutError(subject, timeoutMs)), timeoutMs);
      this.#requests.add(fail);
      const delivered = this.#deliverCore(subject, body, (text) => finish(() => resolve(text)), headers);
      if (delivered === 0) fail(new NoRespondersError(subject));
    });
  }

  async ping(): Promise<number> {
    // The bus lives in this process: it answers while it is open.
    if (this.closed) throw new BusClosedError();
    return 0;
  }

  async flush(): Promise<void> {
    // Everything is delivered in process; nothing to flush.
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const stream of this.streams.values()) {
      for (const consumer of stream.consumers.values()) consumer.close();
    }
    this.subscriptions.clear();
    for (const fail of [...this.#requests]) fail(new BusClosedError());
  }
}

/** A bus living in this process (single-machine mode), with the same semantics as the NATS bus. */
export function createInProcessBus(options: InProcessBusOptions): Bus {
  const logger = options.logger.child({ component: "bus", bus: "in-process" });
  return createBusOnEngine(new InProcessEngine(), logger, options.workAckWaitMs === undefined ? {} : { workAckWaitMs: options.workAckWaitMs });
}
