import type { MediaError } from "@voiceloc/media";
import { TaskInputError } from "./errors.ts";

/**
 * A video whose decoded picture is over the pixel limit (`MEDIA_TOO_LARGE`), in the words every video task
 * fails with: the media error's sentence (both sizes) and what to do. `sandbox`: the sandbox's lower limit
 * (SANDBOX_MAX_VIDEO_PIXELS) refused it.
 */
export function pictureTooLarge(error: MediaError, sandbox = false): TaskInputError {
  const advice = sandbox ? " (SANDBOX_MAX_VIDEO_PIXELS): send a smaller video or use a live key." : " (MAX_VIDEO_PIXELS): send a smaller video.";
  return new TaskInputError(`${error.message.replace(/\.$/, "")}${advice}`, { cause: error });
}
