import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import type { Config } from "@voiceloc/config";
import type { Logger } from "@voiceloc/log";
import { openEmbeddedStore, openMongoStore, type Store } from "@voiceloc/store";
import { blobRootFor, createFsBlobStore, type BlobStore } from "@voiceloc/blobs";
import type { Bus } from "@voiceloc/bus";
import { checkReference, mediaRootFor, type MediaRootScope } from "@voiceloc/fetch";
import { createApp } from "./app.ts";
import type { GatewayDeps } from "./deps.ts";
import { ApiKeyRepository } from "./auth/api-keys.ts";
import { Authenticator } from "./auth/authenticator.ts";
import { IDEMPOTENCY_PURGE_INTERVAL_MS, IdempotencyStore } from "./http/idempotency.ts";
import type { GatewayApp } from "./http/context.ts";
import { TASK_KINDS, type TaskDispatcher, type TaskKind, type TaskRecords } from "./records/kinds.ts";
import { recordReaders } from "./records/read.ts";
import { TaskRepository } from "./records/repository.ts";
import { SandboxTasks } from "./records/sandbox-tasks.ts";
import { urlSigner } from "./records/signer.ts";
import { busSynthesis } from "./speech/synthesizer.ts";
import { CloneRepository } from "./clones/repository.ts";
import { busCloneMaker } from "./clones/maker.ts";
import { busBookCovers, coverOnCompletion } from "./records/book-covers.ts";
import { TaskMesh, type TaskMeshOptions } from "./mesh/tasks.ts";
import { DispatchSlots } from "./mesh/slots.ts";
import { StreamPlaces } from "./mesh/places.ts";
import { busCapabilities } from "./speech/capability-source.ts";
import { RateLimiter } from "./http/rate-limit.ts";
import { withFastRecordReads } from "./records/fast-read.ts";
import { withoutTypeOnEmptyAnswers } from "./http/no-content.ts";
import { AccountRepository } from "./accounts/accounts.ts";
import { SessionStore } from "./accounts/sessions.ts";
import { LoginThrottle } from "./accounts/throttle.ts";
import { AccountNotices } from "./accounts/notices.ts";
import { PasswordResets } from "./accounts/resets.ts";
import { RecordEvents } from "./records/sse.ts";
import { WebhookRepository } from "./webhooks/repository.ts";
import { SecretBox } from "./webhooks/secrets.ts";
import { WebhookDelivery } from "./webhooks/delivery.ts";
import { UploadRepository } from "./uploads/repository.ts";
import { startUploadSweep } from "./uploads/sweep.ts";

/** Where the gateway keeps its embedded store: its own directory, never shared with another process. */
export function gatewayDataDir(config: Config): string {
  return join(config.dataDir, "gateway");
}

export async function openGatewayStore(config: Config, logger: Logger): Promise<Store> {
  if (config.mongodb) return openMongoStore({ url: config.mongodb.url, dbName: config.mongodb.dbName, logger });
  return openEmbeddedStore({ dir: gatewayDataDir(config), logger });
}

/**
 * The secret for signed download URLs: SIGNING_SECRET, or (single machine) one
 * generated on first start and kept in DATA_DIR with mode 0600.
 */
export async function resolveSigningSecret(config: Config): Promise<string> {
  if (config.signingSecret) return config.signingSecret;
  const path = join(config.dataDir, "signing.key");
  try {
    const existing = (await readFile(path, "utf8")).trim();
    if (existing.length >= 32) return existing;
  } catch {
    // not there yet
  }
  await mkdir(config.dataDir, { recursive: true });
  const secret = randomBytes(32).toString("base64url");
  await writeFile(path, `${secret}\n`, { mode: 0o600, flag: "w" });
  return secret;
}

/**
 * A file reference's problem in plain words, or null when it is acceptable: its shape, an IP
 * literal or name that is not public (unless in FETCH_ALLOW_PRIVATE_HOSTS), s3:// / gs:// without
 * a configured store, an absolute path outside the owner's media root (its folder with
 * `MEDIA_ROOT_SCOPE=account`: "file not available", the worker's reason for a missing file too).
 */
export function fileReferenceProblem(
  ref: string,
  mediaRoot: string,
  fetch?: Config["fetch"],
  scope: { mediaRootScope: MediaRootScope; owner: string } = { mediaRootScope: "shared", owner: "" },
): string | null {
  try {
    checkReference(ref, {
      mediaRoot: mediaRootFor(mediaRoot, scope.mediaRootScope, scope.owner),
      allowPrivateHosts: fetch?.allowPrivateHosts ?? [],
      s3: fetch?.s3 !== undefined,
      gs: fetch?.gs !== undefined,
    });
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : "invalid file reference";
  }
}

