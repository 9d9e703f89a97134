import type { BlobStore } from "@voiceloc/blobs";
import type { Logger } from "@voiceloc/log";
import type { UploadRepository } from "./repository.ts";

const BATCH = 100;

/**
 * Deletes every upload expired at `now`: its blob first, then its record (a crash in between leaves a
 * record the next sweep finishes). Safe with several gateways sweeping at once: both deletes are
 * idempotent. Returns how many uploads were removed.
 */
export async function sweepExpiredUploads(repo: UploadRepository, blobs: BlobStore, now: Date): Promise<number> {
  let removed = 0;
  for (;;) {
    const batch = await repo.expired(now, BATCH);
    for (const doc of batch) {
      await blobs.delete(doc.blob_key);
      await repo.delete(doc.id);
      removed++;
    }
    if (batch.length < BATCH) return removed;
  }
}

/** Runs the sweep every `intervalMs` in this gateway process; resolves the returned stop once the running sweep ended. */
export function startUploadSweep(
  repo: UploadRepository,
  blobs: BlobStore,
  intervalMs: number,
  logger: Logger,
  now: () => Date = () => new Date(),
): () => Promise<void> {
  let running: Promise<void> | undefined;
  const tick = () => {
    if (running) return;
    running = sweepExpiredUploads(repo, blobs, now())
      .then((removed) => {
        if (removed > 0) logger.info({ removed }, "expired uploads deleted");
      })
      .catch((error: unknown) => logger.warn({ err: error }, "upload sweep failed; the next one retries"))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
