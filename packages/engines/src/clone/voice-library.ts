/**
 * A self-hosted OpenAI-compatible speech server that keeps a library of named voices, behind the
 * CloneEngine port (chatterbox-tts-api's documented protocol, github.com/travisvn/chatterbox-tts-api):
 * - `POST /v1/voices`, multipart `voice_name`, `voice_file` (a .wav/.mp3/.flac/.m4a/.ogg file, at most
 *   10 MB) and `language` (ISO 639-1, the language the voice speaks) → 201; 400 bad file or language,
 *   409 name taken;
 * - `GET /v1/voices/{name}` → `{voice: {name, language, …}}` or 404; `GET /v1/voices/{name}/download`
 *   → the voice's file; `GET /v1/voices` → `{voices: [{name, …}], count}`;
 * - `POST /v1/audio/speech`, JSON `{input (≤ 3000 characters), voice: <name>, response_format: "wav"}` →
 *   WAV. The server speaks an unknown voice name in its default voice without an error, so the voice is
 *   looked up first: a deleted clone is CLONE_NOT_FOUND, never speech in someone else's voice;
 * - `DELETE /v1/voices/{name}` → 200 or 404.
 * Errors answer `{"error": {"message", "type"}}`, validation FastAPI's `{"detail": [{"loc", "msg"}]}`.
 *
 * A library voice speaks the one language it was uploaded with. Speech in another language goes to a
 * variant of the voice, `<name>-<code>`, made once from the voice's own file (downloaded from the server,
 * so the sample is still sent once by this service) and deleted with it.
 */
import { createHash } from "node:crypto";
import { readFile, rm } from "node:fs/promises";
import { LANGUAGE_CODES } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import { outputPath } from "../cli.ts";
import { CloneError, endSentence, LanguageNotSupportedError, SpeechServiceError, SynthesisError, TtsConfigError } from "../errors.ts";
import { isLanguage, type Language } from "../languages.ts";
import { serviceMessage } from "../openai-common.ts";
import { prepareText } from "../text.ts";
import type { SynthesisResult } from "../types.ts";
import { readWavInfo, repairWavSizes } from "../wav.ts";
import { bodyToFile, cleanDetail, errorBody, jsonBody, remoteCall, serviceRoot, waitHint, type RemoteCall } from "./remote.ts";
import { CLONE_VOICE_PREFIX, type CloneEngine, type CloneSynthesizeRequest, type ClonedVoice, type CreateCloneInput } from "./types.ts";

/** Languages of chatterbox's multilingual model among the service's (it leaves Chinese out). */
export const VOICE_LIBRARY_DEFAULT_LANGUAGES: readonly Language[] = [
  "Arabic", "German", "English", "Spanish", "French", "Hindi", "Italian", "Japanese", "Korean", "Dutch", "Portuguese", "Russian", "Swahili",
];

/** The documented limit of `input` (TTSRequest: max_length 3000). */
export const VOICE_LIBRARY_MAX_INPUT_CHARS = 3_000;

export interface VoiceLibraryCloneOptions {
  /** Server root, e.g. "http://127.0.0.1:4123" (a trailing "/v1" is accepted). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …` when set (a server behind an authenticating proxy). */
  apiKey?: string | undefined;
  logger: Logger;
  /** Languages offered; default VOICE_LIBRARY_DEFAULT_LANGUAGES (set ["English"] for the English-only model). */
  languages?: readonly Language[] | undefined;
  /** Time limit of one call; default 120 s for upload and speech (a local model can be slow), 30 s for lookups and deletion. */
  timeoutMs?: number | undefined;
  /** Largest audio answer accepted; default 200 MiB. */
  maxResponseBytes?: number | undefined;
  fetch?: typeof fetch | undefined;
}

const SAFE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The library name of a clone's voice: `voiceloc-<id>` (or a digest of an id with other characters). */
export function voiceLibraryName(cloneId: string): string {
  return `voiceloc-${SAFE_ID.test(cloneId) ? cloneId : createHash("sha256").update(cloneId).digest("hex").slice(0, 32)}`;
}