export interface GatewayOptions {
  config: Config;
  logger: Logger;
  /** The bus to the workers; without it records stay queued and synthesis answers 503. */
  bus?: Bus | undefined;
  /** Where results live, served through signed URLs. */
  blobs?: BlobStore | undefined;
  readinessChecks?: GatewayDeps["readinessChecks"];
  /** Re-publish sweep period (tests shorten it). */
  sweepIntervalMs?: number;
  /** The rate limiter's clock in ms (tests move it by hand); Date.now by default. */
  rateLimitClock?: () => number;
  /** How often expired idempotency keys are purged (tests shorten it). */
  idempotencyPurgeIntervalMs?: number;
  /** The re-publish sweep leaves dispatch places younger than this to the pass that claimed them (tests shorten it). */
  sweepGraceMs?: number;
  /** How long one kind's capability table is trusted before the workers are asked again (default 30 s). */
  capabilityTtlMs?: number;
  /** How often expired uploads are deleted (default UPLOAD_SWEEP_INTERVAL_MS). */
  uploadSweepIntervalMs?: number;
  /** Called after each progress event is projected into its record (tests sample every update). */
  onProjected?: TaskMeshOptions["onProjected"];
}

export interface GatewayService {
  readonly name: "gateway";
  readonly app: GatewayApp;
  readonly deps: GatewayDeps;
  /** Listens on PORT; resolves with the bound port. */
  start(): Promise<number>;
  stop(): Promise<void>;
}

/** Queued records wait for a bus; the re-publish sweep hands them out once one exists. */
const holdDispatcher: TaskDispatcher = { dispatch: async () => undefined };

