import { CodedError } from "@voiceloc/errors";

export type WorkerErrorCode =
  | "task_input"
  | "task_retryable"
  | "checkpoint_not_found"
  | "invalid_checkpoint_name"
  | "invalid_argument"
  | "worker_stopped";

/** Base class of every error this package throws; `code` is stable, `message` is for humans. */
export class WorkerError extends CodedError<WorkerErrorCode> {
  override name = "WorkerError";
}

/**
 * The task's input is at fault (file missing, not text, unreadable audio, unsupported language):
 * retrying cannot help. The runtime publishes a `failed` event carrying `message` as the task error
 * and acks the work message, so write the message in plain words for the person who submitted the task.
 */
export class TaskInputError extends WorkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("task_input", message, options);
    this.name = "TaskInputError";
  }
}

/**
 * A transient failure (engine busy, network, storage): the runtime retries the task with the queue's
 * back-off (or `retryAfterMs` when given) until its last delivery, then fails it.
 * Any other thrown error is treated the same way.
 */
export class RetryableTaskError extends WorkerError {
  /** Overrides the queue's back-off for this retry. */
  readonly retryAfterMs: number | undefined;
  constructor(message: string, options?: { cause?: unknown; retryAfterMs?: number }) {
    super("task_retryable", message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "RetryableTaskError";
    const after = options?.retryAfterMs;
    this.retryAfterMs = after !== undefined && Number.isFinite(after) && after >= 0 ? after : undefined;
  }
}

/** `checkpoints.get(name)` for a checkpoint that was never stored (or was cleaned up). */
export class CheckpointNotFoundError extends WorkerError {
  readonly checkpoint: string;
  constructor(checkpoint: string, options?: { cause?: unknown }) {
    super("checkpoint_not_found", `checkpoint ${JSON.stringify(checkpoint)} does not exist`, options);
    this.name = "CheckpointNotFoundError";
    this.checkpoint = checkpoint;
  }
}

/** A checkpoint name that is not a relative key of `[A-Za-z0-9._-]` segments. */
export class InvalidCheckpointNameError extends WorkerError {
  readonly checkpoint: string;
  constructor(checkpoint: string, options?: { cause?: unknown }) {
    super(
      "invalid_checkpoint_name",
      `invalid checkpoint name ${JSON.stringify(checkpoint)}: use segments of [A-Za-z0-9._-] separated by /`,
      options,
    );
    this.name = "InvalidCheckpointNameError";
    this.checkpoint = checkpoint;
  }
}

/** A malformed option or argument (concurrency, task id, result extension). */
export class InvalidWorkerArgumentError extends WorkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("invalid_argument", message, options);
    this.name = "InvalidWorkerArgumentError";
  }
}

/** start() after stop(). */
export class WorkerStoppedError extends WorkerError {
  constructor() {
    super("worker_stopped", "the task worker was stopped and cannot be started again");
    this.name = "WorkerStoppedError";
  }
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === "string") return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}
