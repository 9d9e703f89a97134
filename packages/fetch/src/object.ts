import { Readable } from "node:stream";
import { GetObjectCommand, S3Client, S3ServiceException } from "@aws-sdk/client-s3";
import { FetchRefusedError } from "./errors.ts";
import { tooLarge, writeCapped } from "./sink.ts";

/** An S3-compatible object store (AWS S3, MinIO, Ceph, R2, GCS interoperability…). */
export interface ObjectStoreOptions {
  /** e.g. `http://minio:9000`; for AWS S3 it may be left out. For gs:// it defaults to `https://storage.googleapis.com`. */
  endpoint?: string;
  /** Defaults to `us-east-1` for s3://, `auto` for gs://. */
  region?: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** `http://endpoint/bucket/key` rather than `http://bucket.endpoint/key`; MinIO needs it. Default true when an endpoint is given. */
  forcePathStyle?: boolean;
}

/** The GCS XML API, which speaks the S3 protocol with HMAC keys ("interoperability"). */
export const GCS_INTEROP_ENDPOINT = "https://storage.googleapis.com";

export interface ObjectFetched {
  size: number;
  contentType?: string;
}

function describe(scheme: string, bucket: string, key: string): string {
  const shownKey = key.length > 200 ? `${key.slice(0, 200)}…` : key;
  return `${scheme}://${bucket}/${shownKey}`;
}

export function notConfigured(scheme: "s3" | "gs"): FetchRefusedError {
  return new FetchRefusedError(
    "object_storage_not_configured",
    scheme === "s3"
      ? "s3:// references are not enabled on this server: no S3-compatible object store is configured. Use an http(s) URL (for example a pre-signed URL) or a path under the media root."
      : "gs:// references are not enabled on this server: no Google Cloud Storage interoperability (HMAC) access is configured. Use an http(s) URL (for example a signed URL) or a path under the media root.",
  );
}

/** GETs one object into `dest` through an S3-compatible endpoint, within `maxBytes`. */
export async function fetchObject(
  scheme: "s3" | "gs",
  bucket: string,
  key: string,
  store: ObjectStoreOptions,
  dest: string,
  maxBytes: number,
  signal: AbortSignal,
): Promise<ObjectFetched> {
  const endpoint = store.endpoint ?? (scheme === "gs" ? GCS_INTEROP_ENDPOINT : undefined);
  // The SDK otherwise prints a NodeVersionSupportWarning to stderr on Node 20; it has this switch for it.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  const client = new S3Client({
    ...(endpoint !== undefined ? { endpoint } : {}),
    region: store.region ?? (scheme === "gs" ? "auto" : "us-east-1"),
    forcePathStyle: store.forcePathStyle ?? endpoint !== undefined,
    credentials: {
      accessKeyId: store.accessKeyId,
      secretAccessKey: store.secretAccessKey,
      ...(store.sessionToken !== undefined ? { sessionToken: store.sessionToken } : {}),
    },
    maxAttempts: 2,
    // GCS interoperability and many S3-compatible stores do not speak the newer flexible checksums.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const what = describe(scheme, bucket, key);
  try {
    let output;
    try {
      output = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal });
    } catch (cause) {
      if (signal.aborted) throw cause;
      throw mapObjectError(cause, what);
    }
    const body = output.Body;
    if (!(body instanceof Readable)) throw new FetchRefusedError("object_storage_error", `The object store returned no content for ${what}.`);
    if (output.ContentLength !== undefined && output.ContentLength > maxBytes) {
      body.destroy();
      throw tooLarge(maxBytes);
    }
    const size = await writeCapped(body, dest, maxBytes, signal);
    return output.ContentType !== undefined ? { size, contentType: output.ContentType } : { size };
  } finally {
    client.destroy();
  }
}

function mapObjectError(cause: unknown, what: string): FetchRefusedError {
  if (cause instanceof S3ServiceException) {
    const status = cause.$metadata.httpStatusCode;
    if (status === 404 || cause.name === "NoSuchKey" || cause.name === "NoSuchBucket" || cause.name === "NotFound") {
      return new FetchRefusedError("not_found", `The object ${what} was not found.`, { cause, status: 404 });
    }
    if (status === 401 || status === 403) {
      return new FetchRefusedError("object_storage_error", `The object store refused access to ${what}.`, { cause, status });
    }
    return new FetchRefusedError(
      "object_storage_error",
      `The object store could not return ${what}${status !== undefined ? ` (HTTP ${status})` : ""}.`,
      status !== undefined ? { cause, status } : { cause },
    );
  }
  return new FetchRefusedError("connection_failed", `The object store could not be reached for ${what}.`, { cause });
}
