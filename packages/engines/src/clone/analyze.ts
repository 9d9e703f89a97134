import { join } from "node:path";
import { CLONE_SAMPLE_SECONDS } from "@voiceloc/contracts";
import { MediaError, type MediaErrorCode, type MediaToolkit } from "@voiceloc/media";
import { CloneError } from "../errors.ts";
import { readPcm16Wav } from "../wav.ts";
import { summarizePitch, trackPitch, trackPitchAsync, type PitchOptions, type PitchTrack } from "./pitch.ts";
import type { SampleAnalysis, VoiceProfile } from "./types.ts";

/** Shortest and longest decoded sample accepted, in seconds (the contract's `CLONE_SAMPLE_SECONDS`). */
export const SAMPLE_MIN_SECONDS: number = CLONE_SAMPLE_SECONDS.min;
export const SAMPLE_MAX_SECONDS: number = CLONE_SAMPLE_SECONDS.max;

/** A sample whose loudest 40 ms is quieter than this (RMS, dBFS) is silent. */
export const SAMPLE_SILENCE_DB = -50;

/** A sample with less voiced sound than this (seconds) has no speech to take a voice from. */
export const SAMPLE_MIN_VOICED_SECONDS = 0.5;

/** What the decoder says of a file that is not usable audio: the sample's fault, said in plain words. */
const NOT_AUDIO_CODES: ReadonlySet<MediaErrorCode> = new Set(["MEDIA_UNREADABLE", "MEDIA_FORMAT_NOT_ALLOWED", "MEDIA_NO_AUDIO", "MEDIA_TOO_LARGE"]);

export interface SpeechMeasure {
  profile: VoiceProfile;
  /** Seconds of voiced frames. */
  voicedSeconds: number;
  /** Seconds of speech, pauses (quiet stretches of 200 ms or more) excluded. */
  speechSeconds: number;
  /** Syllable nuclei counted. */
  syllables: number;
  /** Loudest frame's RMS level, in dBFS. */
  peakDb: number;
}

/** Frames are speech when no more than this far below the loud frames (95th percentile). */
const SPEECH_RANGE_DB = 30;
/** Quiet stretches shorter than this are part of the speech (stop closures, short breaths), not pauses. */
const PAUSE_SECONDS = 0.2;
/** A syllable nucleus rises this far above the dips around it. */
const NUCLEUS_PROMINENCE_DB = 2;
/** Two nuclei are at least this far apart (the nearer, quieter one is dropped). */
const NUCLEUS_MIN_GAP_SECONDS = 0.08;

function powerToDb(power: number): number {
  return power > 0 ? 10 * Math.log10(power) : Number.NEGATIVE_INFINITY;
}

/** The loudness envelope of a pitch track, smoothed over three frames (30 ms at the default hop), in dB. */
function smoothedEnvelope(levelDb: Float64Array): Float64Array {
  const n = levelDb.length;
  const power = levelDb.map((db) => (Number.isFinite(db) ? 10 ** (db / 10) : 0));
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let sum = 0;
    let count = 0;
    for (let j = Math.max(0, i - 1); j <= Math.min(n - 1, i + 1); j++) {
      sum += power[j] as number;
      count++;
    }
    out[i] = powerToDb(sum / count);
  }
  return out;
}

/**
 * Syllable nuclei and seconds of speech from a pitch track: nuclei are peaks of the smoothed loudness
 * envelope that stand at least 2 dB above the dips on both sides, fall on voiced frames and are part of
 * the speech (within 30 dB of its loud frames); speech time leaves out pauses of 200 ms or more.
 */
