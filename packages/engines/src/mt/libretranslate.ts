import { LANGUAGE_CODES } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import { LANGUAGES, type Language } from "../languages.ts";
import { isRecord, serviceMessage } from "../openai-common.ts";
import { assembleChunks, normalizeTranslationInput, planChunks } from "./chunk.ts";
import { finishSentence, MtConfigError, MtEngineUnavailableError, TranslationError, TranslationNotSupportedError, TranslationServiceError } from "./errors.ts";
import type { MtCapabilities, MtEngine, MtPair, TranslationRequest } from "./types.ts";

/**
 * Adapter for a LibreTranslate server (https://github.com/LibreTranslate/LibreTranslate):
 * `GET /languages` lists each language with the targets it translates into; `POST /translate`
 * takes `{ q, source, target, format: "text", api_key }` where `q` may be an array of texts and the
 * answer's `translatedText` is then an array in the same order. Errors come as `{ "error": "…" }`
 * with 400 (bad request or a language it does not have), 403 (API key), 429 (slow down), 500.
 */
export interface LibreTranslateOptions {
  /** Server root, e.g. "http://127.0.0.1:5000". */
  baseUrl: string;
  apiKey?: string | undefined;
  /** Time limit of one request. Default 60 s. */
  timeoutMs?: number;
  /** Largest text of one entry of `q`. Default 2000 characters. */
  maxChunkChars?: number;
  /** Most entries of `q` in one request (the server's `--batch-limit`). Default 16. */
  maxBatch?: number;
  /** Engine id, default "libretranslate". */
  id?: string;
  logger: Logger;
  fetch?: typeof fetch;
}

const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/** Milliseconds from a Retry-After header (seconds or an HTTP date). */
export function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  if (header.trim() !== "" && Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Our language for a code the server names ("en", "zh-Hans", "pt-BR"…), if we have it. */
function languageOf(code: string, byCode: ReadonlyMap<string, Language>): Language | undefined {
  const lower = code.toLowerCase();
  return byCode.get(lower) ?? byCode.get(lower.split(/[-_]/)[0] ?? "");
}

/** The service's error as one of our errors (plain words, the service's own reason after a colon). */
export function serviceFailure(who: string, status: number, body: string, headers: Headers): TranslationServiceError {
  const detail = serviceMessage(body);
  const said = detail === undefined ? "" : `: ${detail}`;
  const retry = retryAfterMs(headers.get("retry-after"));
  if (status === 401 || status === 403) return new TranslationServiceError("TRANSLATION_SERVICE_AUTH", finishSentence(`${who} refused the API key (HTTP ${status})${said}`), { status });
  if (status === 429 || status === 456) {
    return new TranslationServiceError("TRANSLATION_SERVICE_RATE_LIMITED", finishSentence(`${who} is rate limiting requests or the quota is used up (HTTP ${status})${said}`), {
      status,
      retryAfterMs: retry,
    });
  }
  if (status === 408 || status === 504) return new TranslationServiceError("TRANSLATION_SERVICE_TIMEOUT", finishSentence(`${who} timed out (HTTP ${status})${said}`), { status });
  if (status >= 500) return new TranslationServiceError("TRANSLATION_SERVICE_UNAVAILABLE", finishSentence(`${who} failed (HTTP ${status})${said}`), { status, retryAfterMs: retry });
  return new TranslationServiceError("TRANSLATION_SERVICE_REJECTED", finishSentence(`${who} refused the request (HTTP ${status})${said}`), { status });
}

/** One JSON exchange with a time limit; network failures, timeouts and error statuses become TranslationServiceErrors. */
export async function exchange(
  doFetch: typeof fetch,
  url: string,
  init: RequestInit,
  who: string,
  timeoutMs: number,
  outer: AbortSignal | undefined,
): Promise<{ json: unknown; status: number }> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = outer ? AbortSignal.any([outer, timeout]) : timeout;
  let response: Response;
  let body: string;
  try {
    response = await doFetch(url, { ...init, signal, redirect: "error" });
    const declared = Number(response.headers.get("content-length") ?? "0");
    if (declared > MAX_RESPONSE_BYTES) {
      await response.body?.cancel().catch(() => undefined);
      throw new TranslationServiceError("TRANSLATION_SERVICE_BAD_RESPONSE", `${who} sent an answer that is far too large.`, { status: response.status });
    }
    body = await response.text();
  } catch (error) {
    if (outer?.aborted) throw new TranslationError("TRANSLATION_CANCELLED", "Translation was cancelled.", { cause: error });
    if (timeout.aborted) throw new TranslationServiceError("TRANSLATION_SERVICE_TIMEOUT", `${who} did not answer within ${Math.round(timeoutMs / 1000)} seconds.`, { cause: error });
    if (error instanceof TranslationServiceError) throw error;
    throw new TranslationServiceError("TRANSLATION_SERVICE_UNAVAILABLE", `${who} could not be reached.`, { cause: error });
  }
  if (!response.ok) throw serviceFailure(who, response.status, body, response.headers);
  try {
    return { json: JSON.parse(body) as unknown, status: response.status };
  } catch (cause) {
    throw new TranslationServiceError("TRANSLATION_SERVICE_BAD_RESPONSE", `${who} answered with something that is not JSON.`, { status: response.status, cause });
  }
}

