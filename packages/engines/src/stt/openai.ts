import { readBoundedText } from "../http-body.ts";
import { openAsBlob } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join, resolve } from "node:path";
import type { Logger } from "@voiceloc/log";
import type { MediaToolkit } from "@voiceloc/media";
import { endSentence } from "../errors.ts";
import { isLanguage, LANGUAGES, type Language } from "../languages.ts";
import { mediaFailure, RecognitionError, RecognitionNotSupportedError, RecognitionServiceError, SttConfigError } from "./errors.ts";
import { buildTranscript, DEFAULT_SEGMENT_LIMITS, splitTimedText, type SegmentLimits } from "./segments.ts";
import type { SttCapabilities, SttEngine, TranscribeRequest, Transcript, TranscriptSegment } from "./types.ts";
import { isRecord, serviceMessage } from "../openai-common.ts";
import { LANGUAGE_CODES } from "@voiceloc/contracts";

/** ISO 639-1 code of each language, sent as `language` to the transcription endpoint. */
export const TRANSCRIPTION_LANGUAGE_CODES: Readonly<Record<Language, string>> = LANGUAGE_CODES;

/** OpenAI's documented upload limit for /v1/audio/transcriptions (25 MB). */
export const OPENAI_TRANSCRIPTION_MAX_UPLOAD_BYTES = 25 * 1000 * 1000;

/** File types the transcription endpoint documents, by extension, with their MIME types. */
const UPLOADABLE: Readonly<Record<string, string>> = {
  ".flac": "audio/flac",
  ".mp3": "audio/mpeg",
  ".mpga": "audio/mpeg",
  ".mpeg": "audio/mpeg",
  ".mp4": "audio/mp4",
  ".m4a": "audio/mp4",
  ".ogg": "audio/ogg",
  ".oga": "audio/ogg",
  ".wav": "audio/wav",
  ".webm": "audio/webm",
};

/** MP3 bitrates LAME accepts at 16 kHz, highest first; speech stays intelligible down to 16 kbit/s. */
const MP3_16K_BITRATES = [48, 40, 32, 24, 16, 8] as const;

/** Most JSON accepted from the service (a verbose transcript of many hours stays far below this). */
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

export interface OpenAiTranscriberOptions {
  /** Service root, e.g. "https://api.openai.com" or "http://127.0.0.1:8000"; a trailing "/v1" is accepted. */
  baseUrl: string;
  apiKey?: string | undefined;
  /** Model sent as `model`; default "whisper-1". It must support `response_format: "verbose_json"`. */
  model?: string;
  /** Languages offered; default all 16. */
  languages?: readonly Language[];
  /** Engine id, default "openai-stt". */
  id?: string;
  /** Time limit for one request including the upload and the answer. Default 10 minutes. */
  timeoutMs?: number;
  /** Largest upload the service accepts; default 25 MB (OpenAI's limit). */
  maxUploadBytes?: number;
  /** Longest cue (default 7 s, 80 characters); longer service segments are split at sentence ends. */
  segmentLimits?: Partial<SegmentLimits>;
  logger: Logger;
  /** For tests or proxies; default the global fetch. */
  fetch?: typeof fetch;
  /**
   * Used to measure the input, and to compress files over `maxUploadBytes` (or in containers the
   * endpoint does not take, such as MKV) to 16 kHz mono MP3. Without it files are sent as they are.
   */
  media?: MediaToolkit;
}

const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;


function finiteNumber(value: unknown): number | undefined {
  const n = typeof value === "number" ? value : typeof value === "string" && value.trim() !== "" ? Number(value) : Number.NaN;
  return Number.isFinite(n) ? n : undefined;
}


export interface ParsedVerboseTranscription {
  segments: TranscriptSegment[];
  /** The audio duration the service states, when it does. */
  durationSeconds: number | undefined;
  /** Entries of `segments` that were not usable (missing or invalid times or text). */
  skipped: number;
}

/** A model that tells speakers apart (OpenAI's `gpt-4o-transcribe-diarize`): asked for `diarized_json`. */
export function diarizes(model: string): boolean {
  return /diariz/i.test(model);
}

