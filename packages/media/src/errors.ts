import { CodedError, type CodedErrorOptions } from "@voiceloc/errors";

/** Machine-readable codes carried by every media error. */
export type MediaErrorCode =
  | "FFMPEG_NOT_FOUND"
  | "FFMPEG_FAILED"
  | "MEDIA_UNREADABLE"
  | "MEDIA_FORMAT_NOT_ALLOWED"
  | "MEDIA_NO_AUDIO"
  | "MEDIA_NO_VIDEO"
  | "MEDIA_TOO_LARGE"
  | "MEDIA_CANCELLED"
  | "MEDIA_INVALID_REQUEST"
  | "PROBE_FAILED";

/** Base class of every error thrown by @voiceloc/media. Messages are plain words meant for end users. */
export class MediaError extends CodedError<MediaErrorCode> {
  override name = "MediaError";
}

/** No usable ffmpeg or ffprobe binary was found (or the configured one does not run). */
export class FfmpegNotFoundError extends MediaError {
  override name = "FfmpegNotFoundError";
  constructor(message: string, options: CodedErrorOptions = {}) {
    super("FFMPEG_NOT_FOUND", message, options);
  }
}

/** ffmpeg (or ffprobe) ran and failed. `stderrTail` holds its last diagnostic lines. */
export class FfmpegFailedError extends MediaError {
  override name = "FfmpegFailedError";
  readonly exitCode: number | null;
  readonly exitSignal: NodeJS.Signals | null;
  readonly stderrTail: readonly string[];

  constructor(
    code: MediaErrorCode,
    message: string,
    details: { exitCode: number | null; exitSignal: NodeJS.Signals | null; stderrTail: readonly string[] },
    options: CodedErrorOptions = {},
  ) {
    super(code, message, options);
    this.exitCode = details.exitCode;
    this.exitSignal = details.exitSignal;
    this.stderrTail = details.stderrTail;
  }
}

/** The operation was cancelled through its AbortSignal. */
export class MediaCancelledError extends MediaError {
  override name = "MediaCancelledError";
  constructor(what: string, options: CodedErrorOptions = {}) {
    super("MEDIA_CANCELLED", `${what} was cancelled.`, options);
  }
}

/** A caller passed arguments that cannot describe a valid media operation. */
export class MediaRequestError extends MediaError {
  override name = "MediaRequestError";
  constructor(message: string, options: CodedErrorOptions = {}) {
    super("MEDIA_INVALID_REQUEST", message, options);
  }
}

/** ffprobe output could not be understood, or the file has no usable streams. */
export class MediaProbeError extends MediaError {
  override name = "MediaProbeError";
  constructor(code: MediaErrorCode, message: string, options: CodedErrorOptions = {}) {
    super(code, message, options);
  }
}
