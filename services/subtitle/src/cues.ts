/**
 * Readable subtitle cues from timed speech, after the Netflix Timed Text Style Guide and the BBC
 * subtitle guidelines (the numbers are in CUE_RULES and docs/tasks.md, "Video subtitles"):
 *
 * - at most two lines per cue, about 42 characters per line (16 for Chinese, Japanese, Korean);
 * - a cue lasts 5/6 s to 7 s, longer when its text needs it to be read at the reading speed
 *   (17 characters per second; less for CJK), never into the next cue or past the video's end;
 * - two frames (at 24 fps) between consecutive cues; cues never overlap;
 * - cues break where speech pauses, after sentence or clause punctuation, or before a conjunction;
 *   lines break at the same natural points and are balanced (a slightly longer bottom line);
 * - with word timings (from the recogniser) a cue starts with its first word and ends with its last;
 *   without them (translated text, engines without word times) the segment's time is shared across
 *   its words by length.
 *
 * Text stays in logical order: right-to-left scripts (Arabic, Urdu) are reordered by the renderer
 * (libass with FriBidi, or the player), never here. Pure functions only.
 */
import type { Language } from "@voiceloc/contracts";

export interface TimedWord {
  word: string;
  start: number;
  end: number;
}

/** A piece of speech with its time in the video (seconds) and, when known, its words' times. */
export interface CueSegment {
  start: number;
  end: number;
  text: string;
  /** Word timings for exactly the words of `text` (recognised text only, not translations). */
  words?: readonly TimedWord[] | undefined;
}

export interface Cue {
  /** Seconds, rounded to milliseconds. */
  start: number;
  end: number;
  /** One or two lines, logical order. */
  lines: string[];
}

export interface CueRules {
  maxLines: number;
  /** Longest line in characters (grapheme clusters). */
  maxLineChars: number;
  minSeconds: number;
  maxSeconds: number;
  /** Reading speed a cue's duration should allow (characters per second, spaces included). */
  maxCharsPerSecond: number;
  /** Silence between consecutive cues. */
  gapSeconds: number;
  /** A pause between words at least this long is a preferred cue break. */
  pauseSeconds: number;
}

/** How much earlier than its speech a squeezed cue may start. */
const MAX_LEAD_IN_SECONDS = 0.5;

/** Two frames at 24 frames per second. */
const TWO_FRAMES = 2 / 24;

/** Rules for scripts written with spaces: Latin, Cyrillic, Arabic, Devanagari, Ethiopic. */
export const DEFAULT_CUE_RULES: Readonly<CueRules> = {
  maxLines: 2,
  maxLineChars: 42,
  minSeconds: 5 / 6,
  maxSeconds: 7,
  maxCharsPerSecond: 17,
  gapSeconds: TWO_FRAMES,
  pauseSeconds: 0.4,
};

/** Per-language differences: CJK line length and reading speeds from the Netflix guides. */
export const CUE_RULES: Readonly<Partial<Record<Language, Readonly<CueRules>>>> = {
  Chinese: { ...DEFAULT_CUE_RULES, maxLineChars: 16, maxCharsPerSecond: 9 },
  Japanese: { ...DEFAULT_CUE_RULES, maxLineChars: 16, maxCharsPerSecond: 4 },
  Korean: { ...DEFAULT_CUE_RULES, maxLineChars: 16, maxCharsPerSecond: 12 },
};

export function cueRulesFor(language: Language): Readonly<CueRules> {
  return CUE_RULES[language] ?? DEFAULT_CUE_RULES;
}

/** Languages written without spaces between words (tokenised with Intl.Segmenter). */
const UNSPACED: ReadonlySet<Language> = new Set<Language>(["Chinese", "Japanese"]);

const SEGMENTER_LOCALE: Partial<Record<Language, string>> = { Chinese: "zh", Japanese: "ja" };

