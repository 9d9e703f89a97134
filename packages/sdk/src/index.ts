export { createClient, unwrap, type ClientOptions, type VoicelocClient } from "./client.ts";
export {
  ApiError,
  AuthenticationError,
  ConnectionError,
  NotFoundError,
  RateLimitError,
  TaskFailedError,
  ValidationError,
  VoicelocError,
  WaitTimeoutError,
  WebhookVerificationError,
  formatValidationItems,
  type ValidationItem,
} from "./errors.ts";
export { upload, type UploadInput, type UploadOptions, type UploadRecord } from "./upload.ts";
export { kindOf, recordPath, waitFor, type ProgressUpdate, type TaskKind, type TaskRecord, type TaskStatus, type WaitOptions } from "./wait.ts";
export { download, type DownloadResult } from "./download.ts";
export { verifyWebhook, type WebhookEvent, type WebhookHeaders } from "./webhooks.ts";
export type { components, operations, paths } from "./generated/api.ts";
import type { components } from "./generated/api.ts";
export type AudioBook = components["schemas"]["AudioBook"];
export type VoiceStream = components["schemas"]["VoiceStream"];
export type SubtitleJob = components["schemas"]["SubtitleJob"];
export type Language = components["schemas"]["Language"];
