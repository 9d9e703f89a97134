import { Readable } from "node:stream";
import { Busboy, type BusboyInstance } from "@fastify/busboy";
import { fileTypeFromBuffer } from "file-type";
import type { BlobStore } from "@voiceloc/blobs";
import { HttpProblem, ValueError422 } from "../http/errors.ts";
import type { UploadKind } from "./repository.ts";

/** Bytes read before the type is decided (file-type's own sample size). */
export const SNIFF_BYTES = 4100;

export interface Stored {
  bytes: number;
  contentType: string;
  kind: UploadKind;
}

/** 413 with the limit in words. */
export function uploadTooLarge(maxBytes: number): HttpProblem {
  return new HttpProblem(413, "payload_too_large", `The upload is larger than the limit of ${maxBytes} bytes (UPLOAD_MAX_BYTES)`);
}

export function unsupportedUpload(): HttpProblem {
  return new HttpProblem(
    415,
    "unsupported_media_type",
    "Unsupported upload: the bytes are neither UTF-8 text (without NUL characters), an EPUB book, nor a recognised audio or video format",
  );
}

/** An empty upload, in FastAPI's `missing` item shape. */
export function emptyUpload(loc: Array<string | number>): ValueError422 {
  return new ValueError422(loc, "Field required", null, "missing");
}

/**
 * What the first bytes are: audio/video by their signature (`file-type`), otherwise text when they are
 * valid UTF-8 without NUL (the rest of the stream is checked as it passes). `complete`: the head is the
 * whole body (a UTF-8 sequence cut at its end is then invalid).
 */
export async function sniff(head: Buffer, complete: boolean): Promise<{ kind: UploadKind; contentType: string } | null> {
  // An EPUB is a book's text (the audio book worker reads it, bounded, from the bytes): kind "text".
  if (isEpub(head)) return { kind: "text", contentType: EPUB_TYPE };
  const detected = await fileTypeFromBuffer(head);
  if (detected) {
    const mime = detected.mime === "application/ogg" ? "audio/ogg" : detected.mime;
    if (mime.startsWith("audio/")) return { kind: "audio", contentType: mime };
    if (mime.startsWith("video/")) return { kind: "video", contentType: mime };
  }
  if (head.includes(0)) return null;
  try {
    const decoder = new TextDecoder("utf-8", { fatal: true });
    decoder.decode(head, { stream: !complete });
  } catch {
    return null;
  }
  return { kind: "text", contentType: looksLikeHtml(head) ? "text/html" : "text/plain" };
}

export const EPUB_TYPE = "application/epub+zip";
const ZIP_LOCAL_HEADER = 0x04034b50;
const MIMETYPE_NAME = "mimetype";

/**
 * An EPUB by its first bytes (OCF: the ZIP's first entry is `mimetype`, stored uncompressed, holding
 * exactly `application/epub+zip`). Any other ZIP is not taken. Only the head is read; the worker
 * unpacks the book under its own bounds.
 */
export function isEpub(head: Buffer): boolean {
  if (head.length < 30 || head.readUInt32LE(0) !== ZIP_LOCAL_HEADER) return false;
  const method = head.readUInt16LE(8);
  const compressedSize = head.readUInt32LE(18);
  const nameLength = head.readUInt16LE(26);
  const extraLength = head.readUInt16LE(28);
  if (method !== 0 || nameLength !== MIMETYPE_NAME.length) return false;
  if (head.toString("latin1", 30, 30 + nameLength) !== MIMETYPE_NAME) return false;
  const start = 30 + nameLength + extraLength;
  // the size may be in a data descriptor (0 here); the content is then read up to the type's length
  const length = compressedSize === 0 ? EPUB_TYPE.length : compressedSize;
  if (length !== EPUB_TYPE.length || head.length < start + length) return false;
  return head.toString("latin1", start, start + length) === EPUB_TYPE;
}

/** HTML or XHTML by its opening (after a BOM, blanks and comments): a doctype, `<html` or an XML declaration followed by `<html`. */
function looksLikeHtml(head: Buffer): boolean {
  const text = head.toString("utf8", 0, Math.min(head.length, 2048)).replace(/^\uFEFF/u, "");
  const start = text.replace(/^(?:\s|<!--[\s\S]*?-->|<\?xml[^>]*\?>)*/u, "").toLowerCase();
  return start.startsWith("<!doctype html") || start.startsWith("<html");
}

/**
 * Streams `source` into the blob `key` without holding it whole: the type is decided from the first
 * {@link SNIFF_BYTES} (415 before anything is written when it is none we take), bytes are counted as
 * they pass (413 as soon as `maxBytes` is passed), text is checked to stay UTF-8 without NUL to its
 * end (415). On any failure the blob is deleted: nothing of a refused upload stays.
 */
