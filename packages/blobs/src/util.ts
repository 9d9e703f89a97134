import { createReadStream } from "node:fs";
import { Readable } from "node:stream";
import { BlobRangeError, InvalidContentTypeError } from "./errors.ts";
import type { BlobSource, ReadRange } from "./types.ts";

/** Printable ASCII `type/subtype` with optional parameters; nothing that could split an HTTP header. */
const CONTENT_TYPE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;[\x20-\x7e]*)?$/;

export function validateContentType(key: string, contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  if (typeof contentType !== "string" || contentType.length > 255 || !CONTENT_TYPE.test(contentType)) {
    throw new InvalidContentTypeError(key, String(contentType));
  }
  return contentType;
}

/** The local file a `{ path }` source names, and whether the store may take it; undefined for other sources. */
export function fileSourceOf(source: BlobSource): { path: string; move: boolean } | undefined {
  if (source instanceof Uint8Array || isReadable(source)) return undefined;
  if (source !== null && typeof source === "object" && typeof (source as { path?: unknown }).path === "string") {
    return { path: (source as { path: string }).path, move: (source as { move?: unknown }).move === true };
  }
  return undefined;
}

export function isReadable(source: BlobSource): source is Readable {
  return typeof (source as Readable).pipe === "function" && typeof (source as Readable)[Symbol.asyncIterator] === "function";
}

/**
 * The source as bytes in memory, or as a Node stream to consume once.
 * An error listener is attached at once, so a stream failing before the
 * adapter starts reading (a missing `{ path }`) is not an uncaught exception;
 * `failure()` returns that error.
 */
export function normalizeSource(source: BlobSource): { bytes: Uint8Array } | { stream: Readable; failure: () => unknown } {
  if (source instanceof Uint8Array) return { bytes: source };
  let stream: Readable;
  const file = fileSourceOf(source);
  if (isReadable(source)) stream = source;
  else if (file !== undefined) stream = createReadStream(file.path);
  else throw new TypeError("blob source must be a Buffer, a Readable or { path: string }");
  let error: unknown;
  stream.on("error", (e: unknown) => {
    error ??= e;
  });
  return { stream, failure: () => error };
}

/** Chunks of a Node stream as Uint8Array (string chunks from a stream with an encoding become UTF-8 bytes). */
export async function* bytesOf(stream: AsyncIterable<unknown>): AsyncGenerator<Uint8Array> {
  for await (const chunk of stream) {
    if (typeof chunk === "string") yield Buffer.from(chunk, "utf8");
    else if (chunk instanceof Uint8Array) yield chunk;
    else throw new TypeError("blob source streams must yield Buffer, Uint8Array or string chunks");
  }
}

/**
 * Resolves an optional inclusive range against a blob of `size` bytes.
 * Without `start` and `end`, the whole blob (`end = start - 1` when empty).
 */
export function resolveReadRange(key: string, range: ReadRange | undefined, size: number): { start: number; end: number } {
  const start = range?.start;
  const end = range?.end;
  if (start === undefined && end === undefined) return { start: 0, end: size - 1 };
  for (const [name, value] of [["start", start], ["end", end]] as const) {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) {
      throw new BlobRangeError(key, `range ${name} must be a non-negative integer, got ${value}`);
    }
  }
  const first = start ?? 0;
  if (first >= size) throw new BlobRangeError(key, `range start ${first} is past the end of ${key} (${size} bytes)`);
  const last = Math.min(end ?? size - 1, size - 1);
  if (last < first) throw new BlobRangeError(key, `range end ${end} is before start ${first}`);
  return { start: first, end: last };
}

export function emptyStream(): Readable {
  return Readable.from([], { objectMode: false });
}

/** Node error code, if any. */
export function errnoCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}
