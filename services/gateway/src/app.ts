import { HTTPException } from "hono/http-exception";
import type { Context } from "hono";
import { requestLineWriter, withLogContext, type Logger } from "@voiceloc/log";
import { METHODS_WITH_BODY, parseJson, limitBody } from "./http/body.ts";
import { applyHeaderFields, headerFields, principalFields, requestHeader, requestIdOf, respond, respondText } from "./http/respond.ts";
import { CLIENT_CLOSED_REQUEST, clientClosedRequest } from "./http/client-closed.ts";
import { requestLog, type GatewayApp, type GatewayEnv } from "./http/context.ts";
import { HttpProblem, ValueError422 } from "./http/errors.ts";
import { boundedItems } from "./http/limits.ts";
import { KIND_LIST } from "./records/kinds.ts";
import { recordRoutes } from "./records/routes.ts";
import { fileRoutes } from "./records/files.ts";
import { streamRoutes } from "./records/stream.ts";
import { eventRoutes } from "./records/events.ts";
import { speechRoutes } from "./speech/routes.ts";
import { isUploadBodyPath, uploadRoutes } from "./uploads/routes.ts";
import { DEFAULT_API_CONTACT_NAME, DEFAULT_API_LICENSE } from "@voiceloc/config";
import { createRouter } from "./http/router.ts";
import { API_DESCRIPTION } from "./operations/openapi-description.ts";
import { docsRoutes } from "./operations/docs.ts";
import { healthRoutes } from "./operations/health.ts";
import { meterRequest } from "./http/rate-limit.ts";
import { httpMetrics, metricsHandler } from "@voiceloc/telemetry";
import { dashboardRoutes } from "./dashboard/routes.ts";
import { CLONES_TAG, cloneRoutes } from "./clones/routes.ts";
import { LEXICONS_TAG, lexiconRoutes } from "./lexicons/routes.ts";
import { WEBHOOKS_TAG, documentWebhookEvents, webhookRoutes } from "./webhooks/routes.ts";
import type { GatewayDeps } from "./deps.ts";

export function createApp(deps: GatewayDeps): GatewayApp {
  const app = createRouter();

  // Requests by route pattern and status, timed (and traced when tracing is on); GET /metrics for Prometheus.
  if (deps.metrics !== false) {
    app.use("*", httpMetrics());
    app.get("/metrics", metricsHandler({ token: deps.metricsToken }));
  }
  // One middleware for the request id and the request line: a per-request logger child is made only
  // when something logs through it (requestLog), and the line itself skips the redaction pass (its
  // fields are fixed and hold no secret). Every line written while the request is served, by any
  // component (store, bus, engines), carries its id (withLogContext).
  const requestLine = requestLineWriter(deps.logger);
  app.use("*", async (c, next) => {
    const id = requestIdOf(requestHeader(c, "x-request-id"));
    c.set("requestId", id);
    c.set("headerFields", { "X-Request-Id": id });
    const started = performance.now();
    await withLogContext({ requestId: id }, next);
    applyHeaderFields(c);
    const ms = Math.round((performance.now() - started) * 10) / 10;
    const status = c.res.status;
    if (status === CLIENT_CLOSED_REQUEST) {
      // not a server error, and the one line of a request its client abandoned (no stack)
      requestLog(c, deps.logger).info({ method: c.req.method, path: c.req.path, status, ms, account: c.get("principal")?.accountId }, "client closed the request");
      return;
    }
    requestLine({ requestId: id, method: c.req.method, path: c.req.path, status, ms, account: c.get("principal")?.accountId });
  });

  // Authentication first (401 before 422), then the credential's request rate, for every /v1 operation.
  const limiter = deps.rateLimiter;
  app.use("/v1/*", async (c, next) => {
    // Signed downloads carry their own credential (the signature) and are not metered.
    if (c.req.path.startsWith("/v1/files/")) return next();
    const principal = await deps.authenticator.authenticate({
      apiKey: requestHeader(c, "api-key"),
      authorization: requestHeader(c, "authorization"),
    });
    c.set("principal", principal);
    // every response to a sandbox key says so, errors included
    Object.assign(headerFields(c), principalFields(principal));
    if (limiter) await meterRequest(limiter, c);
    await next();
  });
  // Bodies are read (bounded, JSON parsed once) only by the methods that carry one. Not the upload's:
  // POST /v1/uploads streams its own body to the blob store under UPLOAD_MAX_BYTES, any content type.
  const bodyLimit = limitBody(deps.maxBodyBytes);
  const jsonBody = parseJson();
  app.on([...METHODS_WITH_BODY], "/v1/*", (c, next) => (isUploadBodyPath(c.req.path) ? next() : bodyLimit(c, next)), (c, next) =>
    isUploadBodyPath(c.req.path) ? next() : jsonBody(c, next),
  );

  app.openAPIRegistry.registerComponent("securitySchemes", "APIKeyHeader", {
    type: "apiKey",
    in: "header",
    name: "API-KEY",
    description: "An API key of the calling account.",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "HTTPBearer", {
    type: "http",
    scheme: "bearer",
    description: "An API key, or an access token (JWT, HS256/RS256/ES256) whose `sub` is the account (its live space: a `sandbox:…` sub is refused).",
  });

  app.route("/", recordRoutes(deps));
  app.route("/", speechRoutes(deps));
  if (deps.clones) app.route("/", cloneRoutes(deps, deps.clones));
  app.route("/", lexiconRoutes(deps));
  app.route("/", eventRoutes(deps));
  if (deps.uploads) app.route("/", uploadRoutes(deps, deps.uploads));
  // Audio book streams (signed like downloads, one signature for a book's playlist and parts) before the downloads.
  if (deps.files) app.route("/", streamRoutes(deps.files.blobs, deps.files.secret));
  if (deps.files) app.route("/", fileRoutes(deps.files.blobs, deps.files.secret));
  if (deps.webhooks) {
    app.route("/", webhookRoutes(deps, deps.webhooks));
    documentWebhookEvents(app);
  }

  if (deps.dashboard) app.route("/", dashboardRoutes(deps, deps.dashboard));

  app.route("/", healthRoutes(deps));

  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "Voice Localization Service",
      version: "0.1.0",
      description: API_DESCRIPTION,
      contact: deps.apiInfo?.contact ?? { name: DEFAULT_API_CONTACT_NAME },
      license: deps.apiInfo?.license ?? { ...DEFAULT_API_LICENSE },
    },
    servers: [{ url: deps.publicBaseUrl, description: "This deployment (its PUBLIC_BASE_URL)." }],
    tags: [
      ...KIND_LIST.map(({ tag, tagDescription }) => ({ name: tag, description: tagDescription })),
      { name: "Speech", description: "Speech synthesis on demand, the voices it offers and what the engines can do." },
      ...(deps.clones ? [CLONES_TAG] : []),
      LEXICONS_TAG,
      { name: "Events", description: "Live progress of audio books, voice streams and subtitle jobs over Server-Sent Events." },
      ...(deps.webhooks ? [WEBHOOKS_TAG] : []),
      { name: "Uploads", description: "Files stored for this account's own tasks (`upload:<id>`), deleted when they expire." },
    ],
  });
  app.route("/", docsRoutes({ title: "Voice Localization Service API", openapiUrl: "/openapi.json" }));

  const allowed = allowedMethodsIndex(app);
  app.notFound((c) => {
    const methods = allowed(c.req.path);
    if (methods.length > 0) {
      return respond(c, 405, { detail: "Method Not Allowed" }, { Allow: methods.join(", ") });
    }
    // As FastAPI (Starlette's redirect_slashes): a path that is a route's once its trailing slash is
    // added or removed (`/v1/audio_books`, `/v1/voices/streams/`) gets a 307 there, query kept,
    // whatever the method (a 307 keeps it). Only a registered route's path is ever a target, and it
    // is written as the request spelled it (percent-encoded), so the Location field holds only ASCII.
    const url = new URL(c.req.url);
    const other = url.pathname.endsWith("/") ? url.pathname.replace(/\/+$/, "") : `${url.pathname}/`;
    if (other !== "" && allowed(other).length > 0) return c.redirect(`${other}${url.search}`, 307);
    return respond(c, 404, { detail: "Not Found" });
  });

  app.onError((error, c) => errorResponse(error, c, requestLog(c, deps.logger)));
  return app;
}

