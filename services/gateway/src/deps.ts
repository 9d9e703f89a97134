/** What the gateway's routes and middlewares are given: its stores, services and settings. */
import type { Logger } from "@voiceloc/log";
import type { Store } from "@voiceloc/store";
import type { BlobStore, SigningSecrets } from "@voiceloc/blobs";
import type { ApiInfo } from "@voiceloc/config";
import type { Authenticator } from "./auth/authenticator.ts";
import type { IdempotencyStore } from "./http/idempotency.ts";
import type { RateLimiter } from "./http/rate-limit.ts";
import type { TaskDispatcher, TaskRecords, UrlSigner } from "./records/kinds.ts";
import type { RecordReaders } from "./records/read.ts";
import type { RecordEvents } from "./records/sse.ts";
import type { SandboxTasks } from "./records/sandbox-tasks.ts";
import type { Synthesizer, VoiceCatalog } from "./speech/synthesizer.ts";
import type { CapabilitySource } from "./speech/capability-source.ts";
import type { UploadRepository } from "./uploads/repository.ts";
import type { CloneRepository } from "./clones/repository.ts";
import type { CloneMaker } from "./clones/maker.ts";
import type { BookCovers } from "./records/book-covers.ts";
import type { DashboardDeps } from "./dashboard/kit.ts";
import type { WebhookRepository } from "./webhooks/repository.ts";
import type { SecretBox } from "./webhooks/secrets.ts";
import type { WebhookUrlPolicy } from "./webhooks/url.ts";

export interface SandboxLimits {
  maxBookCharacters: number;
  maxMediaSeconds: number;
  maxSpeechCharacters: number;
  maxTasksInFlight: number;
}

export interface GatewayDeps {
  logger: Logger;
  store: Store;
  authenticator: Authenticator;
  idempotency: IdempotencyStore;
  /** Each kind's records (see records/kinds.ts). */
  records: TaskRecords;
  /** Each kind's reads as the API answers them: the routes' and the fast path's one read core. */
  reads: RecordReaders;
  signer: UrlSigner;
  dispatcher: TaskDispatcher;
  /** Live progress streams (`…/events`): this process's fan-out of record changes. */
  events: RecordEvents;
  synthesizer?: Synthesizer | undefined;
  voiceCatalog?: VoiceCatalog | undefined;
  /** Cloned voices (`/v1/voices/clones`, `clone:<id>` wherever a voice is named); without it every `clone:` voice is unknown. */
  clones?: CloneDeps | undefined;
  /** Finished audio books re-wrapped with a changed cover (the audio book service over the bus); none: such a PATCH is a 503. */
  bookCovers?: BookCovers | undefined;
  /** The engines' capability table (from the workers), for GET /v1/capabilities and 422s at creation. */
  capabilities?: CapabilitySource | undefined;
  /** Blob store and secret for signed downloads (`/v1/files/…`). */
  files?: { blobs: BlobStore; secret: SigningSecrets } | undefined;
  /** Checks of other parts (bus, workers) for /readyz. */
  readinessChecks?: Array<{ name: string; check: () => Promise<void> }>;
  /** Limits of sandbox keys (SANDBOX_*); none: sandbox keys get the live limits. */
  sandbox?: SandboxLimits | undefined;
  /** The sandbox's tasks in flight across the mesh (SANDBOX_MAX_TASKS_IN_FLIGHT; `storeTask`). */
  sandboxTasks?: SandboxTasks | undefined;
  /** The dashboard's accounts, sessions and keys; no dashboard without it. */
  dashboard?: DashboardDeps | undefined;
  /** Per-credential request rate on /v1 (shared through the store); none when off. */
  rateLimiter?: RateLimiter | undefined;
  publicBaseUrl: string;
  /** `info.contact` and `info.license` of /openapi.json (API_CONTACT_*, API_LICENSE_*); the config's defaults when absent. */
  apiInfo?: ApiInfo | undefined;
  /** When set, GET /metrics needs `Authorization: Bearer <token>` (METRICS_TOKEN). */
  metricsToken?: string | undefined;
  /** `false`: no HTTP metrics middleware and no /metrics (the overhead benchmark's baseline). */
  metrics?: boolean | undefined;
  /** Webhook endpoints (`/v1/webhooks`): their store, the secret sealer and the URL policy. */
  webhooks?: WebhookRouteDeps | undefined;
  maxBodyBytes: number;
  /** A non-upload file reference's problem for this owner in plain words (shape, host, outside its media root), or null. */
  fileReferenceCheck: (ref: string, ownerId: string) => string | null;
  /** POST/GET/DELETE /v1/uploads and `upload:<id>` references; without it every `upload:` reference is a 422. */
  uploads?: UploadDeps | undefined;
  now?: () => Date;
  newId?: () => string;
}

/** Uploads: their records, the blob store and the limits. */
export interface UploadDeps {
  repo: UploadRepository;
  blobs: BlobStore;
  /** UPLOAD_MAX_BYTES. */
  maxBytes: number;
  /** UPLOAD_TTL_SECONDS. */
  ttlSeconds: number;
}

/** Cloned voices: their records, and the service that makes and deletes them at the engine (none: 503). */
export interface CloneDeps {
  repo: CloneRepository;
  maker?: CloneMaker | undefined;
}

/** Webhook endpoints: their store, the secret sealer and the URL policy. */
export interface WebhookRouteDeps {
  repo: WebhookRepository;
  box: SecretBox;
  urlPolicy: WebhookUrlPolicy;
}
