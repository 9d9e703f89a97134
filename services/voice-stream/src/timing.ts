/**
 * Where each translated line goes on the output track (dubbing timing).
 *
 * Rule, the same for every line:
 * - a line starts at its original line's start, always (lines are never pushed later: the picture
 *   would lose sync);
 * - its slot runs to the next line's start (or the end of the original for the last line); a line
 *   longer than its slot is sped up without changing pitch (ffmpeg `atempo`) just enough to fit, but
 *   never beyond `maxTempo` (1.4×, where synthetic speech stays easy to follow);
 * - what still does not fit is cut at the next line's start with a short fade-out (`fadeSeconds`), so
 *   no line is ever heard over the next one; the last line may run on into the silence after the
 *   original's end only up to the track's end (the track keeps the original's length).
 */

export interface TimingOptions {
  /** Fastest speed-up applied to a line. Default 1.4. */
  maxTempo?: number;
  /** Speed-ups smaller than this are not worth re-encoding the clip. Default 1.02. */
  minTempo?: number;
  /** Fade-out of a line cut at the next line's start, in seconds. Default 0.08. */
  fadeSeconds?: number;
}

export const DEFAULT_MAX_TEMPO = 1.4;
export const DEFAULT_FADE_SECONDS = 0.08;

export interface ClipSlot {
  /** When the clip starts on the output track, in seconds (its line's original start). */
  startSeconds: number;
  /** Speed factor to apply (1 = unchanged). */
  tempo: number;
  /**
   * Length the (sped-up) clip is cut to, with a fade-out ending there, when even at `maxTempo` it would
   * run past the slot's end; undefined when it fits.
   */
  cutSeconds?: number;
}

/**
 * Start, speed and cut of one line.
 * `segmentStartSeconds`: where the original line starts;
 * `roomEndSeconds`: the next line's start, or the original's duration for the last line.
 */
export function fitClip(segmentStartSeconds: number, roomEndSeconds: number, clipSeconds: number, options: TimingOptions = {}): ClipSlot {
  const maxTempo = options.maxTempo ?? DEFAULT_MAX_TEMPO;
  const minTempo = options.minTempo ?? 1.02;
  const startSeconds = Math.max(0, segmentStartSeconds);
  const room = Math.max(0, roomEndSeconds - startSeconds);
  if (!(clipSeconds > 0) || clipSeconds <= room) return { startSeconds, tempo: 1 };
  const wanted = room > 0 ? clipSeconds / room : Number.POSITIVE_INFINITY;
  const capped = Math.min(wanted, maxTempo);
  const tempo = capped < minTempo ? 1 : Math.round(capped * 1000) / 1000;
  const spoken = clipSeconds / tempo;
  // A rounding hair over the slot is not worth a cut; anything more is cut at the slot's end.
  return spoken > room + 0.02 ? { startSeconds, tempo, cutSeconds: Math.round(room * 1000) / 1000 } : { startSeconds, tempo };
}

/** What the record's `timing` says: how many lines were sped up, and the largest factor. */
export interface TimingSummary {
  lines_sped_up: number;
  largest_factor: number;
}

export function summarizeTiming(slots: readonly ClipSlot[]): TimingSummary {
  const sped = slots.filter((s) => s.tempo > 1);
  return { lines_sped_up: sped.length, largest_factor: sped.reduce((m, s) => Math.max(m, s.tempo), 1) };
}

/**
 * The characters a translation of a line should stay within to be spoken in its slot at a voice's
 * rate (characters per second of speech), allowing the speed-up up to `maxTempo` only as a margin
 * (the budget aims at speech that fits unhurried). At least 8 characters.
 */
export function lengthBudget(slotSeconds: number, charsPerSecond: number): number {
  return Math.max(8, Math.floor(Math.max(0, slotSeconds) * charsPerSecond));
}

/**
 * How fast a voice speaks, measured on speech it synthesized: characters per second of speech (from the
 * first to the last sound), and the silence the engine puts around every clip (`overheadSeconds`),
 * which a line's clip carries whatever its length.
 */
export interface SpeakingRate {
  charsPerSecond: number;
  overheadSeconds: number;
}

/** The rate assumed when a voice's own cannot be measured (a typical synthetic voice, unhurried). */
export const FALLBACK_SPEAKING_RATE: SpeakingRate = { charsPerSecond: 14, overheadSeconds: 0 };

/**
 * Share of the measured rate a budget asks for: a voice's rate varies from text to text (short words,
 * punctuation pauses), so the budget aims a little under the slot rather than at its edge.
 */
export const BUDGET_MARGIN = 0.9;

/**
 * The rate of a voice from one synthesized clip: `chars` characters spoken in `clipSeconds`, of which
 * `speech` (seconds from the clip's start) is sound. Undefined when the clip holds too little speech
 * to measure (under half a second, or fewer than 10 characters).
 */
export function measuredRate(chars: number, clipSeconds: number, speech: { start: number; end: number } | undefined): SpeakingRate | undefined {
  if (speech === undefined || chars < 10) return undefined;
  const spoken = speech.end - speech.start;
  if (!(spoken >= 0.5) || !(clipSeconds >= spoken)) return undefined;
  return { charsPerSecond: chars / spoken, overheadSeconds: Math.max(0, clipSeconds - spoken) };
}

/**
 * The length budget of a line whose slot lasts `slotSeconds`, for a voice speaking at `rate`: the slot
 * less the voice's fixed silence, at BUDGET_MARGIN of its rate.
 */
export function slotBudget(slotSeconds: number, rate: SpeakingRate): number {
  return lengthBudget(slotSeconds - rate.overheadSeconds, rate.charsPerSecond * BUDGET_MARGIN);
}

export interface TimedText {
  start: number;
  end: number;
  text: string;
  /** The recogniser's label of who speaks, when it tells speakers apart. */
  speaker?: string;
}

export interface MergeOptions {
  /** Segments closer than this (seconds) belong to one utterance. Default 0.3. */
  maxGapSeconds?: number;
  /** Longest merged segment, in seconds. Default 20. */
  maxSeconds?: number;
}

/**
 * Joins segments the recogniser cut out of one utterance (subtitle-sized pieces with no pause between
 * them) back together, so each is translated and spoken as a whole phrase rather than in halves.
 * Segments separated by a real pause stay apart: that is where the original's timing is kept, and so
 * do segments the recogniser gives to different speakers.
 */
export function mergeSegments(segments: readonly TimedText[], options: MergeOptions = {}): TimedText[] {
  const maxGap = options.maxGapSeconds ?? 0.3;
  const maxSeconds = options.maxSeconds ?? 20;
  const merged: TimedText[] = [];
  for (const segment of segments) {
    const last = merged.at(-1);
    if (last !== undefined && last.speaker === segment.speaker && segment.start - last.end <= maxGap && segment.end - last.start <= maxSeconds) {
      last.end = Math.max(last.end, segment.end);
      last.text = `${last.text} ${segment.text}`;
    } else {
      merged.push({ start: segment.start, end: segment.end, text: segment.text, ...(segment.speaker === undefined ? {} : { speaker: segment.speaker }) });
    }
  }
  return merged;
}
