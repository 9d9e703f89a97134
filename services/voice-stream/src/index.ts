export { createVoiceStreamService, type VoiceStreamService, type VoiceStreamServiceOptions } from "./service.ts";
export {
  createVoiceStreamHandler,
  voiceStreamResumedProgress,
  type VoiceStreamFetchSettings,
  type VoiceStreamPipelineDeps,
} from "./pipeline.ts";
export { fitClip, DEFAULT_MAX_TEMPO, summarizeTiming, type ClipSlot, type TimingOptions, type TimingSummary } from "./timing.ts";
export { NO_SPEECH_MESSAGE } from "@voiceloc/worker";
