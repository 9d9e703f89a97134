/**
 * Voice features of recorded speech, measured on 16-bit PCM samples: an energy-based voice activity
 * detector (where speech starts and stops) and, per line, the pitch statistics of the YIN estimator
 * with the mean MFCCs (a spectral envelope) of its voiced frames. Used to refine line boundaries and
 * to group lines by speaker (speakers.ts).
 */
import { pitchOfSamples } from "@voiceloc/engines";

const FRAME_SECONDS = 0.025;
const HOP_SECONDS = 0.01;

/** RMS level (dBFS) of each 25 ms frame, every 10 ms. */
export function frameLevels(samples: Int16Array, sampleRate: number): { hopSeconds: number; db: Float64Array } {
  const frame = Math.max(1, Math.round(FRAME_SECONDS * sampleRate));
  const hop = Math.max(1, Math.round(HOP_SECONDS * sampleRate));
  const count = samples.length < frame ? (samples.length > 0 ? 1 : 0) : Math.floor((samples.length - frame) / hop) + 1;
  const db = new Float64Array(count);
  for (let f = 0; f < count; f++) {
    let sum = 0;
    const end = Math.min(samples.length, f * hop + frame);
    for (let i = f * hop; i < end; i++) sum += ((samples[i] ?? 0) / 32768) ** 2;
    const rms = Math.sqrt(sum / Math.max(1, end - f * hop));
    db[f] = rms > 0 ? 20 * Math.log10(rms) : Number.NEGATIVE_INFINITY;
  }
  return { hopSeconds: hop / sampleRate, db };
}

export interface VadOptions {
  /** Speech is louder than the noise floor (10th percentile of frame levels) by this many dB. Default 15. */
  marginDb?: number;
  /** Never count frames quieter than this (dBFS) as speech. Default -50. */
  floorDb?: number;
  /** Speech shorter than this is ignored (clicks). Default 0.08 s. */
  minSpeechSeconds?: number;
  /** Pauses shorter than this do not split speech. Default 0.2 s. */
  minPauseSeconds?: number;
}

export interface Region {
  start: number;
  end: number;
}

/** Stretches of speech (seconds), by energy above an adaptive noise floor. */
export function detectSpeech(samples: Int16Array, sampleRate: number, options: VadOptions = {}): Region[] {
  const { hopSeconds, db } = frameLevels(samples, sampleRate);
  if (db.length === 0) return [];
  const sorted = Array.from(db).filter(Number.isFinite).sort((a, b) => a - b);
  const noise = sorted.length > 0 ? (sorted[Math.floor(sorted.length * 0.1)] ?? -120) : -120;
  const threshold = Math.max(options.floorDb ?? -50, noise + (options.marginDb ?? 15));
  const minSpeech = options.minSpeechSeconds ?? 0.08;
  const minPause = options.minPauseSeconds ?? 0.2;
  const regions: Region[] = [];
  let open: number | undefined;
  for (let f = 0; f <= db.length; f++) {
    const loud = f < db.length && (db[f] ?? Number.NEGATIVE_INFINITY) >= threshold;
    if (loud && open === undefined) open = f;
    if (!loud && open !== undefined) {
      regions.push({ start: open * hopSeconds, end: f * hopSeconds + FRAME_SECONDS });
      open = undefined;
    }
  }
  const joined: Region[] = [];
  for (const r of regions) {
    const last = joined.at(-1);
    if (last && r.start - last.end < minPause) last.end = r.end;
    else joined.push({ ...r });
  }
  return joined.filter((r) => r.end - r.start >= minSpeech);
}

/**
 * Line boundaries refined by the detected speech: a line starts where the first speech region that
 * overlaps it (or begins within `slackSeconds` before it) starts, so the translation starts where the
 * original speech does. Starts stay in time order and before their line's end.
 */
export function refineStarts<T extends Region>(lines: readonly T[], speech: readonly Region[], slackSeconds = 0.3): T[] {
  const out: T[] = [];
  let floor = 0;
  for (const line of lines) {
    const region = speech.find((r) => r.end > line.start - slackSeconds && r.start < line.end && r.end > line.start);
    let start = line.start;
    if (region !== undefined && Math.abs(region.start - line.start) <= Math.max(slackSeconds, 0) + (line.end - line.start)) {
      start = Math.max(region.start, line.start - slackSeconds);
    }
    start = Math.min(Math.max(start, floor), line.end);
    out.push({ ...line, start: Math.round(start * 1000) / 1000 });
    floor = line.end;
  }
  return out;
}

/* ------------------------------------------------------------------ MFCC */

