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

export interface SttErrorOptions {
  cause?: unknown;
  /** True when trying again later may succeed (service busy, timeout). */
  retryable?: boolean;
}

/** Base of every speech recognition error. Messages are plain words meant for end users. */
export class SttError extends Error {
  override name = "SttError";
  readonly code: SttErrorCode;
  readonly retryable: boolean;

  constructor(code: SttErrorCode, message: string, options: SttErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** A recognition engine (program, model files or service settings) is missing or unusable. */
export class SttEngineUnavailableError extends SttError {
  override name = "SttEngineUnavailableError";
  constructor(message: string, options: SttErrorOptions = {}) {
    super("STT_ENGINE_UNAVAILABLE", message, options);
  }
}

/** A recognition engine was configured with invalid settings. */
export class SttConfigError extends SttError {
  override name = "SttConfigError";
  constructor(message: string, options: SttErrorOptions = {}) {
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
  constructor(code: SttErrorCode, message: string, options: SttErrorOptions & { details?: readonly string[] } = {}) {
    super(code, message, options);
    this.details = options.details ?? [];
  }
}

/** A speech recognition service (HTTP) failed or refused the request. */
export class RecognitionServiceError extends SttError {
  override name = "RecognitionServiceError";
  readonly status: number | undefined;
  constructor(code: SttErrorCode, message: string, options: SttErrorOptions & { status?: number } = {}) {
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
