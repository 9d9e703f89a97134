/**
 * `POST /v1/uploads`: the file as the raw request body, streamed (a local path is read as a stream,
 * never whole into memory). The answer's `file` (`upload:<id>`) goes into any `file` or
 * `voice_clone_sample` field.
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { basename } from "node:path";
import { Readable } from "node:stream";
import { errorFromFetchResponse } from "./errors.ts";
import type { components } from "./generated/api.ts";

/** A stored upload, as `POST /v1/uploads` and `GET /v1/uploads/{upload_id}` answer it. */
export type UploadRecord = components["schemas"]["Upload"];

/**
 * A local file path, a Blob (or File), bytes, a web ReadableStream, or any async iterable of bytes,
 * which is what a Node readable stream (`fs.createReadStream`, a request, a child's stdout) is.
 * Written without Node's types, so that the declarations compile in a project without `@types/node`.
 */
export type UploadInput = string | Blob | Uint8Array | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string>;

export interface UploadOptions {
  /** Stored with the upload (default: a path's base name, a File's name). */
  filename?: string;
  /** Sent as the request's Content-Type (the server sniffs the bytes anyway); default application/octet-stream. */
  contentType?: string;
  signal?: AbortSignal;
}

type Raw = (path: string, init?: RequestInit) => Promise<Response>;

export async function upload(raw: Raw, input: UploadInput, options: UploadOptions = {}): Promise<UploadRecord> {
  let body: Blob | Uint8Array | ReadableStream<Uint8Array>;
  let filename = options.filename;
  let length: number | undefined;
  let contentType = options.contentType;
  if (typeof input === "string") {
    length = (await stat(input)).size;
    filename ??= basename(input);
    body = Readable.toWeb(createReadStream(input)) as ReadableStream<Uint8Array>;
  } else if (input instanceof Blob) {
    if (!filename && "name" in input && typeof input.name === "string" && input.name) filename = input.name;
    if (!contentType && input.type) contentType = input.type;
    length = input.size;
    body = input;
  } else if (input instanceof Uint8Array) {
    length = input.byteLength;
    body = input;
  } else if (input instanceof ReadableStream) {
    body = input;
  } else {
    body = Readable.toWeb(Readable.from(input)) as ReadableStream<Uint8Array>;
  }
  const headers: Record<string, string> = { "Content-Type": contentType ?? "application/octet-stream" };
  if (length !== undefined) headers["Content-Length"] = String(length);
  const query = filename ? `?filename=${encodeURIComponent(filename)}` : "";
  const response = await raw(`/v1/uploads${query}`, {
    method: "POST",
    headers,
    body,
    // A stream body needs half duplex (Node's fetch refuses it otherwise).
    ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  } as RequestInit);
  if (response.status !== 201) throw await errorFromFetchResponse(response, "POST");
  return (await response.json()) as UploadRecord;
}
