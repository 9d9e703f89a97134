import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * Every code an HTTP problem may carry (closed: a new kind of problem is added here). One code per
 * status where the status says it all; 429 is always `too_many_requests`, whatever the limit.
 */
export type HttpProblemCode =
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "too_many_webhooks"
  | "payload_too_large"
  | "unsupported_media_type"
  | "validation"
  | "too_many_requests"
  | "capabilities_failed"
  | "synthesis_failed"
  | "cloning_failed"
  | "cover_failed"
  | "voices_failed"
  | "unavailable";

/**
 * Errors the HTTP edge knows how to answer. Anything else becomes a 500 with
 * a generic body (and a log line with the cause): a client's mistake is never a 500.
 */
export class HttpProblem extends Error {
  readonly status: ContentfulStatusCode;
  readonly code: HttpProblemCode;
  readonly headers: Record<string, string>;
  constructor(status: ContentfulStatusCode, code: HttpProblemCode, detail: string, options?: { headers?: Record<string, string>; cause?: unknown }) {
    super(detail, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "HttpProblem";
    this.status = status;
    this.code = code;
    this.headers = options?.headers ?? {};
  }
}

export const AUTH_REALM = 'Bearer realm="voiceloc"';

/**
 * A 401 with a `WWW-Authenticate` challenge built from constants only: the detail (which may
 * quote what the client sent, e.g. a token's `alg`) goes in the JSON body, never in a header,
 * so no client value can put CR/LF, NUL or non-Latin-1 text into a header.
 */
export class UnauthorizedError extends HttpProblem {
  constructor(detail: string, bearerError?: "invalid_token") {
    const challenge = bearerError ? `${AUTH_REALM}, error="${bearerError}"` : AUTH_REALM;
    super(401, "unauthorized", detail, { headers: { "WWW-Authenticate": challenge } });
    this.name = "UnauthorizedError";
  }
}

export class ForbiddenError extends HttpProblem {
  constructor(detail: string) {
    super(403, "forbidden", detail);
    this.name = "ForbiddenError";
  }
}

/**
 * 429 Too Many Requests, `{"detail": "..."}`: the one class of every 429 (the rate limit, the sandbox's
 * tasks in flight, open event streams). `Retry-After` (whole seconds) and any other header fields (the rate limit's
 * `RateLimit`, `RateLimit-Policy`) are answered with it.
 */
export class TooManyRequestsError extends HttpProblem {
  constructor(detail: string, retryAfterSeconds?: number, headers: Record<string, string> = {}) {
    const fields = retryAfterSeconds ? { "Retry-After": String(retryAfterSeconds), ...headers } : headers;
    super(429, "too_many_requests", detail, Object.keys(fields).length > 0 ? { headers: fields } : undefined);
    this.name = "TooManyRequestsError";
  }
}

export class NotFoundError extends HttpProblem {
  constructor(detail = "Not Found") {
    super(404, "not_found", detail);
    this.name = "NotFoundError";
  }
}

export class ConflictError extends HttpProblem {
  constructor(detail: string) {
    super(409, "conflict", detail);
    this.name = "ConflictError";
  }
}

export class ServiceUnavailableError extends HttpProblem {
  constructor(detail: string, retryAfterSeconds?: number) {
    super(503, "unavailable", detail, retryAfterSeconds ? { headers: { "Retry-After": String(retryAfterSeconds) } } : undefined);
    this.name = "ServiceUnavailableError";
  }
}

/** A 422 for one value, in the Pydantic item shape (`value_error` unless another type is given). */
export class ValueError422 extends HttpProblem {
  readonly items: Array<Record<string, unknown>>;
  constructor(loc: Array<string | number>, message: string, input: unknown, type = "value_error") {
    super(422, "validation", message);
    this.name = "ValueError422";
    // FastAPI writes a ValueError in ctx through jsonable_encoder as `{}`.
    this.items = [
      type === "value_error"
        ? { type, loc, msg: `Value error, ${message}`, input, ctx: { error: {} } }
        : { type, loc, msg: message, input },
    ];
  }

  /** Several value errors at once (one item each). */
  static many(problems: Array<{ loc: Array<string | number>; message: string; input: unknown }>): ValueError422 {
    const first = problems[0];
    const error = new ValueError422(first?.loc ?? ["body"], first?.message ?? "invalid", first?.input);
    error.items.splice(0, 1, ...problems.map((p) => ({ type: "value_error", loc: p.loc, msg: `Value error, ${p.message}`, input: p.input, ctx: { error: {} } })));
    return error;
  }
}
