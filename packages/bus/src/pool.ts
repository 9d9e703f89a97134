import type { Logger } from "@voiceloc/log";
import { StoppingError, errorMessage } from "./errors.ts";
import type { RawDelivery, Puller } from "./engine.ts";
import type { BusSubscription, StopOptions } from "./types.ts";

export interface PoolOptions {
  concurrency: number;
  puller: Puller;
  pullExpiresMs: number;
  /** Handles one delivery and settles it; must not throw. `stopSignal` aborts when stop()'s grace is over. */
  process(delivery: RawDelivery, stopSignal: AbortSignal): Promise<void>;
  /** Called after the slots ended, e.g. to flush acks. */
  afterStop?: () => Promise<void>;
  logger: Logger;
}

export interface Pool extends BusSubscription {
  readonly done: Promise<void>;
}

const AFTER_ABORT_WAIT_MS = 5_000;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** True when the promise settled within ms; the timer is cleared either way. */
export async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `concurrency` slots, each pulling exactly one message when free and processing it before pulling again:
 * never more than `concurrency` messages held, nothing prefetched into a client buffer.
 */
export function startPool(options: PoolOptions): Pool {
  const { logger } = options;
  const pullAbort = new AbortController();
  const stopAbort = new AbortController();
  let stopping: Promise<void> | undefined;

  async function slot(index: number): Promise<void> {
    let failures = 0;
    while (!pullAbort.signal.aborted) {
      let delivery: RawDelivery | null;
      try {
        delivery = await options.puller.next(pullAbort.signal, options.pullExpiresMs);
        failures = 0;
      } catch (error) {
        if (pullAbort.signal.aborted) break;
        failures++;
        const wait = Math.min(5_000, 100 * 2 ** Math.min(failures, 6));
        logger.warn({ err: error, slot: index, retryInMs: wait }, `pull failed: ${errorMessage(error)}`);
        await sleep(wait, pullAbort.signal);
        continue;
      }
      if (delivery === null) continue;
      try {
        await options.process(delivery, stopAbort.signal);
      } catch (error) {
        // Settling can fail when the connection is gone; the message is redelivered after ack wait.
        logger.warn({ err: error, slot: index }, `processing a message failed: ${errorMessage(error)}`);
      }
    }
  }

  const slots = Array.from({ length: options.concurrency }, (_, index) => slot(index));
  const done = Promise.all(slots).then(() => undefined);

  async function stop(stopOptions: StopOptions = {}): Promise<void> {
    pullAbort.abort();
    const grace = stopOptions.graceMs;
    if (grace !== undefined && Number.isFinite(grace)) {
      const finished = await within(done, grace);
      if (!finished) {
        stopAbort.abort(new StoppingError());
        const settled = await within(done, AFTER_ABORT_WAIT_MS);
        if (!settled) logger.warn("handlers still running after stop grace; their messages will be redelivered");
      }
    } else {
      await done;
    }
    try {
      await options.afterStop?.();
    } catch (error) {
      logger.warn({ err: error }, `after-stop step failed: ${errorMessage(error)}`);
    }
  }

  return {
    done,
    stop(stopOptions) {
      stopping ??= stop(stopOptions);
      return stopping;
    },
  };
}