/** Words a line or cue is best broken before. */
const CONJUNCTIONS: Readonly<Partial<Record<Language, readonly string[]>>> = {
  English: ["and", "but", "or", "so", "because", "that", "which", "who", "when", "while", "if", "then", "although", "though", "since", "until", "where"],
  Spanish: ["y", "e", "o", "u", "pero", "porque", "que", "cuando", "si", "aunque", "mientras", "donde", "pues"],
  French: ["et", "ou", "mais", "donc", "car", "que", "qui", "quand", "si", "lorsque", "parce", "puis", "où"],
  Portuguese: ["e", "ou", "mas", "porque", "que", "quando", "se", "embora", "onde", "pois"],
  Italian: ["e", "o", "ma", "perché", "che", "quando", "se", "mentre", "dove", "però"],
  German: ["und", "oder", "aber", "denn", "weil", "dass", "wenn", "als", "ob", "sondern", "während"],
  Dutch: ["en", "of", "maar", "want", "omdat", "dat", "als", "toen", "terwijl", "dus"],
  Russian: ["и", "или", "но", "а", "потому", "что", "когда", "если", "чтобы", "хотя", "где"],
  Swahili: ["na", "au", "lakini", "kwa", "kwamba", "ambaye", "kama", "wakati"],
  Hindi: ["और", "या", "लेकिन", "कि", "क्योंकि", "जब", "अगर", "तो", "पर"],
  Urdu: ["اور", "یا", "لیکن", "کہ", "کیونکہ", "جب", "اگر", "تو", "مگر"],
  Arabic: ["و", "أو", "لكن", "ولكن", "لأن", "عندما", "إذا", "ثم", "التي", "الذي"],
  Amharic: ["እና", "ወይም", "ግን", "ስለዚህ"],
  Korean: ["그리고", "그러나", "하지만", "그래서", "또는"],
};

/** Words a line should not end with (articles, prepositions, possessives). */
const WEAK_ENDINGS: Readonly<Partial<Record<Language, readonly string[]>>> = {
  English: ["the", "a", "an", "to", "of", "in", "on", "at", "for", "with", "from", "by", "my", "your", "his", "her", "our", "their", "its"],
  Spanish: ["el", "la", "los", "las", "un", "una", "de", "del", "a", "al", "en", "con", "por", "para", "mi", "su"],
  French: ["le", "la", "les", "un", "une", "de", "du", "des", "à", "au", "en", "avec", "pour", "par", "mon", "ma", "son", "sa"],
  Portuguese: ["o", "a", "os", "as", "um", "uma", "de", "do", "da", "em", "no", "na", "com", "por", "para"],
  Italian: ["il", "lo", "la", "i", "gli", "le", "un", "una", "di", "del", "della", "a", "in", "con", "per", "da"],
  German: ["der", "die", "das", "den", "dem", "ein", "eine", "einen", "zu", "von", "mit", "in", "an", "auf", "für"],
  Dutch: ["de", "het", "een", "van", "met", "in", "op", "aan", "voor", "naar"],
};

