import { readBoundedText } from "../http-body.ts";
import { LANGUAGE_CODES } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import { LANGUAGES, type Language } from "../languages.ts";
import { isRecord } from "../openai-common.ts";
import { assembleChunks, normalizeTranslationInput, planChunks } from "./chunk.ts";
import { finishSentence, MtConfigError, MtEngineUnavailableError, TranslationError, TranslationNotSupportedError, TranslationServiceError } from "./errors.ts";
import { checkServiceUrl, retryAfterMs } from "./libretranslate.ts";
import type { MtCapabilities, MtEngine, MtPair, TranslationRequest } from "./types.ts";

/**
 * Adapter for the DeepL API (https://developers.deepl.com), version 2:
 * `GET /v2/languages?type=source` and `?type=target` list the languages (`[{ language, name }]`;
 * source codes are bare, `EN`, `PT`; some targets only come as variants, `EN-US`/`EN-GB`,
 * `PT-BR`/`PT-PT`); `POST /v2/translate` takes JSON `{ text: [...], source_lang, target_lang }`
 * (at most 50 texts and 128 KiB per request) and answers `{ translations: [{ text }] }` in the same
 * order. Every request carries `Authorization: DeepL-Auth-Key <key>`. Errors come as
 * `{ "message": "…" }` (sometimes with `detail`): 400 a bad parameter (a language it does not have),
 * 403 the key, 413 a request too large, 429 too many requests (Retry-After), 456 the character quota
 * used up, 5xx its own trouble.
 */
export interface DeepLOptions {
  apiKey: string;
  /** API root; default by the key: a free key (ending in `:fx`) → https://api-free.deepl.com, else https://api.deepl.com. */
  baseUrl?: string | undefined;
  /** Time limit of one request. Default 60 s. */
  timeoutMs?: number;
  /** Largest text of one entry of `text`. Default 5000 characters (DeepL translates whole paragraphs best). */
  maxChunkChars?: number;
  /** Most entries of `text` in one request: 1–50 (DeepL's limit). Default 50. */
  maxBatch?: number;
  /** Largest JSON body of one request in bytes; DeepL refuses more than 128 KiB. Default 120 KiB. */
  maxRequestBytes?: number;
  /** The target variant asked for per language, before DEEPL_TARGET_VARIANTS (e.g. `{ English: "EN-GB" }`). */
  targetVariants?: Partial<Record<Language, string>> | undefined;
  /**
   * After DeepL refuses the key (403) or says the quota is used up (456), further translations fail at
   * once with that reason for this long, without asking DeepL (the registry hands them to the next
   * engine). Default 5 minutes.
   */
  refusalHoldMs?: number;
  /** Engine id, default "deepl". */
  id?: string;
  logger: Logger;
  fetch?: typeof fetch;
}

export const DEEPL_FREE_BASE_URL = "https://api-free.deepl.com";
export const DEEPL_PRO_BASE_URL = "https://api.deepl.com";
/** DeepL's own limits of one `POST /v2/translate`. */
export const DEEPL_MAX_TEXTS = 50;
export const DEEPL_MAX_REQUEST_BYTES = 128 * 1024;

/**
 * The target variant asked for when DeepL lists several for one of our languages, best first: the
 * variants our default voices speak (American English, Brazilian Portuguese: espeak-ng `en-us` and
 * `pt-br`), Simplified Chinese (what the Chinese voices read). Languages not listed here use the
 * bare code when DeepL lists it, else the first variant it lists.
 */
export const DEEPL_TARGET_VARIANTS: Partial<Record<Language, readonly string[]>> = {
  English: ["EN-US", "EN-GB"],
  Portuguese: ["PT-BR", "PT-PT"],
  Chinese: ["ZH-HANS", "ZH"],
};

/** DeepL's address for a key: free keys end in `:fx` and are served by api-free.deepl.com only. */
export function deeplBaseUrl(apiKey: string): string {
  return apiKey.trim().endsWith(":fx") ? DEEPL_FREE_BASE_URL : DEEPL_PRO_BASE_URL;
}

const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
const WHO = "DeepL";

