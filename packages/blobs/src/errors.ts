import { CodedError, type CodedErrorOptions } from "@voiceloc/errors";

/** Machine-readable reason carried by every error this package throws. */
export type BlobErrorCode =
  /** The key names no blob (never written, deleted, or a "directory" of other keys). */
  | "blob_not_found"
  /** The key (or list prefix) failed validation; see {@link validateBlobKey}. */
  | "invalid_blob_key"
  /** A byte range outside the blob, or start > end. */
  | "invalid_range"
  /** File system only: the key needs a directory where a blob file exists, or the reverse (`a` and `a/b`). */
  | "blob_key_conflict"
  /** NATS only: the blob was overwritten or deleted while it was being read. */
  | "blob_changed"
  /** A `contentType` that is not a printable-ASCII `type/subtype[; params]` of at most 255 characters. */
  | "invalid_content_type"
  /** The backend failed (I/O error, NATS timeout, corrupt data…); detail in `cause`. */
  | "blob_store_failed"
  /** A signing secret list that is empty or holds a secret shorter than 32 characters. */
  | "invalid_signing_secret";

/** Base class of every error thrown by `@voiceloc/blobs`. */
export class BlobError extends CodedError<BlobErrorCode> {
  override readonly name: string = "BlobError";
  /** The blob key concerned, when there is one. */
  readonly key?: string;

  constructor(code: BlobErrorCode, message: string, options: CodedErrorOptions & { key?: string } = {}) {
    super(code, message, options);
    if (options.key !== undefined) this.key = options.key;
  }
}

export class BlobNotFoundError extends BlobError {
  override readonly name = "BlobNotFoundError";
  constructor(key: string, options: { cause?: unknown } = {}) {
    super("blob_not_found", `blob not found: ${key}`, { key, ...options });
  }
}

export class InvalidBlobKeyError extends BlobError {
  override readonly name = "InvalidBlobKeyError";
  /** Why the key was refused, in plain words. */
  readonly reason: string;
  constructor(key: string, reason: string) {
    // JSON.stringify escapes NUL and control characters so they never reach a log line raw.
    super("invalid_blob_key", `invalid blob key ${JSON.stringify(key)}: ${reason}`, { key });
    this.reason = reason;
  }
}

export class BlobRangeError extends BlobError {
  override readonly name = "BlobRangeError";
  constructor(key: string, message: string) {
    super("invalid_range", message, { key });
  }
}

export class InvalidContentTypeError extends BlobError {
  override readonly name = "InvalidContentTypeError";
  constructor(key: string, contentType: string) {
    super("invalid_content_type", `invalid content type ${JSON.stringify(contentType)} for blob ${key}`, { key });
  }
}

export class BlobKeyConflictError extends BlobError {
  override readonly name = "BlobKeyConflictError";
  constructor(key: string, options: { cause?: unknown } = {}) {
    super(
      "blob_key_conflict",
      `blob key ${key} conflicts with an existing key (one is a path prefix of the other)`,
      { key, ...options },
    );
  }
}

export class BlobChangedError extends BlobError {
  override readonly name = "BlobChangedError";
  constructor(key: string, options: { cause?: unknown } = {}) {
    super("blob_changed", `blob ${key} was overwritten or deleted while being read`, { key, ...options });
  }
}

export class BlobStoreError extends BlobError {
  override readonly name = "BlobStoreError";
  constructor(message: string, options: { key?: string; cause?: unknown } = {}) {
    super("blob_store_failed", message, options);
  }
}

export class InvalidSigningSecretError extends BlobError {
  override readonly name = "InvalidSigningSecretError";
  constructor(message: string) {
    super("invalid_signing_secret", message);
  }
}

export function isBlobError(error: unknown): error is BlobError {
  return error instanceof BlobError;
}

export function isBlobNotFoundError(error: unknown): error is BlobNotFoundError {
  return error instanceof BlobNotFoundError;
}

/** Pass a BlobError through unchanged; wrap anything else as BlobStoreError. */
export function toBlobError(operation: string, key: string | undefined, error: unknown): BlobError {
  if (error instanceof BlobError) return error;
  const detail = error instanceof Error ? error.message : String(error);
  const what = key === undefined ? operation : `${operation} ${key}`;
  return new BlobStoreError(`${what} failed: ${detail}`, { ...(key === undefined ? {} : { key }), cause: error });
}
