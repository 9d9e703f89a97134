export type { MtCapabilities, MtEngine, MtPair, MtQuality, TranslationRequest } from "./types.ts";
export {
  MtConfigError,
  MtEngineUnavailableError,
  MtError,
  TranslationError,
  TranslationNotSupportedError,
  TranslationServiceError,
  type MtErrorCode,
} from "./errors.ts";
export { assembleChunks, planChunks, type ChunkPlan, type TranslationChunk } from "./chunk.ts";
export {
  APERTIUM_LANGUAGE_CODES,
  apertiumRoutes,
  createApertiumEngine,
  parseApertiumModes,
  type ApertiumMode,
  type ApertiumOptions,
  type ApertiumRoute,
} from "./apertium.ts";
export {
  cleanModelTranslation,
  createOpenAiTranslator,
  OPENAI_MT_DEFAULT_CHUNK_CHARS,
  translationSystemPrompt,
  type OpenAiTranslatorOptions,
} from "./openai.ts";
export { createMtRegistry, mtPairRank, type MtCapabilityTable, type MtRegistry, type MtRegistryOptions, type MtRegistryPair, type MtSelfTestReport, type ResolvedTranslator } from "./registry.ts";
export { translateSegments, type SegmentTranslator, type TranslateSegmentsRequest } from "./segments.ts";
export { createLibreTranslateEngine, type LibreTranslateOptions } from "./libretranslate.ts";
export { createDeepLEngine, deeplBaseUrl, DEEPL_FREE_BASE_URL, DEEPL_MAX_REQUEST_BYTES, DEEPL_MAX_TEXTS, DEEPL_PRO_BASE_URL, DEEPL_TARGET_VARIANTS, type DeepLOptions } from "./deepl.ts";
