import { readBoundedText } from "./http-body.ts";
import type { Logger } from "@voiceloc/log";
import type { Language } from "./languages.ts";
import { isRecord } from "./openai-common.ts";
import type { OpenAiVoiceConfig } from "./openai.ts";

/** OpenAI's preset voices: spoken when OPENAI_TTS_VOICES is unset and the server lists none. */
export const OPENAI_PRESET_VOICES: readonly string[] = ["alloy", "ash", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer"];

/**
 * Kokoro's voice names start with a language letter and a gender letter (`af_bella`: American English,
 * female). Kokoro speaks each voice with its language's phonemizer, so such a voice is offered for
 * that language only.
 */
const KOKORO_LANGUAGES: Readonly<Record<string, Language>> = {
  a: "English",
  b: "English",
  e: "Spanish",
  f: "French",
  h: "Hindi",
  i: "Italian",
  j: "Japanese",
  p: "Portuguese",
  z: "Chinese",
};
const KOKORO_ACCENTS: Readonly<Record<string, string>> = {
  a: "American English",
  b: "British English",
  e: "Spanish",
  f: "French",
  h: "Hindi",
  i: "Italian",
  j: "Japanese",
  p: "Brazilian Portuguese",
  z: "Mandarin Chinese",
};

/** A voice id the speech adapter accepts (the same rule as OPENAI_TTS_VOICES entries). */
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const MAX_LIST_BYTES = 4 * 1024 * 1024;
const MAX_VOICES = 300;

/** What a voice name in Kokoro's convention says: its language and gender; nothing for other names. */
export function kokoroVoiceConfig(id: string, host: string): OpenAiVoiceConfig {
  const match = /^([abefhijpz])([fm])_([a-z0-9]+)$/i.exec(id);
  const letter = match?.[1]?.toLowerCase();
  const language = letter === undefined ? undefined : KOKORO_LANGUAGES[letter];
  if (!match || !language || letter === undefined) return { id, description: `${id} voice of the speech service at ${host} (listed by the server)` };
  const gender = match[2]?.toLowerCase() === "f" ? "female" : "male";
  const name = (match[3] ?? id).replace(/^./, (c) => c.toUpperCase());
  return { id, gender, languages: [language], description: `${name}: ${KOKORO_ACCENTS[letter] ?? language} ${gender} voice of the speech service at ${host}` };
}

function voiceIds(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  const ids: string[] = [];
  for (const item of list.slice(0, MAX_VOICES * 2)) {
    const id = typeof item === "string" ? item : isRecord(item) ? (typeof item.id === "string" ? item.id : item.voice_id ?? item.name) : undefined;
    if (typeof id === "string" && SAFE_ID.test(id) && !ids.includes(id)) ids.push(id);
  }
  return ids.slice(0, MAX_VOICES);
}

export interface DiscoverVoicesOptions {
  /** Service root, as for the speech adapter ("http://127.0.0.1:8880", a trailing "/v1" accepted). */
  baseUrl: string;
  apiKey?: string | undefined;
  /** The speech model: a `GET /v1/models` entry of that id may carry its `voices`. */
  model: string;
  logger: Logger;
  /** Time limit of each request. Default 15 s. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/**
 * The voices an OpenAI-compatible speech server lists, each with its language and gender where the
 * name says them (Kokoro's convention): `GET /v1/audio/voices` (`{ "voices": ["af_bella", …] }` or
 * `[{ "id", "name" }]`, Kokoro-FastAPI), else the `voices` of the model's entry in `GET /v1/models`.
 * Undefined when the server lists none (OpenAI itself): the caller keeps its preset list. Bounded in
 * time and size; never throws.
 */
export async function discoverOpenAiTtsVoices(options: DiscoverVoicesOptions): Promise<OpenAiVoiceConfig[] | undefined> {
  const doFetch = options.fetch ?? fetch;
  const log = options.logger.child({ component: "tts", engine: "openai", step: "voice discovery" });
  let base: URL;
  try {
    base = new URL(options.baseUrl);
  } catch {
    return undefined;
  }
  const root = base.href.replace(/\/+$/, "").replace(/\/v1$/, "");
  const get = async (path: string): Promise<unknown> => {
    const response = await doFetch(`${root}${path}`, {
      headers: { accept: "application/json", ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
      signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
      redirect: "error",
    });
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      return undefined;
    }
    const text = await readBoundedText(response, MAX_LIST_BYTES);
    if (!text) return undefined;
    return JSON.parse(text) as unknown;
  };
  const attempt = async (path: string, pick: (json: unknown) => string[]): Promise<string[]> => {
    try {
      return pick(await get(path));
    } catch (error) {
      log.debug({ path, reason: error instanceof Error ? error.message : String(error) }, "no voice list here");
      return [];
    }
  };
  let ids = await attempt("/v1/audio/voices", (json) => (isRecord(json) ? voiceIds(json.voices) : []));
  let source = "/v1/audio/voices";
  if (ids.length === 0) {
    source = "/v1/models";
    ids = await attempt("/v1/models", (json) => {
      if (!isRecord(json) || !Array.isArray(json.data)) return [];
      const entry = json.data.find((m: unknown) => isRecord(m) && m.id === options.model);
      return isRecord(entry) ? voiceIds(entry.voices) : [];
    });
  }
  if (ids.length === 0) {
    log.info({ host: base.host }, "the speech service lists no voices; its preset voice names are used");
    return undefined;
  }
  log.info({ host: base.host, source, voices: ids.length }, "voices discovered on the speech service");
  return ids.map((id) => kokoroVoiceConfig(id, base.host));
}
