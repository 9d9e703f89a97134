import type { Language } from "../languages.ts";
import type { SynthesisResult, SynthesizeRequest } from "../types.ts";

/** The engines that make cloned voices (`CLONE_ENGINE`). */
export const CLONE_ENGINE_IDS = ["elevenlabs", "voice-library", "match"] as const;
export type CloneEngineId = (typeof CLONE_ENGINE_IDS)[number];

/** The prefix of a cloned voice's name wherever a voice is named: `clone:<id>`. */
export const CLONE_VOICE_PREFIX = "clone:";

/** What a sample's speech sounds like, measured on the decoded sound (see `analyzeSample`). */
export interface VoiceProfile {
  /** Median fundamental frequency of the voiced frames, in Hz; null when too little was voiced to say. */
  medianPitchHz: number | null;
  /** 10th and 90th percentile of the voiced frames' pitch, in Hz (the speaker's range); null like the median. */
  pitchLowHz: number | null;
  pitchHighHz: number | null;
  /** Speaking rate: syllable nuclei (loudness peaks of voiced speech) per second of speech; null when unmeasurable. */
  syllablesPerSecond: number | null;
}

/** A sample checked and measured: what `analyzeSample` answers for a usable recording. */
export interface SampleAnalysis {
  /** Decoded length of the sound, in seconds (never the container's claim). */
  seconds: number;
  profile: VoiceProfile;
  /** 16-bit mono WAV of the decoded sample (the file handed to the engine), in the caller's scratch directory. */
  wavPath: string;
}

/**
 * A cloned voice as it travels: stored by the gateway with its record, carried in synthesis requests and
 * work messages, so the process that speaks needs no store. `ref` is the engine's own handle (ElevenLabs'
 * voice_id, the voice library's voice name, or "" for `match`, whose voice is the profile).
 */
export interface ClonedVoice {
  /** The clone's id (the `<id>` of `clone:<id>`). */
  id: string;
  name: string;
  engine: CloneEngineId;
  ref: string;
  profile: VoiceProfile;
}

export interface CreateCloneInput {
  /** The clone's id, unique: engines that keep named voices derive their voice's name from it. */
  id: string;
  name: string;
  sample: SampleAnalysis;
  /** The language the sample is spoken in, when the caller said. */
  language?: Language | undefined;
  signal?: AbortSignal | undefined;
}

/** A speech request in a cloned voice (the voice is the clone, so no `voice` field). */
export type CloneSynthesizeRequest = Omit<SynthesizeRequest, "voice">;

/**
 * An engine that makes voices from a sample (port). Adapters: ElevenLabs instant voice cloning, an
 * OpenAI-compatible server with a voice library (chatterbox-tts-api's protocol), and `match` (offline:
 * not a clone, an approximation of the sample's pitch and rate with an installed voice).
 *
 * Errors are `TtsError`s: `SAMPLE_UNUSABLE` for a sample the engine refuses, `CLONE_NOT_FOUND` when the
 * engine no longer has the voice (deleted), the `SPEECH_SERVICE_*` codes for an outside service's trouble.
 */
export interface CloneEngine {
  readonly id: CloneEngineId;
  /** Languages a voice made by this engine can speak. */
  languages(): Language[];
  /** Largest text one `synthesize` call takes comfortably; longer text is split on sentences by the caller. */
  readonly maxInputChars: number;
  /** Makes the voice at the engine (the sample is sent once, never logged) and answers the engine's handle. */
  create(input: CreateCloneInput): Promise<{ ref: string }>;
  /** Speaks in the cloned voice, writing a 16-bit PCM WAV. */
  synthesize(clone: ClonedVoice, request: CloneSynthesizeRequest): Promise<SynthesisResult>;
  /** Deletes the voice at the engine; a voice already gone is not an error. */
  remove(clone: ClonedVoice, signal?: AbortSignal): Promise<void>;
}
