import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "@voiceloc/log";
import { runProcess } from "@voiceloc/media";
import { ENGINE_TIMEOUT_MS, engineFailure, finishWav, outputPath, pickVoice, probeBinary, withScratchDir } from "./cli.ts";
import { TtsEngineUnavailableError, UnspeakableTextError } from "./errors.ts";
import type { Language } from "./languages.ts";
import type { Script } from "./scripts.ts";
import { prepareText, toAsciiText, toLatin1 } from "./text.ts";
import type { SynthesisResult, SynthesizeRequest, TtsCapabilities, TtsEngine, VoiceInfo } from "./types.ts";

interface FestivalVoiceSpec {
  id: string;
  language: Language;
  gender: "female" | "male";
  description: string;
  quality: number;
  /** How the text file must be encoded for this voice. */
  encoding: "utf8" | "latin1" | "ascii";
  /** Letters the text must contain for this voice to say anything. */
  script: RegExp;
  /**
   * Scripts it reads. Measured: the Hindi voice says nothing for Latin words (the WAV is as long
   * with "Google iPhone" inside as without); the Russian one mangles them; both read digits.
   */
  reads: readonly Script[];
}

/** Festival voices from Debian packages festvox-ru, festvox-hi-nsk, festvox-italp16k/itapc16k, festvox-kallpc16k. */
export const FESTIVAL_VOICES: readonly FestivalVoiceSpec[] = [
  {
    id: "msu_ru_nsh_clunits", language: "Russian", gender: "male", quality: 50, encoding: "utf8", script: /\p{Script=Cyrillic}/u, reads: ["Cyrillic"],
    description: "Russian male, festival unit selection (Moscow State University voice)",
  },
  {
    id: "hindi_NSK_diphone", language: "Hindi", gender: "male", quality: 40, encoding: "utf8", script: /\p{Script=Devanagari}/u, reads: ["Devanagari"],
    description: "Hindi male, festival diphone voice (reads Devanagari)",
  },
  {
    id: "lp_diphone", language: "Italian", gender: "female", quality: 40, encoding: "latin1", script: /[A-Za-zÀ-ÿ]/, reads: ["Latin"],
    description: "Italian female, festival diphone voice",
  },
  {
    id: "pc_diphone", language: "Italian", gender: "male", quality: 39, encoding: "latin1", script: /[A-Za-zÀ-ÿ]/, reads: ["Latin"],
    description: "Italian male, festival diphone voice",
  },
  {
    id: "kal_diphone", language: "English", gender: "male", quality: 35, encoding: "ascii", script: /[A-Za-z0-9]/, reads: ["Latin"],
    description: "English (US) male, festival diphone voice",
  },
];

export interface FestivalOptions {
  logger: Logger;
  /** `festival` binary used to list voices, default from PATH. */
  festivalBinary?: string;
  /** `text2wave` script, default from PATH. */
  text2waveBinary?: string;
  timeoutMs?: number;
}

/** Voice names in festival's `(print (voice.list))` output. */
export function parseFestivalVoiceList(output: string): Set<string> {
  const match = /\(([^()]*)\)\s*$/.exec(output.trim());
  return new Set((match?.[1] ?? "").split(/\s+/).filter((v) => v !== ""));
}

function encodeFor(spec: FestivalVoiceSpec, text: string): Buffer | string {
  if (spec.encoding === "latin1") return toLatin1(text);
  if (spec.encoding === "ascii") return toAsciiText(text);
  return text;
}

/** festival adapter (`text2wave`). Text is passed in a private temporary file in the voice's encoding. */
export async function createFestivalEngine(options: FestivalOptions): Promise<TtsEngine> {
  const festival = options.festivalBinary ?? "festival";
  const text2wave = options.text2waveBinary ?? "text2wave";
  const log = options.logger.child({ component: "tts", engine: "festival" });
  const listed = await probeBinary(festival, ["-b", "(print (voice.list))"]);
  if (!listed.ok) throw new TtsEngineUnavailableError("The festival speech engine is not installed.");
  if (!(await probeBinary(text2wave, ["-h"])).ok) {
    throw new TtsEngineUnavailableError("The festival speech engine is installed without its text2wave program.");
  }
  const installed = parseFestivalVoiceList(listed.stdout);
  const specs = FESTIVAL_VOICES.filter((spec) => installed.has(spec.id));
  if (specs.length === 0) throw new TtsEngineUnavailableError("The festival speech engine has none of the supported voices installed.");
  const voices: VoiceInfo[] = specs.map((spec) => ({
    name: `festival:${spec.id}`,
    language: spec.language,
    engine: "festival",
    gender: spec.gender,
    description: spec.description,
    quality: spec.quality,
    reads: spec.reads,
  }));
  const specOf = new Map(specs.map((spec) => [`festival:${spec.id}`, spec]));
  const capabilities: TtsCapabilities = {
    languages: [...new Set(voices.map((v) => v.language))],
    voices,
    cloning: false,
    maxInputChars: 2_000,
  };

  return {
    id: "festival",
    capabilities: () => capabilities,
    async synthesize(request: SynthesizeRequest): Promise<SynthesisResult> {
      const voice = pickVoice(voices, "festival", request.language, request.voice);
      const spec = specOf.get(voice.name);
      if (!spec) throw new TtsEngineUnavailableError(`The festival voice "${voice.name}" is not installed.`);
      const text = prepareText(request.text);
      if (!spec.script.test(text)) {
        throw new UnspeakableTextError(
          "TEXT_NOT_SPEAKABLE",
          `The ${spec.language} voice "${voice.name}" cannot read this text: it is not written in the ${spec.language} script.`,
        );
      }
      const wavPath = outputPath(request.outPath);
      await withScratchDir(async (dir) => {
        const textFile = join(dir, "text.txt");
        await writeFile(textFile, encodeFor(spec, `${text}\n`));
        // The -eval expression is a constant from FESTIVAL_VOICES; the text is only ever in the file.
        const result = await runProcess(text2wave, ["-eval", `(voice_${spec.id})`, "-o", wavPath, textFile], {
          signal: request.signal,
          timeoutMs: options.timeoutMs ?? ENGINE_TIMEOUT_MS,
        });
        const failure = engineFailure("festival", result, voice.name);
        if (failure) throw failure;
      });
      log.debug({ voice: voice.name, chars: text.length }, "synthesized");
      return finishWav("festival", wavPath, voice.name);
    },
  };
}
