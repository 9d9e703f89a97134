/**
 * Cloned voices on request/reply (`clone.create`, `clone.delete`): the sample is fetched under the
 * requesting account's rights (the rules the task workers fetch their inputs by), decoded, checked and
 * measured (`analyzeSample`), and the voice made at this process's clone engine. Refusals are the
 * catalogue's closed codes with plain words; the sample and the engines' keys are never logged.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BlobStore } from "@voiceloc/blobs";
import type { CloneCreateReply, CloneCreateRequest, CloneDeleteRequest, CloneErrorCode } from "@voiceloc/contracts";
import { analyzeSample, cloneVoiceName, TtsError, type SampleAnalysis, type TtsErrorCode } from "@voiceloc/engines";
import { fetchToFile, FetchRefusedError, type FetchOptions } from "@voiceloc/fetch";
import type { Logger } from "@voiceloc/log";
import { MediaError } from "@voiceloc/media";
import { classifyFailure, clonedVoiceFromWire, profileToWire } from "@voiceloc/worker";
import type { SpeechStack } from "./engines.ts";

/** Where voice samples may come from: fetchToFile's settings (the owner, blobs and signal are the request's). */
export type SampleFetchSettings = Pick<FetchOptions, "mediaRoot" | "mediaRootScope" | "allowPrivateHosts" | "maxBytes" | "timeoutMs" | "s3" | "gs" | "ca">;

/** A sample file is at most this large unless FETCH_MAX_BYTES says less (five minutes of 48 kHz stereo WAV is 55 MB). */
const SAMPLE_MAX_BYTES = 200 * 1024 * 1024;

/** Every speech engine code as a cloning refusal (a new engine code fails to compile until it is mapped). */
export const TTS_CLONE_REPLY: Record<TtsErrorCode, CloneErrorCode> = {
  SAMPLE_UNUSABLE: "sample_unusable",
  ENGINE_UNAVAILABLE: "engine_unavailable",
  ENGINE_CONFIG_INVALID: "engine_unavailable",
  SPEECH_SERVICE_AUTH: "engine_unavailable",
  SPEECH_SERVICE_UNAVAILABLE: "engine_unavailable",
  SPEECH_SERVICE_RATE_LIMITED: "engine_busy",
  SPEECH_SERVICE_TIMEOUT: "engine_busy",
  SYNTHESIS_CANCELLED: "engine_busy",
  SYNTHESIS_FAILED: "engine_failed",
  SYNTHESIS_OUT_OF_MEMORY: "engine_failed",
  SPEECH_SERVICE_REJECTED: "engine_failed",
  SPEECH_SERVICE_BAD_RESPONSE: "engine_failed",
  CLONE_NOT_FOUND: "engine_failed",
  UNKNOWN_VOICE: "engine_failed",
  VOICE_LANGUAGE_MISMATCH: "engine_failed",
  LANGUAGE_NOT_SUPPORTED: "engine_failed",
  TEXT_EMPTY: "engine_failed",
  TEXT_NOT_SPEAKABLE: "engine_failed",
};

/** The words of an engine refusal: fixed (an engine's message may carry a service's or program's output). */
function engineTroubleMessage(code: CloneErrorCode): string {
  switch (code) {
    case "sample_not_available":
      return "The voice sample cannot be fetched.";
    case "sample_unusable":
      return "The voice sample cannot make a voice.";
    case "cloning_unavailable":
      return "This server makes no cloned voices (CLONE_ENGINE=off).";
    case "engine_unavailable":
      return "The voice cloning engine is not available; try again later.";
    case "engine_busy":
      return "The voice cloning engine is busy or did not answer in time; try again later.";
    case "engine_failed":
      return "The voice cloning engine failed to make the voice.";
    default: {
      const unmapped: never = code;
      return unmapped;
    }
  }
}

export type CloneOutcome<T> = { ok: true } & T | { ok: false; code: CloneErrorCode; message: string };

