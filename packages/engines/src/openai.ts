import type { Logger } from "@voiceloc/log";
import { outputPath, pickVoice } from "./cli.ts";
import { endSentence, SpeechServiceError, SynthesisError, TtsConfigError } from "./errors.ts";
import { isLanguage, LANGUAGES, type Language } from "./languages.ts";
import { prepareText } from "./text.ts";
import type { SynthesisResult, SynthesizeRequest, TtsCapabilities, TtsEngine, VoiceInfo } from "./types.ts";
import { serviceMessage } from "./openai-common.ts";
import { saveWavAnswer } from "./http-body.ts";

/** Languages OpenAI documents for its speech endpoint, among ours (Amharic is not one of them). */
export const OPENAI_DEFAULT_LANGUAGES: readonly Language[] = LANGUAGES.filter((l) => l !== "Amharic");

/** The documented limit of `input` for POST /v1/audio/speech. */
export const OPENAI_MAX_INPUT_CHARS = 4096;

export interface OpenAiVoiceConfig {
  /** The service's voice id, sent as `voice` (e.g. "alloy"). */
  id: string;
  gender?: "female" | "male";
  description?: string;
  /** Languages this voice should be offered for; default: the engine's languages. */
  languages?: readonly Language[];
}

export interface OpenAiTtsOptions {
  /** Service root, e.g. "https://api.openai.com" or "http://127.0.0.1:8880"; a trailing "/v1" is accepted. */
  baseUrl: string;
  apiKey?: string | undefined;
  /** Model name sent as `model`, e.g. "gpt-4o-mini-tts", "tts-1". */
  model: string;
  voices: readonly (string | OpenAiVoiceConfig)[];
  /** Languages offered; default: OPENAI_DEFAULT_LANGUAGES. */
  languages?: readonly Language[];
  /** Engine id and voice-name prefix, default "openai". */
  id?: string;
  /** Naturalness rank of the voices (default 80, above all offline voices). */
  quality?: number;
  /** Time limit for one request, including the download. Default 120 s. */
  timeoutMs?: number;
  /** Largest audio response accepted. Default 200 MiB. */
  maxResponseBytes?: number;
  logger: Logger;
  /** For tests or proxies; default the global fetch. */
  fetch?: typeof fetch;
}

const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;



/**
 * Adapter for any service implementing OpenAI's `POST /v1/audio/speech` (OpenAI itself, or
 * self-hosted servers with the same contract). Requests WAV and streams it to disk.
 */