/** DeepL's reason from an error body (`{ message, detail }`), in one line; undefined for none or an HTML page. */
function deeplReason(body: string): string | undefined {
  let text: string | undefined;
  try {
    const json: unknown = JSON.parse(body);
    if (isRecord(json)) {
      const parts = [json.message, json.detail].filter((p): p is string => typeof p === "string" && p.trim() !== "");
      text = parts.length > 0 ? parts.join(": ") : undefined;
    }
  } catch {
    text = body.trimStart().startsWith("<") ? undefined : body;
  }
  const clean = text?.replace(/[\u0000-\u001F\u007F]+/g, " ").trim();
  if (clean === undefined || clean === "") return undefined;
  return clean.length > 300 ? `${clean.slice(0, 300)}…` : clean;
}

/** DeepL's error status as one of our errors, in plain words with DeepL's reason after a colon. */
export function deeplFailure(status: number, body: string, headers: Headers, pair?: { source: Language; target: Language }): TranslationServiceError {
  const reason = deeplReason(body);
  const said = reason === undefined ? "" : `: ${reason}`;
  const retry = retryAfterMs(headers.get("retry-after"));
  const words = (text: string) => finishSentence(`${text} (HTTP ${status})${said}`);
  // A refused key or a used-up quota does not pass within a task's retries: AUTH fails the task at once
  // (after the next engine for the pair, if any, was tried), saying so.
  if (status === 401 || status === 403) return new TranslationServiceError("TRANSLATION_SERVICE_AUTH", words(`${WHO} refused the API key`), { status });
  if (status === 456) {
    return new TranslationServiceError("TRANSLATION_SERVICE_AUTH", words(`${WHO} says the account's character quota is used up until its next billing period or a higher cost limit`), { status });
  }
  if (status === 429 || status === 529) return new TranslationServiceError("TRANSLATION_SERVICE_RATE_LIMITED", words(`${WHO} is busy: too many requests`), { status, retryAfterMs: retry });
  if (status === 408 || status === 504) return new TranslationServiceError("TRANSLATION_SERVICE_TIMEOUT", words(`${WHO} timed out`), { status });
  if (status >= 500) return new TranslationServiceError("TRANSLATION_SERVICE_UNAVAILABLE", words(`${WHO} failed`), { status, retryAfterMs: retry });
  if (status === 413) return new TranslationServiceError("TRANSLATION_SERVICE_REJECTED", words(`${WHO} refused a request as too large`), { status });
  if (status === 400 && pair && /(source|target)_lang/i.test(reason ?? "")) {
    // Its language list changed since start: another engine may still translate the pair.
    return new TranslationServiceError("TRANSLATION_SERVICE_REJECTED", words(`${WHO} does not translate from ${pair.source} to ${pair.target} now`), { status });
  }
  return new TranslationServiceError("TRANSLATION_SERVICE_REJECTED", words(`${WHO} refused the request`), { status });
}

/** Reads at most `limit` bytes of a response body as text; more is a bad response. */
async function readBounded(response: Response, limit: number): Promise<string> {
  const text = await readBoundedText(response, limit);
  if (text === undefined) throw new TranslationServiceError("TRANSLATION_SERVICE_BAD_RESPONSE", `${WHO} sent an answer that is far too large.`, { status: response.status });
  return text;
}

/** A listed code for one of our languages: "EN", "en-us", "PT-BR", "ZH-HANS" all name their base language. */
function baseOf(code: string): string {
  return code.toLowerCase().split(/[-_]/)[0] ?? "";
}

/**
 * Connects to DeepL: reads its source and target languages (the pairs it offers are every listed
 * source into every listed target among our languages, as neural translation). Throws
 * MtEngineUnavailableError when the lists cannot be read (a refused key, an outage) or hold none of
 * our pairs.
 */