/**
 * Reads a `verbose_json` transcription (or a `diarized_json` one: the same segments, each with its
 * `speaker`) without trusting its shape: `segments[].start/end/text`, or only `text` when the service sent no segments (then one segment spans the stated duration).
 * Returns undefined when the answer is not a transcription at all.
 */
export function parseVerboseTranscription(json: unknown): ParsedVerboseTranscription | undefined {
  if (!isRecord(json)) return undefined;
  const duration = finiteNumber(json.duration);
  const durationSeconds = duration !== undefined && duration >= 0 ? duration : undefined;
  if (Array.isArray(json.segments)) {
    const segments: TranscriptSegment[] = [];
    let skipped = 0;
    for (const item of json.segments as unknown[]) {
      const start = isRecord(item) ? finiteNumber(item.start) : undefined;
      const end = isRecord(item) ? finiteNumber(item.end) : undefined;
      const text = isRecord(item) && typeof item.text === "string" ? item.text.replace(/\s+/g, " ").trim() : undefined;
      if (start === undefined || end === undefined || text === undefined || start < 0 || end < start) {
        skipped++;
        continue;
      }
      const label = isRecord(item) && typeof item.speaker === "string" ? item.speaker.trim().slice(0, 64) : "";
      const speaker = label === "" ? undefined : label;
      if (text !== "") segments.push({ start, end, text, ...(speaker === undefined ? {} : { speaker }) });
    }
    if (skipped > 0 && segments.length === 0) return undefined;
    return { segments, durationSeconds, skipped };
  }
  if (typeof json.text !== "string") return undefined;
  const text = json.text.replace(/\s+/g, " ").trim();
  if (text === "") return { segments: [], durationSeconds, skipped: 0 };
  if (durationSeconds === undefined) return undefined;
  return { segments: [{ start: 0, end: durationSeconds, text }], durationSeconds, skipped: 0 };
}

/**
 * Adapter for any service implementing OpenAI's `POST /v1/audio/transcriptions` with
 * `verbose_json` segments (OpenAI whisper-1, or self-hosted whisper servers with that contract).
 */
