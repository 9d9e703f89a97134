import { join } from "node:path";
import { isBlobNotFoundError, type BlobSource, type BlobStore } from "@voiceloc/blobs";
import { CheckpointNotFoundError } from "./errors.ts";
import { checkpointKey, checkpointPrefix } from "./keys.ts";

/**
 * Named intermediate results of a task, stored as blobs under `tasks/<task id>/checkpoints/<name>`, so a
 * redelivered task resumes where an earlier delivery stopped. Names are one or more `[A-Za-z0-9._-]`
 * segments joined by `/` (a name cannot also be a "directory" of other names: `a` and `a/b`).
 */
export interface TaskCheckpoints {
  has(name: string): Promise<boolean>;
  /** Stores (atomically replaces) the checkpoint; throws the abort reason once the delivery was aborted. */
  put(name: string, source: BlobSource): Promise<void>;
  /**
   * A local file holding the checkpoint (the blob's own file for the file-system store, a copy inside
   * the delivery's work dir otherwise): read-only, valid during this delivery. CheckpointNotFoundError if absent.
   */
  get(name: string): Promise<string>;
  /** Names of the stored checkpoints, sorted. */
  list(): Promise<string[]>;
}

export interface CheckpointsOptions {
  blobs: BlobStore;
  taskId: string;
  /** Where non-local stores copy checkpoints for get(). */
  localDir: string;
  signal: AbortSignal;
  /** Called after each put (an in-progress ack). */
  working: () => void;
}

export function createCheckpoints(options: CheckpointsOptions): TaskCheckpoints {
  const { blobs, taskId, localDir, signal, working } = options;
  const prefix = checkpointPrefix(taskId);
  return {
    has(name) {
      return blobs.exists(checkpointKey(taskId, name));
    },
    async put(name, source) {
      const key = checkpointKey(taskId, name);
      signal.throwIfAborted();
      await blobs.put(key, source);
      working();
    },
    async get(name) {
      const key = checkpointKey(taskId, name);
      try {
        return await blobs.toLocalFile(key, join(localDir, "checkpoints"));
      } catch (error) {
        if (isBlobNotFoundError(error)) throw new CheckpointNotFoundError(name, { cause: error });
        throw error;
      }
    },
    async list() {
      const keys = await blobs.list(prefix);
      return keys.map((key) => key.slice(prefix.length));
    },
  };
}

/** Deletes every checkpoint blob of the task; resolves to the number deleted. */
export async function cleanupCheckpoints(blobs: BlobStore, taskId: string): Promise<number> {
  const keys = await blobs.list(checkpointPrefix(taskId));
  let deleted = 0;
  for (const key of keys) {
    if (await blobs.delete(key)) deleted++;
  }
  return deleted;
}