function errorResponse(error: Error, c: Context<GatewayEnv>, log: Logger): Response {
  // The client closed the connection before its request arrived whole: nobody reads an answer, and
  // nothing was kept (each route stores only what it read completely). Counted as 499, not as a 5xx.
  if (clientClosedRequest(c, error)) return respondText(c, CLIENT_CLOSED_REQUEST, JSON.stringify({ detail: "Client closed the request" }));
  if (error instanceof ValueError422) {
    return respond(c, 422, { detail: boundedItems(error.items) });
  }
  if (error instanceof HttpProblem) {
    return respond(c, error.status, { detail: error.message }, safeHeaders(error.headers, log));
  }
  if (error instanceof HTTPException) {
    const status = error.status;
    const detail =
      status === 415 ? "Unsupported Media Type: send the body as application/json" : error.message || "Bad Request";
    return respond(c, status, { detail });
  }
  log.error({ err: error }, "unhandled error");
  return respond(c, 500, { detail: "Internal Server Error" });
}

const HEADER_VALUE = /^[\x20-\x7e\t]*$/;

/**
 * Only visible-ASCII header values leave the edge: a value that could split a header (CR/LF), hold
 * NUL or a non-Latin-1 character (which would make the response itself throw) is dropped, logged.
 */
function safeHeaders(headers: Record<string, string>, log: Logger): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (HEADER_VALUE.test(value)) out[name] = value;
    else log.error({ header: name }, "unsafe header value dropped from an error response");
  }
  return out;
}

/**
 * Path templates of the registered routes → the methods each allows (for 405 + Allow), matched
 * exactly: a trailing slash more or less is another path (a 307 to the route's, see notFound).
 */
function allowedMethodsIndex(app: GatewayApp): (path: string) => string[] {
  const table: Array<{ pattern: RegExp; methods: Set<string> }> = [];
  const add = (template: string, method: string) => {
    const source = template
      .split("/")
      .map((part) => (/^(\{.+\}|:.+)$/.test(part) ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("/");
    const pattern = new RegExp(`^${source}$`);
    let row = table.find((r) => r.pattern.source === pattern.source);
    if (!row) {
      row = { pattern, methods: new Set() };
      table.push(row);
    }
    row.methods.add(method.toUpperCase());
    if (method.toUpperCase() === "GET") row.methods.add("HEAD");
  };
  for (const route of app.routes) {
    // "ALL" and wildcard paths are middleware (the body readers are registered per method on /v1/*)
    if (route.method !== "ALL" && !route.path.includes("*")) add(route.path, route.method);
  }
  return (path) => {
    const row = table.find((r) => r.pattern.test(path));
    return row ? [...row.methods].sort() : [];
  };
}