const SENTENCE_END = /[.!?…。！？؟।۔]["'”’»)\]]*$/u;
const CLAUSE_END = /[,;:，、；：،؛—–-]["'”’»)\]]*$/u;

interface Token {
  text: string;
  /** Written with a space before it (ignored for the first token of a line). */
  space: boolean;
  start: number;
  end: number;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** Length in user-perceived characters (grapheme clusters). */
export function textLength(text: string): number {
  let n = 0;
  for (const _ of graphemes.segment(text)) n++;
  return n;
}

function joinTokens(tokens: readonly Token[]): string {
  return tokens.map((t, i) => (i > 0 && t.space ? ` ${t.text}` : t.text)).join("");
}

/** Splits text into tokens (words, with trailing punctuation attached) without timing. */
function tokenize(text: string, language: Language): { text: string; space: boolean }[] {
  const clean = text.replace(/\s+/g, " ").trim();
  if (clean === "") return [];
  if (!UNSPACED.has(language)) return clean.split(" ").map((word) => ({ text: word, space: true }));
  const segmenter = new Intl.Segmenter(SEGMENTER_LOCALE[language], { granularity: "word" });
  const out: { text: string; space: boolean }[] = [];
  let space = false;
  for (const part of segmenter.segment(clean)) {
    if (/^\s+$/u.test(part.segment)) {
      space = true;
      continue;
    }
    const last = out.at(-1);
    if (!part.isWordLike && last !== undefined && !space) {
      last.text += part.segment; // punctuation stays with the word before it
    } else {
      out.push({ text: part.segment, space });
    }
    space = false;
  }
  return out;
}

/** Shares [start, end] across the tokens by length (segment-level timing). */
function spreadTiming(parts: readonly { text: string; space: boolean }[], start: number, end: number): Token[] {
  const weights = parts.map((p) => textLength(p.text) + 1);
  const total = weights.reduce((a, b) => a + b, 0);
  const span = Math.max(0, end - start);
  let at = start;
  return parts.map((p, i) => {
    const length = total > 0 ? (span * (weights[i] ?? 0)) / total : 0;
    const token: Token = { ...p, start: at, end: at + length };
    at += length;
    return token;
  });
}

function segmentTokens(segment: CueSegment, language: Language): Token[] {
  const parts = tokenize(segment.text, language);
  const words = segment.words;
  if (words !== undefined && words.length === parts.length && parts.length > 0) {
    return parts.map((p, i) => {
      const w = words[i] as TimedWord;
      return { ...p, start: Math.max(segment.start, w.start), end: Math.max(w.start, Math.min(w.end, Math.max(segment.end, w.end))) };
    });
  }
  return spreadTiming(parts, segment.start, segment.end);
}

function isConjunction(token: Token | undefined, language: Language): boolean {
  if (token === undefined) return false;
  const word = token.text.toLocaleLowerCase().replace(/^[("'“‘«¿¡]+/u, "");
  return CONJUNCTIONS[language]?.includes(word) ?? false;
}

/** How good a break before `tokens[k]` is (higher is better). */
function breakBonus(tokens: readonly Token[], k: number, language: Language, rules: CueRules, timed: boolean): number {
  const before = tokens[k - 1];
  const after = tokens[k];
  if (before === undefined || after === undefined) return 0;
  let bonus = 0;
  if (SENTENCE_END.test(before.text)) bonus += 1.5;
  else if (CLAUSE_END.test(before.text)) bonus += 1;
  else if (isConjunction(after, language)) bonus += 0.7;
  else if (WEAK_ENDINGS[language]?.includes(before.text.toLocaleLowerCase()) ?? false) bonus -= 1.5;
  if (timed && after.start - before.end >= rules.pauseSeconds) bonus += 0.8;
  return bonus;
}

/**
 * Breaks a cue's text into at most `maxLines` lines of at most `maxLineChars`, at the most natural and
 * balanced point; undefined when it cannot fit. A single word longer than a line gets a line of its own.
 */
function breakLines(tokens: readonly Token[], language: Language, rules: CueRules): string[] | undefined {
  const whole = joinTokens(tokens);
  if (textLength(whole) <= rules.maxLineChars) return [whole];
  if (tokens.length === 1) return [whole];
  if (rules.maxLines < 2) return undefined;
  let best: { score: number; lines: string[] } | undefined;
  for (let k = 1; k < tokens.length; k++) {
    const top = joinTokens(tokens.slice(0, k));
    const bottom = joinTokens(tokens.slice(k));
    const a = textLength(top);
    const b = textLength(bottom);
    const overflow = Math.max(0, a - rules.maxLineChars) + Math.max(0, b - rules.maxLineChars);
    if (overflow > 0 && !(k === 1 && b <= rules.maxLineChars) && !(k === tokens.length - 1 && a <= rules.maxLineChars)) continue;
    if (overflow > 0 && tokens.length > 2) continue;
    // Balance first (relative difference), natural breaks next, a slightly longer bottom line preferred.
    const imbalance = Math.abs(a - b) / rules.maxLineChars;
    const score = imbalance - 0.35 * breakBonus(tokens, k, language, rules, false) + (a > b ? 0.05 : 0);
    if (best === undefined || score < best.score) best = { score, lines: [top, bottom] };
  }
  return best?.lines;
}

interface Chunk {
  tokens: Token[];
  lines: string[];
}

/** Splits one segment's tokens into cue-sized chunks: each fits the lines and lasts at most maxSeconds. */
function chunkSegment(tokens: readonly Token[], language: Language, rules: CueRules, timed: boolean): Chunk[] {
  const chunks: Chunk[] = [];
  const capacity = rules.maxLines * rules.maxLineChars;
  let i = 0;
  while (i < tokens.length) {
    // Longest run from i that fits.
    let j = i + 1;
    let lines = breakLines(tokens.slice(i, j), language, rules) ?? [joinTokens(tokens.slice(i, j))];
    while (j < tokens.length) {
      const next = tokens.slice(i, j + 1);
      const nextLines = breakLines(next, language, rules);
      const first = next[0] as Token;
      const last = next.at(-1) as Token;
      if (nextLines === undefined || last.end - first.start > rules.maxSeconds) break;
      j++;
      lines = nextLines;
    }
    if (j < tokens.length) {
      // Not the end: pick the most natural break in the run, not too early.
      const runChars = textLength(joinTokens(tokens.slice(i, j)));
      const remainingChars = textLength(joinTokens(tokens.slice(j)));
      let bestK = j;
      let bestScore = Number.NEGATIVE_INFINITY;
      for (let k = i + 1; k <= j; k++) {
        const chars = textLength(joinTokens(tokens.slice(i, k)));
        if (chars < runChars / 3 && k < j) continue;
        // When what follows would fit in one cue with the rest, prefer an even split over a full first cue.
        const fill = remainingChars + runChars <= capacity * 1.6 ? 1 - Math.abs(chars - (runChars + remainingChars) / 2) / capacity : chars / capacity;
        const score = fill + breakBonus(tokens, k, language, rules, timed);
        if (score > bestScore) {
          bestScore = score;
          bestK = k;
        }
      }
      if (bestK !== j) {
        j = bestK;
        lines = breakLines(tokens.slice(i, j), language, rules) ?? [joinTokens(tokens.slice(i, j))];
      }
    }
    chunks.push({ tokens: tokens.slice(i, j), lines });
    i = j;
  }
  return chunks;
}

/** Upper-cases the first letter of a cased script's segment and English "i" as a word. */
function tidy(text: string, language: Language): string {
  let out = text.replace(/\s+/g, " ").trim();
  if (language === "English") out = out.replace(/(^|\s)i(?=$|\s|')/g, "$1I");
  return out.replace(/^(\P{L}*)(\p{Ll})/u, (_m, pre: string, letter: string) => `${pre}${letter.toLocaleUpperCase()}`);
}

function leadInFloor(previous: { start: number } | undefined, rules: CueRules): number {
  return previous === undefined ? 0 : previous.start + rules.minSeconds / 2;
}

const ms = (seconds: number) => Math.round(seconds * 1000) / 1000;

export interface BuildCuesOptions {
  language: Language;
  /** Length of the video in seconds: every cue ends inside it. */
  mediaSeconds: number;
  rules?: CueRules;
}

/** Cues from time-ordered segments (see the module comment for the rules applied). */
export function buildCues(segments: readonly CueSegment[], options: BuildCuesOptions): Cue[] {
  const { language } = options;
  const rules = options.rules ?? cueRulesFor(language);
  const media = Math.max(0, options.mediaSeconds);
  const sorted = [...segments]
    .filter((s) => Number.isFinite(s.start) && Number.isFinite(s.end) && s.text.trim() !== "")
    .sort((a, b) => a.start - b.start);

  const drafts: { start: number; end: number; lines: string[]; chars: number; spoken: number }[] = [];
  for (const segment of sorted) {
    const timed = segment.words !== undefined && segment.words.length > 0;
    const tokens = segmentTokens({ ...segment, text: tidy(segment.text, language) }, language);
    for (const chunk of chunkSegment(tokens, language, rules, timed)) {
      const first = chunk.tokens[0];
      const last = chunk.tokens.at(-1);
      if (first === undefined || last === undefined) continue;
      drafts.push({ start: first.start, end: last.end, lines: chunk.lines, chars: textLength(chunk.lines.join(" ")), spoken: first.start });
    }
  }

  // Forward: lengthen to the minimum and the reading speed (within the maximum), then keep clear of the next cue.
  for (let i = 0; i < drafts.length; i++) {
    const cue = drafts[i] as (typeof drafts)[number];
    const previous = drafts[i - 1];
    cue.start = Math.max(0, cue.start, previous === undefined ? 0 : previous.end + rules.gapSeconds);
    const wanted = Math.max(cue.end, cue.start + rules.minSeconds, cue.start + cue.chars / rules.maxCharsPerSecond);
    cue.end = Math.min(wanted, cue.start + Math.max(rules.maxSeconds, cue.end - cue.start));
    const next = drafts[i + 1];
    if (next !== undefined && cue.end > next.start - rules.gapSeconds) {
      cue.end = Math.max(next.start - rules.gapSeconds, cue.start + rules.minSeconds);
    }
  }
  // Backward: end inside the video and before the next cue, moving starts earlier if that squeezes a cue.
  for (let i = drafts.length - 1; i >= 0; i--) {
    const cue = drafts[i] as (typeof drafts)[number];
    const next = drafts[i + 1];
    const limit = next === undefined ? media : next.start - rules.gapSeconds;
    if (cue.end > limit) cue.end = limit;
    if (cue.end - cue.start < rules.minSeconds) {
      const previous = drafts[i - 1];
      const floor = Math.max(leadInFloor(previous, rules), cue.spoken - MAX_LEAD_IN_SECONDS);
      cue.start = Math.max(floor, Math.min(cue.start, cue.end - rules.minSeconds));
    }
  }
  const cues: Cue[] = [];
  for (const draft of drafts) {
    const start = ms(Math.max(0, draft.start));
    const end = ms(Math.min(media, draft.end));
    const previous = cues.at(-1);
    if (end - start < 0.1 || (previous !== undefined && start < previous.end)) continue;
    cues.push({ start, end, lines: draft.lines });
  }
  return cues;
}
