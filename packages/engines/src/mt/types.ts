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
  /**
   * A length budget: the translation is spoken in a time slot (a dubbed line), so it should stay within
   * this many characters. Engines that can (a language model) are asked for a rendering that fits; the
   * others ignore it.
   */
  maxChars?: number | undefined;
  signal?: AbortSignal | undefined;
}

/** A machine translation engine (port). Adapters: Apertium (offline), OpenAI-compatible chat completions. */
export interface MtEngine {
  readonly id: string;
  capabilities(): MtCapabilities;
  /** Translates the whole text; long text is split into chunks by the engine, paragraph breaks are kept. */
  translate(request: TranslationRequest): Promise<string>;
}
