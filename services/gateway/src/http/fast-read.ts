/**
 * Record reads (`GET /v1/audio_books/{id}`, `/v1/voices/streams/{id}`, `/v1/videos/subtitle/{id}`)
 * answered straight from Node's request, before the Hono app: the one operation clients poll, and
 * the one a busy gateway serves most.
 *
 * Through the app a read costs several times what the read itself does: a Web `Request`, the
 * middleware chain's promises, the param schema, the route match. Here the same steps run in plain
 * code, and anything out of the ordinary goes to the app unchanged, which then does everything
 * itself (so every rule has one definition, the app's, and this path only takes a subset):
 *
 * - only `GET` of an exact path with a lower-case canonical UUID, no query string;
 * - only a credential the authenticator verified within its cache time (`cachedPrincipal`): an
 *   unknown, revoked, unapproved or new key, an access token (JWT) or no credential goes to the app;
 * - only a record that exists and belongs to the caller (a 404 is the app's), read from the store on
 *   every request, so progress shows at once. Where the store keeps documents as JSON text (the
 *   embedded store), the text is read and compared with the text the last answer for that record was
 *   made from: unchanged, the same answer is sent again (made anew each second, as its signed links
 *   are); changed, it is parsed and presented anew. Nothing but that rendering is kept;
 * - the credential spends a request from its rate-limit lease (`takeLeased`), or from a new lease
 *   (`take`); a refusal is the app's (it answers it from memory, spending nothing). The read happens
 *   before the request is spent, so a request handed to the app is metered once, there;
 * - not while tracing is on (the app makes the server span).
 *
 * The answer is the app's byte for byte: the same body (the same presenter), the same header fields
 * in the same order (`X-Request-Id`, `VoiceLoc-Mode` for a sandbox key, the RateLimit fields,
 * `content-type`), the same request line in the log and the same metrics series.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { httpRequestObserver, tracingEnabled } from "@voiceloc/telemetry";
import { requestLineWriter, type Logger } from "@voiceloc/log";
import type { Authenticator, Principal } from "../auth/authenticator.ts";
import { presentAudioBook, presentSubtitle, presentVoiceStream, type AudioBookDoc, type SubtitleDoc, type UrlSigner, type VoiceStreamDoc } from "../records/kinds.ts";
import type { TaskDoc, TaskRepository } from "../records/repository.ts";
import { RateLimiter, rateLimitField, type RateDecision } from "./rate-limit.ts";
import { rawHeader, requestIdOf } from "./respond.ts";

export interface FastReadDeps {
  logger: Logger;
  authenticator: Authenticator;
  audioBooks: TaskRepository<AudioBookDoc>;
  voiceStreams: TaskRepository<VoiceStreamDoc>;
  subtitles: TaskRepository<SubtitleDoc>;
  signer: UrlSigner;
  rateLimiter?: RateLimiter | undefined;
  /** `false`: the app has no HTTP metrics, so neither does this path. */
  metrics?: boolean | undefined;
}

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

interface Kind {
  /** Path up to and including the slash before the id. */
  prefix: string;
  /** The route pattern the app registers (its metrics label). */
  route: string;
  repo: TaskRepository<TaskDoc>;
  present: (doc: TaskDoc) => unknown;
  /** Record id → the last answer made for it and the stored text it was made from. */
  views: Map<string, View>;
  /** Times a 200 in the app's series for the route (none when metrics are off). */
  observe: ((seconds: number) => void) | undefined;
}

/** A JSON body and its length in bytes (the Content-Length field). */
interface Reply {
  body: string;
  length: string;
}

const replyOf = (value: unknown): Reply => {
  const body = JSON.stringify(value);
  return { body, length: String(Buffer.byteLength(body)) };
};

interface View extends Reply {
  /** The stored JSON text the answer was made from. */
  text: string;
  doc: TaskDoc;
  /** When the reply was made (its signed links change with the second they are signed in). */
  second: number;
}

