import { isValidBlobKey } from "@voiceloc/blobs";
import type { TaskKind } from "@voiceloc/contracts";
import { InvalidCheckpointNameError, InvalidWorkerArgumentError } from "./errors.ts";

/** Task ids become one NATS subject token and one blob key segment: no dots, slashes or spaces. */
const TASK_ID = /^[A-Za-z0-9_-]{1,200}$/;
const EXTENSION = /^[A-Za-z0-9]{1,16}$/;

export function isValidTaskId(taskId: string): boolean {
  return typeof taskId === "string" && TASK_ID.test(taskId);
}

function assertTaskId(taskId: string): void {
  if (!isValidTaskId(taskId)) throw new InvalidWorkerArgumentError(`invalid task id ${JSON.stringify(taskId)}`);
}

/** `tasks/<task id>/checkpoints/` */
export function checkpointPrefix(taskId: string): string {
  assertTaskId(taskId);
  return `tasks/${taskId}/checkpoints/`;
}

/** `tasks/<task id>/checkpoints/<name>`; the name is one or more `[A-Za-z0-9._-]` segments joined by `/`. */
export function checkpointKey(taskId: string, name: string): string {
  if (typeof name !== "string" || !isValidBlobKey(name)) throw new InvalidCheckpointNameError(String(name));
  return `${checkpointPrefix(taskId)}${name}`;
}

/** `results/<kind>/<task id>.<ext>` (a leading dot on `ext` is ignored). */
export function resultKeyFor(kind: TaskKind, taskId: string, ext: string): string {
  assertTaskId(taskId);
  const bare = typeof ext === "string" && ext.startsWith(".") ? ext.slice(1) : ext;
  if (typeof bare !== "string" || !EXTENSION.test(bare)) {
    throw new InvalidWorkerArgumentError(`invalid result extension ${JSON.stringify(ext)}`);
  }
  return `results/${kind}/${taskId}.${bare}`;
}
