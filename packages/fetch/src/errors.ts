/** Why a reference could not be fetched. */
export type FetchRefusedCode =
  /** Empty, malformed, NUL or control characters, `..` in a URL or object key. */
  | "invalid_reference"
  /** A path that leaves the media root: `..`, absolute path elsewhere, symlink escape. */
  | "path_outside_media_root"
  /** A scheme other than http, https, s3 or gs (also on a redirect). */
  | "scheme_not_allowed"
  /** A URL carrying a user name or password. */
  | "credentials_not_allowed"
  /** The host resolves to (or is) a loopback, private, link-local, metadata… address. */
  | "address_not_allowed"
  | "too_many_redirects"
  | "too_large"
  | "timeout"
  /** The file or object does not exist. */
  | "not_found"
  /** The path names a directory, device or other non-regular file. */
  | "not_a_file"
  /** The HTTP server (or object store) answered with a status outside 2xx. */
  | "http_status"
  /** The host name does not resolve. */
  | "host_not_found"
  /** Connection refused, reset, TLS failure… */
  | "connection_failed"
  /** An s3:// or gs:// reference while no object store is configured for it. */
  | "object_storage_not_configured"
  /** The object store refused the request (credentials, permissions…). */
  | "object_storage_error"
  /** The input could not be written to local storage. */
  | "io_error"
  /** The caller cancelled the fetch (its `signal` was aborted). */
  | "cancelled";

const RETRYABLE: ReadonlySet<FetchRefusedCode> = new Set(["timeout", "connection_failed", "host_not_found", "io_error"]);

/**
 * The one error this package throws. `message` is plain words, safe to show to
 * the API user (it never holds resolved addresses, credentials or local paths
 * outside what the user gave); technical detail goes in `cause`.
 */
export class FetchRefusedError extends Error {
  override readonly name = "FetchRefusedError";
  readonly code: FetchRefusedCode;
  /** The HTTP status, for `http_status` (and object-store errors when known). */
  readonly status?: number;
  /** Whether trying again later may succeed (timeouts, network errors, 429, 5xx). */
  readonly retryable: boolean;

  constructor(code: FetchRefusedCode, message: string, options: { cause?: unknown; status?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    if (options.status !== undefined) this.status = options.status;
    const status = options.status;
    this.retryable = RETRYABLE.has(code) || (status !== undefined && (status === 408 || status === 429 || status >= 500));
  }
}

export function isFetchRefusedError(error: unknown): error is FetchRefusedError {
  return error instanceof FetchRefusedError;
}
