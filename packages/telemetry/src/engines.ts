/**
 * Engine timing: the named async methods of a speech engine (any object with an `id`) are timed into
 * `voiceloc_engine_duration_seconds{engine, operation, outcome}` and, with tracing on, each call is a
 * span (a child of the running task's span). The engine is instrumented in place, so it stays the same
 * object (registries hand it out, callers compare it); everything else about it is untouched.
 */
import { engineDuration } from "./metrics.ts";
import { endSpan, startSpan } from "./trace.ts";

const TIMED = Symbol.for("voiceloc.timedEngine");

type AsyncMethod = (...args: unknown[]) => Promise<unknown>;

function timed(engine: { readonly id: string }, operation: string, original: AsyncMethod): AsyncMethod {
  return async function (this: unknown, ...args: unknown[]) {
    const started = performance.now();
    const span = startSpan(`${engine.id} ${operation}`, { attributes: { "voiceloc.engine": engine.id, "voiceloc.engine.operation": operation } });
    let outcome = "ok";
    try {
      return await original.apply(this ?? engine, args);
    } catch (error) {
      outcome = "error";
      endSpan(span, error);
      throw error;
    } finally {
      engineDuration.observe({ engine: engine.id, operation, outcome }, (performance.now() - started) / 1_000);
      if (outcome === "ok") endSpan(span);
    }
  };
}

/** Times `operations` of the engine (in place; a second call does nothing) and returns the engine. */
export function timeEngine<E extends { readonly id: string }>(engine: E, operations: readonly string[]): E {
  const target = engine as unknown as Record<string | symbol, unknown>;
  if (target[TIMED] === true || Object.isFrozen(engine)) return engine;
  for (const operation of operations) {
    const original = target[operation];
    if (typeof original !== "function") continue;
    Object.defineProperty(engine, operation, { value: timed(engine, operation, original as AsyncMethod), writable: true, configurable: true, enumerable: false });
  }
  Object.defineProperty(engine, TIMED, { value: true, enumerable: false });
  return engine;
}
