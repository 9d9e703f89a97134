/**
 * Where each translated clip goes on the output track.
 *
 * Rule (the same for every clip, in time order):
 * - a clip starts at its segment's start time, or just after the previous clip when that one ran late
 *   (clips never overlap: two voices at once would be unintelligible);
 * - when the clip is longer than the room it has (up to the next segment's start, or the end of the
 *   original for the last clip), it is sped up just enough to fit, but never beyond `maxTempo`
 *   (1.3× by default, where synthetic speech stays easy to follow);
 * - what still does not fit pushes the following clips later; they catch up at the next pause that
 *   leaves room (they start at their own segment start again), and a last clip that overruns makes
 *   the track longer than the original.
 */

export interface TimingOptions {
  /** Fastest speed-up applied to a clip. Default 1.3. */
  maxTempo?: number;
  /** Silence kept between a late clip and the one before it, in seconds. Default 0.15. */
  minGapSeconds?: number;
  /** Speed-ups smaller than this are not worth re-encoding the clip. Default 1.02. */
  minTempo?: number;
}

export const DEFAULT_MAX_TEMPO = 1.3;

export interface ClipSlot {
  /** When the clip starts on the output track, in seconds. */
  startSeconds: number;
  /** Speed factor to apply (1 = unchanged). */
  tempo: number;
}

/**
 * Start and speed of one clip.
 * `previousEndSeconds`: where the previous clip ends on the output track (0 for the first);
 * `segmentStartSeconds`: where the original speech of this segment starts;
 * `roomEndSeconds`: the next segment's start, or the original's duration for the last segment.
 */
export function fitClip(
  previousEndSeconds: number,
  segmentStartSeconds: number,
  roomEndSeconds: number,
  clipSeconds: number,
  options: TimingOptions = {},
): ClipSlot {
  const maxTempo = options.maxTempo ?? DEFAULT_MAX_TEMPO;
  const minGap = options.minGapSeconds ?? 0.15;
  const minTempo = options.minTempo ?? 1.02;
  const startSeconds = previousEndSeconds > 0 ? Math.max(segmentStartSeconds, previousEndSeconds + minGap) : Math.max(0, segmentStartSeconds);
  const room = roomEndSeconds - startSeconds;
  if (!(clipSeconds > 0) || clipSeconds <= room) return { startSeconds, tempo: 1 };
  const wanted = room > 0 ? clipSeconds / room : Number.POSITIVE_INFINITY;
  const tempo = Math.min(wanted, maxTempo);
  return { startSeconds, tempo: tempo < minTempo ? 1 : Math.round(tempo * 1000) / 1000 };
}

export interface TimedText {
  start: number;
  end: number;
  text: string;
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
 * Segments separated by a real pause stay apart: that is where the original's timing is kept.
 */
export function mergeSegments(segments: readonly TimedText[], options: MergeOptions = {}): TimedText[] {
  const maxGap = options.maxGapSeconds ?? 0.3;
  const maxSeconds = options.maxSeconds ?? 20;
  const merged: TimedText[] = [];
  for (const segment of segments) {
    const last = merged.at(-1);
    if (last !== undefined && segment.start - last.end <= maxGap && segment.end - last.start <= maxSeconds) {
      last.end = Math.max(last.end, segment.end);
      last.text = `${last.text} ${segment.text}`;
    } else {
      merged.push({ start: segment.start, end: segment.end, text: segment.text });
    }
  }
  return merged;
}
