import { AsyncLocalStorage } from "node:async_hooks";
import { pino, type Logger } from "pino";

/** The ids a log line carries while a request is served or a task runs. */
export interface LogIds {
  /** The HTTP request being served (the gateway's `X-Request-Id`). */
  readonly requestId?: string;
  /** The task being run (a worker's delivery). */
  readonly taskId?: string;
  /** The kind of that task: its work queue (`audiobook`, `voice-stream`, `subtitle`). */
  readonly kind?: string;
}

const FIELDS = ["requestId", "taskId", "kind"] as const satisfies ReadonlyArray<keyof LogIds>;
/** How each field starts in a logger's serialized bindings (pino writes them as `,"name":value`). */
const BOUND = FIELDS.map((field) => [field, `,"${field}":`] as const);

const context = new AsyncLocalStorage<LogIds>();

/**
 * Runs `fn` with `ids` on every log line written until it settles, by any logger of `createLogger`'s
 * root: the caller's, and those of the engines, bus and store it calls, through promises, timers and
 * child process callbacks started meanwhile. Nested calls add to the ids around them.
 */
export function withLogContext<T>(ids: LogIds, fn: () => T): T {
  const around = context.getStore();
  return context.run(around === undefined ? ids : { ...around, ...ids }, fn);
}

/** The ids of the request or task being served now (undefined outside any): what a message to another process carries. */
export function currentLogIds(): LogIds | undefined {
  return context.getStore();
}

/** What the mixin gives a line outside any request or task: never merged (see {@link mergeContextFields}). */
const NONE: Record<string, string> = Object.freeze({});

/**
 * pino's `mixin`: the current ids, less those the logger binds itself (a child made with
 * `{ taskId }` keeps its own, and the line does not name it twice).
 */
export function contextFields(_fields: object, _level: number, logger: Logger): Record<string, string> {
  const ids = context.getStore();
  if (ids === undefined) return NONE;
  const bound: unknown = Reflect.get(logger, pino.symbols.chindingsSym);
  const bindings = typeof bound === "string" ? bound : "";
  let fields: Record<string, string> | undefined;
  for (const [field, start] of BOUND) {
    const value = ids[field];
    if (value === undefined || bindings.includes(start)) continue;
    (fields ??= {})[field] = value;
  }
  return fields ?? NONE;
}

/** pino's `mixinMergeStrategy`: the line's own fields win; nothing is copied for a line outside any context. */
export function mergeContextFields(fields: object, ids: object): object {
  return ids === NONE ? fields : Object.assign(ids, fields);
}
