/**
 * Internal: the small JetStream-like surface the bus is written against. The NATS adapter maps it onto
 * nats-server; the in-process adapter implements it in memory with the same semantics. Bodies are JSON text.
 */
import type { StreamSpec } from "./types.ts";

export interface ConsumerSpec {
  /** Durable name. */
  name: string;
  filterSubject: string;
  ackWaitMs: number;
  /** -1: unlimited. */
  maxDeliver: number;
  maxAckPending: number;
  /** Only used when the consumer is created. */
  deliverPolicy: "all" | "new";
}

/** One delivery of a stream message to a pull consumer. */
export interface RawDelivery {
  subject: string;
  body: string;
  streamSeq: number;
  deliveryCount: number;
  msgId: string | undefined;
  /** Trace context headers of the message (`traceparent`, `tracestate`), when it carries them. */
  headers?: Record<string, string> | undefined;
  ack(): void;
  /** Redeliver after delayMs (>= 1). */
  nak(delayMs: number): void;
  /** Never redeliver (the reason travels separately: nats-server < 2.11 ignores a reason on +TERM). */
  term(): void;
  working(): void;
}

export interface Puller {
  /** One message, or null when none arrived within expiresMs or the signal was aborted. */
  next(signal: AbortSignal, expiresMs: number): Promise<RawDelivery | null>;
}

export interface StoredMessage {
  subject: string;
  body: string;
  seq: number;
  msgId: string | undefined;
}

export interface CoreMessage {
  subject: string;
  body: string;
  /** The log ids of the request or task that sent it (`Voiceloc-Request-Id`…), when it carries them. */
  headers?: Record<string, string> | undefined;
  /** Replies when the message was a request; otherwise a no-op. */
  respond(body: string): void;
}

export interface CoreSubscription {
  unsubscribe(): Promise<void>;
}

export interface Engine {
  ensureStream(spec: StreamSpec): Promise<void>;
  /**
   * Creates the durable consumer, or updates an existing one's settings except its ack wait (the
   * processes of a mesh may be configured with different ones: the consumer keeps the one it was
   * created with). Resolves to the consumer's ack wait.
   */
  ensureConsumer(stream: string, spec: ConsumerSpec): Promise<{ ackWaitMs: number }>;
  /** Throws NotProvisionedError when the stream or consumer is missing. */
  puller(stream: string, consumer: string): Promise<Puller>;
  /** Throws PublishError("no_stream") when no stream captures the subject. */
  publish(
    subject: string,
    body: string,
    options: { msgId?: string; headers?: Record<string, string> | undefined },
  ): Promise<{ stream: string; seq: number; duplicate: boolean }>;
  /** A durable consumer's backlog: undelivered, delivered-unsettled and redelivered-unsettled messages. */
  consumerStats(stream: string, consumer: string): Promise<{ pending: number; ackPending: number; redelivered: number }>;
  getMessage(stream: string, seq: number): Promise<StoredMessage | null>;
  deleteMessage(stream: string, seq: number): Promise<void>;
  /** Name of a stream whose subjects overlap the pattern. */
  findStream(pattern: string): Promise<string | undefined>;
  /** Core (non-persistent) subscription; active on the server once the promise resolves. */
  subscribe(pattern: string, options: { queue?: string }, callback: (message: CoreMessage) => void): Promise<CoreSubscription>;
  /** Core publish (no stream, no ack): to the core subscribers of the subject, at most once. */
  notify(subject: string, body: string): Promise<void>;
  /** Throws RequestTimeoutError, NoRespondersError or BusClosedError. */
  request(subject: string, body: string, timeoutMs: number, headers?: Record<string, string>): Promise<string>;
  /** One round trip to the server; resolves with its time in ms. Throws BusError("timeout") or BusClosedError. */
  ping(timeoutMs: number): Promise<number>;
  /** Makes sure acks and publishes sent so far reached the server. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** The subject on which a max-deliveries advisory for a consumer is published (nats-server convention). */
export function maxDeliveriesAdvisorySubject(stream: string, consumer: string): string {
  return `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${stream}.${consumer}`;
}

export const MAX_DELIVERIES_ADVISORY_PREFIX = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.";

/** Where the runtime publishes its own dead-letter records (terminated / retries exhausted). */
export function deadLetterSubject(stream: string, consumer: string): string {
  return `dlq.${stream}.${consumer}`;
}

/** One dead-letter stream per work queue, capturing both subjects above (no multi-filter consumers in 2.9). */
export function deadLetterStreamName(stream: string, consumer: string): string {
  return `${stream}_${consumer}_DLQ`;
}

export const DEAD_LETTER_CONSUMER = "dlq";
