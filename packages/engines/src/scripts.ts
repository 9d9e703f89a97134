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

/**
 * Splits text into runs of one script. Digits, punctuation, spaces and combining marks join the run
 * they follow (or the first run, at the start), so every run but a letterless text has a script.
 */
export function splitScriptRuns(text: string): ScriptRun[] {
  const runs: ScriptRun[] = [];
  let current: ScriptRun | undefined;
  for (const char of text) {
    const script = scriptOf(char);
    if (current === undefined) {
      current = { text: char, script };
    } else if (script === undefined || script === current.script) {
      current.text += char;
    } else if (current.script === undefined) {
      current = { text: current.text + char, script };
    } else {
      runs.push(current);
      current = { text: char, script };
    }
  }
  if (current) runs.push(current);
  return runs;
}
