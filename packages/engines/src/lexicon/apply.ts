/**
 * Applying pronunciation lexicons to text before it is spoken. Graphemes are matched as whole words
 * (not inside a longer word; in Chinese and Japanese, which do not separate words, anywhere), longest
 * first, in one pass (a replacement is never replaced again). Case: a grapheme matches as written; a
 * grapheme written in lower case also matches its capitalised form (a sentence's first word). The first
 * lexicon that names a grapheme wins.
 *
 * A lexeme with a `<phoneme>` is said as those phonemes by a voice that takes phonemes (espeak-ng, as its
 * `[[…]]` phoneme input, converted from IPA); with any other voice it is said as its `<alias>`, and a
 * lexeme with only a phoneme cannot be said: `LexiconNotSpeakableError` names those entries.
 */
import type { LexiconEntry } from "./pls.ts";
import { ipaToEspeak } from "./ipa.ts";

/** A lexicon as it travels to the speaking process. */
export interface LexiconForSpeech {
  id: string;
  name: string;
  entries: LexiconEntry[];
}

/** How the voice that will speak takes pronunciations: "espeak" phoneme input, or text only. */
export type PhonemeSupport = "espeak" | "none";

/** Entries a voice cannot say: phoneme-only lexemes for a text-only voice, or IPA espeak-ng has no phoneme for. */
export class LexiconNotSpeakableError extends Error {
  override readonly name = "LexiconNotSpeakableError";
  constructor(
    message: string,
    readonly graphemes: string[],
  ) {
    super(message);
  }
}

const NO_WORD_SPACES = new Set(["Chinese", "Japanese"]);

interface Rule {
  grapheme: string;
  replacement: string;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function capitalised(word: string): string {
  const first = word.charAt(0);
  return first.toUpperCase() + word.slice(1);
}

/**
 * The rules of these lexicons for a voice: grapheme → what the engine is given instead. Throws
 * `LexiconNotSpeakableError` naming every entry the voice cannot say.
 */
function rulesFor(lexicons: readonly LexiconForSpeech[], phonemes: PhonemeSupport): Rule[] {
  const rules = new Map<string, string>();
  const unsayable: string[] = [];
  const add = (grapheme: string, replacement: string) => {
    if (!rules.has(grapheme)) rules.set(grapheme, replacement);
  };
  for (const lexicon of lexicons) {
    for (const entry of lexicon.entries) {
      let replacement: string | null = null;
      if (entry.phoneme !== null && phonemes === "espeak") {
        const converted = entry.alphabet === null || entry.alphabet.toLowerCase() === "ipa" ? ipaToEspeak(entry.phoneme) : null;
        if (converted !== null) replacement = ` [[${converted}]] `;
      }
      replacement ??= entry.alias;
      if (replacement === null) {
        unsayable.push(`'${entry.graphemes[0] ?? ""}' (lexicon '${lexicon.name}')`);
        continue;
      }
      for (const grapheme of entry.graphemes) {
        add(grapheme, replacement);
        if (grapheme === grapheme.toLowerCase() && grapheme !== capitalised(grapheme)) add(capitalised(grapheme), replacement);
      }
    }
  }
  if (unsayable.length > 0) {
    const shown = unsayable.slice(0, 10).join(", ") + (unsayable.length > 10 ? ` and ${unsayable.length - 10} more` : "");
    const why =
      phonemes === "espeak"
        ? "their <phoneme> uses symbols (or an alphabet other than IPA) the espeak-ng voice has no phoneme for, and they have no <alias>"
        : "they have only a <phoneme>, and the chosen voice takes no phonemes (only espeak-ng voices do); add an <alias> or choose an espeak-ng voice";
    throw new LexiconNotSpeakableError(`the chosen voice cannot say these lexicon entries: ${shown}: ${why}`, unsayable);
  }
  return [...rules].map(([grapheme, replacement]) => ({ grapheme, replacement }));
}

/** Checks that a voice can say every entry of these lexicons (throws `LexiconNotSpeakableError` otherwise). */
export function checkLexicons(lexicons: readonly LexiconForSpeech[], phonemes: PhonemeSupport): void {
  rulesFor(lexicons, phonemes);
}

/** The text with the lexicons' graphemes replaced by what the voice is to say. */
export function applyLexicons(text: string, lexicons: readonly LexiconForSpeech[], options: { language: string; phonemes: PhonemeSupport }): string {
  if (lexicons.length === 0) return text;
  const rules = rulesFor(lexicons, options.phonemes);
  if (rules.length === 0) return text;
  rules.sort((a, b) => b.grapheme.length - a.grapheme.length);
  const byGrapheme = new Map(rules.map((rule) => [rule.grapheme, rule.replacement]));
  const alternation = rules.map((rule) => escape(rule.grapheme)).join("|");
  const pattern = NO_WORD_SPACES.has(options.language)
    ? new RegExp(`(?:${alternation})`, "gu")
    : new RegExp(`(?<![\\p{L}\\p{M}\\p{N}_])(?:${alternation})(?![\\p{L}\\p{M}\\p{N}_])`, "gu");
  return text.replace(pattern, (match) => byGrapheme.get(match) ?? match).replace(/ {2,}/g, " ");
}
