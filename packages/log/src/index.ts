import { pino, type Bindings, type Logger, type LevelWithSilent, type DestinationStream } from "pino";
import { contextFields, mergeContextFields } from "./context.ts";
import { BufferedDestination } from "./destination.ts";

export type { Logger } from "pino";
export { CONTEXT_IDLE_MS, currentLogIds, logContextTracking, withLogContext, type LogIds } from "./context.ts";

export interface LoggerOptions {
  level?: LevelWithSilent;
  /** Service or component name, logged as `service`. */
  name?: string;
  /** Where to write; standard output by default. Tests pass a memory stream. */
  destination?: DestinationStream;
}

/** Fields that must never reach a log line in clear. */
export const REDACT_PATHS = [
  "req.headers.authorization",
  "req.headers[\"api-key\"]",
  "headers.authorization",
  "headers[\"api-key\"]",
  "*.apiKey",
  "*.api_key",
  "*.secret",
  "*.password",
  "config.JWT_SECRET",
  "config.SIGNING_SECRET",
  "config.VOICELOC_API_KEYS",
  "config.MONGODB_URL",
];

/**
 * pino's `isoTime` (`,"time":"<ISO 8601>"`), formatted once per millisecond: a busy process writes
 * many lines a millisecond, and formatting a Date costs more than the rest of a short line's fields.
 */
function isoTimeByMillisecond(): () => string {
  let at = -1;
  let field = "";
  return () => {
    const now = Date.now();
    if (now !== at) {
      at = now;
      field = `,"time":"${new Date(now).toISOString()}"`;
    }
    return field;
  };
}

/**
 * One pino root per process; components take `logger.child({ component })`. Every line of the root and
 * its children carries the ids of the request or task it is written for ({@link withLogContext}).
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? "info",
      base: options.name ? { service: options.name } : {},
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      timestamp: isoTimeByMillisecond(),
      formatters: { level: (label) => ({ level: label }) },
      mixin: contextFields,
      mixinMergeStrategy: mergeContextFields,
    },
    options.destination ?? new BufferedDestination(pino.destination({ dest: 1, sync: true })),
  );
}

/**
 * A child that skips the redaction pass, for hot lines whose fields are fixed and never hold a secret
 * (the gateway's request line: request id, method, path, status, duration, account). Redaction
 * searches every field of every line for the paths above (the `*.` ones make it walk the whole
 * object), which costs more than formatting the line itself. Never log headers, bodies, errors or
 * configuration through this child; the parent keeps redacting everything else.
 */
export function unredactedChild(logger: Logger, bindings: Bindings = {}): Logger {
  return logger.child(bindings, { redact: [] });
}

/** A logger that writes nothing, for tests and library defaults. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

/** The fields of the gateway's request line (one per HTTP request). */
export interface RequestLineFields {
  requestId: string;
  method: string;
  path: string;
  status: number;
  /** Duration in milliseconds. */
  ms: number;
  /** The caller's account, when it authenticated. */
  account?: string | undefined;
}

type PinoInternals = Record<symbol, unknown>;

/** Printable ASCII but `"` and `\`: the characters JSON.stringify writes as they are. */
const PLAIN_JSON_TEXT = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/**
 * `JSON.stringify(text)`, without its generic pass for the plain text request lines carry (ids,
 * paths). (pino writes a lone surrogate as it is where JSON.stringify escapes it; no field of a
 * request line holds one: a request's path and header fields are read as Latin-1 or decoded UTF-8.)
 */
function jsonString(text: string): string {
  return PLAIN_JSON_TEXT.test(text) ? `"${text}"` : JSON.stringify(text);
}

/**
 * Writes the request line, `{…, requestId, method, path, status, ms, account, msg: "request"}` (`error`
 * and "request failed" from status 500 on), as `unredactedChild(logger)` would, without pino's
 * generic pass over a fields object: a busy gateway writes one such line per request, and that pass
 * (a megamorphic walk over the object's keys and values) costs more than the rest of a record read.
 *
 * The line is put together from pino's own pieces of this logger (its level prefix, time, bindings
 * and line end, `pino.symbols`), and the writer checks once, when it is made, that it gives exactly
 * the line pino gives for a sample; when it does not (another pino version, a serializer, a log
 * formatter, a destination that needs pino's metadata), every line goes through pino itself. The
 * line names its own `requestId`; it takes no other id from the log context (the mixin is pino's).
 */
export function requestLineWriter(logger: Logger): (fields: RequestLineFields) => void {
  const child = unredactedChild(logger);
  const slow = (f: RequestLineFields): void => {
    if (f.status >= 500) child.error(f, "request failed");
    else child.info(f, "request");
  };
  const internals = child as unknown as PinoInternals;
  const s = pino.symbols;
  const levels = internals[s.lsCacheSym] as Record<number, string> | undefined;
  const time = internals[s.timeSym] as (() => string) | undefined;
  const end = internals[s.endSym];
  const stream = internals[s.streamSym] as (DestinationStream & Record<symbol, unknown>) | undefined;
  const asJson = internals[s.asJsonSym] as ((obj: object, msg: string, num: number, time: string) => string) | undefined;
  const info = child.levels.values.info as number;
  const error = child.levels.values.error as number;
  if (levels === undefined || typeof time !== "function" || typeof end !== "string" || stream === undefined || typeof asJson !== "function") return slow;
  if (stream[s.needsMetadataGsym] === true) return slow;
  // The child is this writer's own: its bindings, and so its line's fixed parts, never change.
  const chindings = internals[s.chindingsSym] as string;
  const infoStart = levels[info] ?? "";
  const errorStart = levels[error] ?? "";
  const line = (f: RequestLineFields, at: string): string => {
    const failed = f.status >= 500;
    return (
      `${failed ? errorStart : infoStart}${at}${chindings}` +
      `,"requestId":${jsonString(f.requestId)},"method":${jsonString(f.method)},"path":${jsonString(f.path)},"status":${f.status},"ms":${f.ms}` +
      `${f.account === undefined ? "" : `,"account":${jsonString(f.account)}`},"msg":${failed ? '"request failed"' : '"request"'}${end}`
    );
  };
  const probes: RequestLineFields[] = [
    { requestId: "3f2c…-id", method: "GET", path: '/v1/x/"quoted"\\path\t', status: 200, ms: 1.5, account: "acc ünï" },
    { requestId: "r", method: "POST", path: "/v1/y", status: 503, ms: 0, account: undefined },
  ];
  for (const probe of probes) {
    const at = time.call(child);
    const num = probe.status >= 500 ? error : info;
    if (asJson.call(child, { ...probe }, probe.status >= 500 ? "request failed" : "request", num, at) !== line(probe, at)) return slow;
  }
  return (f) => {
    if (!child.isLevelEnabled(f.status >= 500 ? "error" : "info")) return;
    stream.write(line(f, time.call(child)));
  };
}
