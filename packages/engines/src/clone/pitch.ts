import { readPcm16Wav } from "../wav.ts";

/**
 * Fundamental-frequency (pitch) estimation of speech with YIN (de Cheveigné & Kawahara, 2002): per frame,
 * the cumulative-mean-normalised difference function, the first dip under a threshold (the period), refined
 * by parabolic interpolation. Pure computation over 16-bit mono PCM: no program is started.
 */

export interface PitchOptions {
  /** Lowest pitch looked for, in Hz. Default 60. */
  minHz?: number | undefined;
  /** Highest pitch looked for, in Hz. Default 500. */
  maxHz?: number | undefined;
  /** Analysis window, in seconds. Default 0.04. */
  frameSeconds?: number | undefined;
  /** Step between frames, in seconds. Default 0.01. */
  hopSeconds?: number | undefined;
  /** YIN's voicing threshold on the normalised difference (lower is stricter). Default 0.3: diphone and formant voices (flite kal, espeak-ng) are less periodic than recorded speech. */
  threshold?: number | undefined;
  /** Frames quieter than this RMS level (dBFS) are unvoiced without analysis. Default -50. */
  floorDb?: number | undefined;
}

export interface PitchTrack {
  /** Seconds between frame starts. */
  hopSeconds: number;
  /** Pitch of each frame in Hz; 0 for a frame that is not voiced. */
  hz: Float64Array;
  /** RMS level of each frame in dBFS (-Infinity for digital silence). */
  levelDb: Float64Array;
}

export interface PitchSummary {
  /** Median pitch of the voiced frames, in Hz; null when no frame was voiced. */
  medianHz: number | null;
  /** 10th percentile of the voiced frames' pitch (the low end of the speaker's range). */
  lowHz: number | null;
  /** 90th percentile of the voiced frames' pitch (the high end). */
  highHz: number | null;
  /** Seconds of voiced frames (frames × hop). */
  voicedSeconds: number;
}

const DEFAULTS = { minHz: 60, maxHz: 500, frameSeconds: 0.04, hopSeconds: 0.01, threshold: 0.3, floorDb: -50 } as const;

/** The analysis runs at about this rate (speech is low-passed and decimated first): pitch up to 500 Hz needs no more. */
const ANALYSIS_RATE = 8000;

/** The `p` quantile (0..1) of ascending `sorted` values, linearly interpolated; null when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number | null {
  const n = sorted.length;
  if (n === 0) return null;
  const at = Math.min(1, Math.max(0, p)) * (n - 1);
  const lo = Math.floor(at);
  const hi = Math.min(n - 1, lo + 1);
  const a = sorted[lo] as number;
  const b = sorted[hi] as number;
  return a + (b - a) * (at - lo);
}

/** Samples as floats in -1..1, low-passed and decimated to about `ANALYSIS_RATE`. */
function toAnalysisRate(samples: Int16Array, sampleRate: number): { x: Float64Array; rate: number } {
  const factor = Math.max(1, Math.floor(sampleRate / ANALYSIS_RATE));
  if (factor === 1) {
    const x = new Float64Array(samples.length);
    for (let i = 0; i < samples.length; i++) x[i] = (samples[i] as number) / 32768;
    return { x, rate: sampleRate };
  }
  // Windowed-sinc low-pass (Hamming) at 0.45 of the new rate, then keep every `factor`-th sample.
  const taps = 8 * factor + 1;
  const half = (taps - 1) / 2;
  const cutoff = 0.45 / factor;
  const kernel = new Float64Array(taps);
  let sum = 0;
  for (let k = 0; k < taps; k++) {
    const m = k - half;
    const sinc = m === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * m) / (Math.PI * m);
    const value = sinc * (0.54 - 0.46 * Math.cos((2 * Math.PI * k) / (taps - 1)));
    kernel[k] = value;
    sum += value;
  }
  for (let k = 0; k < taps; k++) kernel[k] = (kernel[k] as number) / sum;
  const length = Math.floor(samples.length / factor);
  const x = new Float64Array(length);
  for (let i = 0; i < length; i++) {
    const centre = i * factor;
    let acc = 0;
    for (let k = 0; k < taps; k++) {
      const j = centre + k - half;
      if (j >= 0 && j < samples.length) acc += (kernel[k] as number) * (samples[j] as number);
    }
    x[i] = acc / 32768;
  }
  return { x, rate: sampleRate / factor };
}

interface Tracker {
  track: PitchTrack;
  /** Analyses frames [from, to). */
  run(from: number, to: number): void;
}

