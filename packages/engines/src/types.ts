import type { Language } from "./languages.ts";
import type { Script } from "./scripts.ts";

export interface VoiceInfo {
  /** Stable identifier, "<engine>:<voice>", e.g. "espeak:en-us", "flite:slt", "festival:msu_ru_nsh_clunits". */
  name: string;
  language: Language;
  /** Id of the engine that owns the voice. */
  engine: string;
  gender?: "female" | "male";
  /** Plain-words description shown to users. */
  description: string;
  /** Naturalness rank, 0–100; higher sounds more natural. Used to choose default voices. */
  quality: number;
  /**
   * The scripts the voice reads well; runs of other scripts in a text go to a voice that reads them.
   * Absent: the voice reads any script (a multilingual service voice).
   */
  reads?: readonly Script[];
}

export interface TtsCapabilities {
  languages: Language[];
  /** One entry per (voice, language); a multilingual voice appears once per language. */
  voices: VoiceInfo[];
  /** Whether the engine can imitate a reference recording. */
  cloning: boolean;
  /** Largest text the engine takes comfortably in one call; longer text is split into sentences. */
  maxInputChars: number;
  /** True for a paid or remote service: its self-test speaks one word instead of a sentence. */
  remote?: boolean;
}

export interface SynthesizeRequest {
  text: string;
  language: Language;
  /** A voice name from capabilities(); the engine's best voice for the language when omitted. */
  voice?: string | undefined;
  signal?: AbortSignal | undefined;
  /** Where to write the WAV. Default: a new file in the system temporary directory, owned by the caller. */
  outPath?: string | undefined;
}

export interface SynthesisResult {
  wavPath: string;
  sampleRate: number;
  /** The voice used. */
  voice: string;
}

/** A text-to-speech engine (port). Adapters: espeak-ng, flite, festival, OpenAI-compatible HTTP. */
export interface TtsEngine {
  readonly id: string;
  capabilities(): TtsCapabilities;
  synthesize(request: SynthesizeRequest): Promise<SynthesisResult>;
}
