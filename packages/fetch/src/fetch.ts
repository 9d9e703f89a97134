import { randomUUID } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { extname, join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { isBlobNotFoundError, uploadBlobKey, type BlobStore } from "@voiceloc/blobs";
import { silentLogger, type Logger } from "@voiceloc/log";
import { parseAllowedHosts } from "./address.ts";
import { classifyReference } from "./classify.ts";
import { FetchRefusedError } from "./errors.ts";
import { systemResolver, type Resolver } from "./guard.ts";
import { fetchHttp } from "./http.ts";
import { fetchObject, notConfigured, type ObjectStoreOptions } from "./object.ts";
import { copyFromMediaRoot } from "./path.ts";
import { FILE_NOT_AVAILABLE, accountMediaFolder, type MediaRootScope } from "./media.ts";
import { writeCapped } from "./sink.ts";

export interface FetchOptions {
  /** Directory that path references resolve against and must stay under. */
  mediaRoot: string;
  /**
   * `account` (MEDIA_ROOT_SCOPE): paths resolve under `mediaRoot/<owner's folder>/` (see
   * `accountMediaFolder`) and may not leave it; `shared` (default): under `mediaRoot` itself.
   */
  mediaRootScope?: MediaRootScope;
  /** The account the task belongs to: the folder of `account` scope, and whose uploads `upload:<id>` may name. */
  owner?: string;
  /** Where uploads live (`upload:<id>` is read from `uploadBlobKey(owner, id)`); without it uploads are not available. */
  blobs?: Pick<BlobStore, "createReadStream">;
  /**
   * Named hosts exempt from the private-address refusal: `minio:9000` (that
   * port only) or `minio` (any port); IP literals too (`10.0.0.5:9000`,
   * `[fd00::5]:9000`). Cloud-metadata names and addresses stay refused.
   */
  allowPrivateHosts?: readonly string[];
  /** Largest input accepted, in bytes. Default 2 GiB. */
  maxBytes?: number;
  /** Total time for the whole fetch (DNS, every redirect, the body). Default 10 minutes. */
  timeoutMs?: number;
  /** Redirects followed before `too_many_redirects`. Default 5. */
  maxRedirects?: number;
  /** Host-name resolver; the system's (getaddrinfo) by default. Tests inject one. */
  resolver?: Resolver;
  /** Configuration for s3:// references; without it they fail with `object_storage_not_configured`. */
  s3?: ObjectStoreOptions;
  /**
   * Configuration for gs:// references, through the GCS S3-interoperability
   * XML API (HMAC keys; endpoint defaults to https://storage.googleapis.com).
   * Without it they fail with `object_storage_not_configured`.
   */
  gs?: ObjectStoreOptions;
  /** CA certificates to trust for https instead of Node's bundled ones (an internal CA). Most deployments leave it out. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Cancels the fetch (code `cancelled`). */
  signal?: AbortSignal;
  logger?: Logger;
}

export const FETCH_DEFAULTS = {
  maxBytes: 2 * 1024 * 1024 * 1024,
  timeoutMs: 10 * 60 * 1000,
  maxRedirects: 5,
} as const;

export interface FetchResult {
  /** The local file now holding the input (inside `destDir`). */
  path: string;
  size: number;
  contentType?: string;
  sourceKind: "path" | "http" | "object" | "upload";
}

const SAFE_EXTENSION = /^\.[A-Za-z0-9]{1,10}$/;

function extensionOf(name: string): string {
  const ext = extname(name);
  return SAFE_EXTENSION.test(ext) ? ext.toLowerCase() : "";
}

function errnoCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined;
}

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
  "ETIMEDOUT",
  "EPROTO",
  "HPE_INVALID_CONSTANT",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "UND_ERR_SOCKET",
]);

function toFetchError(error: unknown, timedOut: boolean, cancelled: boolean, timeoutMs: number): FetchRefusedError {
  if (error instanceof FetchRefusedError) return error;
  if (timedOut) {
    return new FetchRefusedError("timeout", `Fetching the input took longer than ${Math.round(timeoutMs / 100) / 10} s and was stopped.`, { cause: error });
  }
  if (cancelled) return new FetchRefusedError("cancelled", "Fetching the input was cancelled.", { cause: error });
  const code = errnoCode(error);
  if (code === "ENOSPC" || code === "EACCES" || code === "EROFS" || code === "EMFILE" || code === "EEXIST") {
    return new FetchRefusedError("io_error", "The input could not be written to local storage.", { cause: error });
  }
  if (code !== undefined && (NETWORK_CODES.has(code) || code.startsWith("ERR_TLS") || code.startsWith("HPE_") || code.includes("CERT"))) {
    return new FetchRefusedError("connection_failed", "The connection to the server failed.", { cause: error });
  }
  return new FetchRefusedError("connection_failed", "The input could not be fetched.", { cause: error });
}

