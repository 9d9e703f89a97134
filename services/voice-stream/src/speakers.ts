/**
 * Who speaks each line, when the recogniser does not say: agglomerative clustering (average linkage)
 * of the lines' voice features (features.ts) with a distance threshold, 1 to `maxSpeakers` speakers.
 *
 * The distance of two lines combines their median pitch (a quarter octave apart counts 1) and their
 * mean MFCCs (a euclidean distance of 20 counts 1; the same voice's sentences measure about 10 apart,
 * two voices about 20): two lines closer than `threshold` (default 1.5) are one speaker. A line with no
 * voiced frame is compared by its spectrum only.
 */
import type { LineFeatures } from "./features.ts";

export interface ClusterOptions {
  /** Lines (or groups) closer than this are one speaker. Default 1.5. */
  threshold?: number;
  /** At most this many speakers (the closest groups are merged further). Default 6. */
  maxSpeakers?: number;
}

export const PITCH_UNIT_OCTAVES = 0.25;
export const MFCC_UNIT = 20;

export function voiceDistance(a: LineFeatures, b: LineFeatures): number {
  const pitch = a.medianHz !== null && b.medianHz !== null && a.medianHz > 0 && b.medianHz > 0 ? Math.abs(Math.log2(a.medianHz / b.medianHz)) / PITCH_UNIT_OCTAVES : 0;
  let spectrum = 0;
  if (a.mfcc !== null && b.mfcc !== null) {
    let sum = 0;
    for (let i = 0; i < Math.min(a.mfcc.length, b.mfcc.length); i++) sum += ((a.mfcc[i] ?? 0) - (b.mfcc[i] ?? 0)) ** 2;
    spectrum = Math.sqrt(sum) / MFCC_UNIT;
  }
  return Math.hypot(pitch, spectrum);
}

/**
 * A speaker number per line (0, 1, …, numbered in order of first appearance), from the lines' features.
 */
export function clusterSpeakers(lines: readonly LineFeatures[], options: ClusterOptions = {}): number[] {
  const threshold = options.threshold ?? 1.5;
  const maxSpeakers = Math.max(1, options.maxSpeakers ?? 6);
  const n = lines.length;
  const distance = lines.map((a) => lines.map((b) => voiceDistance(a, b)));
  let groups: number[][] = lines.map((_, i) => [i]);
  const linkage = (g: number[], h: number[]) => {
    let sum = 0;
    for (const i of g) for (const j of h) sum += distance[i]?.[j] ?? 0;
    return sum / (g.length * h.length);
  };
  while (groups.length > 1) {
    let best = Number.POSITIVE_INFINITY;
    let pair: [number, number] = [0, 1];
    for (let i = 0; i < groups.length; i++) {
      for (let j = i + 1; j < groups.length; j++) {
        const d = linkage(groups[i] ?? [], groups[j] ?? []);
        if (d < best) [best, pair] = [d, [i, j]];
      }
    }
    if (best >= threshold && groups.length <= maxSpeakers) break;
    const [i, j] = pair;
    groups = [...groups.filter((_, k) => k !== i && k !== j), [...(groups[i] ?? []), ...(groups[j] ?? [])]];
  }
  const labels = new Array<number>(n).fill(0);
  groups.sort((g, h) => Math.min(...g) - Math.min(...h)).forEach((g, k) => g.forEach((i) => (labels[i] = k)));
  return labels;
}

/** Median of the lines' median pitch per speaker (Hz), null for a speaker with no voiced line. */
export function speakerPitches(labels: readonly number[], lines: readonly LineFeatures[]): (number | null)[] {
  const count = labels.reduce((m, l) => Math.max(m, l + 1), 0);
  return Array.from({ length: count }, (_, s) => {
    const values = lines.filter((_, i) => labels[i] === s).flatMap((l) => (l.medianHz === null ? [] : [l.medianHz])).sort((a, b) => a - b);
    return values.length === 0 ? null : (values[Math.floor((values.length - 1) / 2)] ?? null);
  });
}

/**
 * A voice per speaker: each speaker (lowest pitch first) takes the unused voice whose measured median
 * pitch is nearest theirs (in octaves); once every voice is used, voices are shared again. A speaker with
 * no pitch gets the first voice. `voices` must not be empty.
 */
export function assignVoices(speakers: readonly (number | null)[], voices: readonly { name: string; medianHz: number | null }[]): string[] {
  const chosen = new Array<string>(speakers.length).fill(voices[0]?.name ?? "");
  const order = speakers.map((hz, s) => ({ hz, s })).sort((a, b) => (a.hz ?? Infinity) - (b.hz ?? Infinity));
  const used = new Set<string>();
  for (const { hz, s } of order) {
    if (hz === null) continue;
    const free = voices.filter((v) => !used.has(v.name));
    const pool = free.length > 0 ? free : voices;
    const far = (v: { medianHz: number | null }) => (v.medianHz === null ? 10 : Math.abs(Math.log2(v.medianHz / hz)));
    const best = [...pool].sort((a, b) => far(a) - far(b))[0];
    if (best) {
      chosen[s] = best.name;
      used.add(best.name);
    }
  }
  return chosen;
}
