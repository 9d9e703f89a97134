import type { Logger } from "@voiceloc/log";
import { runProcess } from "@voiceloc/media";
import { ENGINE_TIMEOUT_MS, engineFailure, finishWav, outputPath, pickVoice, probeBinary } from "./cli.ts";
import { TtsEngineUnavailableError, UnspeakableTextError } from "./errors.ts";
import type { Language } from "./languages.ts";
import { LANGUAGE_SCRIPTS, type Script } from "./scripts.ts";
import { prepareText } from "./text.ts";
import type { SynthesisResult, SynthesizeRequest, TtsCapabilities, TtsEngine, VoiceInfo } from "./types.ts";

interface EspeakVoiceSpec {
  /** espeak-ng voice/language code passed to -v. */
  code: string;
  language: Language;
  description: string;
  quality: number;
}

/**
 * espeak-ng voices this service offers, checked by hand with `espeak-ng -q -x -v <code>` on native
 * text (see ENGINES.md). Notes:
 * - Chinese uses `cmn-latn-pinyin`: on Chinese characters it gives Mandarin with correct tones and
 *   tone sandhi; the plain `cmn` voice reads the tone numbers in English ("ni three hao three").
 * - Japanese is kana-only: kanji are read as "Chinese letter", so text with kanji is refused.
 * - espeak-ng is formant synthesis: intelligible but robotic, so its voices rank below flite/festival.
 */
export const ESPEAK_VOICES: readonly EspeakVoiceSpec[] = [
  { code: "fr-fr", language: "French", description: "French (France), espeak-ng formant voice", quality: 20 },
  { code: "en-us", language: "English", description: "English (United States), espeak-ng formant voice", quality: 21 },
  { code: "en-gb", language: "English", description: "English (Great Britain), espeak-ng formant voice", quality: 20 },
  { code: "am", language: "Amharic", description: "Amharic, espeak-ng formant voice (reads Ethiopic script)", quality: 20 },
  { code: "sw", language: "Swahili", description: "Swahili, espeak-ng formant voice", quality: 20 },
  {
    code: "cmn-latn-pinyin",
    language: "Chinese",
    description: "Mandarin Chinese, espeak-ng formant voice (reads Chinese characters with tones; Latin letters are read as pinyin)",
    quality: 20,
  },
  { code: "yue", language: "Chinese", description: "Cantonese Chinese, espeak-ng formant voice", quality: 15 },
  {
    code: "ja",
    language: "Japanese",
    description: "Japanese, espeak-ng formant voice; reads kana only (text with kanji is refused)",
    quality: 10,
  },
  { code: "ko", language: "Korean", description: "Korean, espeak-ng formant voice", quality: 20 },
  { code: "de", language: "German", description: "German, espeak-ng formant voice", quality: 20 },
  { code: "ru", language: "Russian", description: "Russian, espeak-ng formant voice", quality: 20 },
  { code: "pt-br", language: "Portuguese", description: "Portuguese (Brazil), espeak-ng formant voice", quality: 21 },
  { code: "pt", language: "Portuguese", description: "Portuguese (Portugal), espeak-ng formant voice", quality: 20 },
  { code: "es", language: "Spanish", description: "Spanish (Spain), espeak-ng formant voice", quality: 21 },
  { code: "es-419", language: "Spanish", description: "Spanish (Latin America), espeak-ng formant voice", quality: 20 },
  { code: "it", language: "Italian", description: "Italian, espeak-ng formant voice", quality: 20 },
  { code: "ar", language: "Arabic", description: "Arabic, espeak-ng formant voice (best with vowel marks)", quality: 20 },
  { code: "nl", language: "Dutch", description: "Dutch, espeak-ng formant voice", quality: 20 },
  { code: "hi", language: "Hindi", description: "Hindi, espeak-ng formant voice", quality: 20 },
  { code: "ur", language: "Urdu", description: "Urdu, espeak-ng formant voice", quality: 20 },
];

const HAN = /\p{Script=Han}/u;

/**
 * espeak-ng voices read their own script and switch to English pronunciation for Latin words
 * (measured: "Google" inside Russian, Hindi, Arabic, Urdu, Amharic, Korean text is spoken as
 * English). The Chinese voices read Latin letters as pinyin, so Latin runs go to another voice;
 * the Japanese voice reads kana only.
 */
