import { readBoundedText, saveWavAnswer } from "./http-body.ts";
import { languageFromNameOrCode } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import { outputPath, pickVoice } from "./cli.ts";
import { endSentence, SpeechServiceError, SynthesisError, TtsConfigError, TtsEngineUnavailableError } from "./errors.ts";
import { isLanguage, type Language } from "./languages.ts";
import { isRecord, serviceMessage } from "./openai-common.ts";
import { prepareText } from "./text.ts";
import type { SynthesisResult, SynthesizeRequest, TtsCapabilities, TtsEngine, VoiceInfo } from "./types.ts";

/**
 * Adapter for Piper's HTTP server (piper1-gpl, `python3 -m piper.http_server -m <voice>`):
 * `POST /synthesize` (servers before mid-2026: `POST /`) with JSON `{ text, voice?, speaker? }`
 * answers a WAV; `GET /voices` answers `{ "<voice id>": <voice config> }` for every voice in its
 * data directories (the config's `language.code`, such as `en_US`, says what it speaks).
 *
 * The server speaks an unknown voice name with its default voice, without an error: voices are
 * therefore checked against `GET /voices` when the engine is made, and a configured voice the
 * server does not list is not offered (logged why).
 */
export interface PiperVoiceConfig {
  /** The server's voice id (model name), e.g. "en_US-lessac-medium". */
  id: string;
  language: Language;
  /** Speaker name of a multi-speaker voice (`speaker`); default the voice's default speaker. */
  speaker?: string | undefined;
  gender?: "female" | "male" | undefined;
  description?: string | undefined;
}

export interface PiperTtsOptions {
  /** Server root, e.g. "http://127.0.0.1:5000". */
  baseUrl: string;
  /**
   * The voices offered, each with its language (PIPER_VOICES). Default: every voice the server
   * lists whose language is one of the service's.
   */
  voices?: readonly PiperVoiceConfig[] | undefined;
  /** Engine id and voice-name prefix, default "piper". */
  id?: string;
  /** Naturalness rank of the voices (default 70: neural voices, above the offline ones, below a configured OpenAI-compatible service). */
  quality?: number;
  /** Time limit for one synthesis request, including the download. Default 120 s. */
  timeoutMs?: number;
  /** Time limit for the voice list at start. Default 15 s. */
  listTimeoutMs?: number;
  /** Largest audio response accepted. Default 200 MiB. */
  maxResponseBytes?: number;
  logger: Logger;
  fetch?: typeof fetch;
}

/** Piper's voice ids: `<lang>_<REGION>-<name>-<quality>`, and whatever file names a data directory holds. */
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$/;
/** Speaker names of multi-speaker voices (LibriTTS ids such as "p123", or names). */
const SAFE_SPEAKER = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/;
/** Largest voice list read (a voice config holds its phoneme map: a few KiB each). */
const MAX_LIST_BYTES = 16 * 1024 * 1024;
/** Most voices taken from one server. */
const MAX_VOICES = 500;

/** What `GET /voices` says of one voice: its language and speakers. */
interface ListedVoice {
  language?: Language | undefined;
  speakers: string[];
  /** Language as the server names it, for descriptions ("en_US"). */
  code?: string | undefined;
  dataset?: string | undefined;
  quality?: string | undefined;
}

/** The language of a Piper voice config: `language.family`/`language.code` (en, en_US), else the id's prefix (`en_US-…`), else `espeak.voice` (en-us). */
export function piperVoiceLanguage(id: string, config: unknown): Language | undefined {
  const candidates: string[] = [];
  if (isRecord(config)) {
    const language = config.language;
    if (isRecord(language)) {
      if (typeof language.family === "string") candidates.push(language.family);
      if (typeof language.code === "string") candidates.push(language.code);
    }
  }
  candidates.push(id);
  if (isRecord(config) && isRecord(config.espeak) && typeof config.espeak.voice === "string") candidates.push(config.espeak.voice);
  for (const candidate of candidates) {
    const code = /^([a-z]{2,3})(?:[_-]|$)/i.exec(candidate.trim())?.[1]?.toLowerCase();
    const language = code === undefined ? undefined : languageFromNameOrCode(code);
    if (language) return language;
  }
  return undefined;
}

function listedVoice(id: string, config: unknown): ListedVoice {
  const speakers = isRecord(config) && isRecord(config.speaker_id_map) ? Object.keys(config.speaker_id_map).slice(0, 1000) : [];
  const language = isRecord(config) && isRecord(config.language) ? config.language : undefined;
  const audio = isRecord(config) && isRecord(config.audio) ? config.audio : undefined;
  return {
    language: piperVoiceLanguage(id, config),
    speakers,
    code: typeof language?.code === "string" ? language.code.slice(0, 20) : undefined,
    dataset: isRecord(config) && typeof config.dataset === "string" ? config.dataset.slice(0, 60) : undefined,
    quality: typeof audio?.quality === "string" ? audio.quality.slice(0, 20) : undefined,
  };
}

