/**
 * Prints, per language, what espeak-ng says for each written form of the findings table (phonemes) and
 * whether the normaliser rewrites it: `npx tsx packages/engines/src/normalise/test-measure.ts [--phonemes]`.
 * The findings in docs/tasks.md#text-normalisation come from this and flite/festival runs.
 */
import { execFileSync } from "node:child_process";
import { LANGUAGES, type Language } from "../languages.ts";
import { normaliseText } from "./normalise.ts";

const VOICE: Record<Language, string> = {
  French: "fr-fr", English: "en-us", Amharic: "am", Swahili: "sw", Chinese: "cmn-latn-pinyin", Japanese: "ja", Korean: "ko",
  German: "de", Russian: "ru", Portuguese: "pt-br", Spanish: "es", Italian: "it", Arabic: "ar", Dutch: "nl", Hindi: "hi", Urdu: "ur",
};
const FORMS = ["7", "42", "1234", "1 000 000", "1999", "2024", "3.5", "3,5", "1st", "1.", "$5", "5 €", "£3.20", "50 %", "14:30", "2:30 pm", "2026-11-28", "28/11/2026", "Dr.", "e.g.", "etc.", "Mr.", "Sr.", "12 km", "3 kg"];
const showPhonemes = process.argv.includes("--phonemes");

const say = (text: string, voice: string) => execFileSync("espeak-ng", ["-q", "-x", "-v", voice, text], { encoding: "utf8" }).replace(/\s+/g, " ").trim();
process.stdout.write(`| Language | ${FORMS.join(" | ")} |\n|---|${FORMS.map(() => "---").join("|")}|\n`);
for (const language of LANGUAGES) {
  const cells = FORMS.map((form) => {
    const out = normaliseText(form, language);
    const mark = out === form ? "·" : "W";
    return showPhonemes ? `${mark} \`${say(form, VOICE[language])}\`${out === form ? "" : ` → ${out}`}` : mark;
  });
  process.stdout.write(`| ${language} | ${cells.join(" | ")} |\n`);
}
