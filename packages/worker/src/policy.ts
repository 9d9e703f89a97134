/**
 * The one task failure policy of every worker (audio book, voice stream, subtitles): what an error
 * thrown while doing a task means for the task, like Temporal's non-retryable failure types.
 *
 * - `input`: the task's input is at fault (unreadable media, a missing file, an unknown voice, a
 *   language no engine covers, a limit exceeded). Retrying cannot help: the task fails on this
 *   delivery with `reason`, plain words for the person who submitted it.
 * - `retryable`: the server is at fault in a way that may pass (an engine or service failed or is
 *   busy, storage or the bus failed). The task is retried with back-off; on its last delivery it
 *   fails with `reason`.
 * - `bug`: a programming or configuration error (an invalid request to a library, a TypeError). It is
 *   retried like a retryable error (a redeployed or differently configured worker may succeed), logged
 *   with its stack, and a task that still fails says only that an internal error stopped it.
 *
 * Codes are mapped with `Record<Code, …>` tables, so a code added to a package fails to compile here
 * until it is classified. Media errors are classified by `scope`: the same "unreadable" error means the
 * user's file is bad when it reads the task's input, and a server fault when it reads our own files.
 */
import { BlobError, type BlobErrorCode } from "@voiceloc/blobs";
import { BusError, type BusErrorCode } from "@voiceloc/bus";
import { MtError, SttError, TranslationServiceError, TtsError, type MtErrorCode, type SttErrorCode, type TtsErrorCode } from "@voiceloc/engines";
import { FetchRefusedError, type FetchRefusedCode } from "@voiceloc/fetch";
import { MediaError, type MediaErrorCode } from "@voiceloc/media";
import { CheckpointNotFoundError, RetryableTaskError, TaskInputError, WorkerError } from "./errors.ts";

export type FailureClass = "input" | "retryable" | "bug";

/** Whether the failing step was reading the task's own input (a user's file) or the server's work. */
export type FailureScope = "input" | "work";

export type TaskFailure =
  | { class: "input"; reason: string }
  | { class: "retryable"; reason: string; retryAfterMs: number | undefined }
  | { class: "bug"; reason: string };

/** Said of media the task was given that cannot be read. */
export const NOT_MEDIA = "The file is not audio we can read";
/** Said when recognition finds no speech in the input. */
export const NO_SPEECH_MESSAGE = "No speech was recognised in the audio.";
/** What a task failed by a bug says (the bug's own message is for the logs). */
export const INTERNAL_ERROR_REASON = "an internal error on the server stopped it.";

const TTS: Record<TtsErrorCode, FailureClass> = {
  ENGINE_UNAVAILABLE: "retryable",
  ENGINE_CONFIG_INVALID: "bug",
  UNKNOWN_VOICE: "input",
  VOICE_LANGUAGE_MISMATCH: "input",
  LANGUAGE_NOT_SUPPORTED: "input",
  TEXT_EMPTY: "input",
  TEXT_NOT_SPEAKABLE: "input",
  SYNTHESIS_FAILED: "retryable",
  // a program out of memory on this input (CHILD_MEMORY_LIMIT_MB or the kernel): it would again
  SYNTHESIS_OUT_OF_MEMORY: "input",
  SYNTHESIS_CANCELLED: "retryable",
  // a refused key or a used-up quota does not pass within the retries' minutes: the task fails now, saying so
  SPEECH_SERVICE_AUTH: "input",
  SPEECH_SERVICE_REJECTED: "retryable",
  SPEECH_SERVICE_RATE_LIMITED: "retryable",
  SPEECH_SERVICE_UNAVAILABLE: "retryable",
  SPEECH_SERVICE_TIMEOUT: "retryable",
  SPEECH_SERVICE_BAD_RESPONSE: "retryable",
  SAMPLE_UNUSABLE: "input",
  // the cloned voice was deleted while the task used it: it would be gone again
  CLONE_NOT_FOUND: "input",
};

const STT: Record<SttErrorCode, FailureClass> = {
  STT_ENGINE_UNAVAILABLE: "retryable",
  STT_CONFIG_INVALID: "bug",
  RECOGNITION_NOT_SUPPORTED: "input",
  RECOGNITION_MEDIA_UNUSABLE: "input",
  RECOGNITION_NO_SPEECH: "input",
  RECOGNITION_AUDIO_TOO_LARGE: "input",
  RECOGNITION_FAILED: "retryable",
  RECOGNITION_OUT_OF_MEMORY: "input",
  RECOGNITION_CANCELLED: "retryable",
  RECOGNITION_SERVICE_AUTH: "input",
  RECOGNITION_SERVICE_REJECTED: "retryable",
  RECOGNITION_SERVICE_RATE_LIMITED: "retryable",
  RECOGNITION_SERVICE_UNAVAILABLE: "retryable",
  RECOGNITION_SERVICE_TIMEOUT: "retryable",
  RECOGNITION_SERVICE_BAD_RESPONSE: "retryable",
};

