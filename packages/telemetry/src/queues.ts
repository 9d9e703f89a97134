/**
 * Work-queue depth for Prometheus: the JetStream consumers' pending, ack-pending and redelivered
 * counts, read from the server at scrape time (one consumer-info round trip per queue), shared by
 * the three gauges, reused for a second, bounded by a time limit. A scrape never waits on a server
 * that does not answer: the last values stay.
 */
import { queueAckPending, queuePending, queueRedelivered } from "./metrics.ts";

export interface QueueStat {
  /** The work queue (durable consumer) name. */
  queue: string;
  /** Messages not yet delivered. */
  pending: number;
  /** Delivered, not yet settled. */
  ackPending: number;
  /** Delivered more than once, not yet settled. */
  redelivered: number;
}

export type QueueStatSource = () => Promise<QueueStat[]>;

const sources = new Set<QueueStatSource>();
const FRESH_MS = 1_000;
const TIME_LIMIT_MS = 2_000;
let last: { at: number; running: Promise<void> } | undefined;

async function poll(): Promise<void> {
  const results = await Promise.all(
    [...sources].map(async (source) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        return await Promise.race([
          source(),
          new Promise<undefined>((resolve) => {
            timer = setTimeout(() => resolve(undefined), TIME_LIMIT_MS);
          }),
        ]);
      } catch {
        return undefined;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  for (const stats of results) {
    for (const stat of stats ?? []) {
      queuePending.set({ queue: stat.queue }, stat.pending);
      queueAckPending.set({ queue: stat.queue }, stat.ackPending);
      queueRedelivered.set({ queue: stat.queue }, stat.redelivered);
    }
  }
}

/** Refreshes the queue gauges unless they were refreshed within the last second. */
export function refreshQueueStats(): Promise<void> {
  const now = Date.now();
  if (last === undefined || now - last.at >= FRESH_MS) last = { at: now, running: poll() };
  return last.running;
}

/** Reports the queues of `source` in the gauges at every scrape; returns the function that stops it. */
export function watchQueues(source: QueueStatSource): () => void {
  sources.add(source);
  last = undefined;
  return () => {
    sources.delete(source);
  };
}

// Each gauge refreshes (once for all three) when it is collected.
for (const gauge of [queuePending, queueAckPending, queueRedelivered]) {
  (gauge as unknown as { collect: () => Promise<void> }).collect = () => refreshQueueStats();
}