function tracker(samples: Int16Array, sampleRate: number, options: PitchOptions): Tracker {
  const minHz = options.minHz ?? DEFAULTS.minHz;
  const maxHz = options.maxHz ?? DEFAULTS.maxHz;
  const threshold = options.threshold ?? DEFAULTS.threshold;
  const floorDb = options.floorDb ?? DEFAULTS.floorDb;
  const hopSeconds = options.hopSeconds ?? DEFAULTS.hopSeconds;
  if (!(sampleRate > 0) || !(minHz > 0) || !(maxHz > minHz)) throw new RangeError("The pitch range and sample rate must be positive, with maxHz above minHz.");
  const { x, rate } = toAnalysisRate(samples, sampleRate);
  const window = Math.max(2, Math.round((options.frameSeconds ?? DEFAULTS.frameSeconds) * rate));
  const hop = Math.max(1, Math.round(hopSeconds * rate));
  const tauMin = Math.max(2, Math.floor(rate / maxHz));
  const tauMax = Math.min(Math.ceil(rate / minHz), window);
  const span = window + tauMax + 1;
  const frames = x.length >= span ? Math.floor((x.length - span) / hop) + 1 : 0;
  const hz = new Float64Array(frames);
  const levelDb = new Float64Array(frames);
  const d = new Float64Array(tauMax + 2);
  const run = (from: number, to: number): void => {
    for (let f = from; f < Math.min(to, frames); f++) {
      const start = f * hop;
      let energy = 0;
      for (let j = start; j < start + window; j++) energy += (x[j] as number) * (x[j] as number);
      const level = energy > 0 ? 10 * Math.log10(energy / window) : Number.NEGATIVE_INFINITY;
      levelDb[f] = level;
      if (!(level >= floorDb)) continue;
      // Difference function d(tau) = sum (x[j] - x[j + tau])^2, then its cumulative-mean normalisation.
      let running = 0;
      let found = -1;
      for (let tau = 1; tau <= tauMax + 1; tau++) {
        let acc = 0;
        for (let j = start; j < start + window; j++) {
          const diff = (x[j] as number) - (x[j + tau] as number);
          acc += diff * diff;
        }
        running += acc;
        d[tau] = running > 0 ? (acc * tau) / running : 1;
      }
      for (let tau = tauMin; tau <= tauMax; tau++) {
        if ((d[tau] as number) < threshold) {
          while (tau + 1 <= tauMax && (d[tau + 1] as number) < (d[tau] as number)) tau++;
          found = tau;
          break;
        }
      }
      if (found < 0) continue;
      const a = d[found - 1] as number;
      const b = d[found] as number;
      const c = d[found + 1] as number;
      const denominator = a - 2 * b + c;
      const shift = denominator > 0 ? Math.max(-0.5, Math.min(0.5, (0.5 * (a - c)) / denominator)) : 0;
      const pitch = rate / (found + shift);
      if (pitch >= minHz * 0.97 && pitch <= maxHz * 1.03) hz[f] = pitch;
    }
  };
  return { track: { hopSeconds: hop / rate, hz, levelDb }, run };
}

/** The frame-by-frame pitch of 16-bit mono samples (synchronous: for short clips). */
export function trackPitch(samples: Int16Array, sampleRate: number, options: PitchOptions = {}): PitchTrack {
  const t = tracker(samples, sampleRate, options);
  t.run(0, t.track.hz.length);
  return t.track;
}

/** Frames analysed between turns of the event loop (about 50 ms of work on one core). */
const FRAMES_PER_TURN = 1000;

/**
 * The frame-by-frame pitch of 16-bit mono samples, letting the event loop run between slices of work:
 * minutes of sound take seconds to analyse, and a service keeps answering meanwhile.
 */
export async function trackPitchAsync(samples: Int16Array, sampleRate: number, options: PitchOptions & { signal?: AbortSignal | undefined } = {}): Promise<PitchTrack> {
  const t = tracker(samples, sampleRate, options);
  for (let from = 0; from < t.track.hz.length; from += FRAMES_PER_TURN) {
    options.signal?.throwIfAborted();
    t.run(from, from + FRAMES_PER_TURN);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return t.track;
}

/** Median, 10th and 90th percentile of a track's voiced frames. */
export function summarizePitch(track: PitchTrack): PitchSummary {
  const voiced = Float64Array.from(track.hz.filter((v) => v > 0)).sort();
  return {
    medianHz: percentile(voiced, 0.5),
    lowHz: percentile(voiced, 0.1),
    highHz: percentile(voiced, 0.9),
    voicedSeconds: voiced.length * track.hopSeconds,
  };
}

/** The pitch summary of 16-bit mono samples. */
export function pitchOfSamples(samples: Int16Array, sampleRate: number, options: PitchOptions = {}): PitchSummary {
  return summarizePitch(trackPitch(samples, sampleRate, options));
}

/**
 * Measures the pitch of the speech in a 16-bit PCM WAV file (channels are mixed down): the median,
 * 10th and 90th percentile of the voiced frames and how long they last. Reads the whole file into
 * memory: for clips and samples (minutes), not hours. Throws a RangeError for any other format.
 */
export async function measurePitch(wavPath: string, options: PitchOptions = {}): Promise<PitchSummary> {
  const audio = await readPcm16Wav(wavPath);
  if (!audio) throw new RangeError("The pitch can only be measured on a 16-bit PCM WAV file.");
  return summarizePitch(await trackPitchAsync(audio.samples, audio.sampleRate, options));
}