/**
 * Makes the Piper engine: reads the server's voice list (bounded in size and time) and offers the
 * configured voices it holds, or all of its voices in the service's languages. Throws
 * TtsEngineUnavailableError when the server cannot be asked and no voice is configured, or when no
 * voice is left; TtsConfigError for invalid settings.
 */
export async function createPiperTtsEngine(options: PiperTtsOptions): Promise<TtsEngine> {
  const id = options.id ?? "piper";
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(id)) throw new TtsConfigError("The Piper engine id may only contain letters, digits, '.', '_' and '-'.");
  let base: URL;
  try {
    base = new URL(options.baseUrl);
  } catch (cause) {
    throw new TtsConfigError(`The Piper server address "${options.baseUrl}" is not a valid URL.`, { cause });
  }
  if (base.protocol !== "http:" && base.protocol !== "https:") throw new TtsConfigError("The Piper server address must start with http:// or https://.");
  const root = `${base.origin}${base.pathname}`.replace(/\/+$/, "").replace(/\/synthesize$/, "");
  const who = `The Piper server at ${base.host}`;
  const quality = options.quality ?? 70;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const maxBytes = options.maxResponseBytes ?? 200 * 1024 * 1024;
  const doFetch = options.fetch ?? fetch;
  const log = options.logger.child({ component: "tts", engine: id });
  for (const voice of options.voices ?? []) {
    if (!SAFE_ID.test(voice.id)) throw new TtsConfigError(`The Piper voice id "${voice.id}" is not valid.`);
    if (!isLanguage(voice.language)) throw new TtsConfigError(`"${String(voice.language)}" is not a supported language.`);
    if (voice.speaker !== undefined && !SAFE_SPEAKER.test(voice.speaker)) throw new TtsConfigError(`The Piper speaker name "${voice.speaker}" is not valid.`);
  }

  const listed = await listVoices();
  const configs: PiperVoiceConfig[] = [];
  if (options.voices && options.voices.length > 0) {
    for (const voice of options.voices) {
      const known = listed?.get(voice.id);
      if (listed && !known) {
        log.warn({ voice: voice.id, language: voice.language, listed: [...listed.keys()].slice(0, 20) }, "the Piper server has no such voice (it would speak its default voice instead); the voice is not offered");
        continue;
      }
      if (voice.speaker !== undefined && known && known.speakers.length > 0 && !known.speakers.includes(voice.speaker)) {
        log.warn({ voice: voice.id, speaker: voice.speaker, speakers: known.speakers.slice(0, 20) }, "the Piper voice has no such speaker; the voice is not offered");
        continue;
      }
      configs.push(voice);
    }
  } else if (listed) {
    for (const [voiceId, info] of listed) {
      if (!SAFE_ID.test(voiceId)) continue;
      if (!info.language) {
        log.info({ voice: voiceId }, "the Piper voice speaks none of the service's languages; not offered");
        continue;
      }
      const detail = [info.code, info.dataset, info.quality].filter(Boolean).join(", ");
      configs.push({ id: voiceId, language: info.language, description: `${voiceId}: Piper neural voice${detail ? ` (${detail})` : ""} at ${base.host}` });
    }
  } else {
    throw new TtsEngineUnavailableError(`${who} could not list its voices, and PIPER_VOICES names none.`);
  }
  if (configs.length === 0) {
    throw new TtsEngineUnavailableError(options.voices && options.voices.length > 0 ? `${who} holds none of the voices PIPER_VOICES names.` : `${who} offers no voice in the service's languages.`);
  }

  const voices: VoiceInfo[] = [];
  const requestOf = new Map<string, { voice: string; speaker?: string | undefined }>();
  for (const config of configs.slice(0, MAX_VOICES)) {
    const name = `${id}:${config.id}${config.speaker === undefined ? "" : `:${config.speaker}`}`;
    if (requestOf.has(name)) continue;
    requestOf.set(name, { voice: config.id, speaker: config.speaker });
    voices.push({
      name,
      language: config.language,
      engine: id,
      ...(config.gender === undefined ? {} : { gender: config.gender }),
      description: config.description ?? `${config.id}${config.speaker === undefined ? "" : ` (speaker ${config.speaker})`}: Piper neural voice at ${base.host}`,
      quality,
    });
  }
  const capabilities: TtsCapabilities = {
    languages: [...new Set(voices.map((v) => v.language))],
    voices,
    cloning: false,
    // The server holds the whole WAV in memory before it answers: long texts go in sentences.
    maxInputChars: 1_500,
    remote: true,
  };
  // Servers before mid-2026 take speech at `POST /`; the first 404 of `/synthesize` switches to it.
  let endpoint = `${root}/synthesize`;

  /** The server's voices by id, or undefined when it cannot be asked (logged why). */
  async function listVoices(): Promise<Map<string, ListedVoice> | undefined> {
    const timeout = AbortSignal.timeout(options.listTimeoutMs ?? 15_000);
    try {
      const response = await doFetch(`${root}/voices`, { headers: { accept: "application/json" }, signal: timeout, redirect: "error" });
      const text = await readBoundedText(response, MAX_LIST_BYTES);
      if (!response.ok) {
        log.warn({ status: response.status, detail: text === undefined ? undefined : serviceMessage(text) }, "the Piper server refused its voice list");
        return undefined;
      }
      if (text === undefined) {
        log.warn({ limit: MAX_LIST_BYTES }, "the Piper server's voice list is too large; not read");
        return undefined;
      }
      const json: unknown = JSON.parse(text);
      if (!isRecord(json)) {
        log.warn("the Piper server's voice list is not a JSON object");
        return undefined;
      }
      const out = new Map<string, ListedVoice>();
      for (const [voiceId, config] of Object.entries(json).slice(0, MAX_VOICES * 4)) out.set(voiceId, listedVoice(voiceId, config));
      return out;
    } catch (error) {
      log.warn({ reason: error instanceof Error ? error.message : String(error), timedOut: timeout.aborted }, "the Piper server's voice list could not be read");
      return undefined;
    }
  }

  async function post(url: string, body: string, signal: AbortSignal): Promise<Response> {
    return doFetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "audio/wav" }, body, signal, redirect: "error" });
  }

  async function synthesize(request: SynthesizeRequest): Promise<SynthesisResult> {
    const voice = pickVoice(voices, id, request.language, request.voice);
    const input = prepareText(request.text);
    const target = requestOf.get(voice.name);
    if (!target) throw new SynthesisError("SYNTHESIS_FAILED", `The voice "${voice.name}" is not a Piper voice.`);
    const wavPath = outputPath(request.outPath);
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    const failed = (error: unknown): Error => {
      if (request.signal?.aborted) return new SynthesisError("SYNTHESIS_CANCELLED", "Speech synthesis was cancelled.", { cause: error });
      if (timeout.aborted) return new SpeechServiceError("SPEECH_SERVICE_TIMEOUT", `${who} did not answer within ${Math.round(timeoutMs / 1000)} seconds.`, { cause: error });
      if (error instanceof SpeechServiceError || error instanceof SynthesisError) return error;
      return new SpeechServiceError("SPEECH_SERVICE_UNAVAILABLE", `${who} could not be reached.`, { cause: error });
    };
    const body = JSON.stringify({ text: input, voice: target.voice, ...(target.speaker === undefined ? {} : { speaker: target.speaker }) });

    let response: Response;
    try {
      response = await post(endpoint, body, signal);
      if (response.status === 404 && endpoint.endsWith("/synthesize")) {
        await response.body?.cancel().catch(() => undefined);
        const legacy = `${root}/`;
        response = await post(legacy, body, signal);
        if (response.ok) {
          endpoint = legacy;
          log.info("the Piper server takes speech at POST / (a release before /synthesize)");
        }
      }
    } catch (error) {
      throw failed(error);
    }
    if (!response.ok) {
      const text = await readBoundedText(response, 64 * 1024).catch(() => undefined);
      const detail = text === undefined ? undefined : serviceMessage(text);
      const said = detail === undefined ? "" : `: ${detail}`;
      const status = response.status;
      log.warn({ status, detail }, "the Piper server refused the request");
      if (status === 401 || status === 403) throw new SpeechServiceError("SPEECH_SERVICE_AUTH", endSentence(`${who} refused the request (HTTP ${status})${said}`), { status });
      if (status === 429) throw new SpeechServiceError("SPEECH_SERVICE_RATE_LIMITED", endSentence(`${who} is busy (HTTP 429)${said}`), { status });
      if (status === 404 || status === 405) throw new SpeechServiceError("SPEECH_SERVICE_REJECTED", endSentence(`${who} has no speech endpoint (HTTP ${status})`), { status });
      if (status >= 500) throw new SpeechServiceError("SPEECH_SERVICE_UNAVAILABLE", endSentence(`${who} failed (HTTP ${status})${said}`), { status });
      throw new SpeechServiceError("SPEECH_SERVICE_REJECTED", endSentence(`${who} refused the request (HTTP ${status})${said}`), { status });
    }
    const { info, bytes: received } = await saveWavAnswer(response, { wavPath, maxBytes, who, signal, failed });
    log.debug({ voice: voice.name, chars: input.length, bytes: received }, "synthesized");
    return { wavPath, sampleRate: info.sampleRate, voice: voice.name };
  }

  return { id, capabilities: () => capabilities, synthesize };
}
