/**
 * Writing systems, for speaking mixed-script text: a Russian sentence with "Google" in it is split
 * into script runs, and a run the chosen voice cannot read goes to a voice that can.
 */
import type { Language } from "./languages.ts";

export type Script = "Latin" | "Cyrillic" | "Devanagari" | "Arabic" | "Ethiopic" | "Han" | "Kana" | "Hangul" | "Other";

/** The scripts each language is written in (its "own" scripts: never handed to another language's voice). */
export const LANGUAGE_SCRIPTS: Record<Language, readonly Script[]> = {
  French: ["Latin"],
  English: ["Latin"],
  Amharic: ["Ethiopic"],
  Swahili: ["Latin"],
  Chinese: ["Han"],
  Japanese: ["Kana", "Han"],
  Korean: ["Hangul", "Han"],
  German: ["Latin"],
  Russian: ["Cyrillic"],
  Portuguese: ["Latin"],
  Spanish: ["Latin"],
  Italian: ["Latin"],
  Arabic: ["Arabic"],
  Dutch: ["Latin"],
  Hindi: ["Devanagari"],
  Urdu: ["Arabic"],
};

/** The language whose voices read a script best when the text's own language has no voice for it. */
export const SCRIPT_LANGUAGE: Record<Script, Language | undefined> = {
  Latin: "English",
  Cyrillic: "Russian",
  Devanagari: "Hindi",
  Arabic: "Arabic",
  Ethiopic: "Amharic",
  Han: "Chinese",
  Kana: "Japanese",
  Hangul: "Korean",
  Other: undefined,
};

const TESTS: readonly [Script, RegExp][] = [
  ["Latin", /\p{Script=Latin}/u],
  ["Cyrillic", /\p{Script=Cyrillic}/u],
  ["Devanagari", /\p{Script=Devanagari}/u],
  ["Arabic", /\p{Script=Arabic}/u],
  ["Ethiopic", /\p{Script=Ethiopic}/u],
  ["Han", /\p{Script=Han}/u],
  ["Kana", /[\p{Script=Hiragana}\p{Script=Katakana}ー]/u],
  ["Hangul", /\p{Script=Hangul}/u],
];

/** The script of one character; undefined for characters every voice handles (digits, punctuation, spaces, marks). */
export function scriptOf(char: string): Script | undefined {
  if (!/\p{L}/u.test(char)) return undefined;
  for (const [script, test] of TESTS) if (test.test(char)) return script;
  return "Other";
}

export interface ScriptRun {
  text: string;
  /** undefined when the run has no letters at all (digits or punctuation only). */
  script: Script | undefined;
}

/** scriptOf for one code point; ASCII (most text) is answered without a regular expression. */
function scriptOfCode(code: number, text: string, at: number, width: number): Script | undefined {
  if (code < 0x80) {
    const lower = code | 0x20;
    return lower >= 0x61 && lower <= 0x7a ? "Latin" : undefined;
  }
  return scriptOf(text.slice(at, at + width));
}

/**
 * Splits text into runs of one script. Digits, punctuation, spaces and combining marks join the run
 * they follow (or the first run, at the start), so every run but a letterless text has a script.
 * Runs are cut out of the text at their boundaries (no string built character by character: a book's
 * chunks pass through here).
 */
export function splitScriptRuns(text: string): ScriptRun[] {
  const runs: ScriptRun[] = [];
  let start = -1;
  let current: Script | undefined;
  for (let i = 0; i < text.length; ) {
    const code = text.codePointAt(i) ?? 0;
    const width = code > 0xffff ? 2 : 1;
    const script = scriptOfCode(code, text, i, width);
    if (start < 0) {
      start = i;
      current = script;
    } else if (script === undefined || script === current) {
      // joins the current run
    } else if (current === undefined) {
      current = script;
    } else {
      runs.push({ text: text.slice(start, i), script: current });
      start = i;
      current = script;
    }
    i += width;
  }
  if (start >= 0) runs.push({ text: text.slice(start), script: current });
  return runs;
}
