import type { Language } from "../languages.ts";
import { RecognitionError } from "./errors.ts";
import type { Transcript, TranscriptSegment, TranscriptWord } from "./types.ts";

/** Largest subtitle cue made from one utterance before it is split at a pause between words. */
export interface SegmentLimits {
  /** Default 7 seconds. */
  maxSeconds: number;
  /** Default 80 characters. */
  maxChars: number;
}

export const DEFAULT_SEGMENT_LIMITS: Readonly<SegmentLimits> = { maxSeconds: 7, maxChars: 80 };

/** Words that rarely end a subtitle line well ("the", "of", …): a cue should not end on them. */
const WEAK_ENDINGS = new Set([
  "a", "an", "the", "of", "to", "and", "or", "but", "in", "on", "at", "for", "with", "from", "by", "as", "near", "into", "about",
  "my", "your", "his", "her", "its", "our", "their", "this", "that", "is", "are", "was", "were", "be", "i", "we", "you", "they", "he", "she",
]);

/** Words that often open a clause: a good place to start a new cue. */
const CLAUSE_STARTS = new Set(["and", "but", "or", "so", "because", "where", "when", "while", "which", "who", "if", "then", "although", "though"]);

/**
 * Readable text from recognised words: single spaces, the pronoun "I" in capitals, and the first
 * letter too unless `continuation` (the cue continues an utterance split into several cues).
 */
