export type { SttCapabilities, SttEngine, SttEngineKind, TranscribeRequest, Transcript, TranscriptSegment, TranscriptWord } from "./types.ts";
export {
  RecognitionError,
  RecognitionNotSupportedError,
  RecognitionServiceError,
  SttConfigError,
  SttEngineUnavailableError,
  SttError,
  type SttErrorCode,
} from "./errors.ts";
export {
  buildTranscript,
  DEFAULT_SEGMENT_LIMITS,
  normalizeSegments,
  requireSpeech,
  segmentsFromUtterances,
  splitTimedText,
  splitUtterance,
  wordsToText,
  type SegmentLimits,
} from "./segments.ts";
export {
  createPocketsphinxEngine,
  findPocketsphinxModel,
  isPocketsphinxFiller,
  parsePocketsphinxOutput,
  PocketsphinxOutputParser,
  POCKETSPHINX_DEFAULT_MODEL_DIR,
  type PocketsphinxModel,
  type PocketsphinxOptions,
} from "./pocketsphinx.ts";
export {
  createOpenAiTranscriber,
  OPENAI_TRANSCRIPTION_MAX_UPLOAD_BYTES,
  parseVerboseTranscription,
  TRANSCRIPTION_LANGUAGE_CODES,
  type OpenAiTranscriberOptions,
  type ParsedVerboseTranscription,
} from "./openai.ts";
export { createSttRegistry, type SttCapabilityTable, type SttRegistry, type SttRegistryOptions, type SttRegistryTranscribeRequest, type SttSelfTestReport } from "./registry.ts";
export { createWhisperCppTranscriber, type WhisperCppOptions } from "./whisper-cpp.ts";
