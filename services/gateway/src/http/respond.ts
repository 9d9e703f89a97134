/**
 * The response path. @hono/node-server writes a response whose body is a string and whose headers
 * are a plain object in one go (status line, headers and body in a single write, Content-Length
 * computed from the string). Hono's own helpers (`c.json`, `c.header`) keep the header fields in a
 * WHATWG `Headers` object, which costs more than the rest of a small response to build, validate
 * and iterate, and setting a header or replacing `c.res` after the handler (a middleware after
 * `await next()`) turns the response into a streamed Web `Response`.
 *
 * So the fields every response of a request carries (`X-Request-Id`, the rate limit fields, a
 * list's `Link`) are kept in a plain record (`headerFields(c)`), and JSON answers are built by
 * `respond()` with that record. Responses built otherwise (docs, OpenAPI document, redirects,
 * downloads) get the fields once the handler is done (`applyHeaderFields`), off the fast path.
 *
 * A per-request middleware keeps the fast path by: adding response fields with
 * `headerFields(c)[name] = value` before the handler runs (never `c.header()`, whose fields a
 * `respond()` answer does not carry, nor anything on `c.res` after `await next()` but reading
 * `c.res.status`); reading request headers with `requestHeader(c, name)`; logging through a child
 * made once (see `unredactedChild` for fixed, secret-free fields), not a child per request.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Context, TypedResponse } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { JSONParsed } from "hono/utils/types";
import type { Principal } from "../auth/authenticator.ts";
import type { GatewayEnv } from "./context.ts";

/** The fields that say whose answer it is: every answer to a sandbox key says so (errors too), in the app and the fast path. */
export function principalFields(principal: Principal): Record<string, string> {
  return principal.mode === "sandbox" ? { "VoiceLoc-Mode": "sandbox" } : {};
}

/** The response header fields of this request (a plain record, filled in by the middlewares). */
export function headerFields(c: Context<GatewayEnv>): Record<string, string> {
  let fields = c.get("headerFields");
  if (fields === undefined) {
    fields = {};
    c.set("headerFields", fields);
  }
  return fields;
}

/**
 * A JSON response carrying the request's header fields (and `headers`, which win), on the fast path.
 * Typed like `c.json`, so the OpenAPI routes still check their bodies against their schemas.
 */
export function respond<T, S extends ContentfulStatusCode>(
  c: Context<GatewayEnv>,
  status: S,
  body: T,
  headers?: Record<string, string>,
): Response & TypedResponse<JSONParsed<T>, S, "json"> {
  return respondText(c, status, JSON.stringify(body), headers) as Response & TypedResponse<JSONParsed<T>, S, "json">;
}

/** `respond` for a body already serialised to JSON text. */
export function respondText(c: Context<GatewayEnv>, status: number, json: string, headers?: Record<string, string>): Response {
  const res = new Response(json, { status, headers: { ...c.get("headerFields"), ...headers, "content-type": "application/json" } });
  c.set("respondedWith", res);
  return res;
}

/** After the handler: a response not built by `respond` gets the request's header fields here. */
export function applyHeaderFields(c: Context<GatewayEnv>): void {
  const fields = c.get("headerFields");
  if (fields === undefined || c.res === c.get("respondedWith")) return;
  for (const name in fields) {
    const value = fields[name];
    if (value !== undefined) c.header(name, value);
  }
}

/**
 * A request header (name in lower case), as `c.req.header(name)` gives it: several fields of one
 * name joined with ", ". Served from Node's raw header list when the request came through
 * @hono/node-server, without building a `Headers` object.
 */
export function requestHeader(c: Context<GatewayEnv>, name: string): string | undefined {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const raw = incoming?.rawHeaders;
  return raw === undefined ? c.req.header(name) : rawHeader(raw, name);
}

/** `requestHeader` from Node's raw header list (`IncomingMessage.rawHeaders`): name in lower case. */
export function rawHeader(raw: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const key = raw[i] as string;
    if (key.length === name.length && key.toLowerCase() === name) {
      const field = trimHttpWhitespace(raw[i + 1] as string);
      value = value === undefined ? field : `${value}, ${field}`;
    }
  }
  return value;
}

function isHttpWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

const REQUEST_ID = /^[\w\-=]{1,255}$/;

/** The request's id: the client's `X-Request-Id` when it is 1–255 of `[A-Za-z0-9_=-]`, else a new UUID. */
export function requestIdOf(given: string | undefined): string {
  return given !== undefined && REQUEST_ID.test(given) ? given : randomUUID();
}

function trimHttpWhitespace(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isHttpWhitespace(value.charCodeAt(start))) start += 1;
  while (end > start && isHttpWhitespace(value.charCodeAt(end - 1))) end -= 1;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}
