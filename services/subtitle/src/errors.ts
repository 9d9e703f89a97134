/**
 * The subtitle worker's own wording of failures. What an error means for the task (input, retryable,
 * bug) is decided by the one failure policy of @voiceloc/worker (`taskFailure`); this module only says
 * "video" where the shared reasons say "audio", and words the limits and refusals of this service.
 */
import type { MediaErrorCode } from "@voiceloc/media";
import { MediaError } from "@voiceloc/media";
import { SttError } from "@voiceloc/engines";
import { TaskInputError, taskFailure } from "@voiceloc/worker";

export const NO_SPEECH_MESSAGE = "No speech was recognised in the video.";

const NOT_VIDEO = "The file is not a video we can read";

/** The picture of a `side_file` task that an MP4 cannot carry without re-encoding. */
export const PICTURE_NOT_IN_MP4 = "its picture cannot be carried in an MP4 file without re-encoding; use mode burn_in.";

/** "The file is not a video we can read: <reason>" */
export function notVideo(reason: string, cause?: unknown): TaskInputError {
  return new TaskInputError(`${NOT_VIDEO}: ${reason}`, cause === undefined ? undefined : { cause });
}

/** The video is longer than the configured limit. */
export function tooLong(limitSeconds: number): TaskInputError {
  return new TaskInputError(`The video is longer than the ${formatLimit(limitSeconds)} this service subtitles; send a shorter video.`);
}

/** The video's picture is over the pixel limit: the words every video task uses. */
export { pictureTooLarge } from "@voiceloc/worker";

function formatLimit(seconds: number): string {
  if (seconds >= 120 && seconds % 60 === 0) return `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}

/** Why a video was refused, for the media codes the policy classifies as the input's fault. */
const VIDEO_REASONS: Partial<Record<MediaErrorCode, (error: MediaError) => string>> = {
  MEDIA_FORMAT_NOT_ALLOWED: (error) =>
    /playlist|list of other files/.test(error.message)
      ? "it is a playlist or a list of other files; send one video file."
      : "it is not in a supported video format (playlists and lists of other files are refused).",
  MEDIA_UNREADABLE: () => "it is damaged or is not a video file.",
  PROBE_FAILED: () => "it is damaged or is not a video file.",
  MEDIA_NO_AUDIO: () => "it has no audio track to take speech from.",
  MEDIA_NO_VIDEO: () => "it has no picture (video track).",
};

/** The subtitle wording of an input failure, or undefined to keep the policy's reason. */
function videoWording(error: unknown): TaskInputError | undefined {
  if (error instanceof MediaError) {
    const reason = VIDEO_REASONS[error.code];
    return reason === undefined ? undefined : notVideo(reason(error), error);
  }
  if (error instanceof SttError) {
    if (error.code === "RECOGNITION_MEDIA_UNUSABLE") return notVideo("its sound could not be used for speech recognition.", error);
    if (error.code === "RECOGNITION_NO_SPEECH") return new TaskInputError(NO_SPEECH_MESSAGE, { cause: error });
  }
  return undefined;
}

/**
 * The error to throw from a step that reads the task's video (fetching, probing, decoding, recognising
 * its sound, rendering it): classified by the shared policy with `scope: "input"`, and worded for a
 * video when the policy finds the input at fault.
 */
export function videoFailure(error: unknown): unknown {
  const failure = taskFailure(error, { scope: "input" });
  if (!(failure instanceof TaskInputError)) return failure;
  return videoWording(error) ?? failure;
}