export function checkServiceUrl(baseUrl: string, what: string): string {
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch (cause) {
    throw new MtConfigError(`The ${what} address "${baseUrl}" is not a valid URL.`, { cause });
  }
  if (base.protocol !== "http:" && base.protocol !== "https:") throw new MtConfigError(`The ${what} address must start with http:// or https://.`);
  return `${base.origin}${base.pathname}`.replace(/\/+$/, "");
}

/**
 * Connects to a LibreTranslate server: reads its languages (the pairs it offers are those of our
 * languages it lists, each with its `targets`). Throws MtEngineUnavailableError when the server cannot
 * be read or offers none of our pairs.
 */
export async function createLibreTranslateEngine(options: LibreTranslateOptions): Promise<MtEngine> {
  const id = options.id ?? "libretranslate";
  const root = checkServiceUrl(options.baseUrl, "LibreTranslate");
  const who = `The LibreTranslate server at ${new URL(root).host}`;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const maxChunkChars = options.maxChunkChars ?? 2000;
  const maxBatch = options.maxBatch ?? 16;
  if (!(timeoutMs > 0)) throw new MtConfigError("The LibreTranslate time limit must be positive.");
  if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new MtConfigError("The LibreTranslate batch size must be a whole number of at least 1.");
  const doFetch = options.fetch ?? fetch;
  const log = options.logger.child({ component: "mt", engine: id });

  const byCode = new Map<string, Language>(LANGUAGES.map((l) => [LANGUAGE_CODES[l].toLowerCase(), l]));
  const codeOf = new Map<Language, string>();
  let listed: unknown;
  try {
    listed = (await exchange(doFetch, `${root}/languages`, { headers: { accept: "application/json" } }, who, timeoutMs, undefined)).json;
  } catch (error) {
    throw new MtEngineUnavailableError(`${who} did not list its languages: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (!Array.isArray(listed)) throw new MtEngineUnavailableError(`${who} answered GET /languages with something that is not a list of languages.`);
  const targetsOf = new Map<Language, Set<Language>>();
  for (const entry of listed as unknown[]) {
    if (!isRecord(entry) || typeof entry.code !== "string") continue;
    const source = languageOf(entry.code, byCode);
    if (!source) continue;
    if (!codeOf.has(source)) codeOf.set(source, entry.code);
    const targets = Array.isArray(entry.targets) ? entry.targets : [];
    const set = targetsOf.get(source) ?? new Set<Language>();
    for (const t of targets as unknown[]) {
      const target = typeof t === "string" ? languageOf(t, byCode) : undefined;
      if (target && target !== source) set.add(target);
    }
    targetsOf.set(source, set);
  }
  const pairs: MtPair[] = [];
  for (const source of LANGUAGES) for (const target of LANGUAGES) if (targetsOf.get(source)?.has(target) && codeOf.has(target)) pairs.push({ source, target, quality: "neural" });
  if (pairs.length === 0) throw new MtEngineUnavailableError(`${who} offers none of the languages this service speaks.`);
  const capabilities: MtCapabilities = { pairs, remote: true };
  const offered = new Set(pairs.map((p) => `${p.source}>${p.target}`));
  log.info({ pairs: pairs.length }, "LibreTranslate languages read");

  async function batch(texts: string[], source: Language, target: Language, signal: AbortSignal | undefined): Promise<string[]> {
    const { json, status } = await exchange(
      doFetch,
      `${root}/translate`,
      {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ q: texts, source: codeOf.get(source), target: codeOf.get(target), format: "text", ...(options.apiKey ? { api_key: options.apiKey } : {}) }),
      },
      who,
      timeoutMs,
      signal,
    );
    const out = isRecord(json) ? json.translatedText : undefined;
    if (!Array.isArray(out) || out.length !== texts.length || !out.every((t): t is string => typeof t === "string")) {
      throw new TranslationServiceError("TRANSLATION_SERVICE_BAD_RESPONSE", `${who} answered without one translation for each text it was sent.`, { status });
    }
    return out;
  }

  async function translate(request: TranslationRequest): Promise<string> {
    const { source, target } = request;
    if (source === target) return request.text;
    if (!offered.has(`${source}>${target}`)) throw new TranslationNotSupportedError(source, target, `${who} does not translate from ${source} to ${target}.`);
    if (request.signal?.aborted) throw new TranslationError("TRANSLATION_CANCELLED", "Translation was cancelled.", { cause: request.signal.reason });
    const plan = planChunks(normalizeTranslationInput(request.text), maxChunkChars);
    const texts = plan.chunks.map((c) => c.text);
    const translated: string[] = [];
    for (let i = 0; i < texts.length; i += maxBatch) translated.push(...(await batch(texts.slice(i, i + maxBatch), source, target, request.signal)));
    if (translated.some((t, i) => t.trim() === "" && (texts[i] ?? "").trim() !== "")) {
      throw new TranslationServiceError("TRANSLATION_SERVICE_BAD_RESPONSE", `${who} sent an empty translation.`);
    }
    return assembleChunks(plan, translated.map((t) => t.trim()));
  }

  return { id, capabilities: () => capabilities, translate };
}
