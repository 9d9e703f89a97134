import { CodedError, type CodedErrorOptions } from "@voiceloc/errors";
import { MediaError } from "@voiceloc/media";

export type SttErrorCode =
  | "STT_ENGINE_UNAVAILABLE"
  | "STT_CONFIG_INVALID"
  | "RECOGNITION_NOT_SUPPORTED"
  | "RECOGNITION_MEDIA_UNUSABLE"
  | "RECOGNITION_NO_SPEECH"
  | "RECOGNITION_AUDIO_TOO_LARGE"
  | "RECOGNITION_OUT_OF_MEMORY"
  | "RECOGNITION_FAILED"
  | "RECOGNITION_CANCELLED"
  | "RECOGNITION_SERVICE_AUTH"
  | "RECOGNITION_SERVICE_REJECTED"
  | "RECOGNITION_SERVICE_RATE_LIMITED"
  | "RECOGNITION_SERVICE_UNAVAILABLE"
  | "RECOGNITION_SERVICE_TIMEOUT"
  | "RECOGNITION_SERVICE_BAD_RESPONSE";

/** Base of every speech recognition error. Messages are plain words meant for end users. */
export class SttError extends CodedError<SttErrorCode> {
  override name = "SttError";
}

/** A recognition engine (program, model files or service settings) is missing or unusable. */
export class SttEngineUnavailableError extends SttError {
  override name = "SttEngineUnavailableError";
  constructor(message: string, options: CodedErrorOptions = {}) {
    super("STT_ENGINE_UNAVAILABLE", message, options);
  }
}

/** A recognition engine was configured with invalid settings. */
export class SttConfigError extends SttError {
  override name = "SttConfigError";
  constructor(message: string, options: CodedErrorOptions = {}) {
    super("STT_CONFIG_INVALID", message, options);
  }
}

/** No engine recognises speech in this language. */
export class RecognitionNotSupportedError extends SttError {
  override name = "RecognitionNotSupportedError";
  readonly language: string;
  constructor(language: string, detail?: string) {
    super("RECOGNITION_NOT_SUPPORTED", detail ?? `Speech recognition in ${language} is not available: no installed recognition engine understands ${language}.`);
    this.language = language;
  }
}

/** Recognition ran and failed, was cancelled, or the media cannot be used. */
export class RecognitionError extends SttError {
  override name = "RecognitionError";
  /** Last diagnostic lines of the engine, for logs (not for users). */
  readonly details: readonly string[];
  constructor(code: SttErrorCode, message: string, options: CodedErrorOptions & { details?: readonly string[] } = {}) {
    super(code, message, options);
    this.details = options.details ?? [];
  }
}

/** A speech recognition service (HTTP) failed or refused the request. */
export class RecognitionServiceError extends SttError {
  override name = "RecognitionServiceError";
  readonly status: number | undefined;
  constructor(code: SttErrorCode, message: string, options: CodedErrorOptions & { status?: number } = {}) {
    super(code, message, options);
    this.status = options.status;
  }
}

/**
 * Maps an error from the media toolkit (reading or converting the input) to a recognition error
 * with the same plain-words message. Other errors are returned unchanged.
 */
export function mediaFailure(error: unknown): unknown {
  if (!(error instanceof MediaError)) return error;
  switch (error.code) {
    case "MEDIA_CANCELLED":
      return new RecognitionError("RECOGNITION_CANCELLED", "Speech recognition was cancelled.", { cause: error });
    case "FFMPEG_NOT_FOUND":
      return new SttEngineUnavailableError(error.message, { cause: error });
    case "FFMPEG_FAILED":
      return new RecognitionError("RECOGNITION_FAILED", error.message, { cause: error });
    default:
      return new RecognitionError("RECOGNITION_MEDIA_UNUSABLE", error.message, { cause: error });
  }
}
