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
 * Whether this runtime builds AsyncLocalStorage on async_hooks (Node before 24, or later ones run with
 * `--no-async-context-frame`): then an enabled storage runs a hook for every async resource the
 * process creates (each socket write, `nextTick`, timer and promise), whether or not any context is
 * open, a cost every request pays, also the gateway's fast reads, which open none. Node 24's own
 * storage (AsyncContextFrame) costs nothing while unused and has no such hook.
 */
const hookBased = typeof Reflect.get(AsyncLocalStorage.prototype, "_propagate") === "function";

/** How long the storage stays enabled once no context is open, so a steady flow of requests does not switch it on and off. */
export const CONTEXT_IDLE_MS = 1_000;

/** Contexts opened by {@link withLogContext} whose function has not settled yet. */
let open = 0;
let idleTimer: ReturnType<typeof setTimeout> | undefined;

function closed(): void {
  open -= 1;
  if (open === 0 && idleTimer === undefined) idleTimer = setTimeout(disableIfIdle, CONTEXT_IDLE_MS).unref();
}

/**
 * Once no context has been open for CONTEXT_IDLE_MS, the hook-based storage is disabled (its hook
 * removed); the next {@link withLogContext} enables it again. Work a request or task left behind
 * and that outlives it (a timer it did not wait for) loses its ids only if it logs after that.
 */
function disableIfIdle(): void {
  idleTimer = undefined;
  if (open === 0) context.disable();
}

/**
 * Runs `fn` with `ids` on every log line written until it settles, by any logger of `createLogger`'s
 * root: the caller's, and those of the engines, bus and store it calls, through promises, timers and
 * child process callbacks started meanwhile. Nested calls add to the ids around them.
 */
export function withLogContext<T>(ids: LogIds, fn: () => T): T {
  const around = context.getStore();
  const store = around === undefined ? ids : { ...around, ...ids };
  if (!hookBased) return context.run(store, fn);
  open += 1;
  let result: T;
  try {
    result = context.run(store, fn);
  } catch (error) {
    closed();
    throw error;
  }
  if (result instanceof Promise) result.then(closed, closed);
  else closed();
  return result;
}

/**
 * Whether the log context costs the process a hook on every async resource now: on a hook-based
 * runtime, while a context is open and for CONTEXT_IDLE_MS after the last one closed; never on a
 * runtime whose storage needs no hook.
 */
export function logContextTracking(): boolean {
  return hookBased && Reflect.get(context, "enabled") === true;
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