/** Records whose answers are remembered (per kind) before the memo starts over. */
const VIEWS_MAX = 10_000;

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
  const signer = deps.signer;
  /** A record kind at `prefix` + id, whose route Hono registers as `prefix` + `:param`. */
  const recordKind = <T extends TaskDoc>(prefix: string, param: string, repo: TaskRepository<T>, present: (doc: T, signer: UrlSigner) => unknown): Kind => ({
    prefix,
    route: `${prefix}:${param}`,
    repo: repo as unknown as TaskRepository<TaskDoc>,
    present: (doc) => present(doc as T, signer),
    views: new Map(),
    observe: undefined,
  });
  const kinds: Kind[] = [
    recordKind("/v1/audio_books/", "audio_book_id", deps.audioBooks, presentAudioBook),
    recordKind("/v1/voices/streams/", "voice_id", deps.voiceStreams, presentVoiceStream),
    recordKind("/v1/videos/subtitle/", "subtitle_id", deps.subtitles, presentSubtitle),
  ];
  const requestLine = requestLineWriter(deps.logger);
  const limiter = deps.rateLimiter;
  if (deps.metrics !== false) for (const k of kinds) k.observe = httpRequestObserver("GET", k.route, 200);

  /**
   * The answer's body for the record as stored now from its stored text (see `TaskRepository.getTextSync`),
   * if it is the caller's; null otherwise.
   */
  const replyFromText = (kind: Kind, id: string, text: string, owner: string): Reply | null => {
    const second = Math.floor(Date.now() / 1000);
    let view = kind.views.get(id);
    if (view === undefined || view.text !== text) {
      const doc = JSON.parse(text) as TaskDoc;
      if (doc.account_id !== owner) return null;
      if (view === undefined && kind.views.size >= VIEWS_MAX) kind.views.clear();
      view = { text, doc, ...replyOf(kind.present(doc)), second };
      kind.views.set(id, view);
    } else if (view.doc.account_id !== owner) {
      return null;
    } else if (view.second !== second) {
      const reply = replyOf(kind.present(view.doc));
      view.body = reply.body;
      view.length = reply.length;
      view.second = second;
    }
    return view;
  };

  /** Each cached principal's rate-limit partition, made once. */
  const partitions = new WeakMap<Principal, string>();
  const partitionOf = (principal: Principal): string => {
    let partition = partitions.get(principal);
    if (partition === undefined) partitions.set(principal, (partition = RateLimiter.partitionOf(principal)));
    return partition;
  };

  const send = (res: ServerResponse, kind: Kind, url: string, principal: Principal, requestId: string, started: number, reply: Reply, decision: RateDecision | undefined): void => {
    const headers: string[] = ["X-Request-Id", requestId];
    if (principal.mode === "sandbox") headers.push("VoiceLoc-Mode", "sandbox");
    if (limiter !== undefined && decision !== undefined && decision.kind === "allowed") {
      headers.push("RateLimit-Policy", limiter.policyField, "RateLimit", rateLimitField(decision.remaining, decision.fullInSeconds));
    }
    headers.push("content-type", "application/json", "Content-Length", reply.length);
    res.writeHead(200, headers);
    res.end(reply.body);
    const elapsed = performance.now() - started;
    requestLine({ requestId, method: "GET", path: url, status: 200, ms: Math.round(elapsed * 10) / 10, account: principal.accountId });
    kind.observe?.(elapsed / 1_000);
  };

  /**
   * Answers with `body` once the credential has spent a request: from its lease at hand, or from a new
   * lease (`take`, a store write). A refusal is left to the app, which answers it from memory (the
   * credential stays refused there until a token is due) without spending anything.
   */
  const answer = (req: IncomingMessage, res: ServerResponse, kind: Kind, url: string, principal: Principal, requestId: string, started: number, reply: Reply): void => {
    if (limiter === undefined) return send(res, kind, url, principal, requestId, started, reply, undefined);
    const partition = partitionOf(principal);
    const leased = limiter.takeLeased(partition);
    if (leased !== undefined) return send(res, kind, url, principal, requestId, started, reply, leased);
    limiter.take(partition).then(
      (decision) => (decision.kind === "limited" ? app(req, res) : send(res, kind, url, principal, requestId, started, reply, decision)),
      () => app(req, res),
    );
  };

  /** A store without stored text (MongoDB): the record is read and presented on every request. */
  const answerFromDocument = async (req: IncomingMessage, res: ServerResponse, kind: Kind, url: string, principal: Principal, requestId: string, started: number) => {
    let doc: TaskDoc | null;
    try {
      doc = await kind.repo.getOwned(principal.accountId, url.slice(kind.prefix.length));
    } catch {
      // the app reads again and answers the store's failure as it does for every route
      return app(req, res);
    }
    if (doc === null) return app(req, res);
    answer(req, res, kind, url, principal, requestId, started, replyOf(kind.present(doc)));
  };

  return (req, res) => {
    const url = req.url;
    if (req.method !== "GET" || url === undefined || url.length > 64) return app(req, res);
    let kind: Kind | undefined;
    for (const k of kinds) {
      if (url.startsWith(k.prefix)) {
        kind = k;
        break;
      }
    }
    if (kind === undefined || !isCanonicalUuid(url, kind.prefix.length) || tracingEnabled()) return app(req, res);
    const started = performance.now();
    // The header fields this path reads, as the app reads them.
    const raw = req.rawHeaders;
    const principal = deps.authenticator.cachedPrincipal({ apiKey: rawHeader(raw, "api-key"), authorization: rawHeader(raw, "authorization") });
    if (principal === undefined) return app(req, res);
    const requestId = requestIdOf(rawHeader(raw, "x-request-id"));
    const id = url.slice(kind.prefix.length);
    let reply: Reply | null;
    try {
      const text = kind.repo.getTextSync(id);
      if (text === undefined) return void answerFromDocument(req, res, kind, url, principal, requestId, started);
      reply = text === null ? null : replyFromText(kind, id, text, principal.accountId);
    } catch {
      // the app reads again and answers the store's failure as it does for every route
      return app(req, res);
    }
    if (reply === null) return app(req, res);
    answer(req, res, kind, url, principal, requestId, started, reply);
  };
}
