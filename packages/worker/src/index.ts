export {
  createTaskWorker,
  type ResumeContext,
  type TaskCatalog,
  type TaskContext,
  type TaskHandler,
  type TaskResult,
  type TaskWorker,
  type TaskWorkerOptions,
  type TaskWorkName,
} from "./worker.ts";
export {
  defineTaskService,
  DEFAULT_STOP_GRACE_MS,
  type TaskService,
  type TaskServiceDefinition,
  type TaskServiceSettings,
} from "./service.ts";
export { readTranslationCheckpoint, translateWithCheckpoint, TRANSLATION_CHECKPOINT, type SegmentTranslation } from "./translation.ts";
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
export {
  classifyFailure,
  INTERNAL_ERROR_REASON,
  NO_SPEECH_MESSAGE,
  NOT_MEDIA,
  taskFailure,
  type FailureClass,
  type FailureScope,
  type TaskFailure,
} from "./policy.ts";
export { MAX_REASON_CHARS, plainReason } from "./reason.ts";
export { pictureTooLarge } from "./picture.ts";
export {
  clonedVoiceFromWire,
  clonedVoiceToWire,
  createTaskClone,
  profileFromWire,
  profileToWire,
  removeTaskClone,
  taskCloneId,
  type TaskCloneRequest,
} from "./clone.ts";
