import { CodedError, type CodedErrorOptions } from "@voiceloc/errors";

export type TtsErrorCode =
  | "ENGINE_UNAVAILABLE"
  | "ENGINE_CONFIG_INVALID"
  | "UNKNOWN_VOICE"
  | "VOICE_LANGUAGE_MISMATCH"
  | "LANGUAGE_NOT_SUPPORTED"
  | "TEXT_EMPTY"
  | "TEXT_NOT_SPEAKABLE"
  | "SYNTHESIS_FAILED"
  | "SYNTHESIS_OUT_OF_MEMORY"
  | "SYNTHESIS_CANCELLED"
  | "SPEECH_SERVICE_AUTH"
  | "SPEECH_SERVICE_REJECTED"
  | "SPEECH_SERVICE_RATE_LIMITED"
  | "SPEECH_SERVICE_UNAVAILABLE"
  | "SPEECH_SERVICE_TIMEOUT"
  | "SPEECH_SERVICE_BAD_RESPONSE"
  /** A voice sample that cannot make a voice: not audio, too short or long, silent, or refused by the cloning engine. */
  | "SAMPLE_UNUSABLE"
  /** The cloning engine no longer has the cloned voice (it was deleted). */
  | "CLONE_NOT_FOUND";

/** Base of every speech synthesis error. Messages are plain words meant for end users. */
export class TtsError extends CodedError<TtsErrorCode> {
  override name = "TtsError";
}

/** An engine (program, voice files or service settings) is missing or unusable. */
export class TtsEngineUnavailableError extends TtsError {
  override name = "TtsEngineUnavailableError";
  constructor(message: string, options: CodedErrorOptions = {}) {
    super("ENGINE_UNAVAILABLE", message, options);
  }
}

/** An engine was configured with invalid settings. */
export class TtsConfigError extends TtsError {
  override name = "TtsConfigError";
  constructor(message: string, options: CodedErrorOptions = {}) {
    super("ENGINE_CONFIG_INVALID", message, options);
  }
}

/** No installed voice has this name. */
export class UnknownVoiceError extends TtsError {
  override name = "UnknownVoiceError";
  readonly voice: string;
  constructor(voice: string, available: readonly string[] = []) {
    const hint = available.length > 0 ? ` Available voices: ${available.slice(0, 12).join(", ")}${available.length > 12 ? ", …" : ""}.` : "";
    super("UNKNOWN_VOICE", `There is no voice called "${voice}".${hint}`);
    this.voice = voice;
  }
}

/** The voice exists but speaks another language. */
export class VoiceLanguageMismatchError extends TtsError {
  override name = "VoiceLanguageMismatchError";
  readonly voice: string;
  readonly language: string;
  constructor(voice: string, language: string, voiceLanguages: readonly string[]) {
    super("VOICE_LANGUAGE_MISMATCH", `The voice "${voice}" does not speak ${language}; it speaks ${voiceLanguages.join(", ")}.`);
    this.voice = voice;
    this.language = language;
  }
}

/** No installed voice speaks this language. */
export class LanguageNotSupportedError extends TtsError {
  override name = "LanguageNotSupportedError";
  readonly language: string;
  constructor(language: string, detail?: string) {
    super("LANGUAGE_NOT_SUPPORTED", detail ?? `Speech in ${language} is not available: no installed voice speaks ${language}.`);
    this.language = language;
  }
}

/** The text cannot be spoken (empty, or in a script the voice cannot read). */
export class UnspeakableTextError extends TtsError {
  override name = "UnspeakableTextError";
  constructor(code: "TEXT_EMPTY" | "TEXT_NOT_SPEAKABLE", message: string) {
    super(code, message);
  }
}

/** An engine ran and failed, or the operation was cancelled. */
export class SynthesisError extends TtsError {
  override name = "SynthesisError";
  readonly details: readonly string[];
  constructor(code: TtsErrorCode, message: string, options: CodedErrorOptions & { details?: readonly string[] } = {}) {
    super(code, message, options);
    this.details = options.details ?? [];
  }
}

/** A speech service (HTTP) failed or refused the request. */
export class SpeechServiceError extends TtsError {
  override name = "SpeechServiceError";
  readonly status: number | undefined;
  constructor(code: TtsErrorCode, message: string, options: CodedErrorOptions & { status?: number } = {}) {
    super(code, message, options);
    this.status = options.status;
  }
}

/** A voice sample that cannot make a voice, or a cloned voice the engine no longer has. Messages name the sample's fault in plain words. */
export class CloneError extends TtsError {
  override name = "CloneError";
  constructor(code: "SAMPLE_UNUSABLE" | "CLONE_NOT_FOUND", message: string, options: CodedErrorOptions = {}) {
    super(code, message, options);
  }
}

/** Ends a message with exactly one full stop (service messages often bring their own). */
export function endSentence(text: string): string {
  return /[.!?…]$/u.test(text) ? text : `${text}.`;
}