function espeakReads(language: Language): Script[] {
  if (language === "Chinese") return ["Han"];
  if (language === "Japanese") return ["Kana", "Latin"];
  const own = LANGUAGE_SCRIPTS[language].filter((s) => s !== "Han");
  return own.includes("Latin") ? own : [...own, "Latin"];
}

export interface EspeakOptions {
  logger: Logger;
  /** espeak-ng binary, default "espeak-ng" from PATH. */
  binary?: string;
  /** Speaking rate in words per minute (espeak-ng default 175). */
  wordsPerMinute?: number;
  timeoutMs?: number;
}

/** Lists the voice codes `espeak-ng --voices` reports as installed. */
export function parseEspeakVoiceList(output: string): Set<string> {
  const codes = new Set<string>();
  for (const line of output.split("\n").slice(1)) {
    const code = line.trim().split(/\s+/)[1];
    if (code) codes.add(code.toLowerCase());
  }
  return codes;
}

/**
 * espeak-ng adapter. Detects the binary and its voices at creation and offers only installed ones.
 * Text goes through standard input (never the command line). Output: 22,050 Hz mono WAV.
 */
export async function createEspeakEngine(options: EspeakOptions): Promise<TtsEngine> {
  const binary = options.binary ?? "espeak-ng";
  const log = options.logger.child({ component: "tts", engine: "espeak" });
  const listed = await probeBinary(binary, ["--voices"]);
  if (!listed.ok) throw new TtsEngineUnavailableError("The espeak-ng speech engine is not installed.");
  const installed = parseEspeakVoiceList(listed.stdout);
  const specs = ESPEAK_VOICES.filter((spec) => installed.has(spec.code));
  const missing = ESPEAK_VOICES.filter((spec) => !installed.has(spec.code)).map((s) => s.code);
  if (missing.length > 0) log.info({ missing }, "some espeak-ng voices are not installed");
  const voices: VoiceInfo[] = specs.map((spec) => ({
    name: `espeak:${spec.code}`,
    language: spec.language,
    engine: "espeak",
    gender: "male",
    description: spec.description,
    quality: spec.quality,
    reads: espeakReads(spec.language),
  }));
  const codeOf = new Map(specs.map((spec) => [`espeak:${spec.code}`, spec.code]));
  const capabilities: TtsCapabilities = {
    languages: [...new Set(voices.map((v) => v.language))],
    voices,
    cloning: false,
    maxInputChars: 10_000,
  };
  const rate = options.wordsPerMinute;
  if (rate !== undefined && !(Number.isInteger(rate) && rate >= 80 && rate <= 450)) {
    throw new TtsEngineUnavailableError("The espeak-ng speaking rate must be between 80 and 450 words per minute.");
  }

  return {
    id: "espeak",
    capabilities: () => capabilities,
    async synthesize(request: SynthesizeRequest): Promise<SynthesisResult> {
      const voice = pickVoice(voices, "espeak", request.language, request.voice);
      const text = prepareText(request.text);
      if (voice.language === "Japanese" && HAN.test(text)) {
        throw new UnspeakableTextError(
          "TEXT_NOT_SPEAKABLE",
          "This Japanese text contains kanji, which the offline Japanese voice cannot read (it reads only hiragana and katakana). Write the text in kana or configure a neural speech service.",
        );
      }
      const wavPath = outputPath(request.outPath);
      const code = codeOf.get(voice.name) ?? voice.name;
      const args = ["-b", "1", "-v", code, ...(rate === undefined ? [] : ["-s", String(rate)]), "-w", wavPath, "--stdin"];
      const result = await runProcess(binary, args, { stdin: text, signal: request.signal, timeoutMs: options.timeoutMs ?? ENGINE_TIMEOUT_MS });
      const failure = engineFailure("espeak-ng", result, voice.name);
      if (failure) throw failure;
      log.debug({ voice: voice.name, chars: text.length }, "synthesized");
      return finishWav("espeak-ng", wavPath, voice.name);
    },
  };
}
