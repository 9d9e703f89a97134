import { pino, type Logger, type LevelWithSilent, type DestinationStream } from "pino";

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

/** One pino root per process; components take `logger.child({ component })`. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? "info",
      base: options.name ? { service: options.name } : {},
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination,
  );
}

/** A logger that writes nothing, for tests and library defaults. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
