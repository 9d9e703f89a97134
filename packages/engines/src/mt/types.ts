import type { Language } from "../languages.ts";

/** How a pair is translated: rule-based (Apertium), a neural MT model, or a general language model. */
export type MtQuality = "rule-based" | "neural" | "llm";

/** One translation direction an engine offers. */
export interface MtPair {
  source: Language;
  target: Language;
  /** Set when the engine translates through this language in two steps (e.g. English → Spanish → French). */
  pivot?: Language;
  quality: MtQuality;
}

export interface MtCapabilities {
  pairs: MtPair[];
  /** True for a remote service: it is tested with a one-word translation at start. */
  remote?: boolean;
}

export interface TranslationRequest {
  text: string;
  source: Language;
  target: Language;
  signal?: AbortSignal | undefined;
}

/** A machine translation engine (port). Adapters: Apertium (offline), OpenAI-compatible chat completions. */
export interface MtEngine {
  readonly id: string;
  capabilities(): MtCapabilities;
  /** Translates the whole text; long text is split into chunks by the engine, paragraph breaks are kept. */
  translate(request: TranslationRequest): Promise<string>;
}
