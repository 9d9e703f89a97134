import { CodedError, type CodedErrorOptions } from "@voiceloc/errors";

export type MtErrorCode =
  | "MT_ENGINE_UNAVAILABLE"
  | "MT_CONFIG_INVALID"
  | "TRANSLATION_NOT_SUPPORTED"
  | "TRANSLATION_FAILED"
  | "TRANSLATION_OUT_OF_MEMORY"
  | "TRANSLATION_CANCELLED"
  | "TRANSLATION_SERVICE_AUTH"
  | "TRANSLATION_SERVICE_REJECTED"
  | "TRANSLATION_SERVICE_RATE_LIMITED"
  | "TRANSLATION_SERVICE_UNAVAILABLE"
  | "TRANSLATION_SERVICE_TIMEOUT"
  | "TRANSLATION_SERVICE_BAD_RESPONSE";

/** Base of every machine translation error. Messages are plain words meant for end users. */
export class MtError extends CodedError<MtErrorCode> {
  override name = "MtError";
}

/** A translation engine (program, language data or service settings) is missing or unusable. */
export class MtEngineUnavailableError extends MtError {
  override name = "MtEngineUnavailableError";
  constructor(message: string, options: CodedErrorOptions = {}) {
    super("MT_ENGINE_UNAVAILABLE", message, options);
  }
}

/** A translation engine was configured with invalid settings. */
export class MtConfigError extends MtError {
  override name = "MtConfigError";
  constructor(message: string, options: CodedErrorOptions = {}) {
    super("MT_CONFIG_INVALID", message, options);
  }
}

/** No engine translates from `source` to `target`. */
export class TranslationNotSupportedError extends MtError {
  override name = "TranslationNotSupportedError";
  readonly source: string;
  readonly target: string;
  constructor(source: string, target: string, detail?: string) {
    super("TRANSLATION_NOT_SUPPORTED", detail ?? `Translation from ${source} to ${target} is not available: no installed translation engine covers this pair.`);
    this.source = source;
    this.target = target;
  }
}

/** An engine ran and failed, or the translation was cancelled. */
export class TranslationError extends MtError {
  override name = "TranslationError";
  readonly details: readonly string[];
  constructor(code: MtErrorCode, message: string, options: CodedErrorOptions & { details?: readonly string[] } = {}) {
    super(code, message, options);
    this.details = options.details ?? [];
  }
}

/** A translation service (HTTP) failed, refused the request or answered with something unusable. */
export class TranslationServiceError extends MtError {
  override name = "TranslationServiceError";
  readonly status: number | undefined;
  /** How long the service asked to wait before trying again (from Retry-After), if it said. */
  readonly retryAfterMs: number | undefined;
  constructor(code: MtErrorCode, message: string, options: CodedErrorOptions & { status?: number; retryAfterMs?: number | undefined } = {}) {
    super(code, message, options);
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** Ends a message with exactly one full stop. */
export function finishSentence(text: string): string {
  return /[.!?…]$/u.test(text) ? text : `${text}.`;
}
