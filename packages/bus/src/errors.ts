import { CodedError } from "@voiceloc/errors";

export type BusErrorCode =
  | "timeout"
  | "no_responders"
  | "remote_error"
  | "bad_reply"
  | "not_provisioned"
  | "no_stream"
  | "publish_failed"
  | "provision_failed"
  | "invalid_argument"
  | "lease_expired"
  | "stopping"
  | "closed";

/** Base class of every error the bus throws; `code` is stable, `message` is for humans. */
export class BusError extends CodedError<BusErrorCode> {
  override name = "BusError";
}

/** A request got no reply within its timeout. */
export class RequestTimeoutError extends BusError {
  readonly subject: string;
  constructor(subject: string, timeoutMs: number, options?: { cause?: unknown }) {
    super("timeout", `request on ${subject} timed out after ${timeoutMs} ms`, options);
    this.name = "RequestTimeoutError";
    this.subject = subject;
  }
}

/** Nobody serves the subject of a request. */
export class NoRespondersError extends BusError {
  readonly subject: string;
  constructor(subject: string, options?: { cause?: unknown }) {
    super("no_responders", `no responders for ${subject}`, options);
    this.name = "NoRespondersError";
    this.subject = subject;
  }
}

/** The serving side failed; carries its `{ error: { code, message } }` reply. */
export class RemoteError extends BusError {
  readonly subject: string;
  /** The code the serving side reported (e.g. "invalid_request", "internal", or the handler's error code). */
  readonly remoteCode: string;
  constructor(subject: string, remoteCode: string, remoteMessage: string) {
    super("remote_error", remoteMessage);
    this.name = "RemoteError";
    this.subject = subject;
    this.remoteCode = remoteCode;
  }
}

/** A stream or durable consumer that should exist does not: call provision() first. */
export class NotProvisionedError extends BusError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("not_provisioned", message, options);
    this.name = "NotProvisionedError";
  }
}

/** Publishing failed: `no_stream` when no stream captures the subject, `publish_failed` otherwise. */
export class PublishError extends BusError {
  readonly subject: string;
  constructor(code: "no_stream" | "publish_failed", subject: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "PublishError";
    this.subject = subject;
  }
}

/** Creating or updating a stream or consumer failed (for example an incompatible change). */
export class ProvisionError extends BusError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("provision_failed", message, options);
    this.name = "ProvisionError";
  }
}

/** A spec or option is malformed. */
export class InvalidArgumentError extends BusError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("invalid_argument", message, options);
    this.name = "InvalidArgumentError";
  }
}

/** Reason given to a work handler's `signal` when its ack-wait lease ran out without working(). */
export class LeaseExpiredError extends BusError {
  constructor(ackWaitMs: number) {
    super("lease_expired", `no ack or working() within ack wait (${ackWaitMs} ms); the message will be redelivered`);
    this.name = "LeaseExpiredError";
  }
}

/** Reason given to handlers' `signal` when stop()/close() ran out of grace time. */
export class StoppingError extends BusError {
  constructor() {
    super("stopping", "the subscription is stopping and its grace period is over");
    this.name = "StoppingError";
  }
}

/** The bus was closed. */
export class BusClosedError extends BusError {
  constructor(options?: { cause?: unknown }) {
    super("closed", "the bus is closed", options);
    this.name = "BusClosedError";
  }
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
