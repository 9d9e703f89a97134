import { randomUUID } from "node:crypto";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { outOfMemoryReason, ranOutOfMemory, runProcess, type ProcessResult } from "@voiceloc/media";
import {
  endSentence,
  LanguageNotSupportedError,
  SynthesisError,
  TtsEngineUnavailableError,
  UnknownVoiceError,
  VoiceLanguageMismatchError,
} from "./errors.ts";
import type { Language } from "./languages.ts";
import type { SynthesisResult, VoiceInfo } from "./types.ts";
import { readWavInfo } from "./wav.ts";

/** Default time limit for one engine call. */
export const ENGINE_TIMEOUT_MS = 5 * 60_000;

/** Picks the voice for a request from an engine's own voices, with typed errors. */
export function pickVoice(voices: readonly VoiceInfo[], engineId: string, language: Language, voiceName: string | undefined): VoiceInfo {
  if (voiceName !== undefined) {
    const named = voices.filter((v) => v.name === voiceName);
    if (named.length === 0) throw new UnknownVoiceError(voiceName, voices.map((v) => v.name));
    const match = named.find((v) => v.language === language);
    if (!match) throw new VoiceLanguageMismatchError(voiceName, language, [...new Set(named.map((v) => v.language))]);
    return match;
  }
  const best = voices.filter((v) => v.language === language).sort((a, b) => b.quality - a.quality)[0];
  if (!best) throw new LanguageNotSupportedError(language, `The ${engineId} engine has no installed voice for ${language}.`);
  return best;
}

/** The WAV path a request writes to. */
export function outputPath(requested: string | undefined): string {
  return requested !== undefined ? resolve(requested) : join(tmpdir(), `voiceloc-tts-${randomUUID()}.wav`);
}

/** Runs `fn` with a private temporary directory that is removed afterwards. */
export async function withScratchDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "voiceloc-tts-"));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Maps a finished engine process to an error (or nothing when it succeeded). */
export function engineFailure(program: string, result: ProcessResult, voice: string): Error | undefined {
  if (result.spawnError) {
    return new TtsEngineUnavailableError(`The ${program} speech engine could not be started (${result.spawnError.code ?? result.spawnError.message}).`, {
      cause: result.spawnError,
    });
  }
  if (result.aborted) return new SynthesisError("SYNTHESIS_CANCELLED", "Speech synthesis was cancelled.");
  if (result.timedOut) {
    return new SynthesisError("SYNTHESIS_FAILED", `The ${program} speech engine took too long and was stopped.`, { details: result.stderrTail });
  }
  if (ranOutOfMemory(result)) {
    return new SynthesisError("SYNTHESIS_OUT_OF_MEMORY", `The ${program} speech engine stopped: ${outOfMemoryReason(result.memoryLimitBytes)}.`, { details: result.stderrTail });
  }
  if (result.exitCode !== 0) {
    const last = result.stderrTail.at(-1);
    return new SynthesisError(
      "SYNTHESIS_FAILED",
      endSentence(`The ${program} speech engine failed with voice "${voice}"${last === undefined ? "" : `: ${last}`}`),
      { details: result.stderrTail },
    );
  }
  return undefined;
}

/** Checks that an engine wrote a WAV file with samples in it and reads its sample rate. */
export async function finishWav(program: string, wavPath: string, voice: string): Promise<SynthesisResult> {
  const exists = await stat(wavPath).then(
    (s) => s.isFile(),
    () => false,
  );
  const info = exists ? await readWavInfo(wavPath) : undefined;
  if (!info) throw new SynthesisError("SYNTHESIS_FAILED", `The ${program} speech engine did not write a WAV file.`);
  if (info.dataBytes < (info.channels * info.bitsPerSample) / 8) {
    throw new SynthesisError("SYNTHESIS_FAILED", `The ${program} speech engine produced no audio for this text.`);
  }
  return { wavPath, sampleRate: info.sampleRate, voice };
}

/** True when `binary` starts and exits with status 0 for `args`; also returns its output. */
export async function probeBinary(binary: string, args: readonly string[]): Promise<{ ok: boolean; stdout: string }> {
  const result = await runProcess(binary, args, { collectStdout: true, maxStdoutBytes: 1024 * 1024, timeoutMs: 30_000 });
  return { ok: !result.spawnError && result.exitCode === 0, stdout: result.stdout.toString("utf8") };
}