export function wordsToText(words: readonly string[], continuation = false): string {
  const text = words
    .map((w) => (/^i('[a-z]+)?$/.test(w) ? `I${w.slice(1)}` : w))
    .join(" ")
    .replace(/\s+/g, " ")
    .trim();
  return continuation ? text : text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * Splits one utterance into cues within `limits` at word boundaries. It uses as few cues as
 * possible, then prefers cues of even size, cuts at pauses and before words such as "and" or
 * "where", and avoids ending a cue on "the", "of", …. A single word longer than the limits stays a
 * cue of its own.
 */
export function splitUtterance(words: readonly TranscriptWord[], limits: SegmentLimits = DEFAULT_SEGMENT_LIMITS): TranscriptWord[][] {
  const n = words.length;
  if (n === 0) return [];
  const at = (i: number): TranscriptWord => words[i] as TranscriptWord;
  // cost[j]: best cost of cutting words[0..j) into cues; from[j]: where the last of those cues starts.
  const cost: number[] = [0];
  const from: number[] = [0];
  for (let j = 1; j <= n; j++) {
    cost[j] = Number.POSITIVE_INFINITY;
    from[j] = j - 1;
    let chars = -1;
    for (let i = j - 1; i >= 0; i--) {
      chars += at(i).word.length + 1;
      const seconds = at(j - 1).end - at(i).start;
      const single = i === j - 1;
      if (!single && (chars > limits.maxChars || seconds > limits.maxSeconds)) break;
      const fill = (chars / limits.maxChars) ** 2 + (seconds / limits.maxSeconds) ** 2;
      let boundary = 0;
      if (j < n) {
        const gap = Math.max(0, at(j).start - at(j - 1).end);
        boundary -= Math.min(gap, 1.5);
        if (WEAK_ENDINGS.has(at(j - 1).word.toLowerCase())) boundary += 0.4;
        if (CLAUSE_STARTS.has(at(j).word.toLowerCase())) boundary -= 0.25;
      }
      const total = (cost[i] ?? Number.POSITIVE_INFINITY) + 2 + 0.5 * fill + boundary + (single && n > 1 ? 0.5 : 0);
      if (total < (cost[j] ?? Number.POSITIVE_INFINITY)) {
        cost[j] = total;
        from[j] = i;
      }
    }
  }
  const pieces: TranscriptWord[][] = [];
  for (let j = n; j > 0; j = from[j] ?? 0) pieces.unshift(words.slice(from[j] ?? 0, j));
  return pieces;
}

/** Segments from utterances (lists of timed words), long utterances split into readable cues. */
export function segmentsFromUtterances(utterances: readonly (readonly TranscriptWord[])[], limits: SegmentLimits = DEFAULT_SEGMENT_LIMITS): TranscriptSegment[] {
  const segments: TranscriptSegment[] = [];
  for (const utterance of utterances) {
    for (const [index, piece] of splitUtterance(utterance, limits).entries()) {
      const first = piece[0];
      const last = piece.at(-1);
      if (!first || !last) continue;
      segments.push({ start: first.start, end: last.end, text: wordsToText(piece.map((w) => w.word), index > 0), words: piece });
    }
  }
  return segments;
}

const ms = (seconds: number): number => Math.round(seconds * 1000) / 1000;

/**
 * Makes segments safe to use as subtitle cues: text trimmed (empty ones dropped), times rounded to
 * milliseconds and clamped to `[0, durationSeconds]`, sorted, and overlaps removed by ending a segment
 * where the next one starts. Word times are clamped into their segment.
 */
export function normalizeSegments(segments: readonly TranscriptSegment[], durationSeconds: number): TranscriptSegment[] {
  const limit = Number.isFinite(durationSeconds) && durationSeconds > 0 ? ms(durationSeconds) : Number.POSITIVE_INFINITY;
  const clamp = (t: number): number => Math.min(Math.max(Number.isFinite(t) ? ms(t) : 0, 0), limit);
  const cleaned = segments
    .map((segment, order) => {
      const start = clamp(segment.start);
      const end = Math.max(start, clamp(segment.end));
      return { segment: { ...segment, start, end, text: segment.text.replace(/\s+/g, " ").trim() }, order };
    })
    .filter((entry) => entry.segment.text !== "")
    .sort((a, b) => a.segment.start - b.segment.start || a.segment.end - b.segment.end || a.order - b.order)
    .map((entry) => entry.segment);
  for (let i = 1; i < cleaned.length; i++) {
    const previous = cleaned[i - 1] as TranscriptSegment;
    const current = cleaned[i] as TranscriptSegment;
    if (current.start < previous.end) previous.end = current.start;
  }
  return cleaned.map((segment) => {
    if (segment.words === undefined) return segment;
    const words = segment.words.map((w) => {
      const start = Math.min(Math.max(clamp(w.start), segment.start), segment.end);
      const end = Math.min(Math.max(clamp(w.end), start), segment.end);
      return { ...w, start, end };
    });
    return { ...segment, words };
  });
}

/** A transcript from segments (normalised here). */
export function buildTranscript(language: Language, durationSeconds: number, segments: readonly TranscriptSegment[]): Transcript {
  const duration = Number.isFinite(durationSeconds) && durationSeconds > 0 ? ms(durationSeconds) : 0;
  const normalized = normalizeSegments(segments, duration);
  return { language, durationSeconds: duration, segments: normalized, text: normalized.map((s) => s.text).join(" ") };
}

/**
 * Engines return an empty transcript for audio without recognisable speech (silence, music, tones).
 * Callers that need speech (e.g. to make subtitles) use this to turn that into a clear error.
 */
export function requireSpeech(transcript: Transcript): Transcript {
  if (transcript.segments.length === 0) {
    throw new RecognitionError("RECOGNITION_NO_SPEECH", "The audio contains no recognisable speech.");
  }
  return transcript;
}

/**
 * Splits a segment without word timings (e.g. from a service) that exceeds `limits` at sentence
 * ends, then at commas, grouping pieces up to the limits; times are shared out in proportion to the
 * characters. A segment that fits, or is one clause, is returned as is.
 */
export function splitTimedText(segment: TranscriptSegment, limits: SegmentLimits = DEFAULT_SEGMENT_LIMITS): TranscriptSegment[] {
  const text = segment.text.replace(/\s+/g, " ").trim();
  const duration = segment.end - segment.start;
  if (text.length <= limits.maxChars && duration <= limits.maxSeconds) return [{ ...segment, text }];
  const sentences = text.split(/(?<=[.!?…。！？])\s+/u).filter((s) => s !== "");
  const clauses = sentences.flatMap((s) => (s.length > limits.maxChars ? s.split(/(?<=[,;:，、；])\s+/u) : [s])).filter((s) => s !== "");
  if (clauses.length < 2) return [{ ...segment, text }];
  const secondsPerChar = duration / Math.max(1, text.length);
  const maxChars = Math.min(limits.maxChars, secondsPerChar > 0 ? Math.max(1, Math.floor(limits.maxSeconds / secondsPerChar)) : limits.maxChars);
  const groups: string[] = [];
  for (const clause of clauses) {
    const last = groups.at(-1);
    if (last !== undefined && last.length + 1 + clause.length <= maxChars) groups[groups.length - 1] = `${last} ${clause}`;
    else groups.push(clause);
  }
  const pieces: TranscriptSegment[] = [];
  let offset = 0;
  for (const [index, group] of groups.entries()) {
    const start = segment.start + offset * secondsPerChar;
    offset += group.length + 1;
    const end = index === groups.length - 1 ? segment.end : Math.min(segment.end, segment.start + (offset - 1) * secondsPerChar);
    pieces.push({ start, end, text: group, ...(segment.speaker === undefined ? {} : { speaker: segment.speaker }) });
  }
  return pieces;
}