export function countSyllables(track: PitchTrack): { syllables: number; speechSeconds: number } {
  const n = track.hz.length;
  if (n === 0) return { syllables: 0, speechSeconds: 0 };
  const env = smoothedEnvelope(track.levelDb);
  const finite = Array.from(env.filter((v) => Number.isFinite(v))).sort((a, b) => a - b);
  if (finite.length === 0) return { syllables: 0, speechSeconds: 0 };
  const loud = finite[Math.min(finite.length - 1, Math.floor(0.95 * (finite.length - 1)))] as number;
  const floor = Math.max(SAMPLE_SILENCE_DB, loud - SPEECH_RANGE_DB);
  const isSpeech = (i: number): boolean => (env[i] as number) >= floor;

  // Speech time: speech frames, with quiet gaps shorter than a pause counted as speech.
  const gapFrames = Math.round(PAUSE_SECONDS / track.hopSeconds);
  let speechFrames = 0;
  let lastSpeech = -1;
  for (let i = 0; i < n; i++) {
    if (!isSpeech(i)) continue;
    const gap = lastSpeech < 0 ? 0 : i - lastSpeech - 1;
    speechFrames += 1 + (gap > 0 && gap < gapFrames ? gap : 0);
    lastSpeech = i;
  }

  const voicedNear = (i: number): boolean => {
    for (let j = Math.max(0, i - 2); j <= Math.min(n - 1, i + 2); j++) if ((track.hz[j] as number) > 0) return true;
    return false;
  };
  // Local maxima (plateaus count once, at their first frame) with their prominence.
  const peaks: { at: number; db: number }[] = [];
  for (let i = 0; i < n; i++) {
    const v = env[i] as number;
    if (!Number.isFinite(v) || !isSpeech(i) || !voicedNear(i)) continue;
    if (i > 0 && (env[i - 1] as number) >= v) continue;
    let k = i;
    while (k + 1 < n && (env[k + 1] as number) === v) k++;
    if (k + 1 < n && (env[k + 1] as number) > v) continue;
    // Prominence: the higher of the two dips between this peak and the nearest higher ground on each side.
    let leftMin = v;
    let j = i - 1;
    for (; j >= 0 && (env[j] as number) <= v; j--) leftMin = Math.min(leftMin, env[j] as number);
    let rightMin = v;
    let r = k + 1;
    for (; r < n && (env[r] as number) <= v; r++) rightMin = Math.min(rightMin, env[r] as number);
    const base = Math.max(leftMin, rightMin);
    if (v - base >= NUCLEUS_PROMINENCE_DB) peaks.push({ at: i, db: v });
  }
  const minGap = Math.max(1, Math.round(NUCLEUS_MIN_GAP_SECONDS / track.hopSeconds));
  const kept: { at: number; db: number }[] = [];
  for (const peak of peaks) {
    const last = kept[kept.length - 1];
    if (last && peak.at - last.at < minGap) {
      if (peak.db > last.db) kept[kept.length - 1] = peak;
      continue;
    }
    kept.push(peak);
  }
  return { syllables: kept.length, speechSeconds: speechFrames * track.hopSeconds };
}

/** Pitch and speaking rate of 16-bit mono speech (synchronous: for short clips). */
export function measureSpeechSamples(samples: Int16Array, sampleRate: number, options: PitchOptions = {}): SpeechMeasure {
  return measureTrack(trackPitch(samples, sampleRate, options));
}

function measureTrack(track: PitchTrack): SpeechMeasure {
  const pitch = summarizePitch(track);
  const { syllables, speechSeconds } = countSyllables(track);
  let peakDb = Number.NEGATIVE_INFINITY;
  for (const db of track.levelDb) if (db > peakDb) peakDb = db;
  const measurable = pitch.voicedSeconds >= SAMPLE_MIN_VOICED_SECONDS;
  return {
    profile: {
      medianPitchHz: measurable ? pitch.medianHz : null,
      pitchLowHz: measurable ? pitch.lowHz : null,
      pitchHighHz: measurable ? pitch.highHz : null,
      syllablesPerSecond: syllables >= 2 && speechSeconds >= 0.5 ? syllables / speechSeconds : null,
    },
    voicedSeconds: pitch.voicedSeconds,
    speechSeconds,
    syllables,
    peakDb,
  };
}

