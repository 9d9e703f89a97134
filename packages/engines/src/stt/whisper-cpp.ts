import { openAsBlob } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LANGUAGE_CODES } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import type { MediaToolkit } from "@voiceloc/media";
import { endSentence } from "../errors.ts";
import { isLanguage, LANGUAGES, type Language } from "../languages.ts";
import { serviceMessage } from "../openai-common.ts";
import { readWavInfo } from "../wav.ts";
import { mediaFailure, RecognitionError, RecognitionNotSupportedError, RecognitionServiceError, SttConfigError } from "./errors.ts";
import { parseVerboseTranscription } from "./openai.ts";
import { buildTranscript, DEFAULT_SEGMENT_LIMITS, splitTimedText, type SegmentLimits } from "./segments.ts";
import type { SttEngine, TranscribeRequest, Transcript } from "./types.ts";

/**
 * Adapter for whisper.cpp's HTTP server (`whisper-server`, examples/server): `POST /inference` with a
 * multipart `file` (16 kHz mono 16-bit WAV, which the server reads without `--convert`),
 * `response_format=verbose_json` (segments with `start`/`end` in seconds), `language` (ISO code) and
 * `temperature`. Errors come as `{ "error": "…" }`.
 */
export interface WhisperCppOptions {
  /** Server root, e.g. "http://127.0.0.1:8080"; the request goes to `<root>/inference`. */
  baseUrl: string;
  /** Languages offered; default all (whisper's multilingual models). */
  languages?: readonly Language[];
  /** Time limit of one request. Default 10 minutes. */
  timeoutMs?: number;
  segmentLimits?: Partial<SegmentLimits>;
  /** Engine id, default "whisper-cpp". */
  id?: string;
  logger: Logger;
  /** Converts the input to the WAV the server reads. */
  media: MediaToolkit;
  fetch?: typeof fetch;
}

const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

