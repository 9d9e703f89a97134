export { createSynthesisService, voiceCatalog, type SynthesisService, type SynthesisServiceOptions } from "./service.ts";
export { createSpeechStack, type SpeechStack, type OpenAiTtsSettings } from "./engines.ts";