function parseError(body: string): string | undefined {
  const said = serviceMessage(body);
  if (said !== undefined) return said;
  try {
    const json = JSON.parse(body) as { detail?: unknown };
    if (Array.isArray(json.detail)) {
      const parts = json.detail.flatMap((item: unknown) => {
        if (typeof item !== "object" || item === null) return [];
        const { loc, msg } = item as { loc?: unknown; msg?: unknown };
        const where = Array.isArray(loc) ? loc.filter((p) => p !== "body").join(".") : "";
        return typeof msg === "string" ? [where ? `${where}: ${msg}` : msg] : [];
      });
      return cleanDetail(parts.join("; "));
    }
  } catch {
    // not JSON: serviceMessage already said what it could
  }
  return undefined;
}

/** The voice library behind the CloneEngine port (id "voice-library"). */
export function createVoiceLibraryCloneEngine(options: VoiceLibraryCloneOptions): CloneEngine {
  const { root, host } = serviceRoot(options.baseUrl, "voice library");
  const languages = [...(options.languages ?? VOICE_LIBRARY_DEFAULT_LANGUAGES)];
  if (languages.length === 0) throw new TtsConfigError("The voice library needs at least one language.");
  for (const language of languages) if (!isLanguage(language)) throw new TtsConfigError(`"${String(language)}" is not a supported language.`);
  const slowMs = options.timeoutMs ?? 120_000;
  const quickMs = options.timeoutMs ?? 30_000;
  const maxBytes = options.maxResponseBytes ?? 200 * 1024 * 1024;
  const doFetch = options.fetch ?? fetch;
  const log = options.logger.child({ component: "clone", engine: "voice-library" });
  const service = `the voice library at ${host}`;
  /** Language variants known to exist (name → true); a deleted clone is caught by the base voice's lookup first. */
  const variants = new Set<string>();
  const making = new Map<string, Promise<string>>();

  const headers = (extra: Record<string, string> = {}): Record<string, string> => ({
    ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
    ...extra,
  });

  async function send(path: string, init: RequestInit, call: RemoteCall): Promise<Response> {
    try {
      return await doFetch(`${root}${path}`, { ...init, signal: call.signal, redirect: "error" });
    } catch (error) {
      throw call.failed(error);
    }
  }

  /** The error of a refusal (the caller handles its own statuses first). */
  async function refusal(response: Response, doing: string, operation: string): Promise<Error> {
    const detail = parseError(await errorBody(response));
    const status = response.status;
    const said = detail ? `: ${detail}` : "";
    log.warn({ status, detail, operation }, "the voice library refused the request");
    if (status === 401 || status === 403) return new SpeechServiceError("SPEECH_SERVICE_AUTH", endSentence(`The voice library at ${host} refused this server's API key (HTTP ${status})${said}`), { status });
    if (status === 429) return new SpeechServiceError("SPEECH_SERVICE_RATE_LIMITED", `${endSentence(`The voice library at ${host} is limiting requests (HTTP 429)${said}`)}${waitHint(response)}`, { status });
    if (status >= 500) return new SpeechServiceError("SPEECH_SERVICE_UNAVAILABLE", `${endSentence(`The voice library at ${host} failed (HTTP ${status})${said}`)}${waitHint(response)}`, { status });
    return new SpeechServiceError("SPEECH_SERVICE_REJECTED", endSentence(`The voice library at ${host} refused to ${doing} (HTTP ${status})${said}`), { status });
  }

  /** Uploads `file` as voice `name` speaking `code`; a name already taken (an earlier attempt that landed) is success. */
  async function upload(name: string, file: Buffer, code: string, signal: AbortSignal | undefined, asSample: boolean): Promise<void> {
    const call = remoteCall(service, slowMs, signal);
    const form = new FormData();
    form.append("voice_name", name);
    form.append("language", code);
    form.append("voice_file", new Blob([file], { type: "audio/wav" }), "sample.wav");
    const response = await send("/v1/voices", { method: "POST", headers: headers({ accept: "application/json" }), body: form }, call);
    if (response.ok || response.status === 409) {
      await response.body?.cancel().catch(() => undefined);
      if (response.status === 409) log.info({ voice: name }, "the voice was already in the library");
      return;
    }
    if (asSample && (response.status === 400 || response.status === 413 || response.status === 422)) {
      const detail = parseError(await errorBody(response));
      log.warn({ status: response.status, detail, operation: "create" }, "the voice library refused the sample");
      throw new CloneError("SAMPLE_UNUSABLE", endSentence(`The voice library at ${host} could not make a voice from this sample${detail ? `: ${detail}` : ""}`));
    }
    throw await refusal(response, "store the voice", "create");
  }

  function uploadLanguage(language: Language | undefined): string {
    if (language !== undefined && languages.includes(language)) return LANGUAGE_CODES[language];
    return languages.includes("English") ? "en" : LANGUAGE_CODES[languages[0] as Language];
  }

  async function create(input: CreateCloneInput): Promise<{ ref: string }> {
    let sample: Buffer;
    try {
      sample = await readFile(input.sample.wavPath);
    } catch (cause) {
      throw new CloneError("SAMPLE_UNUSABLE", "The voice sample could not be read for the voice library.", { cause });
    }
    const name = voiceLibraryName(input.id);
    await upload(name, sample, uploadLanguage(input.language), input.signal, true);
    log.info({ clone: input.id, voice: name, seconds: Math.round(input.sample.seconds) }, "voice stored in the library");
    return { ref: name };
  }

  /** The voice's language code, or undefined when the library no longer has it. */
  async function lookup(name: string, signal: AbortSignal | undefined): Promise<string | undefined> {
    const call = remoteCall(service, quickMs, signal);
    const response = await send(`/v1/voices/${encodeURIComponent(name)}`, { method: "GET", headers: headers({ accept: "application/json" }) }, call);
    if (response.status === 404) {
      await response.body?.cancel().catch(() => undefined);
      return undefined;
    }
    if (!response.ok) throw await refusal(response, "look up the voice", "lookup");
    const body = await jsonBody(response, call);
    const voice = typeof body === "object" && body !== null ? (body as { voice?: unknown }).voice : undefined;
    if (typeof voice !== "object" || voice === null) throw new SpeechServiceError("SPEECH_SERVICE_BAD_RESPONSE", `The voice library at ${host} answered the voice lookup without the voice.`);
    const language = (voice as { language?: unknown }).language;
    return typeof language === "string" && language !== "" ? language.toLowerCase() : "en";
  }

  /** Makes `<name>-<code>` from the voice's own file unless it exists (once per process at a time: lanes speak in parallel). */
  function ensureVariant(clone: ClonedVoice, code: string, signal: AbortSignal | undefined): Promise<string> {
    const variant = `${clone.ref}-${code}`;
    if (variants.has(variant)) return Promise.resolve(variant);
    const pending = making.get(variant);
    if (pending) return pending;
    const made = makeVariant(clone, variant, code, signal).finally(() => making.delete(variant));
    making.set(variant, made);
    return made;
  }

  async function makeVariant(clone: ClonedVoice, variant: string, code: string, signal: AbortSignal | undefined): Promise<string> {
    const name = clone.ref;
    if ((await lookup(variant, signal)) === undefined) {
      const call = remoteCall(service, slowMs, signal);
      const response = await send(`/v1/voices/${encodeURIComponent(name)}/download`, { method: "GET", headers: headers() }, call);
      if (response.status === 404) throw notFound(clone);
      if (!response.ok) throw await refusal(response, "hand back the voice's file", "download");
      let file: Buffer;
      try {
        file = Buffer.from(await response.arrayBuffer());
      } catch (error) {
        throw call.failed(error);
      }
      await upload(variant, file, code, signal, false);
      log.info({ voice: variant }, "language variant of the voice stored in the library");
    }
    variants.add(variant);
    return variant;
  }

  function notFound(clone: ClonedVoice): CloneError {
    return new CloneError("CLONE_NOT_FOUND", `The cloned voice "${clone.name}" no longer exists in the voice library at ${host} (it was deleted there).`);
  }

  async function synthesize(clone: ClonedVoice, request: CloneSynthesizeRequest): Promise<SynthesisResult> {
    if (!languages.includes(request.language)) {
      throw new LanguageNotSupportedError(request.language, `The voice library at ${host} does not speak ${request.language}; it speaks ${languages.join(", ")}.`);
    }
    const text = prepareText(request.text);
    if ([...text].length > VOICE_LIBRARY_MAX_INPUT_CHARS) {
      throw new SynthesisError("SYNTHESIS_FAILED", `The text is too long for one voice library request (at most ${VOICE_LIBRARY_MAX_INPUT_CHARS} characters).`);
    }
    const spoken = await lookup(clone.ref, request.signal);
    if (spoken === undefined) throw notFound(clone);
    const code = LANGUAGE_CODES[request.language];
    const voice = spoken === code ? clone.ref : await ensureVariant(clone, code, request.signal);

    const call = remoteCall(service, slowMs, request.signal);
    const response = await send(
      "/v1/audio/speech",
      { method: "POST", headers: headers({ "content-type": "application/json", accept: "audio/wav" }), body: JSON.stringify({ input: text, voice, response_format: "wav" }) },
      call,
    );
    if (!response.ok) throw await refusal(response, "speak the text", "synthesize");
    const wavPath = outputPath(request.outPath);
    const bytes = await bodyToFile(response, wavPath, maxBytes, call, service);
    const info = await readWavInfo(wavPath);
    if (!info || info.dataBytes === 0) {
      await rm(wavPath, { force: true });
      throw new SpeechServiceError("SPEECH_SERVICE_BAD_RESPONSE", `The voice library at ${host} answered with something that is not WAV audio.`);
    }
    await repairWavSizes(wavPath, info);
    log.debug({ clone: clone.id, voice, chars: text.length, bytes }, "synthesized");
    return { wavPath, sampleRate: info.sampleRate, voice: `${CLONE_VOICE_PREFIX}${clone.id}` };
  }

  async function deleteVoice(name: string, signal: AbortSignal | undefined): Promise<void> {
    const call = remoteCall(service, quickMs, signal);
    const response = await send(`/v1/voices/${encodeURIComponent(name)}`, { method: "DELETE", headers: headers({ accept: "application/json" }) }, call);
    variants.delete(name);
    if (response.ok || response.status === 404) {
      await response.body?.cancel().catch(() => undefined);
      return;
    }
    throw await refusal(response, "delete the voice", "remove");
  }

  async function remove(clone: ClonedVoice, signal?: AbortSignal): Promise<void> {
    if (clone.ref === "") return;
    await deleteVoice(clone.ref, signal);
    // The language variants: listed, since any process may have made them.
    const call = remoteCall(service, quickMs, signal);
    const response = await send("/v1/voices", { method: "GET", headers: headers({ accept: "application/json" }) }, call);
    if (!response.ok) throw await refusal(response, "list its voices", "remove");
    const body = await jsonBody(response, call);
    const listed = typeof body === "object" && body !== null ? (body as { voices?: unknown }).voices : undefined;
    if (!Array.isArray(listed)) throw new SpeechServiceError("SPEECH_SERVICE_BAD_RESPONSE", `The voice library at ${host} answered the voice list without voices.`);
    const prefix = `${clone.ref}-`;
    for (const entry of listed) {
      const name = typeof entry === "object" && entry !== null ? (entry as { name?: unknown }).name : undefined;
      if (typeof name === "string" && name.startsWith(prefix) && /^[a-z]{2,3}$/.test(name.slice(prefix.length))) await deleteVoice(name, signal);
    }
    log.info({ clone: clone.id }, "voice deleted from the library");
  }

  return {
    id: "voice-library",
    languages: () => [...languages],
    maxInputChars: VOICE_LIBRARY_MAX_INPUT_CHARS,
    create,
    synthesize,
    remove,
  };
}
