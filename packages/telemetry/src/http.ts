/**
 * HTTP metrics and tracing for Hono apps, and the `/metrics` endpoint.
 *
 * The middleware is on every request's path, so it is kept to one histogram observe: it reads the
 * matched route pattern (never the raw path, whose ids would explode the series) and the status
 * after the handler, touches neither the response body nor its headers (the node server's fast
 * response path stays intact), and finds the histogram child in nested maps (no key string built).
 */
import { timingSafeEqual } from "node:crypto";
import type { Context, MiddlewareHandler } from "hono";
import { HonoRequest } from "hono/request";
import { matchedRoutes } from "hono/route";
import type { HistogramChild } from "./histogram.ts";
import { enableProcessMetrics, httpRequestDuration, scrape } from "./metrics.ts";
import { SpanKind, endSpan, startSpan, tracingEnabled, withSpan } from "./trace.ts";
import { context, propagation } from "@opentelemetry/api";

/**
 * Counts and times requests answered outside a Hono app (the gateway's fast record reads) in the
 * series `httpMetrics` uses, for one method, route (the pattern Hono would have matched) and status;
 * the series is found once, on first use.
 */
export function httpRequestObserver(method: string, route: string, status: number): (seconds: number) => void {
  let series: Child | undefined;
  return (seconds) => (series ??= child(method, route, status)).observe(seconds);
}

/** Route label of a request no route matched (404, 405): one series, whatever the path. */
export const UNMATCHED_ROUTE = "(unmatched)";

type Child = HistogramChild;
const children = new Map<string, Map<string, Map<number, Child>>>();

function child(method: string, route: string, status: number): Child {
  let byMethod = children.get(route);
  if (byMethod === undefined) children.set(route, (byMethod = new Map()));
  let byStatus = byMethod.get(method);
  if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
  let found = byStatus.get(status);
  if (found === undefined) byStatus.set(status, (found = httpRequestDuration.labels(method, route, String(status))));
  return found;
}

interface RouterRoute {
  path?: unknown;
  method?: unknown;
}
type MatchEntry = [[unknown, RouterRoute], unknown];
/**
 * Hono keeps the router's match on the request under a private symbol; reading it gives the matched
 * routes without the array `matchedRoutes(c)` (and `c.req.routePath`) map on every call. Found once;
 * when a Hono version lays it out otherwise, the public `matchedRoutes(c)` is used instead.
 */
const MATCH_RESULT: symbol | undefined = Object.getOwnPropertySymbols(HonoRequest.prototype).find(
  (s) => typeof Object.getOwnPropertyDescriptor(HonoRequest.prototype, s)?.get === "function",
);

/** A route handler, not middleware (`use` registers for the method ALL). */
function routeOf(route: RouterRoute | undefined): string | undefined {
  return route !== undefined && route.method !== "ALL" && typeof route.path === "string" ? route.path : undefined;
}

/**
 * The pattern of the route the request matched (`/v1/audio_books/:audio_book_id`), also when a
 * middleware answered before it (a 401, a 429); UNMATCHED_ROUTE when only middleware matched (the
 * not-found handler's 404 or 405).
 */
export function matchedRoute(c: Context): string {
  const entries = MATCH_RESULT === undefined ? undefined : (c.req as unknown as Record<symbol, [MatchEntry[]] | undefined>)[MATCH_RESULT]?.[0];
  if (Array.isArray(entries)) {
    for (let i = entries.length - 1; i >= 0; i -= 1) {
      const path = routeOf(entries[i]?.[0]?.[1]);
      if (path !== undefined) return path;
    }
    return UNMATCHED_ROUTE;
  }
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i -= 1) {
    const path = routeOf(routes[i]);
    if (path !== undefined) return path;
  }
  return UNMATCHED_ROUTE;
}

/**
 * Counts and times every request by method, route pattern and status. With tracing on, each request
 * is a server span (continuing an incoming `traceparent`), active while the handlers run.
 */
export function httpMetrics(): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    if (!tracingEnabled()) {
      try {
        await next();
      } finally {
        child(c.req.method, matchedRoute(c), c.res.status).observe((performance.now() - started) / 1_000);
      }
      return;
    }
    const parent = c.req.header("traceparent") ? propagation.extract(context.active(), { traceparent: c.req.header("traceparent"), tracestate: c.req.header("tracestate") }) : context.active();
    const span = startSpan(`${c.req.method}`, { kind: SpanKind.SERVER, parent, attributes: { "http.request.method": c.req.method, "url.path": c.req.path } });
    let failure: unknown;
    try {
      await withSpan(span, next);
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      const route = matchedRoute(c);
      const status = c.res.status;
      child(c.req.method, route, status).observe((performance.now() - started) / 1_000);
      if (span !== undefined) {
        span.updateName(`${c.req.method} ${route}`);
        span.setAttributes({ "http.route": route, "http.response.status_code": status });
        endSpan(span, failure ?? (status >= 500 ? new Error(`HTTP ${status}`) : undefined));
      }
    }
  };
}

export interface MetricsEndpointOptions {
  /** When set, a scrape must send `Authorization: Bearer <token>` (401 otherwise). */
  token?: string | undefined;
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `GET /metrics`: every series of this process in the Prometheus text format. */
export function metricsHandler(options: MetricsEndpointOptions = {}): (c: Context) => Promise<Response> {
  enableProcessMetrics();
  const expected = options.token;
  return async (c) => {
    if (expected !== undefined) {
      const header = c.req.header("authorization") ?? "";
      const given = header.toLowerCase().startsWith("bearer ") ? header.slice(7).trim() : "";
      if (!sameSecret(given, expected)) {
        return c.json({ detail: "Metrics need Authorization: Bearer <METRICS_TOKEN>." }, 401, { "WWW-Authenticate": 'Bearer realm="metrics"' });
      }
    }
    const { contentType, body } = await scrape();
    return c.body(body, 200, { "Content-Type": contentType, "Cache-Control": "no-store" });
  };
}

