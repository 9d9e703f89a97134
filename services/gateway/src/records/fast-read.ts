/**
 * Record reads (`GET /v1/audio_books/{id}`, `/v1/voices/streams/{id}`, `/v1/videos/subtitle/{id}`)
 * and their lists (`GET /v1/audio_books/`, `/v1/voices/streams`, `/v1/videos/subtitle`) answered
 * straight from Node's request, before the Hono app: the operations clients poll, and the ones a
 * busy gateway serves most.
 *
 * Through the app a read costs several times what the read itself does: a Web `Request`, the
 * middleware chain's promises, the param schema, the route match. Here the same steps run in plain
 * code, and anything out of the ordinary goes to the app unchanged, which then does everything
 * itself (so every rule has one definition, the app's, and this path only takes a subset):
 *
 * - only `GET` of an exact path with a lower-case canonical UUID and no query string, or of a list's
 *   exact path with no query or one of plain `limit` (1–200, no leading zero), `task_status` (one of
 *   the statuses) and `cursor` (base64url) fields, each at most once (anything else: the app, which
 *   then also answers a bad cursor's 422);
 * - only a credential the authenticator verified within its cache time (`cachedPrincipal`): an
 *   unknown, revoked, unapproved or new key, an access token (JWT) or no credential goes to the app;
 * - only a record that exists and belongs to the caller (a 404 is the app's), as the store has it
 *   now, so progress shows at once: read through the read core the app's routes use (`read.ts`),
 *   synchronously from the stored JSON text where the store keeps it (the embedded store). Lists need
 *   the stored text (MongoDB's are the app's);
 * - the credential spends a request from its rate-limit lease (`takeLeased`), or from a new lease
 *   (`take`); a refusal is the app's (it answers it from memory, spending nothing). The read happens
 *   before the request is spent, so a request handed to the app is metered once, there;
 * - not while tracing is on (the app makes the server span).
 *
 * The answer is the app's byte for byte: the same body (the same read core), the same header fields
 * in the same order, from the same builders (`X-Request-Id`, `principalFields`, `rateLimitFields`,
 * `Link`, `content-type`), the same request line in the log and the same metrics series
 * (`read-paths.test.ts` compares every read of every kind with the fast path on and off).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { httpRequestObserver, tracingEnabled } from "@voiceloc/telemetry";
import { requestLineWriter, type Logger } from "@voiceloc/log";
import type { Authenticator, Principal } from "../auth/authenticator.ts";
import { LIMITS, TASK_STATUSES, type TaskStatus } from "@voiceloc/contracts";
import type { ListQuery } from "./repository.ts";
import type { ListAnswer, RecordReader, RecordReaders } from "./read.ts";
import { RateLimiter, rateLimitFields, type RateDecision } from "../http/rate-limit.ts";
import { principalFields, rawHeader, requestIdOf } from "../http/respond.ts";

export interface FastReadDeps {
  logger: Logger;
  authenticator: Authenticator;
  /** The read core the app's routes answer through too. */
  reads: RecordReaders;
  rateLimiter?: RateLimiter | undefined;
  /** `false`: the app has no HTTP metrics, so neither does this path. */
  metrics?: boolean | undefined;
}

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** A route this path answers: a record read or a list. */
interface Route {
  /** Times a 200 in the app's series for the route (none when metrics are off). */
  observe: ((seconds: number) => void) | undefined;
}

interface Kind {
  reader: RecordReader;
  record: Route;
  list: Route;
}

/** What the fast path answers with: a body and, for a list with more after it, the next page's `Link`. */
interface Answer {
  body: string | Buffer;
  /** The body's length in bytes (the Content-Length field). */
  length: string;
  link?: string | undefined;
}

const listAnswer = (page: ListAnswer): Answer => ({ body: page.bytes, length: String(page.bytes.length), link: page.link });

/** What a request reads: a record of a kind, or a list of it with a plain query. */
type Target = { kind: Kind; id: string } | { kind: Kind; list: ListQuery };