const MT: Record<MtErrorCode, FailureClass> = {
  MT_ENGINE_UNAVAILABLE: "retryable",
  MT_CONFIG_INVALID: "bug",
  TRANSLATION_NOT_SUPPORTED: "input",
  TRANSLATION_FAILED: "retryable",
  TRANSLATION_OUT_OF_MEMORY: "input",
  TRANSLATION_CANCELLED: "retryable",
  TRANSLATION_SERVICE_AUTH: "input",
  TRANSLATION_SERVICE_REJECTED: "retryable",
  TRANSLATION_SERVICE_RATE_LIMITED: "retryable",
  TRANSLATION_SERVICE_UNAVAILABLE: "retryable",
  TRANSLATION_SERVICE_TIMEOUT: "retryable",
  TRANSLATION_SERVICE_BAD_RESPONSE: "retryable",
};

/** Per scope: the class, and for input failures the plain reason (the error's own message otherwise). */
const MEDIA: Record<MediaErrorCode, { input: FailureClass; work: FailureClass; inputReason?: string }> = {
  FFMPEG_NOT_FOUND: { input: "retryable", work: "retryable" },
  FFMPEG_FAILED: { input: "retryable", work: "retryable" },
  MEDIA_UNREADABLE: { input: "input", work: "retryable", inputReason: `${NOT_MEDIA}: it is damaged or is not an audio or video file.` },
  PROBE_FAILED: { input: "input", work: "retryable", inputReason: `${NOT_MEDIA}: it is damaged or is not an audio or video file.` },
  MEDIA_FORMAT_NOT_ALLOWED: { input: "input", work: "bug", inputReason: `${NOT_MEDIA}: it is not in a supported audio or video format.` },
  MEDIA_NO_AUDIO: { input: "input", work: "bug", inputReason: `${NOT_MEDIA}: it has no audio track.` },
  MEDIA_NO_VIDEO: { input: "input", work: "bug", inputReason: "The file has no video track." },
  // A picture over the limit, or a program out of memory on this file (its limit or the kernel's OOM killer): the same file
  // would do it again, so it is never retried, whichever file the step was reading.
  MEDIA_TOO_LARGE: { input: "input", work: "input" },
  MEDIA_CANCELLED: { input: "retryable", work: "retryable" },
  MEDIA_INVALID_REQUEST: { input: "bug", work: "bug" },
};

/**
 * Fetch errors concern the user's reference whatever the scope; retryable ones are network trouble.
 * An upstream's answer (`by_status`) is classified by its HTTP status (`upstreamStatusClass`).
 */
const FETCH: Record<FetchRefusedCode, FailureClass | "by_status"> = {
  invalid_reference: "input",
  path_outside_media_root: "input",
  scheme_not_allowed: "input",
  credentials_not_allowed: "input",
  address_not_allowed: "input",
  too_many_redirects: "input",
  too_large: "input",
  timeout: "retryable",
  not_found: "input",
  not_a_file: "input",
  http_status: "by_status",
  host_not_found: "retryable",
  connection_failed: "retryable",
  object_storage_not_configured: "input",
  object_storage_error: "by_status",
  io_error: "retryable",
  cancelled: "retryable",
};

/**
 * What the server holding the user's file answered: an error of its own (5xx), a timeout (408) or a
 * rate limit (429) may pass, so the task is retried; any other refusal (404, 403…) or no status at all
 * is about the reference, and the task fails now.
 */
function upstreamStatusClass(status: number | undefined): FailureClass {
  return status !== undefined && (status >= 500 || status === 408 || status === 429) ? "retryable" : "input";
}

const BLOB: Record<BlobErrorCode, FailureClass> = {
  blob_not_found: "retryable",
  invalid_blob_key: "bug",
  invalid_range: "bug",
  blob_key_conflict: "bug",
  blob_changed: "retryable",
  invalid_content_type: "bug",
  blob_store_failed: "retryable",
  invalid_signing_secret: "bug",
};

const BUS: Record<BusErrorCode, FailureClass> = {
  timeout: "retryable",
  no_responders: "retryable",
  remote_error: "retryable",
  bad_reply: "retryable",
  not_provisioned: "retryable",
  no_stream: "retryable",
  publish_failed: "retryable",
  provision_failed: "retryable",
  invalid_argument: "bug",
  lease_expired: "retryable",
  stopping: "retryable",
  closed: "retryable",
};