function fft(re: Float64Array, im: Float64Array): void {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      [re[i], re[j]] = [re[j] ?? 0, re[i] ?? 0];
      [im[i], im[j]] = [im[j] ?? 0, im[i] ?? 0];
    }
  }
  for (let len = 2; len <= n; len <<= 1) {
    const angle = (-2 * Math.PI) / len;
    for (let i = 0; i < n; i += len) {
      for (let k = 0; k < len / 2; k++) {
        const cr = Math.cos(angle * k);
        const ci = Math.sin(angle * k);
        const a = i + k;
        const b = a + len / 2;
        const xr = (re[b] ?? 0) * cr - (im[b] ?? 0) * ci;
        const xi = (re[b] ?? 0) * ci + (im[b] ?? 0) * cr;
        re[b] = (re[a] ?? 0) - xr;
        im[b] = (im[a] ?? 0) - xi;
        re[a] = (re[a] ?? 0) + xr;
        im[a] = (im[a] ?? 0) + xi;
      }
    }
  }
}

const mel = (hz: number) => 2595 * Math.log10(1 + hz / 700);
const melToHz = (m: number) => 700 * (10 ** (m / 2595) - 1);

/** Triangular mel filters over the bins of an `fftSize` spectrum. */
function melFilters(count: number, fftSize: number, sampleRate: number, lowHz: number, highHz: number): Float64Array[] {
  const points = Array.from({ length: count + 2 }, (_, i) => melToHz(mel(lowHz) + ((mel(highHz) - mel(lowHz)) * i) / (count + 1)));
  const bins = points.map((hz) => Math.floor(((fftSize + 1) * hz) / sampleRate));
  return Array.from({ length: count }, (_, m) => {
    const f = new Float64Array(fftSize / 2 + 1);
    const [a, b, c] = [bins[m] ?? 0, bins[m + 1] ?? 0, bins[m + 2] ?? 0];
    for (let k = a; k < b; k++) f[k] = (k - a) / Math.max(1, b - a);
    for (let k = b; k <= c && k < f.length; k++) f[k] = (c - k) / Math.max(1, c - b);
    return f;
  });
}

/** Mean MFCCs (coefficients 1..`coefficients`, c0 left out: it is loudness) of the frames louder than `minDb`. */
export function meanMfcc(samples: Int16Array, sampleRate: number, options: { coefficients?: number; filters?: number; minDb?: number } = {}): number[] | null {
  const coefficients = options.coefficients ?? 12;
  const filterCount = options.filters ?? 26;
  const frame = Math.round(FRAME_SECONDS * sampleRate);
  const hop = Math.round(HOP_SECONDS * sampleRate);
  let fftSize = 1;
  while (fftSize < frame) fftSize <<= 1;
  const filters = melFilters(filterCount, fftSize, sampleRate, 60, Math.min(7600, sampleRate / 2));
  const window = Float64Array.from({ length: frame }, (_, i) => 0.54 - 0.46 * Math.cos((2 * Math.PI * i) / (frame - 1)));
  const sums = new Float64Array(coefficients);
  let frames = 0;
  const re = new Float64Array(fftSize);
  const im = new Float64Array(fftSize);
  const logMel = new Float64Array(filterCount);
  for (let start = 0; start + frame <= samples.length; start += hop) {
    let energy = 0;
    re.fill(0);
    im.fill(0);
    for (let i = 0; i < frame; i++) {
      const x = (samples[start + i] ?? 0) / 32768;
      energy += x * x;
      re[i] = x * (window[i] ?? 0);
    }
    if (10 * Math.log10(energy / frame + 1e-20) < (options.minDb ?? -40)) continue;
    fft(re, im);
    for (let m = 0; m < filterCount; m++) {
      const f = filters[m] ?? new Float64Array(0);
      let e = 0;
      for (let k = 0; k < f.length; k++) {
        const w = f[k] ?? 0;
        if (w > 0) e += w * ((re[k] ?? 0) ** 2 + (im[k] ?? 0) ** 2);
      }
      logMel[m] = Math.log(e + 1e-10);
    }
    for (let c = 1; c <= coefficients; c++) {
      let s = 0;
      for (let m = 0; m < filterCount; m++) s += (logMel[m] ?? 0) * Math.cos((Math.PI * c * (m + 0.5)) / filterCount);
      sums[c - 1] = (sums[c - 1] ?? 0) + s;
    }
    frames++;
  }
  return frames === 0 ? null : Array.from(sums, (s) => s / frames);
}

/** One line's voice: pitch statistics (Hz; null when nothing was voiced) and mean MFCCs. */
export interface LineFeatures {
  medianHz: number | null;
  lowHz: number | null;
  highHz: number | null;
  mfcc: number[] | null;
}

/** Voice features of the samples between `start` and `end` seconds. */
export function lineFeatures(samples: Int16Array, sampleRate: number, start: number, end: number): LineFeatures {
  const slice = samples.subarray(Math.max(0, Math.floor(start * sampleRate)), Math.min(samples.length, Math.ceil(end * sampleRate)));
  const pitch = pitchOfSamples(slice, sampleRate);
  return { medianHz: pitch.medianHz, lowHz: pitch.lowHz, highHz: pitch.highHz, mfcc: meanMfcc(slice, sampleRate) };
}