const STATUSES: ReadonlySet<string> = new Set(TASK_STATUSES);
const BASE64URL = /^[A-Za-z0-9_-]{1,512}$/;
const PAGE_SIZE = /^[1-9][0-9]{0,2}$/;

/**
 * A list's query string (after the `?`; "" for none) as the app's schema reads it, when it is plain:
 * undefined for anything else (the app then answers it, a 422 included).
 */
export function plainListQuery(search: string): ListQuery | undefined {
  const query: ListQuery = { limit: LIMITS.listDefault };
  if (search === "") return query;
  let limit: string | undefined;
  for (const field of search.split("&")) {
    const eq = field.indexOf("=");
    if (eq <= 0) return undefined;
    const name = field.slice(0, eq);
    const value = field.slice(eq + 1);
    if (name === "limit" && limit === undefined && PAGE_SIZE.test(value) && Number(value) <= LIMITS.listMax) {
      limit = value;
      query.limit = Number(value);
    } else if (name === "task_status" && query.taskStatus === undefined && STATUSES.has(value)) {
      query.taskStatus = value as TaskStatus;
    } else if (name === "cursor" && query.cursor === undefined && BASE64URL.test(value)) {
      query.cursor = value;
    } else {
      return undefined;
    }
  }
  return query;
}

const UUID_LENGTH = 36;

/** A lower-case canonical UUID: the only spelling of an id the app's param schema leaves unchanged. */
function isCanonicalUuid(s: string, from: number): boolean {
  if (s.length - from !== UUID_LENGTH) return false;
  for (let i = 0; i < UUID_LENGTH; i += 1) {
    const c = s.charCodeAt(from + i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 0x2d) return false;
    } else if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}

/**
 * A request listener that answers the record reads it can and hands every other request to `app`
 * (the Hono app's listener).
 */
