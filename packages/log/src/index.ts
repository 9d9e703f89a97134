import { pino, type Bindings, type Logger, type LevelWithSilent, type DestinationStream } from "pino";

export type { Logger } from "pino";

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

/** One pino root per process; components take `logger.child({ component })`. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? "info",
      base: options.name ? { service: options.name } : {},
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      timestamp: isoTimeByMillisecond(),
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination,
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
