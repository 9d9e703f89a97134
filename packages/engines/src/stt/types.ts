import type { Language } from "../languages.ts";

/** One recognised word with its timing in seconds from the start of the media. */
export interface TranscriptWord {
  word: string;
  start: number;
  end: number;
  /** The recogniser's confidence, 0–1, when it states one. */
  confidence?: number;
}

/** A sentence- or utterance-sized piece of speech, sized to make one readable subtitle cue. */
export interface TranscriptSegment {
  /** Seconds from the start of the media. */
  start: number;
  end: number;
  text: string;
  /** Word timings, when the engine gives them. */
  words?: TranscriptWord[];
  /**
   * Who speaks, as the engine labels them ("A", "B", "SPEAKER_00"), when it tells speakers apart (a
   * diarizing model); the same label is the same voice within one transcript.
   */
  speaker?: string;
}

/**
 * What was said in a recording. Segments are in time order, do not overlap and lie within
 * `[0, durationSeconds]`. A recording without recognisable speech gives no segments and empty
 * `text` (not an error; see `requireSpeech`).
 */
export interface Transcript {
  language: Language;
  /** Length of the audio that was recognised, in seconds. */
  durationSeconds: number;
  segments: TranscriptSegment[];
  /** The segments' text joined by spaces. */
  text: string;
}

/** "service": an HTTP recognition service (preferred when configured); "offline": a local program. */
export type SttEngineKind = "service" | "offline";

export interface SttCapabilities {
  languages: Language[];
  kind: SttEngineKind;
}

export interface TranscribeRequest {
  /** Any local audio or video file; its first audio track is recognised. */
  path: string;
  /** The language spoken in the recording. */
  language: Language;
  signal?: AbortSignal | undefined;
}

/** A speech-to-text engine (port). Adapters: pocketsphinx (offline, English), OpenAI-compatible HTTP. */
export interface SttEngine {
  readonly id: string;
  capabilities(): SttCapabilities;
  transcribe(request: TranscribeRequest): Promise<Transcript>;
}
