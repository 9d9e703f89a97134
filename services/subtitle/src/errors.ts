/**
 * The subtitle worker's failure classification (to be replaced by the shared one in @voiceloc/worker):
 * turns fetch, media and engine errors into TaskInputError (the input is at fault: fail now, with a
 * reason in plain words), RetryableTaskError (try again later), or the error unchanged (a bug or an
 * outage: retried with the queue's back-off). Messages never carry paths, addresses or stderr.
 */
import { isFetchRefusedError } from "@voiceloc/fetch";
import { MtError, SttError, TranslationServiceError } from "@voiceloc/engines";
import { MediaError } from "@voiceloc/media";
import { RetryableTaskError, TaskInputError } from "@voiceloc/worker";

export const NO_SPEECH_MESSAGE = "No speech was recognised in the video.";

const NOT_VIDEO = "The file is not a video we can read";

/** "The file is not a video we can read: <reason>" */
export function notVideo(reason: string, cause?: unknown): TaskInputError {
  return new TaskInputError(`${NOT_VIDEO}: ${reason}`, cause === undefined ? undefined : { cause });
}

/** The video is longer than the configured limit. */
export function tooLong(limitSeconds: number): TaskInputError {
  return new TaskInputError(`The video is longer than the ${formatLimit(limitSeconds)} this service subtitles; send a shorter video.`);
}

function formatLimit(seconds: number): string {
  if (seconds >= 120 && seconds % 60 === 0) return `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}

/** Why the media toolkit could not read the input, in plain words; undefined for our own faults. */
function mediaReason(error: MediaError): string | undefined {
  switch (error.code) {
    case "MEDIA_FORMAT_NOT_ALLOWED":
      return /playlist|list of other files/.test(error.message)
        ? "it is a playlist or a list of other files; send one video file."
        : "it is not in a supported video format (playlists and lists of other files are refused).";
    case "MEDIA_UNREADABLE":
    case "PROBE_FAILED":
      return "it is damaged or is not a video file.";
    case "MEDIA_NO_AUDIO":
      return "it has no audio track to take speech from.";
    case "MEDIA_NO_VIDEO":
      return "it has no picture (video track).";
    case "FFMPEG_NOT_FOUND":
    case "FFMPEG_FAILED":
    case "MEDIA_CANCELLED":
    case "MEDIA_INVALID_REQUEST":
      return undefined;
    default: {
      const unreachable: never = error.code;
      return unreachable;
    }
  }
}

/** Errors of fetching the input. */
export function fetchFailure(error: unknown): unknown {
  if (!isFetchRefusedError(error)) return error;
  if (error.code === "cancelled") return error;
  return error.retryable ? new RetryableTaskError(error.message, { cause: error }) : new TaskInputError(error.message, { cause: error });
}

/** Errors of inspecting or decoding the input with ffprobe/ffmpeg. */
export function mediaFailure(error: unknown): unknown {
  if (!(error instanceof MediaError)) return error;
  const reason = mediaReason(error);
  return reason === undefined ? error : notVideo(reason, error);
}

/** Errors of the recognition and translation engines. */
export function engineFailure(error: unknown): unknown {
  if (error instanceof TaskInputError || error instanceof RetryableTaskError) return error;
  if (error instanceof SttError) {
    switch (error.code) {
      case "RECOGNITION_NOT_SUPPORTED":
      case "RECOGNITION_AUDIO_TOO_LARGE":
        return new TaskInputError(error.message, { cause: error });
      case "RECOGNITION_MEDIA_UNUSABLE":
        return notVideo("its sound could not be used for speech recognition.", error);
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
  return mediaFailure(error);
}