export async function createGateway(options: GatewayOptions): Promise<GatewayService> {
  const { config } = options;
  const logger = options.logger.child({ component: "gateway" });
  const store = await openGatewayStore(config, logger);
  const keys = await ApiKeyRepository.open(store);
  for (const seed of config.seedKeys) await keys.seed(seed.account, seed.key);
  const accounts = await AccountRepository.open(store);
  const authenticator = new Authenticator(keys, config.jwt, logger, {
    liveKeys: config.accounts.liveKeys,
    approved: (accountId) => accounts.liveApproved(accountId),
  });
  const secret = await resolveSigningSecret(config);
  const records: TaskRecords = {
    audiobook: await TaskRepository.open(store, TASK_KINDS.audiobook.collection),
    "voice-stream": await TaskRepository.open(store, TASK_KINDS["voice-stream"].collection),
    subtitle: await TaskRepository.open(store, TASK_KINDS.subtitle.collection),
  };
  const mesh = options.bus
    ? new TaskMesh(
        options.bus,
        records,
        await DispatchSlots.open(store, { accountInFlight: config.scheduling.accountMaxTasksInFlight, queueUnstarted: config.scheduling.queueMaxUnstartedTasks }),
        logger,
        {
          ...(options.sweepIntervalMs ? { sweepIntervalMs: options.sweepIntervalMs } : {}),
          ...(options.sweepGraceMs !== undefined ? { sweepGraceMs: options.sweepGraceMs } : {}),
          ...(options.onProjected ? { onProjected: options.onProjected } : {}),
        },
      )
    : undefined;
  const events = new RecordEvents({
    repos: records,
    bus: options.bus,
    logger,
    heartbeatMs: config.sse.heartbeatMs,
    maxStreamsPerAccount: config.sse.maxStreamsPerAccount,
    // a dead gateway's places are free again after three missed renewals
    places: await StreamPlaces.open(store, 3 * config.sse.heartbeatMs),
  });
  if (mesh) events.attach(mesh);
  const signer = urlSigner({ baseUrl: config.publicBaseUrl, secret });
  const webhooks = { repo: await WebhookRepository.open(store), box: new SecretBox(secret), urlPolicy: { allowPrivateHosts: config.fetch.allowPrivateHosts } };
  const reads = recordReaders(records, { signer, publicBaseUrl: config.publicBaseUrl });
  // Webhook deliveries: enqueued when this process projects a record finishing, consumed by every gateway.
  const render = (kind: TaskKind, id: string): Promise<unknown> => reads[kind].presented(id);
  const delivery =
    options.bus && mesh
      ? new WebhookDelivery({
          bus: options.bus,
          repo: webhooks.repo,
          outbox: records,
          box: webhooks.box,
          render,
          settings: { ...config.webhooks, allowPrivateHosts: config.fetch.allowPrivateHosts },
          logger: logger.child({ component: "webhooks" }),
        })
      : undefined;
  if (mesh && delivery) mesh.onChange(delivery.onChange);
  // A cover changed while a book rendered: the gateway projecting its completion has the file re-wrapped.
  const bookCovers = options.bus ? busBookCovers(options.bus) : undefined;
  if (mesh && bookCovers) mesh.onChange(coverOnCompletion({ repo: records.audiobook, covers: bookCovers, logger: logger.child({ component: "book-covers" }) }));
  // Uploads live in the blob store the workers read (the one given; a gateway alone keeps them in DATA_DIR).
  const uploadBlobs = options.blobs ?? createFsBlobStore({ root: blobRootFor(config.dataDir) });
  const uploadRepo = await UploadRepository.open(store);
  const synthesis = options.bus ? busSynthesis(options.bus, { maxCharacters: config.synthesisMaxCharacters }) : undefined;
  const deps: GatewayDeps = {
    logger,
    store,
    authenticator,
    idempotency: await IdempotencyStore.open(store),
    records,
    reads,
    signer,
    dispatcher: mesh ?? holdDispatcher,
    events,
    synthesizer: synthesis,
    voiceCatalog: synthesis,
    clones: { repo: await CloneRepository.open(store), maker: options.bus ? busCloneMaker(options.bus) : undefined },
    bookCovers,
    capabilities: options.bus ? busCapabilities(options.bus, logger, options.capabilityTtlMs) : undefined,
    files: options.blobs ? { blobs: options.blobs, secret } : undefined,
    readinessChecks: options.readinessChecks,
    rateLimiter: config.rateLimit
      ? await RateLimiter.open(store, config.rateLimit, { logger, ...(options.rateLimitClock ? { now: options.rateLimitClock } : {}) })
      : undefined,
    sandbox: config.sandbox,
    sandboxTasks: await SandboxTasks.open(store, records, config.sandbox.maxTasksInFlight),
    dashboard: {
      accounts,
      sessions: await SessionStore.open(store, { idleSeconds: config.accounts.sessionIdleSeconds, maxSeconds: config.accounts.sessionMaxSeconds }),
      throttle: await LoginThrottle.open(store, {
        perAccount: config.accounts.loginMaxFailuresPerAccount,
        perAddress: config.accounts.loginMaxFailuresPerAddress,
        windowSeconds: config.accounts.loginWindowSeconds,
        signupsPerAddress: config.accounts.signupMaxPerAddress,
      }),
      notices: await AccountNotices.open(store),
      resets: await PasswordResets.open(store),
      keys,
      signup: config.accounts.signup === "open",
      liveKeys: config.accounts.liveKeys,
      trustProxy: config.accounts.trustProxy,
      forgetKeys: () => authenticator.forgetKeys(),
    },
    publicBaseUrl: config.publicBaseUrl,
    apiInfo: config.apiInfo,
    metricsToken: config.telemetry.metricsToken,
    webhooks,
    maxBodyBytes: config.maxBodyBytes,
    fileReferenceCheck: (ref, owner) => fileReferenceProblem(ref, config.mediaRoot, config.fetch, { mediaRootScope: config.mediaRootScope, owner }),
    uploads: { repo: uploadRepo, blobs: uploadBlobs, maxBytes: config.uploads.maxBytes, ttlSeconds: config.uploads.ttlSeconds },
  };
  const app = createApp(deps);
  let server: Server | undefined;
  let stopPurging: (() => Promise<void>) | undefined;
  let stopping: Promise<void> | undefined;
  let stopUploadSweep: (() => Promise<void>) | undefined;

  return {
    name: "gateway",
    app,
    deps,
    start: async () => {
      await events.start();
      await delivery?.start();
      await mesh?.start();
      stopPurging ??= deps.idempotency.startPurging(options.idempotencyPurgeIntervalMs ?? IDEMPOTENCY_PURGE_INTERVAL_MS, logger);
      stopUploadSweep ??= startUploadSweep(uploadRepo, uploadBlobs, options.uploadSweepIntervalMs ?? config.uploads.sweepIntervalMs, logger);
      return new Promise<number>((resolve, reject) => {
        // The app behind the fast path for record reads (see records/fast-read.ts), as @hono/node-server's `serve` would run it.
        const listener = withFastRecordReads(deps, withoutTypeOnEmptyAnswers(getRequestListener(app.fetch, { hostname: config.host })));
        const s = createServer(listener);
        s.once("error", reject);
        s.listen(config.port, config.host, () => {
          const port = (s.address() as AddressInfo).port;
          logger.info({ port, store: store.kind }, "gateway listening");
          resolve(port);
        });
        server = s;
      });
    },
    // idempotent: a second call waits for the first
    stop: () =>
      (stopping ??= (async () => {
        if (server) {
          const s = server;
          const closed = new Promise<void>((resolve) => s.close(() => resolve()));
          // live progress streams end now (their clients reconnect to another gateway with Last-Event-ID);
          // otherwise they would hold the server open until the shutdown timeout
          await events.stop();
          // connections whose stream just ended turn idle a moment later
          s.closeIdleConnections();
          const sweep = setInterval(() => s.closeIdleConnections(), 100);
          await closed.finally(() => clearInterval(sweep));
        } else {
          await events.stop();
        }
        await stopPurging?.();
        stopPurging = undefined;
        await stopUploadSweep?.();
        stopUploadSweep = undefined;
        if (!options.blobs) await uploadBlobs.close();
        await mesh?.stop();
        await delivery?.stop();
        await store.close();
      })()),
  };
}
