import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { isBlobNotFoundError, type BlobSource, type BlobStore } from "@voiceloc/blobs";
import type { Logger } from "@voiceloc/log";
import type { z } from "zod";
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
  /**
   * A JSON checkpoint parsed through `schema`: undefined when it is absent, and also (logged) when it
   * is not JSON or not of the schema's shape (written by another version: the step is redone).
   */
  readJson<S extends z.ZodType>(name: string, schema: S): Promise<z.output<S> | undefined>;
  /** Stores `value` as a JSON checkpoint (write what the reading schema accepts). */
  putJson(name: string, value: unknown): Promise<void>;
}

/** The checkpoints as the runtime sees them during one delivery. */
export interface DeliveryCheckpoints extends TaskCheckpoints {
  /**
   * Whether the task's checkpoints were removed under this delivery: it stored or found some, and none
   * is left. Only a delivery that finished the task removes them (completed or failed for good), so this
   * delivery was overtaken by another one, and what failed here is the missing files, not the task.
   */
  vanished(): Promise<boolean>;
}

export interface CheckpointsOptions {
  blobs: BlobStore;
  taskId: string;
  /** Where non-local stores copy checkpoints for get(). */
  localDir: string;
  signal: AbortSignal;
  /** Called after each put (an in-progress ack). */
  working: () => void;
  /** Where unreadable checkpoints are reported. */
  logger?: Logger;
}

export function createCheckpoints(options: CheckpointsOptions): DeliveryCheckpoints {
  const { blobs, taskId, localDir, signal, working } = options;
  const prefix = checkpointPrefix(taskId);
  /** This delivery stored or found a checkpoint. */
  let seen = false;
  const checkpoints: DeliveryCheckpoints = {
    async has(name) {
      const found = await blobs.exists(checkpointKey(taskId, name));
      seen ||= found;
      return found;
    },
    async put(name, source) {
      const key = checkpointKey(taskId, name);
      signal.throwIfAborted();
      await blobs.put(key, source);
      seen = true;
      working();
    },
    async get(name) {
      const key = checkpointKey(taskId, name);
      try {
        const path = await blobs.toLocalFile(key, join(localDir, "checkpoints"));
        seen = true;
        return path;
      } catch (error) {
        if (isBlobNotFoundError(error)) throw new CheckpointNotFoundError(name, { cause: error });
        throw error;
      }
    },
    async list() {
      const keys = await blobs.list(prefix);
      seen ||= keys.length > 0;
      return keys.map((key) => key.slice(prefix.length));
    },
    async vanished() {
      if (!seen) return false;
      try {
        return (await blobs.list(prefix)).length === 0;
      } catch {
        return false;
      }
    },
    async readJson(name, schema) {
      let path: string;
      try {
        path = await checkpoints.get(name);
      } catch (error) {
        if (error instanceof CheckpointNotFoundError) return undefined;
        throw error;
      }
      let value: unknown;
      try {
        value = JSON.parse(await readFile(path, "utf8"));
      } catch (error) {
        options.logger?.warn({ err: error, checkpoint: name }, "checkpoint is not JSON; redoing its step");
        return undefined;
      }
      const parsed = schema.safeParse(value);
      if (!parsed.success) {
        options.logger?.warn({ checkpoint: name, issues: parsed.error.issues.slice(0, 5) }, "checkpoint of another shape; redoing its step");
        return undefined;
      }
      return parsed.data;
    },
    putJson(name, value) {
      return checkpoints.put(name, Buffer.from(JSON.stringify(value), "utf8"));
    },
  };
  return checkpoints;
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
