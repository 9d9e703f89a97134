/**
 * Engine timing: a wrapper around a speech engine (any object with an `id`) that times the named
 * async methods into `voiceloc_engine_duration_seconds{engine, operation, outcome}` and, with tracing
 * on, makes each call a span (a child of the task's stage). Everything else passes through untouched.
 */
import { engineDuration } from "./metrics.ts";
import { endSpan, startSpan } from "./trace.ts";

const TIMED = Symbol("voiceloc.timedEngine");

/** The engine, with `operations` timed. Wrapping an already timed engine returns it as it is. */
export function timeEngine<E extends { readonly id: string }>(engine: E, operations: readonly string[]): E {
  if ((engine as Record<symbol, unknown>)[TIMED] === true) return engine;
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(engine, {
    get(target, property) {
      if (property === TIMED) return true;
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      let fn = wrapped.get(property);
      if (fn === undefined && (typeof property !== "string" || !operations.includes(property))) {
        // Other methods run on the engine itself (its private fields are not on the proxy).
        fn = (value as (...args: unknown[]) => unknown).bind(target);
        wrapped.set(property, fn);
      } else if (fn === undefined) {
        const original = value as (...args: unknown[]) => Promise<unknown>;
        const operation = String(property);
        fn = async (...args: unknown[]) => {
          const started = performance.now();
          const span = startSpan(`${target.id} ${operation}`, { attributes: { "voiceloc.engine": target.id, "voiceloc.engine.operation": operation } });
          let outcome = "ok";
          try {
            return await original.apply(target, args);
          } catch (error) {
            outcome = "error";
            endSpan(span, error);
            throw error;
          } finally {
            engineDuration.observe({ engine: target.id, operation, outcome }, (performance.now() - started) / 1_000);
            if (outcome === "ok") endSpan(span);
          }
        };
        wrapped.set(property, fn);
      }
      return fn;
    },
  });
}
