import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Logger } from "@voiceloc/log";
import { WAV_DEMUXERS, type AudioFormat, type EncodeOptions, type MediaToolkit } from "@voiceloc/media";
import { resolveClone } from "./clone/speak.ts";
import type { CloneEngine, ClonedVoice } from "./clone/types.ts";
import { UnspeakableTextError } from "./errors.ts";
import { applyLexicons, LexiconNotSpeakableError, type LexiconForSpeech } from "./lexicon/index.ts";
import type { TtsRegistry } from "./registry.ts";
import { prepareText, splitText } from "./text.ts";

export interface SynthesizeToFileRequest {
  text: string;
  /** One of the service's language names. */
  language: string;
  /** Voice name; the language's default voice when omitted. Ignored with `clone`. */
  voice?: string | undefined;
  /**
   * Speak in this cloned voice (with `deps.clones`, which must be the engine that made it: otherwise
   * `CloneError` `CLONE_NOT_FOUND`). The result's `voice` is then `clone:<id>`.
   */
  clone?: ClonedVoice | null | undefined;
  format: AudioFormat;
  outPath: string;
  signal?: AbortSignal | undefined;
  /** Encoder settings; default mono at the format's default bitrate. */
  encode?: EncodeOptions | undefined;
  /**
   * Pronunciation lexicons (PLS) applied before speech: aliases as text, IPA phonemes as espeak-ng
   * phoneme input with espeak-ng voices. An entry the voice cannot say is `UnspeakableTextError` `TEXT_NOT_SPEAKABLE`.
   */
  lexicons?: readonly LexiconForSpeech[] | undefined;
  /** Split text into engine calls of at most this many characters (never above the engine's own limit). */
  maxChunkChars?: number | undefined;
}

export interface SynthesizeToFileResult {
  path: string;
  /** Measured on the encoded file: read from its container as ffprobe states it (ffprobe when unreadable). */
  durationSeconds: number;
  format: AudioFormat;
  /** The voice used (`clone:<id>` for a cloned voice). */
  voice: string;
  /** Number of engine calls the text was split into. */
  chunks: number;
}

export interface SynthesizerDeps {
  registry: TtsRegistry;
  media: MediaToolkit;
  logger?: Logger | undefined;
  /** The cloning engine this process runs (CLONE_ENGINE), for requests in a cloned voice. */
  clones?: CloneEngine | undefined;
}

/**
 * Speaks `text` with the resolved voice and encodes it to `outPath`. Text longer than the engine's
 * comfortable size is split on sentence boundaries; the WAV chunks are joined by ffmpeg's concat
 * demuxer (streaming), so memory does not grow with the text. With `clone`, every chunk is spoken
 * by the cloning engine in that voice (split at the cloning engine's `maxInputChars`).
 */
export async function synthesizeToFile(deps: SynthesizerDeps, request: SynthesizeToFileRequest): Promise<SynthesizeToFileResult> {
  const { engine, voice } = request.clone ? resolveClone(deps.clones, request.clone, request.language) : deps.registry.resolve(request.language, request.voice);
  const text = prepareText(speakable(request, request.clone ? "none" : voice.engine === "espeak" ? "espeak" : "none"));
  const engineLimit = engine.capabilities().maxInputChars;
  const chunks = splitText(text, Math.min(engineLimit, request.maxChunkChars ?? engineLimit));
  const outPath = resolve(request.outPath);
  const encode: EncodeOptions = { channels: 1, ...request.encode };
  const work = await mkdtemp(join(tmpdir(), "voiceloc-synth-"));
  try {
    const wavs: string[] = [];
    for (const [index, chunk] of chunks.entries()) {
      const result = await engine.synthesize({
        text: chunk,
        language: voice.language,
        voice: voice.name,
        signal: request.signal,
        outPath: join(work, `chunk-${String(index).padStart(6, "0")}.wav`),
      });
      wavs.push(result.wavPath);
    }
    const first = wavs[0];
    if (wavs.length === 1 && first !== undefined) {
      await deps.media.convertAudio({ input: first, outPath, format: request.format, encode, inputDemuxers: WAV_DEMUXERS, signal: request.signal });
    } else {
      await deps.media.concatAudio({ inputs: wavs, outPath, format: request.format, encode, signal: request.signal });
    }
    const durationSeconds = await deps.media.encodedAudioDuration(outPath, request.format, { signal: request.signal });
    deps.logger?.debug({ voice: voice.name, chunks: chunks.length, seconds: durationSeconds }, "speech file written");
    return { path: outPath, durationSeconds, format: request.format, voice: voice.name, chunks: chunks.length };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The request's text with its lexicons applied for a voice that takes phonemes (`espeak`) or not. */
function speakable(request: SynthesizeToFileRequest, phonemes: "espeak" | "none"): string {
  if (!request.lexicons || request.lexicons.length === 0) return request.text;
  try {
    return applyLexicons(request.text, request.lexicons, { language: request.language, phonemes });
  } catch (error) {
    if (error instanceof LexiconNotSpeakableError) throw new UnspeakableTextError("TEXT_NOT_SPEAKABLE", `${error.message}.`);
    throw error;
  }
}
