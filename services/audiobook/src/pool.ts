import { availableParallelism, cpus } from "node:os";

/** Cores of this machine: os.availableParallelism() where Node has it, else the CPU count (at least 1). */
export function coreCount(): number {
  const fromOs = typeof availableParallelism === "function" ? availableParallelism() : cpus().length;
  return Math.max(1, fromOs);
}

/**
 * Runs `fn` over `items` with at most `limit` calls at once. On the first failure the shared signal
 * is aborted (so running calls can stop their child processes), the remaining items are not
 * started, every running call is awaited, and the first error is thrown. An abort of `parent`
 * stops the pool the same way.
 */
export async function runPool<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, signal: AbortSignal) => Promise<void>,
  parent?: AbortSignal,
): Promise<void> {
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent?.reason);
  if (parent?.aborted) onParentAbort();
  else parent?.addEventListener("abort", onParentAbort, { once: true });
  let next = 0;
  let failure: { error: unknown } | undefined;
  const lanes = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (failure === undefined && !controller.signal.aborted && next < items.length) {
      const item = items[next++] as T;
      try {
        await fn(item, controller.signal);
      } catch (error) {
        failure ??= { error };
        controller.abort(error);
      }
    }
  });
  try {
    await Promise.all(lanes);
  } finally {
    parent?.removeEventListener("abort", onParentAbort);
  }
  if (failure !== undefined) throw failure.error;
  if (controller.signal.aborted) throw controller.signal.reason;
}