const STORAGE_REASON = "the server's storage failed for a while.";
const BUS_REASON = "the server's message bus failed for a while.";

function lowerFirst(text: string): string {
  return text.length > 1 && /^[A-Z][a-z]/.test(text) ? `${text[0]?.toLowerCase() ?? ""}${text.slice(1)}` : text;
}

function failure(kind: FailureClass, reason: string, retryAfterMs?: number): TaskFailure {
  switch (kind) {
    case "input":
      return { class: "input", reason };
    case "retryable":
      return { class: "retryable", reason, retryAfterMs };
    case "bug":
      return { class: "bug", reason: INTERNAL_ERROR_REASON };
    default: {
      const unreachable: never = kind;
      throw new Error(`unknown failure class ${String(unreachable)}`);
    }
  }
}

/** A Node system error (ENOSPC, EIO, ECONNRESET…): the server's trouble, worth retrying. */
function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  const e = error as { code?: unknown; syscall?: unknown } | null;
  return error instanceof Error && typeof e?.code === "string" && /^E[A-Z0-9_]+$/.test(e.code) && typeof e.syscall === "string";
}

/**
 * What an error means for the task. `reason` is the plain-words message (the runtime sanitises it with
 * `plainReason` where it writes the failure); `scope` says whether
 * the failing step read the task's input (default `work`: the server's own files and engines).
 */
export function classifyFailure(error: unknown, scope: FailureScope = "work"): TaskFailure {
  if (error instanceof TaskInputError) return { class: "input", reason: error.message };
  if (error instanceof RetryableTaskError) return { class: "retryable", reason: error.message, retryAfterMs: error.retryAfterMs };
  if (error instanceof CheckpointNotFoundError) return failure("retryable", STORAGE_REASON);
  if (error instanceof WorkerError) return failure("bug", "");
  if (error instanceof FetchRefusedError) {
    const kind = FETCH[error.code];
    return failure(kind === "by_status" ? upstreamStatusClass(error.status) : kind, error.message);
  }
  if (error instanceof MediaError) {
    const row = MEDIA[error.code];
    const kind = row[scope];
    return failure(kind, kind === "input" && row.inputReason !== undefined ? row.inputReason : error.message);
  }
  if (error instanceof SttError) {
    const kind = STT[error.code];
    if (error.code === "RECOGNITION_NO_SPEECH") return failure(kind, NO_SPEECH_MESSAGE);
    if (error.code === "RECOGNITION_MEDIA_UNUSABLE") return failure(kind, `${NOT_MEDIA}: ${lowerFirst(error.message)}`);
    return failure(kind, error.message);
  }
  if (error instanceof MtError) {
    const retryAfterMs = error instanceof TranslationServiceError ? error.retryAfterMs : undefined;
    return failure(MT[error.code], error.message, retryAfterMs);
  }
  if (error instanceof TtsError) return failure(TTS[error.code], error.message);
  if (error instanceof BlobError) return failure(BLOB[error.code], STORAGE_REASON);
  if (error instanceof BusError) return failure(BUS[error.code], BUS_REASON);
  if (isSystemError(error)) return failure("retryable", error.code === "ENOSPC" ? "the server ran out of disk space." : STORAGE_REASON);
  return failure("bug", "");
}

/**
 * The error to throw from a task step, carrying its class for the runtime: a TaskInputError or a
 * RetryableTaskError with the plain reason (prefixed by `context`, e.g. "Speaking part 3 of 12 of the
 * text failed"), or the error unchanged for a bug (logged with its stack, reported as internal).
 * Use `scope: "input"` around steps that read the task's own file.
 */
export function taskFailure(error: unknown, options: { scope?: FailureScope; context?: string } = {}): unknown {
  const classified = classifyFailure(error, options.scope);
  const withContext = (text: string) => (options.context === undefined ? text : `${options.context}: ${lowerFirst(text)}`);
  switch (classified.class) {
    case "input":
      return error instanceof TaskInputError && options.context === undefined ? error : new TaskInputError(withContext(classified.reason), { cause: error });
    case "retryable":
      if (error instanceof RetryableTaskError && options.context === undefined) return error;
      return new RetryableTaskError(withContext(classified.reason), {
        cause: error,
        ...(classified.retryAfterMs === undefined ? {} : { retryAfterMs: classified.retryAfterMs }),
      });
    case "bug":
      return error;
    default: {
      const unreachable: never = classified;
      throw new Error(`unknown failure ${JSON.stringify(unreachable)}`);
    }
  }
}
