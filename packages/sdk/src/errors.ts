/**
 * Errors the SDK throws, one class per thing a caller handles differently. Every HTTP error answer
 * of the API is an `ApiError` (or a subclass) carrying the status and the parsed body.
 */
import type { components } from "./generated/api.ts";

/** One item of a 422 body: where (`loc`), what (`msg`, `type`), and the rejected `input`. */
export type ValidationItem = components["schemas"]["ValidationError"];

/** Base class of everything the SDK throws on purpose. */
export class VoicelocError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The API answered with an error status. `detail` is the body's `detail` when it is a string. */
export class ApiError extends VoicelocError {
  readonly status: number;
  readonly body: unknown;
  readonly detail: string | undefined;
  readonly method: string;
  readonly url: string;

  constructor(status: number, body: unknown, request: { method: string; url: string }, message?: string) {
    const detail = typeof (body as { detail?: unknown } | null)?.detail === "string" ? (body as { detail: string }).detail : undefined;
    super(message ?? `${request.method} ${pathOf(request.url)} answered ${status}${detail ? `: ${detail}` : ""}`);
    this.status = status;
    this.body = body;
    this.detail = detail;
    this.method = request.method;
    this.url = request.url;
  }
}

/** 422: the request was understood but refused; `items` says what, one entry per problem. */
export class ValidationError extends ApiError {
  readonly items: ValidationItem[];

  constructor(status: number, body: unknown, request: { method: string; url: string }) {
    const raw = (body as { detail?: unknown } | null)?.detail;
    const items = Array.isArray(raw) ? (raw as ValidationItem[]) : [];
    super(status, body, request, `${request.method} ${pathOf(request.url)} was refused (422):\n${formatValidationItems(items)}`);
    this.items = items;
  }
}

/** 401 or 403: the API key (or token) is missing, unknown or revoked. */
export class AuthenticationError extends ApiError {}

/** 404: unknown id (or one of another account), or an operation this server does not have. */
export class NotFoundError extends ApiError {}

/** 429: too many requests; `retryAfterSeconds` from the `Retry-After` header when given. */
export class RateLimitError extends ApiError {
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, body: unknown, request: { method: string; url: string }, retryAfter: string | null) {
    super(status, body, request);
    const seconds = retryAfter === null ? Number.NaN : Number(retryAfter);
    this.retryAfterSeconds = Number.isFinite(seconds) ? seconds : undefined;
  }
}

/** The service could not be reached (connection refused, DNS, reset) or the response broke off. */
export class ConnectionError extends VoicelocError {}

/** `waitFor` saw the task end in `failed`; `record` is the final record (see `task_error`). */
export class TaskFailedError extends VoicelocError {
  readonly record: { id: string; task_status: string; task_error?: string | null };

  constructor(record: { id: string; task_status: string; task_error?: string | null }) {
    super(`task ${record.id} failed: ${record.task_error ?? "no reason given"}`);
    this.record = record;
  }
}

/** `waitFor` gave up after `timeoutMs`; the task goes on on the server. */
export class WaitTimeoutError extends VoicelocError {
  readonly recordId: string;

  constructor(recordId: string, timeoutMs: number) {
    super(`task ${recordId} did not finish within ${Math.round(timeoutMs / 1000)} s (it goes on on the server)`);
    this.recordId = recordId;
  }
}

/** A webhook whose signature, timestamp or body does not verify. */
export class WebhookVerificationError extends VoicelocError {}

/** The error class for an HTTP error answer. */
export function errorFromResponse(status: number, body: unknown, request: { method: string; url: string }, headers?: Headers): ApiError {
  if (status === 422) return new ValidationError(status, body, request);
  if (status === 401 || status === 403) return new AuthenticationError(status, body, request);
  if (status === 404) return new NotFoundError(status, body, request);
  if (status === 429) return new RateLimitError(status, body, request, headers?.get("retry-after") ?? null);
  return new ApiError(status, body, request);
}

/** Reads an error response's body (JSON when it parses, else the text) and builds its error. */
export async function errorFromFetchResponse(response: Response, method: string): Promise<ApiError> {
  const text = await response.text().catch(() => "");
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  return errorFromResponse(response.status, body, { method, url: response.url }, response.headers);
}

/**
 * 422 items as readable lines: `body.source_language: Input should be 'French', … (got "Klingon")`.
 */
export function formatValidationItems(items: readonly ValidationItem[]): string {
  if (items.length === 0) return "  (no details given)";
  return items
    .map((item) => {
      const where = item.loc.length > 0 ? item.loc.join(".") : "request";
      const got = "input" in item && item.input !== undefined && typeof item.input !== "object" ? ` (got ${JSON.stringify(item.input)})` : "";
      return `  - ${where}: ${item.msg}${got}`;
    })
    .join("\n");
}

function pathOf(url: string): string {
  try {
    const u = new URL(url);
    return u.pathname;
  } catch {
    return url;
  }
}

/** The innermost cause of a fetch failure in a few words (`ECONNREFUSED 127.0.0.1:9`). */
export function describeCause(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 5; depth += 1) {
    const cause = (current as { cause?: unknown } | null)?.cause;
    if (cause === undefined || cause === null) break;
    current = cause;
  }
  if (current instanceof Error) {
    const code = (current as { code?: unknown }).code;
    return typeof code === "string" && !current.message.includes(code) ? `${code} ${current.message}` : current.message;
  }
  return String(current);
}
