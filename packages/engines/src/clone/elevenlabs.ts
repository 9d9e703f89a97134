/**
 * ElevenLabs instant voice cloning behind the CloneEngine port.
 *
 * The API as documented (elevenlabs.io/docs/api-reference), header `xi-api-key` on every call:
 * - `POST /v1/voices/add`, multipart `name` + `files` (the sample) → `{ voice_id, requires_verification }`;
 * - `POST /v1/text-to-speech/{voice_id}?output_format=pcm_22050`, JSON `text`, `model_id`, `language_code`
 *   (ISO 639-1) → raw 16-bit little-endian mono PCM at 22.05 kHz (available on every plan; the 44.1 kHz
 *   formats need the Pro tier), wrapped here in a WAV header;
 * - `DELETE /v1/voices/{voice_id}`.
 * Errors answer `{"detail": {"type", "code", "status" (legacy), "message", "param"}}` (validation: FastAPI's
 * `{"detail": [{"loc", "msg", "type"}]}`): 401 `invalid_api_key` / `quota_exceeded` / `missing_permissions`,
 * 404 or 400 `voice_not_found`, 429 `too_many_concurrent_requests` / `system_busy`.
 */
import { readFile, rm } from "node:fs/promises";
import { LANGUAGE_CODES } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import { outputPath } from "../cli.ts";
import { CloneError, endSentence, LanguageNotSupportedError, SpeechServiceError, SynthesisError, TtsConfigError } from "../errors.ts";
import { isLanguage, type Language } from "../languages.ts";
import { prepareText } from "../text.ts";
import type { SynthesisResult } from "../types.ts";
import { encodePcm16Wav, readWavInfo, repairWavSizes } from "../wav.ts";
import { bodyToFile, cleanDetail, errorBody, jsonBody, remoteCall, serviceRoot, waitHint, type RemoteCall } from "./remote.ts";
import { CLONE_VOICE_PREFIX, type CloneEngine, type CloneSynthesizeRequest, type ClonedVoice, type CreateCloneInput } from "./types.ts";

/** Languages of `eleven_multilingual_v2` (its documented 29) that the service offers. */
export const ELEVENLABS_MULTILINGUAL_LANGUAGES: readonly Language[] = [
  "English", "Japanese", "Chinese", "German", "Hindi", "French", "Korean", "Portuguese", "Italian", "Spanish", "Dutch", "Arabic", "Russian",
];

/**
 * Languages by model, among the service's. The v2.5 models add Hungarian, Norwegian and Vietnamese to
 * the multilingual list (none of them ours); the v2/v1 English models speak English only. A model not in
 * this table is assumed to speak the multilingual list (set `languages` to say otherwise).
 */
const MODEL_LANGUAGES: Readonly<Record<string, readonly Language[]>> = {
  eleven_multilingual_v2: ELEVENLABS_MULTILINGUAL_LANGUAGES,
  eleven_turbo_v2_5: ELEVENLABS_MULTILINGUAL_LANGUAGES,
  eleven_flash_v2_5: ELEVENLABS_MULTILINGUAL_LANGUAGES,
  eleven_turbo_v2: ["English"],
  eleven_flash_v2: ["English"],
  eleven_monolingual_v1: ["English"],
};

/** The raw PCM format asked for: 16-bit little-endian mono at this rate (no tier needed). */
export const ELEVENLABS_OUTPUT_FORMAT = "pcm_22050";
const OUTPUT_RATE = 22_050;

/** Text per request kept well under the models' limits (5,000–10,000 characters by model and plan). */
export const ELEVENLABS_MAX_INPUT_CHARS = 4_000;

export interface ElevenLabsCloneOptions {
  apiKey: string;
  /** API root, default https://api.elevenlabs.io (a trailing "/v1" is accepted). */
  baseUrl?: string | undefined;
  /** Model for speech, e.g. "eleven_multilingual_v2". */
  model: string;
  logger: Logger;
  /** Languages offered; default: the model's (see MODEL_LANGUAGES) among the service's. */
  languages?: readonly Language[] | undefined;
  /** Time limit of one call (upload, speech with its download, deletion); default 120 s, deletion 30 s. */
  timeoutMs?: number | undefined;
  /** Largest audio answer accepted; default 200 MiB. */
  maxResponseBytes?: number | undefined;
  /** For tests or proxies; default the global fetch. */
  fetch?: typeof fetch | undefined;
}