/** An error met while making or deleting a voice, as a refusal; anything else is thrown on (an internal error). */
function refusalOf(error: unknown): { ok: false; code: CloneErrorCode; message: string } | undefined {
  if (error instanceof TtsError) {
    const code = TTS_CLONE_REPLY[error.code];
    return { ok: false, code, message: code === "sample_unusable" ? error.message : engineTroubleMessage(code) };
  }
  if (error instanceof MediaError) {
    // The sample's decoding: a file that is not audio we can read is the client's; ffmpeg missing is ours.
    const failure = classifyFailure(error, "input");
    return failure.class === "input"
      ? { ok: false, code: "sample_unusable", message: `The voice sample cannot be used: ${lowerFirst(failure.reason)}` }
      : { ok: false, code: "engine_failed", message: engineTroubleMessage("engine_failed") };
  }
  return undefined;
}

function lowerFirst(text: string): string {
  return text.length > 1 && /^[A-Z][a-z]/.test(text) ? `${text[0]?.toLowerCase() ?? ""}${text.slice(1)}` : text;
}

export interface CloneDeps {
  speech: Pick<SpeechStack, "clones" | "media">;
  blobs: BlobStore;
  fetch?: SampleFetchSettings | undefined;
}

/** `clone.create`: fetch, check and measure the sample, make the voice. */
export async function createClone(deps: CloneDeps, request: CloneCreateRequest, log: Logger): Promise<CloneOutcome<{ reply: CloneCreateReply }>> {
  const clones = deps.speech.clones;
  if (clones === undefined) return { ok: false, code: "cloning_unavailable", message: engineTroubleMessage("cloning_unavailable") };
  if (deps.fetch === undefined) {
    log.error("the synthesis service was started without file access settings; it cannot fetch voice samples");
    return { ok: false, code: "engine_unavailable", message: engineTroubleMessage("engine_unavailable") };
  }
  const work = await mkdtemp(join(tmpdir(), "voiceloc-clone-"));
  const signal = AbortSignal.timeout(110_000);
  const started = performance.now();
  try {
    let samplePath: string;
    try {
      const fetched = await fetchToFile(request.sample, join(work, "sample"), {
        ...deps.fetch,
        maxBytes: Math.min(deps.fetch.maxBytes ?? SAMPLE_MAX_BYTES, SAMPLE_MAX_BYTES),
        owner: request.account_id,
        blobs: deps.blobs,
        signal,
        logger: log,
      });
      samplePath = fetched.path;
    } catch (error) {
      if (error instanceof FetchRefusedError) {
        log.info({ code: error.code }, "voice sample not available");
        return { ok: false, code: "sample_not_available", message: `The voice sample cannot be fetched: ${lowerFirst(error.message)}` };
      }
      throw error;
    }
    let sample: SampleAnalysis;
    let ref: string;
    try {
      sample = await analyzeSample({ inputPath: samplePath, workDir: work, media: deps.speech.media, signal });
      ({ ref } = await clones.create({ id: request.id, name: request.name, sample, language: request.language ?? undefined, signal }));
    } catch (error) {
      const refusal = refusalOf(error);
      if (refusal === undefined) throw error;
      log.info({ err: error, code: refusal.code }, "voice cloning refused");
      return refusal;
    }
    log.info(
      { engine: clones.id, seconds: Math.round(sample.seconds * 10) / 10, medianPitchHz: sample.profile.medianPitchHz, ms: Math.round(performance.now() - started) },
      "voice cloned",
    );
    return {
      ok: true,
      reply: { engine: clones.id, ref, profile: profileToWire(sample.profile), sample_seconds: sample.seconds, languages: clones.languages() },
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** `clone.delete`: the voice deleted at its engine (`deleted: false` when this server's engine is another one: nothing of it is here). */
export async function deleteClone(deps: CloneDeps, request: CloneDeleteRequest, log: Logger): Promise<CloneOutcome<{ deleted: boolean }>> {
  const clones = deps.speech.clones;
  const clone = clonedVoiceFromWire(request.clone);
  if (clones === undefined || clones.id !== clone.engine) {
    log.warn({ engine: clone.engine, current: clones?.id ?? "off" }, "the cloned voice's engine is not this server's; nothing to delete at an engine");
    return { ok: true, deleted: false };
  }
  try {
    await clones.remove(clone, AbortSignal.timeout(50_000));
  } catch (error) {
    const refusal = refusalOf(error);
    if (refusal === undefined) throw error;
    log.warn({ err: error, code: refusal.code }, "the cloned voice could not be deleted at its engine");
    return refusal;
  }
  log.info({ engine: clones.id, voice: cloneVoiceName(clone) }, "cloned voice deleted");
  return { ok: true, deleted: true };
}