export async function createDeepLEngine(options: DeepLOptions): Promise<MtEngine> {
  const id = options.id ?? "deepl";
  const apiKey = options.apiKey.trim();
  if (apiKey === "") throw new MtConfigError("DeepL needs an API key.");
  const root = checkServiceUrl(options.baseUrl ?? deeplBaseUrl(apiKey), "DeepL");
  const timeoutMs = options.timeoutMs ?? 60_000;
  const maxChunkChars = options.maxChunkChars ?? 5000;
  const maxBatch = options.maxBatch ?? DEEPL_MAX_TEXTS;
  const maxRequestBytes = options.maxRequestBytes ?? 120 * 1024;
  const refusalHoldMs = options.refusalHoldMs ?? 5 * 60_000;
  if (!(timeoutMs > 0)) throw new MtConfigError("The DeepL time limit must be positive.");
  if (!Number.isInteger(maxBatch) || maxBatch < 1 || maxBatch > DEEPL_MAX_TEXTS) throw new MtConfigError(`The DeepL batch size must be a whole number from 1 to ${DEEPL_MAX_TEXTS}.`);
  if (!(maxRequestBytes >= 1024 && maxRequestBytes <= DEEPL_MAX_REQUEST_BYTES)) throw new MtConfigError(`The DeepL request size must be from 1 KiB to ${DEEPL_MAX_REQUEST_BYTES / 1024} KiB.`);
  if (!Number.isInteger(maxChunkChars) || maxChunkChars < 100) throw new MtConfigError("The DeepL chunk size must be a whole number of at least 100 characters.");
  const doFetch = options.fetch ?? fetch;
  const log = options.logger.child({ component: "mt", engine: id });
  const headers = { authorization: `DeepL-Auth-Key ${apiKey}`, accept: "application/json", "user-agent": "voiceloc" };

  /** One JSON exchange with a time limit; network failures, timeouts and error statuses become TranslationServiceErrors. */
  async function call(path: string, init: RequestInit, signal: AbortSignal | undefined, pair?: { source: Language; target: Language }): Promise<{ json: unknown; status: number }> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let response: Response;
    let body: string;
    try {
      response = await doFetch(`${root}${path}`, { ...init, headers: { ...headers, ...(init.headers as Record<string, string> | undefined) }, signal: combined, redirect: "error" });
      body = await readBounded(response, MAX_RESPONSE_BYTES);
    } catch (error) {
      if (signal?.aborted) throw new TranslationError("TRANSLATION_CANCELLED", "Translation was cancelled.", { cause: error });
      if (timeout.aborted) throw new TranslationServiceError("TRANSLATION_SERVICE_TIMEOUT", `${WHO} did not answer within ${Math.round(timeoutMs / 1000)} seconds.`, { cause: error });
      if (error instanceof TranslationServiceError) throw error;
      throw new TranslationServiceError("TRANSLATION_SERVICE_UNAVAILABLE", `${WHO} could not be reached at ${new URL(root).host}.`, { cause: error });
    }
    if (!response.ok) throw deeplFailure(response.status, body, response.headers, pair);
    try {
      return { json: JSON.parse(body) as unknown, status: response.status };
    } catch (cause) {
      throw new TranslationServiceError("TRANSLATION_SERVICE_BAD_RESPONSE", `${WHO} answered with something that is not JSON.`, { status: response.status, cause });
    }
  }

  async function listed(type: "source" | "target"): Promise<string[]> {
    let json: unknown;
    try {
      json = (await call(`/v2/languages?type=${type}`, { method: "GET" }, undefined)).json;
    } catch (error) {
      throw new MtEngineUnavailableError(`${WHO} did not list its ${type} languages: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    if (!Array.isArray(json)) throw new MtEngineUnavailableError(`${WHO} answered GET /v2/languages?type=${type} with something that is not a list of languages.`);
    return json.flatMap((entry: unknown) => (isRecord(entry) && typeof entry.language === "string" && entry.language.trim() !== "" ? [entry.language.trim()] : []));
  }

  const [sources, targets] = [await listed("source"), await listed("target")];
  const byBase = new Map<string, Language>(LANGUAGES.map((l) => [LANGUAGE_CODES[l].toLowerCase(), l]));
  const sourceCode = new Map<Language, string>();
  for (const code of sources) {
    const language = byBase.get(baseOf(code));
    // A bare code ("EN") wins over a variant for the source.
    if (language && (!sourceCode.has(language) || !code.includes("-"))) sourceCode.set(language, code);
  }
  const targetCode = new Map<Language, string>();
  for (const language of LANGUAGES) {
    const base = LANGUAGE_CODES[language].toUpperCase();
    const offered = targets.filter((code) => baseOf(code) === base.toLowerCase());
    if (offered.length === 0) continue;
    const wanted = [options.targetVariants?.[language], ...(DEEPL_TARGET_VARIANTS[language] ?? []), base].filter((c): c is string => c !== undefined);
    const pick = wanted.map((w) => offered.find((o) => o.toUpperCase() === w.toUpperCase())).find((o) => o !== undefined) ?? offered[0];
    if (pick !== undefined) targetCode.set(language, pick);
  }
  const pairs: MtPair[] = [];
  for (const source of LANGUAGES) for (const target of LANGUAGES) if (source !== target && sourceCode.has(source) && targetCode.has(target)) pairs.push({ source, target, quality: "neural" });
  if (pairs.length === 0) throw new MtEngineUnavailableError(`${WHO} offers none of the languages this service speaks.`);
  const capabilities: MtCapabilities = { pairs, remote: true };
  const offered = new Set(pairs.map((p) => `${p.source}>${p.target}`));
  log.info({ pairs: pairs.length, targets: Object.fromEntries(targetCode) }, "DeepL languages read");

  /** Set while DeepL refused the key, the quota or asked us to wait: translations fail at once until `until`. */
  let hold: { until: number; error: TranslationServiceError } | undefined;
  function held(): TranslationServiceError | undefined {
    if (hold === undefined) return undefined;
    const left = hold.until - Date.now();
    if (left <= 0) {
      hold = undefined;
      return undefined;
    }
    const { error } = hold;
    return new TranslationServiceError(error.code, error.message, { status: error.status, retryAfterMs: error.retryAfterMs === undefined ? undefined : left, cause: error });
  }
  function remember(error: unknown): void {
    if (!(error instanceof TranslationServiceError)) return;
    if (error.code === "TRANSLATION_SERVICE_AUTH") hold = { until: Date.now() + refusalHoldMs, error };
    else if (error.code === "TRANSLATION_SERVICE_RATE_LIMITED" && error.retryAfterMs !== undefined && error.retryAfterMs > 0) {
      hold = { until: Date.now() + Math.min(error.retryAfterMs, refusalHoldMs), error };
    } else return;
    log.warn({ reason: error.message, holdMs: hold.until - Date.now() }, "DeepL refused; translations go to the next engine meanwhile");
  }

  async function batch(texts: string[], source: Language, target: Language, signal: AbortSignal | undefined): Promise<string[]> {
    const { json, status } = await call(
      "/v2/translate",
      { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ text: texts, source_lang: sourceCode.get(source), target_lang: targetCode.get(target) }) },
      signal,
      { source, target },
    );
    const out = isRecord(json) && Array.isArray(json.translations) ? (json.translations as unknown[]).map((t) => (isRecord(t) ? t.text : undefined)) : undefined;
    if (!out || out.length !== texts.length || !out.every((t): t is string => typeof t === "string")) {
      throw new TranslationServiceError("TRANSLATION_SERVICE_BAD_RESPONSE", `${WHO} answered without one translation for each text it was sent.`, { status });
    }
    return out;
  }

  /** Groups texts into requests of at most `maxBatch` texts and `maxRequestBytes` of JSON. */
  function batches(texts: string[], source: Language, target: Language): string[][] {
    const overhead = Buffer.byteLength(JSON.stringify({ text: [], source_lang: sourceCode.get(source), target_lang: targetCode.get(target) }));
    const groups: string[][] = [];
    let group: string[] = [];
    let size = overhead;
    for (const text of texts) {
      const bytes = Buffer.byteLength(JSON.stringify(text)) + 1;
      if (group.length > 0 && (group.length >= maxBatch || size + bytes > maxRequestBytes)) {
        groups.push(group);
        group = [];
        size = overhead;
      }
      group.push(text);
      size += bytes;
    }
    if (group.length > 0) groups.push(group);
    return groups;
  }

  async function translate(request: TranslationRequest): Promise<string> {
    const { source, target } = request;
    if (source === target) return request.text;
    if (!offered.has(`${source}>${target}`)) throw new TranslationNotSupportedError(source, target, `${WHO} does not translate from ${source} to ${target}.`);
    if (request.signal?.aborted) throw new TranslationError("TRANSLATION_CANCELLED", "Translation was cancelled.", { cause: request.signal.reason });
    const refused = held();
    if (refused) throw refused;
    const plan = planChunks(normalizeTranslationInput(request.text), maxChunkChars);
    const texts = plan.chunks.map((c) => c.text);
    const translated: string[] = [];
    try {
      for (const group of batches(texts, source, target)) translated.push(...(await batch(group, source, target, request.signal)));
    } catch (error) {
      remember(error);
      throw error;
    }
    if (translated.some((t, i) => t.trim() === "" && (texts[i] ?? "").trim() !== "")) {
      throw new TranslationServiceError("TRANSLATION_SERVICE_BAD_RESPONSE", `${WHO} sent an empty translation.`);
    }
    return assembleChunks(plan, translated.map((t) => t.trim()));
  }

  return { id, capabilities: () => capabilities, translate };
}