/**
 * Fetches the input named by `ref` (see {@link classifyReference}) into a new
 * file in `destDir` and says where it is. Paths are copied from under the
 * media root; http(s) goes through the SSRF guard on every hop; s3:// and
 * gs:// go through the configured object store. The size cap is enforced
 * while streaming, the time cap over the whole fetch; on failure no partial
 * file is left behind. Throws only {@link FetchRefusedError}.
 */
export async function fetchToFile(ref: string, destDir: string, options: FetchOptions): Promise<FetchResult> {
  const maxBytes = options.maxBytes ?? FETCH_DEFAULTS.maxBytes;
  const timeoutMs = options.timeoutMs ?? FETCH_DEFAULTS.timeoutMs;
  const maxRedirects = options.maxRedirects ?? FETCH_DEFAULTS.maxRedirects;
  const logger = (options.logger ?? silentLogger()).child({ component: "fetch" });
  const started = Date.now();

  // With account scope and no owner nothing under the media root is readable (absolute paths refused too).
  const mediaRoot =
    options.mediaRootScope === "account" ? (options.owner ? join(options.mediaRoot, accountMediaFolder(options.owner)) : undefined) : options.mediaRoot;
  const classified = classifyReference(ref, mediaRoot === undefined ? {} : { mediaRoot });

  const controller = new AbortController();
  let timedOut = false;
  let cancelled = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error("fetch timed out"));
  }, timeoutMs);
  const onCancel = (): void => {
    cancelled = true;
    controller.abort(options.signal?.reason);
  };
  if (options.signal?.aborted) onCancel();
  else options.signal?.addEventListener("abort", onCancel, { once: true });
  const signal = controller.signal;

  try {
    await mkdir(destDir, { recursive: true });
    const baseName = (ext: string): string => resolve(join(destDir, `input-${randomUUID()}${ext}`));
    switch (classified.kind) {
      case "path": {
        if (mediaRoot === undefined) throw new FetchRefusedError("not_found", FILE_NOT_AVAILABLE);
        const dest = baseName(extensionOf(classified.relative));
        const size = await copyFromMediaRoot(mediaRoot, classified.relative, dest, maxBytes, signal);
        logger.info({ sourceKind: "path", size, ms: Date.now() - started }, "fetch: input copied");
        return { path: dest, size, sourceKind: "path" };
      }
      case "http": {
        const url = new URL(classified.url);
        const dest = baseName(extensionOf(decodeURIComponentSafe(url.pathname)));
        const fetched = await fetchHttp(classified.url, dest, {
          allowedHosts: parseAllowedHosts(options.allowPrivateHosts ?? []),
          resolver: options.resolver ?? systemResolver,
          maxBytes,
          maxRedirects,
          signal,
          logger,
          ...(options.ca !== undefined ? { ca: options.ca } : {}),
        });
        logger.info({ sourceKind: "http", host: url.host, size: fetched.size, ms: Date.now() - started }, "fetch: input downloaded");
        return { path: dest, size: fetched.size, ...(fetched.contentType !== undefined ? { contentType: fetched.contentType } : {}), sourceKind: "http" };
      }
      case "upload": {
        const dest = baseName("");
        const size = await copyUpload(options, classified.id, dest, maxBytes, signal);
        logger.info({ sourceKind: "upload", size, ms: Date.now() - started }, "fetch: upload copied");
        return { path: dest, size, sourceKind: "upload" };
      }
      default: {
        const store = classified.scheme === "s3" ? options.s3 : options.gs;
        if (store === undefined) throw notConfigured(classified.scheme);
        const dest = baseName(extensionOf(classified.key));
        const fetched = await fetchObject(classified.scheme, classified.bucket, classified.key, store, dest, maxBytes, signal);
        logger.info({ sourceKind: "object", scheme: classified.scheme, bucket: classified.bucket, size: fetched.size, ms: Date.now() - started }, "fetch: object downloaded");
        return { path: dest, size: fetched.size, ...(fetched.contentType !== undefined ? { contentType: fetched.contentType } : {}), sourceKind: "object" };
      }
    }
  } catch (error) {
    const failure = toFetchError(error, timedOut, cancelled, timeoutMs);
    logger.info({ sourceKind: classified.kind, code: failure.code, status: failure.status, ms: Date.now() - started }, "fetch: refused or failed");
    throw failure;
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onCancel);
  }
}

/** Copies the owner's upload to `dest`; a missing blob, owner or store is {@link FILE_NOT_AVAILABLE}. */
async function copyUpload(options: FetchOptions, id: string, dest: string, maxBytes: number, signal: AbortSignal): Promise<number> {
  if (!options.blobs || !options.owner) throw new FetchRefusedError("not_found", FILE_NOT_AVAILABLE);
  let source: Readable;
  try {
    source = await options.blobs.createReadStream(uploadBlobKey(options.owner, id));
  } catch (cause) {
    if (isBlobNotFoundError(cause)) throw new FetchRefusedError("not_found", FILE_NOT_AVAILABLE, { cause });
    throw new FetchRefusedError("io_error", "The upload could not be read.", { cause });
  }
  return writeCapped(source, dest, maxBytes, signal);
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