export function withFastRecordReads(deps: FastReadDeps, app: Listener): Listener {
  const metrics = deps.metrics !== false;
  /** The route the app registers as `pattern` (its metrics label). */
  const route = (pattern: string): Route => ({ observe: metrics ? httpRequestObserver("GET", pattern, 200) : undefined });
  const kinds: Kind[] = Object.values(deps.reads).map((reader) => ({
    reader,
    // the routes as the app registers them (their metrics labels)
    record: route(`${reader.spec.recordPrefix}:${reader.spec.idParam}`),
    list: route(reader.spec.listPath),
  }));
  const requestLine = requestLineWriter(deps.logger);
  const limiter = deps.rateLimiter;

  /** Each cached principal's rate-limit partition, made once. */
  const partitions = new WeakMap<Principal, string>();
  const partitionOf = (principal: Principal): string => {
    let partition = partitions.get(principal);
    if (partition === undefined) partitions.set(principal, (partition = RateLimiter.partitionOf(principal)));
    return partition;
  };

  /** What one request is about: its route, the path it logs (no query, as the app logs `c.req.path`), the caller. */
  interface Served {
    route: Route;
    path: string;
    principal: Principal;
    requestId: string;
    started: number;
  }

  const send = (res: ServerResponse, served: Served, reply: Answer, decision: RateDecision | undefined): void => {
    const { principal, requestId } = served;
    // the fields in the app's order, made by the same builders: the request id, whose answer, the rate limit, the next page
    const fields: Record<string, string> = { "X-Request-Id": requestId, ...principalFields(principal) };
    if (limiter !== undefined && decision !== undefined && decision.kind === "allowed") Object.assign(fields, rateLimitFields(limiter, decision.remaining, decision.fullInSeconds));
    if (reply.link !== undefined) fields.Link = reply.link;
    fields["content-type"] = "application/json";
    fields["Content-Length"] = reply.length;
    res.writeHead(200, fields);
    res.end(reply.body);
    const elapsed = performance.now() - served.started;
    requestLine({ requestId, method: "GET", path: served.path, status: 200, ms: Math.round(elapsed * 10) / 10, account: principal.accountId });
    served.route.observe?.(elapsed / 1_000);
  };

  /**
   * Answers with `reply` once the credential has spent a request: from its lease at hand, or from a new
   * lease (`take`, a store write). A refusal is left to the app, which answers it from memory (the
   * credential stays refused there until a token is due) without spending anything.
   */
  const answer = (req: IncomingMessage, res: ServerResponse, served: Served, reply: Answer): void => {
    if (limiter === undefined) return send(res, served, reply, undefined);
    const partition = partitionOf(served.principal);
    const leased = limiter.takeLeased(partition);
    if (leased !== undefined) return send(res, served, reply, leased);
    limiter.take(partition).then(
      (decision) => (decision.kind === "limited" ? app(req, res) : send(res, served, reply, decision)),
      () => app(req, res),
    );
  };

  /** A store without stored text (MongoDB): the record is read and presented by the read core on every request. */
  const answerFromDocument = async (req: IncomingMessage, res: ServerResponse, kind: Kind, id: string, served: Served) => {
    let reply;
    try {
      reply = await kind.reader.record(served.principal.accountId, id);
    } catch {
      // the store failed, or the presenter could not read the document: the app reads again and answers (and logs) what that gives
      return app(req, res);
    }
    if (reply === null) return app(req, res);
    answer(req, res, served, reply);
  };

  /** The list of `kind` with the query string `search` ("" for none), if the query is plain. */
  const listTarget = (kind: Kind, search: string): Target | undefined => {
    const query = plainListQuery(search);
    return query === undefined ? undefined : { kind, list: query };
  };

  /** The record (`id`) or list `url` reads, if this path answers it. */
  const target = (url: string): Target | undefined => {
    for (const kind of kinds) {
      const { listPath, recordPrefix } = kind.reader.spec;
      if (!url.startsWith(listPath)) continue;
      if (url.length === listPath.length) return listTarget(kind, "");
      if (url.charCodeAt(listPath.length) === 0x3f /* ? */) return listTarget(kind, url.slice(listPath.length + 1));
      if (url.startsWith(recordPrefix) && isCanonicalUuid(url, recordPrefix.length)) return { kind, id: url.slice(recordPrefix.length) };
      return undefined;
    }
    return undefined;
  };

  return (req, res) => {
    const url = req.url;
    if (req.method !== "GET" || url === undefined || url.length > 1024) return app(req, res);
    const found = target(url);
    if (found === undefined || tracingEnabled()) return app(req, res);
    const { kind } = found;
    const started = performance.now();
    // The header fields this path reads, as the app reads them.
    const raw = req.rawHeaders;
    const principal = deps.authenticator.cachedPrincipal({ apiKey: rawHeader(raw, "api-key"), authorization: rawHeader(raw, "authorization") });
    if (principal === undefined) return app(req, res);
    const served: Served = {
      route: "list" in found ? kind.list : kind.record,
      path: "list" in found ? kind.reader.spec.listPath : url,
      principal,
      requestId: requestIdOf(rawHeader(raw, "x-request-id")),
      started,
    };
    let reply: Answer | null | undefined;
    try {
      if ("list" in found) {
        const page = kind.reader.listNow(principal.accountId, found.list);
        // MongoDB's lists, and bad cursors (InvalidCursorError, caught below), are the app's
        if (page === undefined) return app(req, res);
        reply = listAnswer(page);
      } else {
        reply = kind.reader.recordNow(principal.accountId, found.id);
        if (reply === undefined) {
          // nobody awaits this read: whatever it throws is handed to the app, never left an unhandled rejection
          answerFromDocument(req, res, kind, found.id, served).catch(() => app(req, res));
          return;
        }
      }
    } catch {
      // the app reads again and answers the store's failure as it does for every route
      return app(req, res);
    }
    if (reply === null) return app(req, res);
    answer(req, res, served, reply);
  };
}
