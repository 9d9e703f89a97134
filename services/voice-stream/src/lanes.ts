/**
 * Work spread over the machine's cores: each line of a voice stream is its own engine run and file,
 * so lines are spoken (and voices measured) a few at a time rather than one after another.
 */
import { availableParallelism, cpus } from "node:os";

/** How many engine runs one task keeps going at once: the machine's cores, 1 to 4. */
export function speechLanes(): number {
  const cores = typeof availableParallelism === "function" ? availableParallelism() : cpus().length;
  return Math.max(1, Math.min(4, cores));
}

/**
 * `fn` over `items` with at most `lanes` running at once; the results in the items' order. After the
 * first failure no new item starts, the running ones are waited for (no engine run is left behind in a
 * directory about to be removed), then that failure is thrown.
 */
export async function inLanes<T, R>(items: readonly T[], lanes: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const lane = async () => {
    while (failure === undefined && next < items.length) {
      const index = next++;
      try {
        results[index] = await fn(items[index] as T, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(lanes, items.length)) }, lane));
  if (failure !== undefined) throw failure.error;
  return results;
}