/**
 * Pitch (median, 10th/90th percentile) and speaking rate (syllable nuclei per second of speech) of the
 * speech in a 16-bit PCM WAV file. Throws a RangeError for any other format.
 */
export async function measureSpeech(wavPath: string, options: PitchOptions & { signal?: AbortSignal | undefined } = {}): Promise<SpeechMeasure> {
  const audio = await readPcm16Wav(wavPath);
  if (!audio) throw new RangeError("Speech can only be measured on a 16-bit PCM WAV file.");
  return measureTrack(await trackPitchAsync(audio.samples, audio.sampleRate, options));
}

export interface AnalyzeSampleRequest {
  media: MediaToolkit;
  /** The sample as the caller sent it (any audio or video container; untrusted). */
  inputPath: string;
  /** Scratch directory of the caller: the decoded WAV is written there. */
  workDir: string;
  signal?: AbortSignal | undefined;
}

function seconds(value: number): string {
  return value >= 10 ? String(Math.round(value)) : String(Math.round(value * 10) / 10);
}

/**
 * Decodes a voice sample (untrusted: its decoded length is measured, never the container's claim) to
 * 16 kHz mono 16-bit WAV in `workDir`, checks it and measures the voice. Refuses, with `CloneError`
 * `SAMPLE_UNUSABLE` in plain words, a file that is not audio, shorter than 3 s or longer than 5 min of
 * decoded sound, silent, or without voiced speech.
 */
export async function analyzeSample(request: AnalyzeSampleRequest): Promise<SampleAnalysis> {
  const wavPath = join(request.workDir, "voice-sample.wav");
  let decoded;
  try {
    decoded = await request.media.decodeAudio({ input: request.inputPath, outPath: wavPath, sampleRate: 16_000, maxSeconds: SAMPLE_MAX_SECONDS, signal: request.signal });
  } catch (error) {
    if (error instanceof MediaError && NOT_AUDIO_CODES.has(error.code)) {
      const why = error.code === "MEDIA_NO_AUDIO" ? "it has no sound track" : "it is not an audio file this service can read";
      throw new CloneError("SAMPLE_UNUSABLE", `The voice sample cannot be used: ${why}. Send a recording of the speaker (WAV, MP3, OGG, FLAC, M4A or a video with sound).`, { cause: error });
    }
    throw error;
  }
  if (decoded.overLimit) {
    throw new CloneError("SAMPLE_UNUSABLE", `The voice sample is longer than ${SAMPLE_MAX_SECONDS / 60} minutes: send ${SAMPLE_MIN_SECONDS} seconds to ${SAMPLE_MAX_SECONDS / 60} minutes of the speaker's voice.`);
  }
  if (decoded.durationSeconds < SAMPLE_MIN_SECONDS) {
    throw new CloneError(
      "SAMPLE_UNUSABLE",
      `The voice sample is ${seconds(decoded.durationSeconds)} seconds long, shorter than the ${SAMPLE_MIN_SECONDS} seconds needed: send ${SAMPLE_MIN_SECONDS} seconds to ${SAMPLE_MAX_SECONDS / 60} minutes of the speaker's voice.`,
    );
  }
  const audio = await readPcm16Wav(wavPath);
  if (!audio) throw new CloneError("SAMPLE_UNUSABLE", "The voice sample cannot be used: its sound could not be decoded.");
  const measured = measureTrack(await trackPitchAsync(audio.samples, audio.sampleRate, { signal: request.signal }));
  if (!(measured.peakDb >= SAMPLE_SILENCE_DB)) {
    throw new CloneError("SAMPLE_UNUSABLE", "The voice sample is silent: no part of it is loud enough to hear a voice. Send a recording of the speaker talking.");
  }
  if (measured.profile.medianPitchHz === null) {
    throw new CloneError("SAMPLE_UNUSABLE", "The voice sample has no clear speech in it (no voiced sound, only noise or whispering): send a recording of the speaker talking.");
  }
  return { seconds: decoded.durationSeconds, profile: measured.profile, wavPath };
}