export function createWhisperCppTranscriber(options: WhisperCppOptions): SttEngine {
  const id = options.id ?? "whisper-cpp";
  let base: URL;
  try {
    base = new URL(options.baseUrl);
  } catch (cause) {
    throw new SttConfigError(`The whisper.cpp server address "${options.baseUrl}" is not a valid URL.`, { cause });
  }
  if (base.protocol !== "http:" && base.protocol !== "https:") throw new SttConfigError("The whisper.cpp server address must start with http:// or https://.");
  const root = `${base.origin}${base.pathname}`.replace(/\/+$/, "").replace(/\/inference$/, "");
  const endpoint = `${root}/inference`;
  const who = `The whisper.cpp server at ${base.host}`;
  const languages = [...new Set(options.languages ?? LANGUAGES)];
  for (const language of languages) if (!isLanguage(language)) throw new SttConfigError(`"${String(language)}" is not a supported language.`);
  if (languages.length === 0) throw new SttConfigError("The whisper.cpp server must offer at least one language.");
  const timeoutMs = options.timeoutMs ?? 600_000;
  if (!(timeoutMs > 0)) throw new SttConfigError("The whisper.cpp time limit must be positive.");
  const limits: SegmentLimits = { ...DEFAULT_SEGMENT_LIMITS, ...options.segmentLimits };
  const doFetch = options.fetch ?? fetch;
  const log = options.logger.child({ component: "stt", engine: id });

  async function transcribe(request: TranscribeRequest): Promise<Transcript> {
    const { language } = request;
    if (!languages.includes(language)) throw new RecognitionNotSupportedError(language, `${who} is not set up for ${language}.`);
    const cancelled = (cause?: unknown): RecognitionError => new RecognitionError("RECOGNITION_CANCELLED", "Speech recognition was cancelled.", { cause });
    if (request.signal?.aborted) throw cancelled();
    const dir = await mkdtemp(join(tmpdir(), "voiceloc-whisper-"));
    try {
      const wav = join(dir, "speech.wav");
      try {
        await options.media.extractSpeechWav({ input: request.path, outPath: wav, sampleRate: 16000, signal: request.signal });
      } catch (error) {
        throw mediaFailure(error);
      }
      const info = await readWavInfo(wav);
      if (!info) throw new RecognitionError("RECOGNITION_FAILED", "The audio could not be prepared for speech recognition.");
      const durationSeconds = info.dataBytes / (info.sampleRate * info.channels * (info.bitsPerSample / 8));
      if (durationSeconds < 0.1) return buildTranscript(language, durationSeconds, []);

      const form = new FormData();
      form.append("file", await openAsBlob(wav, { type: "audio/wav" }), "speech.wav");
      form.append("response_format", "verbose_json");
      form.append("language", LANGUAGE_CODES[language]);
      form.append("temperature", "0.0");
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
      let response: Response;
      let body: string;
      try {
        response = await doFetch(endpoint, { method: "POST", headers: { accept: "application/json" }, body: form, signal, redirect: "error" });
        const declared = Number(response.headers.get("content-length") ?? "0");
        if (declared > MAX_RESPONSE_BYTES) {
          await response.body?.cancel().catch(() => undefined);
          throw new RecognitionServiceError("RECOGNITION_SERVICE_BAD_RESPONSE", `${who} sent an answer that is far too large.`, { status: response.status });
        }
        body = await response.text();
      } catch (error) {
        if (request.signal?.aborted) throw cancelled(error);
        if (timeout.aborted) throw new RecognitionServiceError("RECOGNITION_SERVICE_TIMEOUT", `${who} did not answer within ${Math.round(timeoutMs / 1000)} seconds.`, { cause: error });
        if (error instanceof RecognitionServiceError) throw error;
        throw new RecognitionServiceError("RECOGNITION_SERVICE_UNAVAILABLE", `${who} could not be reached.`, { cause: error });
      }
      const status = response.status;
      if (!response.ok) {
        const detail = serviceMessage(body);
        const said = detail === undefined ? "" : `: ${detail}`;
        log.warn({ status, detail }, "whisper.cpp server refused the request");
        if (status === 401 || status === 403) throw new RecognitionServiceError("RECOGNITION_SERVICE_AUTH", endSentence(`${who} refused the request (HTTP ${status})${said}`), { status });
        if (status === 413) throw new RecognitionServiceError("RECOGNITION_AUDIO_TOO_LARGE", endSentence(`${who} refused the audio as too large (HTTP 413)${said}`), { status });
        if (status === 429) throw new RecognitionServiceError("RECOGNITION_SERVICE_RATE_LIMITED", endSentence(`${who} is busy or rate limiting requests (HTTP 429)${said}`), { status });
        if (status === 408 || status >= 500) throw new RecognitionServiceError("RECOGNITION_SERVICE_UNAVAILABLE", endSentence(`${who} failed (HTTP ${status})${said}`), { status });
        throw new RecognitionServiceError("RECOGNITION_SERVICE_REJECTED", endSentence(`${who} refused the request (HTTP ${status})${said}`), { status });
      }
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch (cause) {
        throw new RecognitionServiceError("RECOGNITION_SERVICE_BAD_RESPONSE", `${who} answered with something that is not a transcript.`, { status, cause });
      }
      const parsed = parseVerboseTranscription(json);
      if (!parsed) throw new RecognitionServiceError("RECOGNITION_SERVICE_BAD_RESPONSE", `${who} answered without a usable transcript with timings.`, { status });
      // Times past the end of what was sent are clamped to it (the server rounds to centiseconds).
      const segments = parsed.segments
        .map((s) => ({ ...s, start: Math.min(s.start, durationSeconds), end: Math.min(s.end, durationSeconds) }))
        .filter((s) => s.end > s.start)
        .flatMap((s) => splitTimedText(s, limits));
      const transcript = buildTranscript(language, durationSeconds, segments);
      log.debug({ seconds: durationSeconds, segments: transcript.segments.length }, "transcribed");
      return transcript;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  return { id, capabilities: () => ({ languages: [...languages], kind: "service" }), transcribe };
}