/** ElevenLabs' error detail: `code` (or the legacy `status`), `message`, `param`. */
interface Detail {
  code?: string | undefined;
  message?: string | undefined;
  param?: string | undefined;
}

function parseDetail(body: string): Detail {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { message: body.trimStart().startsWith("<") ? undefined : cleanDetail(body) };
  }
  const detail = typeof json === "object" && json !== null ? (json as { detail?: unknown }).detail : undefined;
  if (typeof detail === "string") return { message: cleanDetail(detail) };
  if (Array.isArray(detail)) {
    // FastAPI validation: [{loc: ["body", "files"], msg, type}]
    const parts = detail.flatMap((item: unknown) => {
      if (typeof item !== "object" || item === null) return [];
      const { loc, msg } = item as { loc?: unknown; msg?: unknown };
      const where = Array.isArray(loc) ? loc.filter((p) => p !== "body").join(".") : "";
      return typeof msg === "string" ? [where ? `${where}: ${msg}` : msg] : [];
    });
    const first = detail[0] as { loc?: unknown } | undefined;
    const param = Array.isArray(first?.loc) ? String(first.loc[first.loc.length - 1]) : undefined;
    return { message: cleanDetail(parts.join("; ")), code: "validation_error", param };
  }
  if (typeof detail === "object" && detail !== null) {
    const d = detail as Record<string, unknown>;
    const code = typeof d.code === "string" ? d.code : typeof d.status === "string" ? d.status : undefined;
    return { code, message: cleanDetail(d.message), param: typeof d.param === "string" ? d.param : undefined };
  }
  return {};
}