export function createOpenAiTtsEngine(options: OpenAiTtsOptions): TtsEngine {
  const id = options.id ?? "openai";
  if (!SAFE_ID.test(id)) throw new TtsConfigError("The speech service id may only contain letters, digits, '.', '_' and '-'.");
  let base: URL;
  try {
    base = new URL(options.baseUrl);
  } catch (cause) {
    throw new TtsConfigError(`The speech service address "${options.baseUrl}" is not a valid URL.`, { cause });
  }
  if (base.protocol !== "http:" && base.protocol !== "https:") throw new TtsConfigError("The speech service address must start with http:// or https://.");
  const root = base.href.replace(/\/+$/, "").replace(/\/v1$/, "");
  const endpoint = `${root}/v1/audio/speech`;
  const serviceName = base.host;
  if (options.model.trim() === "") throw new TtsConfigError("The speech service model name is empty.");
  const languages = [...(options.languages ?? OPENAI_DEFAULT_LANGUAGES)];
  for (const language of languages) if (!isLanguage(language)) throw new TtsConfigError(`"${String(language)}" is not a supported language.`);
  if (options.voices.length === 0) throw new TtsConfigError("The speech service needs at least one voice.");
  const quality = options.quality ?? 80;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const maxBytes = options.maxResponseBytes ?? 200 * 1024 * 1024;
  const doFetch = options.fetch ?? fetch;
  const log = options.logger.child({ component: "tts", engine: id });

  const voices: VoiceInfo[] = [];
  const serviceVoice = new Map<string, string>();
  for (const entry of options.voices) {
    const config: OpenAiVoiceConfig = typeof entry === "string" ? { id: entry } : entry;
    if (!SAFE_ID.test(config.id)) throw new TtsConfigError(`The voice id "${config.id}" is not valid.`);
    const name = `${id}:${config.id}`;
    serviceVoice.set(name, config.id);
    for (const language of config.languages ?? languages) {
      voices.push({
        name,
        language,
        engine: id,
        ...(config.gender === undefined ? {} : { gender: config.gender }),
        description: config.description ?? `${config.id} voice of the speech service at ${serviceName} (model ${options.model})`,
        quality,
      });
    }
  }
  const capabilities: TtsCapabilities = {
    languages: [...new Set(voices.map((v) => v.language))],
    voices,
    cloning: false,
    maxInputChars: 4_000,
    remote: true,
  };

  async function synthesize(request: SynthesizeRequest): Promise<SynthesisResult> {
    const voice = pickVoice(voices, id, request.language, request.voice);
    const input = prepareText(request.text);
    if ([...input].length > OPENAI_MAX_INPUT_CHARS) {
      throw new SynthesisError("SYNTHESIS_FAILED", `The text is too long for the speech service (at most ${OPENAI_MAX_INPUT_CHARS} characters per request).`);
    }
    const wavPath = outputPath(request.outPath);
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    const failed = (error: unknown): Error => {
      if (request.signal?.aborted) return new SynthesisError("SYNTHESIS_CANCELLED", "Speech synthesis was cancelled.", { cause: error });
      if (timeout.aborted) {
        return new SpeechServiceError("SPEECH_SERVICE_TIMEOUT", `The speech service at ${serviceName} did not answer within ${Math.round(timeoutMs / 1000)} seconds.`, {
          cause: error,
        });
      }
      if (error instanceof SpeechServiceError || error instanceof SynthesisError) return error;
      return new SpeechServiceError("SPEECH_SERVICE_UNAVAILABLE", `The speech service at ${serviceName} could not be reached.`, { cause: error });
    };

    let response: Response;
    try {
      response = await doFetch(endpoint, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "audio/wav",
          ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: options.model, input, voice: serviceVoice.get(voice.name), response_format: "wav" }),
        signal,
        redirect: "error",
      });
    } catch (error) {
      throw failed(error);
    }

    if (!response.ok) {
      const body = await response.text().catch(() => "");
      const detail = serviceMessage(body);
      const said = detail === undefined ? "" : `: ${detail}`;
      const status = response.status;
      log.warn({ status, detail }, "speech service refused the request");
      if (status === 401 || status === 403) {
        throw new SpeechServiceError("SPEECH_SERVICE_AUTH", endSentence(`The speech service at ${serviceName} refused the API key (HTTP ${status})${said}`), { status });
      }
      if (status === 429) {
        throw new SpeechServiceError("SPEECH_SERVICE_RATE_LIMITED", endSentence(`The speech service at ${serviceName} is rate limiting requests or the quota is used up (HTTP 429)${said}`), {
          status,
        });
      }
      if (status === 404) {
        throw new SpeechServiceError("SPEECH_SERVICE_REJECTED", endSentence(`The speech service at ${serviceName} has no speech endpoint or does not know model "${options.model}" (HTTP 404)${said}`), { status });
      }
      if (status >= 500) {
        throw new SpeechServiceError("SPEECH_SERVICE_UNAVAILABLE", endSentence(`The speech service at ${serviceName} failed (HTTP ${status})${said}`), { status });
      }
      throw new SpeechServiceError("SPEECH_SERVICE_REJECTED", endSentence(`The speech service at ${serviceName} refused the request (HTTP ${status})${said}`), { status });
    }
    const { info, bytes: received } = await saveWavAnswer(response, { wavPath, maxBytes, who: `The speech service at ${serviceName}`, signal, failed });
    log.debug({ voice: voice.name, chars: input.length, bytes: received }, "synthesized");
    return { wavPath, sampleRate: info.sampleRate, voice: voice.name };
  }

  return { id, capabilities: () => capabilities, synthesize };
}
