export { createSynthesisService, voiceCatalog, type SynthesisService, type SynthesisServiceOptions } from "./service.ts";
export { createCloneEngine, createSpeechStack, type CloneStackSettings, type SpeechStack, type OpenAiTtsSettings } from "./engines.ts";
export { TTS_CLONE_REPLY, type SampleFetchSettings } from "./clones.ts";