export async function storeUpload(
  source: AsyncIterable<Uint8Array>,
  options: { blobs: BlobStore; key: string; maxBytes: number; emptyLoc: Array<string | number> },
): Promise<Stored> {
  const { maxBytes } = options;
  const iterator = source[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let headBytes = 0;
  let complete = false;
  try {
    while (headBytes < SNIFF_BYTES) {
      const next = await iterator.next();
      if (next.done) {
        complete = true;
        break;
      }
      const chunk = Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
      head.push(chunk);
      headBytes += chunk.length;
      if (headBytes > maxBytes) throw uploadTooLarge(maxBytes);
    }
  } catch (error) {
    await iterator.return?.();
    throw error;
  }
  const first = Buffer.concat(head);
  if (first.length === 0) throw emptyUpload(options.emptyLoc);
  const sniffed = await sniff(first, complete);
  if (!sniffed) {
    await iterator.return?.();
    throw unsupportedUpload();
  }

  let bytes = 0;
  let refusal: Error | undefined;
  // text stays UTF-8 without NUL to its end; an EPUB is binary (its worker unpacks it under its own bounds)
  const decoder = sniffed.kind === "text" && sniffed.contentType !== EPUB_TYPE ? new TextDecoder("utf-8", { fatal: true }) : undefined;
  const pass = (chunk: Buffer): Buffer => {
    bytes += chunk.length;
    if (bytes > maxBytes) throw (refusal = uploadTooLarge(maxBytes));
    if (decoder) {
      if (chunk.includes(0)) throw (refusal = unsupportedUpload());
      try {
        decoder.decode(chunk, { stream: true });
      } catch {
        throw (refusal = unsupportedUpload());
      }
    }
    return chunk;
  };
  async function* body(): AsyncGenerator<Buffer> {
    yield pass(first);
    if (!complete) {
      for (;;) {
        const next = await iterator.next();
        if (next.done) break;
        yield pass(Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength));
      }
    }
    if (decoder) {
      try {
        decoder.decode();
      } catch {
        throw (refusal = unsupportedUpload());
      }
    }
  }
  try {
    await options.blobs.put(options.key, Readable.from(body()), { contentType: sniffed.contentType });
  } catch (error) {
    await iterator.return?.().catch(() => undefined);
    await options.blobs.delete(options.key).catch(() => undefined);
    throw refusal ?? error;
  }
  return { bytes, contentType: sniffed.contentType, kind: sniffed.kind };
}

/** The chunks of a web body stream. */
export async function* webChunks(body: ReadableStream<Uint8Array> | null): AsyncGenerator<Uint8Array> {
  if (!body) return;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    // An early stop (413/415) cancels the rest of the body instead of reading it.
    await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

const MAX_FILENAME = 255;

/** A file name as given, or null: trimmed to 255 characters, control characters dropped. */
export function cleanFilename(name: string | undefined | null): string | null {
  if (name === undefined || name === null) return null;
  const cleaned = [...name.replace(/[\u0000-\u001f\u007f]/g, "")].slice(0, MAX_FILENAME).join("");
  return cleaned.trim() === "" ? null : cleaned;
}

/**
 * A `multipart/form-data` body with exactly one file part named `file` (other fields are ignored),
 * streamed through {@link storeUpload}. 422 for a malformed body, no `file` part, a file part with
 * another name or a second file part (the blob written is then deleted).
 */
export async function storeMultipart(
  body: ReadableStream<Uint8Array> | null,
  contentType: string,
  options: { blobs: BlobStore; key: string; maxBytes: number },
): Promise<Stored & { filename: string | null }> {
  const malformed = (why: string) => new ValueError422(["body"], `Invalid multipart/form-data body: ${why}`, null);
  let parser: BusboyInstance;
  try {
    parser = Busboy({
      headers: { "content-type": contentType },
      limits: { files: 1, fields: 100, parts: 200, fieldSize: 64 * 1024, headerPairs: 100, fileSize: Number.MAX_SAFE_INTEGER },
    });
  } catch (error) {
    throw malformed(error instanceof Error ? error.message : "unreadable");
  }
  const input = Readable.from(webChunks(body));
  return new Promise((resolve, reject) => {
    let stored: Promise<Stored> | undefined;
    let fileStream: Readable | undefined;
    let filename: string | null = null;
    let problem: Error | undefined;
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      input.unpipe(parser);
      input.destroy();
      parser.removeAllListeners();
      parser.on("error", () => undefined);
      parser.destroy();
      // a file part still being stored stops: its blob write fails and leaves nothing (a destroyed
      // parser ends its file stream neither way, so the write would wait, its temporary file kept)
      fileStream?.destroy(error);
      // the blob of a file part already stored must not stay
      void stored?.then(() => options.blobs.delete(options.key)).catch(() => undefined);
      reject(error);
    };
    parser.on("file", (field, stream, name) => {
      if (field !== "file" || stored) {
        problem ??= malformed(field !== "file" ? `the file part must be named "file", not "${field.slice(0, 40)}"` : "exactly one file part is accepted");
        stream.resume();
        return;
      }
      filename = cleanFilename(name);
      fileStream = stream;
      stored = storeUpload(stream, { ...options, emptyLoc: ["body", "file"] });
      stored.catch((error: unknown) => fail(error instanceof Error ? error : new Error(String(error))));
    });
    parser.on("filesLimit", () => {
      problem ??= malformed("exactly one file part is accepted");
    });
    parser.on("error", (error: unknown) => fail(malformed(error instanceof Error ? error.message : "unreadable")));
    parser.on("finish", () => {
      if (settled) return;
      if (!stored) {
        fail(problem ?? emptyUpload(["body", "file"]));
        return;
      }
      stored.then(
        (result) => {
          if (settled) return;
          if (problem) {
            fail(problem);
            return;
          }
          settled = true;
          resolve({ ...result, filename });
        },
        () => undefined, // fail() already answered
      );
    });
    // an error of the body's own stream is the connection's (the client went away), not the form's
    input.on("error", (error) => fail(error));
    input.pipe(parser);
  });
}