const VOICE_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** ElevenLabs behind the CloneEngine port (id "elevenlabs"). */
export function createElevenLabsCloneEngine(options: ElevenLabsCloneOptions): CloneEngine {
  if (options.apiKey.trim() === "") throw new TtsConfigError("ELEVENLABS_API_KEY is empty: ElevenLabs needs an API key.");
  const model = options.model.trim();
  if (model === "") throw new TtsConfigError("The ElevenLabs model name (ELEVENLABS_MODEL) is empty.");
  const { root } = serviceRoot(options.baseUrl ?? "https://api.elevenlabs.io", "ElevenLabs");
  const languages = [...(options.languages ?? MODEL_LANGUAGES[model] ?? ELEVENLABS_MULTILINGUAL_LANGUAGES)];
  for (const language of languages) if (!isLanguage(language)) throw new TtsConfigError(`"${String(language)}" is not a supported language.`);
  const timeoutMs = options.timeoutMs ?? 120_000;
  const removeTimeoutMs = options.timeoutMs ?? 30_000;
  const maxBytes = options.maxResponseBytes ?? 200 * 1024 * 1024;
  const doFetch = options.fetch ?? fetch;
  const log = options.logger.child({ component: "clone", engine: "elevenlabs" });
  const service = "ElevenLabs";
  /** Set once ElevenLabs refuses `language_code` for this model: later requests leave it out. */
  let languageCodeRefused = false;

  const headers = (extra: Record<string, string> = {}): Record<string, string> => ({ "xi-api-key": options.apiKey, ...extra });

  async function send(url: string, init: RequestInit, call: RemoteCall): Promise<Response> {
    try {
      return await doFetch(url, { ...init, signal: call.signal, redirect: "error" });
    } catch (error) {
      throw call.failed(error);
    }
  }

  /** The error for a refusal every call shares (auth, quota, rate, outage); undefined for the call's own cases. */
  function commonRefusal(response: Response, detail: Detail): Error | undefined {
    const status = response.status;
    const said = detail.message ? `: ${detail.message}` : "";
    if (detail.code === "quota_exceeded") {
      return new SpeechServiceError("SPEECH_SERVICE_AUTH", endSentence(`ElevenLabs says this server's quota is used up (HTTP ${status})${said}`), { status });
    }
    if (status === 401 || status === 403) {
      const what = detail.code === "missing_permissions" ? "ElevenLabs refused this server's API key: the key lacks a permission" : "ElevenLabs refused this server's API key";
      return new SpeechServiceError("SPEECH_SERVICE_AUTH", endSentence(`${what} (HTTP ${status})${said}`), { status });
    }
    if (status === 429) {
      return new SpeechServiceError("SPEECH_SERVICE_RATE_LIMITED", `${endSentence(`ElevenLabs is limiting requests (HTTP 429)${said}`)}${waitHint(response)}`, { status });
    }
    if (status >= 500) {
      return new SpeechServiceError("SPEECH_SERVICE_UNAVAILABLE", `${endSentence(`ElevenLabs failed (HTTP ${status})${said}`)}${waitHint(response)}`, { status });
    }
    return undefined;
  }

  async function refused(response: Response, operation: string): Promise<{ detail: Detail; error: Error | undefined }> {
    const detail = parseDetail(await errorBody(response));
    log.warn({ status: response.status, code: detail.code, detail: detail.message, operation }, "ElevenLabs refused the request");
    return { detail, error: commonRefusal(response, detail) };
  }

  function otherRefusal(response: Response, detail: Detail, doing: string): Error {
    const said = detail.message ? `: ${detail.message}` : "";
    return new SpeechServiceError("SPEECH_SERVICE_REJECTED", endSentence(`ElevenLabs refused to ${doing} (HTTP ${response.status})${said}`), { status: response.status });
  }

  async function create(input: CreateCloneInput): Promise<{ ref: string }> {
    const call = remoteCall(service, timeoutMs, input.signal);
    let sample: Buffer;
    try {
      sample = await readFile(input.sample.wavPath);
    } catch (cause) {
      throw new CloneError("SAMPLE_UNUSABLE", "The voice sample could not be read for ElevenLabs.", { cause });
    }
    const form = new FormData();
    form.append("name", input.name.trim().slice(0, 100) || input.id);
    form.append("description", `Cloned voice ${input.id}`);
    form.append("files", new Blob([sample], { type: "audio/wav" }), "sample.wav");
    const response = await send(`${root}/v1/voices/add`, { method: "POST", headers: headers({ accept: "application/json" }), body: form }, call);
    if (!response.ok) {
      const { detail, error } = await refused(response, "create");
      if (error) throw error;
      // A 400/422 is the sample's fault unless it names the account (voice slots full, a plan without
      // instant cloning) or another field than the files.
      const account = /limit|quota|subscription|can_not_use|not_allowed|permission|tier|plan/i.test(detail.code ?? "");
      const aboutFiles = detail.param === undefined || detail.param === "files";
      if ((response.status === 400 || response.status === 422) && !account && aboutFiles) {
        throw new CloneError("SAMPLE_UNUSABLE", endSentence(`ElevenLabs could not make a voice from this sample${detail.message ? `: ${detail.message}` : ""}`));
      }
      throw otherRefusal(response, detail, "make the voice");
    }
    const body = await jsonBody(response, call);
    const voiceId = typeof body === "object" && body !== null ? (body as { voice_id?: unknown }).voice_id : undefined;
    if (typeof voiceId !== "string" || !VOICE_ID.test(voiceId)) {
      throw new SpeechServiceError("SPEECH_SERVICE_BAD_RESPONSE", "ElevenLabs answered the new voice without a usable voice_id.");
    }
    if ((body as { requires_verification?: unknown }).requires_verification === true) {
      log.warn({ clone: input.id }, "ElevenLabs says the new voice requires verification before use");
    }
    log.info({ clone: input.id, seconds: Math.round(input.sample.seconds) }, "voice made at ElevenLabs");
    return { ref: voiceId };
  }

  async function speak(clone: ClonedVoice, text: string, language: Language, withLanguage: boolean, wavPath: string, outer: AbortSignal | undefined): Promise<"retry-without-language" | number> {
    const call = remoteCall(service, timeoutMs, outer);
    const url = `${root}/v1/text-to-speech/${encodeURIComponent(clone.ref)}?output_format=${ELEVENLABS_OUTPUT_FORMAT}`;
    const body = { text, model_id: model, ...(withLanguage ? { language_code: LANGUAGE_CODES[language] } : {}) };
    const response = await send(url, { method: "POST", headers: headers({ "content-type": "application/json", accept: "audio/pcm" }), body: JSON.stringify(body) }, call);
    if (!response.ok) {
      const { detail, error } = await refused(response, "synthesize");
      if (error) throw error;
      if (response.status === 404 || detail.code === "voice_not_found") {
        throw new CloneError("CLONE_NOT_FOUND", `The cloned voice "${clone.name}" no longer exists at ElevenLabs (it was deleted there).`);
      }
      const aboutLanguage = detail.param === "language_code" || /language[_ ]code/i.test(detail.message ?? "");
      if (withLanguage && (response.status === 400 || response.status === 422) && aboutLanguage) return "retry-without-language";
      throw otherRefusal(response, detail, "speak the text");
    }
    const type = response.headers.get("content-type") ?? "";
    if (/json|html|text\//i.test(type)) {
      await response.body?.cancel().catch(() => undefined);
      throw new SpeechServiceError("SPEECH_SERVICE_BAD_RESPONSE", `ElevenLabs answered with ${type.split(";")[0]} instead of audio.`);
    }
    return bodyToFile(response, wavPath, maxBytes, call, service, encodePcm16Wav(new Int16Array(0), OUTPUT_RATE));
  }

  async function synthesize(clone: ClonedVoice, request: CloneSynthesizeRequest): Promise<SynthesisResult> {
    if (!languages.includes(request.language)) {
      throw new LanguageNotSupportedError(request.language, `ElevenLabs' model ${model} does not speak ${request.language}; it speaks ${languages.join(", ")}.`);
    }
    const text = prepareText(request.text);
    if ([...text].length > ELEVENLABS_MAX_INPUT_CHARS) {
      throw new SynthesisError("SYNTHESIS_FAILED", `The text is too long for one ElevenLabs request (at most ${ELEVENLABS_MAX_INPUT_CHARS} characters).`);
    }
    const wavPath = outputPath(request.outPath);
    let bytes = await speak(clone, text, request.language, !languageCodeRefused, wavPath, request.signal);
    if (bytes === "retry-without-language") {
      languageCodeRefused = true;
      log.info({ model }, "ElevenLabs refused language_code for this model; sending text without it");
      bytes = await speak(clone, text, request.language, false, wavPath, request.signal);
    }
    if (bytes === "retry-without-language") throw new SpeechServiceError("SPEECH_SERVICE_BAD_RESPONSE", "ElevenLabs refused the speech request.");
    const info = await readWavInfo(wavPath);
    if (!info || info.dataBytes < 2) {
      await rm(wavPath, { force: true });
      throw new SpeechServiceError("SPEECH_SERVICE_BAD_RESPONSE", "ElevenLabs answered with no audio.");
    }
    await repairWavSizes(wavPath, info);
    log.debug({ clone: clone.id, chars: text.length, bytes }, "synthesized");
    return { wavPath, sampleRate: OUTPUT_RATE, voice: `${CLONE_VOICE_PREFIX}${clone.id}` };
  }

  async function remove(clone: ClonedVoice, signal?: AbortSignal): Promise<void> {
    if (clone.ref === "") return;
    const call = remoteCall(service, removeTimeoutMs, signal);
    const response = await send(`${root}/v1/voices/${encodeURIComponent(clone.ref)}`, { method: "DELETE", headers: headers({ accept: "application/json" }) }, call);
    if (response.ok) {
      await response.body?.cancel().catch(() => undefined);
      log.info({ clone: clone.id }, "voice deleted at ElevenLabs");
      return;
    }
    const { detail, error } = await refused(response, "remove");
    if (error) throw error;
    if (response.status === 404 || detail.code === "voice_not_found") return;
    throw otherRefusal(response, detail, "delete the voice");
  }

  return {
    id: "elevenlabs",
    languages: () => [...languages],
    maxInputChars: ELEVENLABS_MAX_INPUT_CHARS,
    create,
    synthesize,
    remove,
  };
}
