export {
  createTaskWorker,
  type TaskContext,
  type TaskHandler,
  type TaskResult,
  type TaskWorker,
  type TaskWorkerOptions,
} from "./worker.ts";
export { cleanupCheckpoints, type TaskCheckpoints } from "./checkpoints.ts";
export {
  CheckpointNotFoundError,
  InvalidCheckpointNameError,
  InvalidWorkerArgumentError,
  RetryableTaskError,
  TaskInputError,
  WorkerError,
  WorkerStoppedError,
  type WorkerErrorCode,
} from "./errors.ts";
export { checkpointKey, checkpointPrefix, isValidTaskId, resultKeyFor } from "./keys.ts";
export { SEQ_DELIVERY_SPAN, taskEventSeq } from "./seq.ts";
