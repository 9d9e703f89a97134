import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "@voiceloc/log";
import { runProcess } from "@voiceloc/media";
import { ENGINE_TIMEOUT_MS, engineFailure, finishWav, outputPath, pickVoice, probeBinary, withScratchDir } from "./cli.ts";
import { TtsEngineUnavailableError, UnspeakableTextError } from "./errors.ts";
import { prepareText, toAsciiText } from "./text.ts";
import type { SynthesisResult, SynthesizeRequest, TtsCapabilities, TtsEngine, VoiceInfo } from "./types.ts";

interface FliteVoiceSpec {
  id: string;
  gender: "female" | "male";
  description: string;
  quality: number;
}

/** Flite's English voices, best first (slt gave ~20% word errors with pocketsphinx vs 75–100% for espeak-ng). */
export const FLITE_VOICES: readonly FliteVoiceSpec[] = [
  { id: "slt", gender: "female", description: "English (US) female, flite unit selection (clearest offline English)", quality: 60 },
  { id: "rms", gender: "male", description: "English (US) male, flite unit selection", quality: 55 },
  { id: "awb", gender: "male", description: "English (Scottish) male, flite unit selection", quality: 50 },
  { id: "kal16", gender: "male", description: "English (US) male, flite diphone, 16 kHz", quality: 40 },
  { id: "kal", gender: "male", description: "English (US) male, flite diphone, 8 kHz (telephone quality)", quality: 30 },
];

export interface FliteOptions {
  logger: Logger;
  /** flite binary, default "flite" from PATH. */
  binary?: string;
  timeoutMs?: number;
}

/** Voice ids listed by `flite -lv` ("Voices available: kal awb_time kal16 awb rms slt"). */
export function parseFliteVoiceList(output: string): Set<string> {
  const match = /Voices available:(.*)/.exec(output);
  return new Set((match?.[1] ?? "").trim().split(/\s+/).filter((v) => v !== ""));
}

/** flite adapter (English only). Text is passed in a private temporary file. */
export async function createFliteEngine(options: FliteOptions): Promise<TtsEngine> {
  const binary = options.binary ?? "flite";
  const log = options.logger.child({ component: "tts", engine: "flite" });
  const listed = await probeBinary(binary, ["-lv"]);
  if (!listed.ok) throw new TtsEngineUnavailableError("The flite speech engine is not installed.");
  const installed = parseFliteVoiceList(listed.stdout);
  const voices: VoiceInfo[] = FLITE_VOICES.filter((spec) => installed.has(spec.id)).map((spec) => ({
    name: `flite:${spec.id}`,
    language: "English",
    engine: "flite",
    gender: spec.gender,
    description: spec.description,
    quality: spec.quality,
    reads: ["Latin"],
  }));
  if (voices.length === 0) throw new TtsEngineUnavailableError("The flite speech engine has none of its English voices installed.");
  const capabilities: TtsCapabilities = { languages: ["English"], voices, cloning: false, maxInputChars: 3_000 };

  return {
    id: "flite",
    capabilities: () => capabilities,
    async synthesize(request: SynthesizeRequest): Promise<SynthesisResult> {
      const voice = pickVoice(voices, "flite", request.language, request.voice);
      const text = toAsciiText(prepareText(request.text));
      if (!/[A-Za-z0-9]/.test(text)) {
        throw new UnspeakableTextError("TEXT_NOT_SPEAKABLE", "The English voice cannot read this text: it has no Latin letters or digits.");
      }
      const wavPath = outputPath(request.outPath);
      const id = voice.name.slice("flite:".length);
      await withScratchDir(async (dir) => {
        const textFile = join(dir, "text.txt");
        await writeFile(textFile, `${text}\n`, "utf8");
        const result = await runProcess(binary, ["-voice", id, "-f", textFile, "-o", wavPath], {
          signal: request.signal,
          timeoutMs: options.timeoutMs ?? ENGINE_TIMEOUT_MS,
        });
        const failure = engineFailure("flite", result, voice.name);
        if (failure) throw failure;
      });
      log.debug({ voice: voice.name, chars: text.length }, "synthesized");
      return finishWav("flite", wavPath, voice.name);
    },
  };
}
