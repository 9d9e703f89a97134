import { CodedError, type CodedErrorOptions } from "@voiceloc/errors";

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

/**
 * The one error this package throws. `message` is plain words, safe to show to
 * the API user (it never holds resolved addresses, credentials or local paths
 * outside what the user gave); technical detail goes in `cause`. Whether trying
 * again may help is the worker's failure policy's decision (by code and status).
 */
export class FetchRefusedError extends CodedError<FetchRefusedCode> {
  override readonly name = "FetchRefusedError";
  /** The HTTP status, for `http_status` (and object-store errors when known). */
  readonly status?: number;

  constructor(code: FetchRefusedCode, message: string, options: CodedErrorOptions & { status?: number } = {}) {
    super(code, message, options);
    if (options.status !== undefined) this.status = options.status;
  }
}

export function isFetchRefusedError(error: unknown): error is FetchRefusedError {
  return error instanceof FetchRefusedError;
}
