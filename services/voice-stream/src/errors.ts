/**
 * Turns the errors of the fetch, media and engine packages into what the task runtime understands:
 * TaskInputError (the input is at fault: fail now, with a message for the person who sent the task),
 * RetryableTaskError (try again later), or the error unchanged (retried with the queue's back-off).
 */
import { isFetchRefusedError } from "@voiceloc/fetch";
import { MtError, SttError, TranslationServiceError, TtsError } from "@voiceloc/engines";
import { MediaError } from "@voiceloc/media";
import { RetryableTaskError, TaskInputError } from "@voiceloc/worker";

export const NO_SPEECH_MESSAGE = "No speech was recognised in the audio.";

const NOT_AUDIO = "The file is not audio we can read";

/** "The file is not audio we can read: <reason>" */
export function notAudio(reason: string, cause?: unknown): TaskInputError {
  return new TaskInputError(`${NOT_AUDIO}: ${reason}`, cause === undefined ? undefined : { cause });
}

/** Why the media toolkit could not read the input, in plain words. */
function mediaReason(error: MediaError): string | undefined {
  switch (error.code) {
    case "MEDIA_FORMAT_NOT_ALLOWED":
      return "it is not in a supported audio or video format.";
    case "MEDIA_UNREADABLE":
    case "PROBE_FAILED":
      return "it is damaged or is not an audio or video file.";
    case "MEDIA_NO_AUDIO":
      return "it has no audio track.";
    default:
      return undefined;
  }
}

/** Errors of fetching the input. */
export function fetchFailure(error: unknown): unknown {
  if (!isFetchRefusedError(error)) return error;
  if (error.code === "cancelled") return error;
  return error.retryable ? new RetryableTaskError(error.message, { cause: error }) : new TaskInputError(error.message, { cause: error });
}

/** Errors of inspecting the input with ffprobe. */
export function probeFailure(error: unknown): unknown {
  if (!(error instanceof MediaError)) return error;
  const reason = mediaReason(error);
  return reason === undefined ? error : notAudio(reason, error);
}

/** Errors of the speech, translation and synthesis engines. */
export function engineFailure(error: unknown): unknown {
  if (error instanceof TaskInputError || error instanceof RetryableTaskError) return error;
  if (error instanceof SttError) {
    switch (error.code) {
      case "RECOGNITION_NOT_SUPPORTED":
      case "RECOGNITION_AUDIO_TOO_LARGE":
        return new TaskInputError(error.message, { cause: error });
      case "RECOGNITION_MEDIA_UNUSABLE":
        return notAudio(lowerFirst(error.message), error);
      case "RECOGNITION_NO_SPEECH":
        return new TaskInputError(NO_SPEECH_MESSAGE, { cause: error });
      default:
        return error.retryable ? new RetryableTaskError(error.message, { cause: error }) : error;
    }
  }
  if (error instanceof MtError) {
    if (error.code === "TRANSLATION_NOT_SUPPORTED") return new TaskInputError(error.message, { cause: error });
    if (!error.retryable) return error;
    const retryAfterMs = error instanceof TranslationServiceError ? error.retryAfterMs : undefined;
    return new RetryableTaskError(error.message, retryAfterMs === undefined ? { cause: error } : { cause: error, retryAfterMs });
  }
  if (error instanceof TtsError) {
    switch (error.code) {
      case "LANGUAGE_NOT_SUPPORTED":
      case "UNKNOWN_VOICE":
      case "VOICE_LANGUAGE_MISMATCH":
        return new TaskInputError(error.message, { cause: error });
      default:
        return error.retryable ? new RetryableTaskError(error.message, { cause: error }) : error;
    }
  }
  return error;
}

function lowerFirst(text: string): string {
  return text.length > 1 && /^[A-Z][a-z]/.test(text) ? `${text[0]?.toLowerCase() ?? ""}${text.slice(1)}` : text;
}