export function createOpenAiTranscriber(options: OpenAiTranscriberOptions): SttEngine {
  const id = options.id ?? "openai-stt";
  if (!SAFE_ID.test(id)) throw new SttConfigError("The speech recognition service id may only contain letters, digits, '.', '_' and '-'.");
  let base: URL;
  try {
    base = new URL(options.baseUrl);
  } catch (cause) {
    throw new SttConfigError(`The speech recognition service address "${options.baseUrl}" is not a valid URL.`, { cause });
  }
  if (base.protocol !== "http:" && base.protocol !== "https:") throw new SttConfigError("The speech recognition service address must start with http:// or https://.");
  base.search = "";
  base.hash = "";
  const root = base.href.replace(/\/+$/, "").replace(/\/v1$/, "");
  const endpoint = `${root}/v1/audio/transcriptions`;
  const serviceName = base.host;
  const model = (options.model ?? "whisper-1").trim();
  if (model === "") throw new SttConfigError("The speech recognition model name is empty.");
  const languages = [...new Set(options.languages ?? LANGUAGES)];
  for (const language of languages) if (!isLanguage(language)) throw new SttConfigError(`"${String(language)}" is not a supported language.`);
  if (languages.length === 0) throw new SttConfigError("The speech recognition service must offer at least one language.");
  const timeoutMs = options.timeoutMs ?? 600_000;
  if (!(timeoutMs > 0)) throw new SttConfigError("The speech recognition time limit must be positive.");
  const maxUpload = options.maxUploadBytes ?? OPENAI_TRANSCRIPTION_MAX_UPLOAD_BYTES;
  if (!(Number.isInteger(maxUpload) && maxUpload >= 64 * 1024)) throw new SttConfigError("The upload limit of the speech recognition service must be at least 64 KiB.");
  const limits: SegmentLimits = { ...DEFAULT_SEGMENT_LIMITS, ...options.segmentLimits };
  const doFetch = options.fetch ?? fetch;
  const media = options.media;
  const log = options.logger.child({ component: "stt", engine: id });
  const capabilities: SttCapabilities = { languages, kind: "service" };
  const megabytes = (bytes: number): string => `${(bytes / 1_000_000).toFixed(1)} MB`;

  /** The file to upload: the input itself, or a compressed copy in `dir`. */
  async function prepareUpload(path: string, size: number, durationSeconds: number | undefined, dir: string, signal: AbortSignal | undefined) {
    const type = UPLOADABLE[extname(path).toLowerCase()];
    if (type !== undefined && size <= maxUpload) return { path, type, filename: `audio${extname(path).toLowerCase()}`, size };
    if (!media || durationSeconds === undefined) {
      if (size > maxUpload) {
        throw new RecognitionError(
          "RECOGNITION_AUDIO_TOO_LARGE",
          `The file is ${megabytes(size)}, more than the ${megabytes(maxUpload)} the speech recognition service at ${serviceName} accepts.`,
        );
      }
      return { path, type: "application/octet-stream", filename: `audio${extname(path).toLowerCase()}`, size };
    }
    const affordable = (maxUpload * 8 * 0.95) / Math.max(durationSeconds, 1) / 1000;
    const bitrateKbps = MP3_16K_BITRATES.find((rate) => rate <= affordable);
    if (bitrateKbps === undefined) {
      throw new RecognitionError(
        "RECOGNITION_AUDIO_TOO_LARGE",
        `The recording is too long for the speech recognition service at ${serviceName}: even compressed it would be more than ${megabytes(maxUpload)}.`,
      );
    }
    const out = join(dir, "upload.mp3");
    try {
      await media.convertAudio({ input: path, outPath: out, format: "mp3", encode: { bitrateKbps, sampleRate: 16000, channels: 1 }, signal });
    } catch (error) {
      throw mediaFailure(error);
    }
    const compressed = (await stat(out)).size;
    log.debug({ from: size, to: compressed, bitrateKbps }, "compressed the audio for upload");
    if (compressed > maxUpload) {
      throw new RecognitionError(
        "RECOGNITION_AUDIO_TOO_LARGE",
        `The recording is too long for the speech recognition service at ${serviceName}: compressed it is ${megabytes(compressed)}, more than ${megabytes(maxUpload)}.`,
      );
    }
    return { path: out, type: "audio/mpeg", filename: "audio.mp3", size: compressed };
  }

  async function transcribe(request: TranscribeRequest): Promise<Transcript> {
    const { language } = request;
    if (!languages.includes(language)) {
      throw new RecognitionNotSupportedError(language, `The speech recognition service at ${serviceName} is not set up for ${language}.`);
    }
    const cancelled = (cause?: unknown): RecognitionError => new RecognitionError("RECOGNITION_CANCELLED", "Speech recognition was cancelled.", { cause });
    if (request.signal?.aborted) throw cancelled();
    const path = resolve(request.path);
    const info = await stat(path).catch(() => undefined);
    if (!info?.isFile()) throw new RecognitionError("RECOGNITION_MEDIA_UNUSABLE", "The file to transcribe does not exist.");

    let measured: number | undefined;
    if (media) {
      try {
        const probed = await media.probe(path, { signal: request.signal });
        if (!probed.audio) throw new RecognitionError("RECOGNITION_MEDIA_UNUSABLE", "The file has no audio track to transcribe.");
        measured = probed.durationSeconds;
      } catch (error) {
        throw mediaFailure(error);
      }
    }

    const dir = await mkdtemp(join(tmpdir(), "voiceloc-stt-"));
    try {
      const upload = await prepareUpload(path, info.size, measured, dir, request.signal);
      const form = new FormData();
      form.append("file", await openAsBlob(upload.path, { type: upload.type }), upload.filename);
      form.append("model", model);
      form.append("language", TRANSCRIPTION_LANGUAGE_CODES[language]);
      if (diarizes(model)) {
        // A diarizing model answers speakers only in `diarized_json` (segments with `speaker`), and refuses
        // more than 30 s of audio without a chunking strategy.
        form.append("response_format", "diarized_json");
        form.append("chunking_strategy", "auto");
      } else {
        form.append("response_format", "verbose_json");
        form.append("timestamp_granularities[]", "segment");
      }

      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
      const failed = (error: unknown): Error => {
        if (request.signal?.aborted) return cancelled(error);
        if (timeout.aborted) {
          return new RecognitionServiceError(
            "RECOGNITION_SERVICE_TIMEOUT",
            `The speech recognition service at ${serviceName} did not answer within ${Math.round(timeoutMs / 1000)} seconds.`,
            { cause: error },
          );
        }
        if (error instanceof RecognitionServiceError) return error;
        return new RecognitionServiceError("RECOGNITION_SERVICE_UNAVAILABLE", `The speech recognition service at ${serviceName} could not be reached.`, {
          cause: error,
        });
      };

      let response: Response;
      let body: string | undefined;
      try {
        log.debug({ bytes: upload.size, language, model }, "sending audio for transcription");
        response = await doFetch(endpoint, {
          method: "POST",
          headers: { accept: "application/json", ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
          body: form,
          signal,
          redirect: "error",
        });
        body = await readBoundedText(response, response.ok ? MAX_RESPONSE_BYTES : 64 * 1024);
      } catch (error) {
        throw failed(error);
      }

      const status = response.status;
      if (!response.ok) {
        const detail = body === undefined ? undefined : serviceMessage(body);
        const said = detail === undefined ? "" : `: ${detail}`;
        log.warn({ status, detail }, "speech recognition service refused the request");
        const who = `The speech recognition service at ${serviceName}`;
        if (status === 401 || status === 403) {
          throw new RecognitionServiceError("RECOGNITION_SERVICE_AUTH", endSentence(`${who} refused the API key (HTTP ${status})${said}`), { status });
        }
        if (status === 413) {
          throw new RecognitionServiceError("RECOGNITION_AUDIO_TOO_LARGE", endSentence(`${who} refused the audio as too large (HTTP 413)${said}`), { status });
        }
        if (status === 429) {
          throw new RecognitionServiceError(
            "RECOGNITION_SERVICE_RATE_LIMITED",
            endSentence(`${who} is rate limiting requests or the quota is used up (HTTP 429)${said}`),
            { status },
          );
        }
        if (status === 404) {
          throw new RecognitionServiceError(
            "RECOGNITION_SERVICE_REJECTED",
            endSentence(`${who} has no transcription endpoint or does not know model "${model}" (HTTP 404)${said}`),
            { status },
          );
        }
        if (status === 408 || status >= 500) {
          throw new RecognitionServiceError("RECOGNITION_SERVICE_UNAVAILABLE", endSentence(`${who} failed (HTTP ${status})${said}`), { status });
        }
        throw new RecognitionServiceError("RECOGNITION_SERVICE_REJECTED", endSentence(`${who} refused the request (HTTP ${status})${said}`), { status });
      }

      const malformed = (why: string, cause?: unknown): RecognitionServiceError =>
        new RecognitionServiceError("RECOGNITION_SERVICE_BAD_RESPONSE", `The speech recognition service at ${serviceName} ${why}.`, { status, cause });
      if (body === undefined) throw malformed("sent an answer that is far too large");
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch (cause) {
        throw malformed("answered with something that is not a transcript", cause);
      }
      const parsed = parseVerboseTranscription(json);
      if (!parsed) throw malformed("answered without a usable transcript with timings");
      if (parsed.skipped > 0) log.warn({ skipped: parsed.skipped }, "some transcript segments were unusable and were left out");
      const lastEnd = parsed.segments.reduce((max, s) => Math.max(max, s.end), 0);
      const durationSeconds = measured ?? parsed.durationSeconds ?? lastEnd;
      const segments = parsed.segments.flatMap((segment) => splitTimedText(segment, limits));
      const transcript = buildTranscript(language, durationSeconds, segments);
      log.debug({ seconds: durationSeconds, segments: transcript.segments.length }, "transcribed");
      return transcript;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  return { id, capabilities: () => ({ languages: [...capabilities.languages], kind: capabilities.kind }), transcribe };
}
