import { createHash, randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Objm, StorageType } from "@nats-io/obj";
import type { ObjectInfo, ObjectStore, ObjectStoreOptions } from "@nats-io/obj";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "@voiceloc/log";
import { silentLogger } from "@voiceloc/log";
import { BlobChangedError, BlobNotFoundError, BlobStoreError, toBlobError } from "./errors.ts";
import { isValidBlobKey, validateBlobKey, validateBlobPrefix } from "./keys.ts";
import { contentTypeFor } from "./range.ts";
import type { BlobSource, BlobStat, BlobStore, PutOptions, PutResult, ReadRange } from "./types.ts";
import { bytesOf, emptyStream, fileSourceOf, normalizeSource, resolveReadRange, validateContentType } from "./util.ts";

export interface NatsBlobStoreOptions {
  /** An open connection; the store never closes it. */
  nc?: NatsConnection;
  /** Or server URL(s) to connect to; the store owns that connection and `close()` closes it. */
  url?: string | string[];
  /** Object store bucket (`[A-Za-z0-9_-]+`); created if missing. */
  bucket: string;
  logger?: Logger;
  /** Used only when the bucket is created. */
  replicas?: number;
  /** Used only when the bucket is created: cap on the bucket's bytes (-1 or unset: no cap). */
  maxBytes?: number;
  /** Used only when the bucket is created; "file" by default. */
  storage?: "file" | "memory";
  /** Timeout of each chunk request when reading, in milliseconds; 10 s by default. */
  requestTimeoutMs?: number;
}

/** Object-store metadata field holding an explicit content type. */
const CONTENT_TYPE_FIELD = "contentType";
/** JetStream API prefix; JetStream domains and custom prefixes are not supported. */
const JS_API = "$JS.API";
/** Bytes of a Readable's buffer when serving a read. */
const READ_HIGH_WATER_MARK = 256 * 1024;

interface Chunk {
  seq: number;
  data: Uint8Array;
}

/** The first message of `subject` at or after `seq`, from any replica (direct get) or the leader. */
type ChunkGetter = (subject: string, seq: number) => Promise<Chunk | null>;

function digestHex(digest: string): string | undefined {
  if (!digest.startsWith("SHA-256=")) return undefined;
  const bytes = Buffer.from(digest.slice("SHA-256=".length), "base64url");
  return bytes.length === 32 ? bytes.toString("hex") : undefined;
}

/** A web ReadableStream pulling from a Node stream, one chunk per pull (backpressure preserved). */
function toWebStream(source: Readable, failure: () => unknown): ReadableStream<Uint8Array> {
  const chunks = bytesOf(source);
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const early = failure();
        if (early !== undefined) throw early;
        const next = await chunks.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      async cancel() {
        await chunks.return(undefined);
        source.destroy();
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * Blob store on a JetStream object store, for a mesh of processes with no
 * shared disk. Works with nats-server 2.9 (no stream metadata, no per-message TTL used).
 *
 * - `put` is atomic: the object store publishes the chunks, then the metadata
 *   entry that makes them visible, then purges the previous version's chunks.
 *   A content type given to `put` is kept in the object's metadata.
 * - Reads fetch one chunk per request (direct get, falling back to the
 *   stream leader when a replica does not have the chunk yet), so a slow
 *   reader holds at most a few chunks in memory. Whole reads verify the SHA-256.
 * - Ranges: the first chunk is fetched to learn its stream sequence. When the
 *   object's chunks are contiguous in the stream (the usual case: no other put
 *   to the bucket interleaved its publishes), the chunk holding `start` is
 *   fetched directly, so a range costs O(1 + range length). Otherwise every chunk
 *   before `start` is fetched and skipped: O(start) bytes cross the network.
 * - `list` reads the metadata of every object in the bucket, then filters by
 *   prefix: O(objects in the bucket).
 * - `toLocalFile` copies the blob to `dir/<key>`.
 * - Overwriting or deleting a blob while it is being read fails that read with
 *   BlobChangedError (its chunks are purged).
 * - Two concurrent puts of the same key both succeed (last one wins) but may
 *   leave the loser's chunks orphaned in the stream until the key is written again.
 */
export async function createNatsBlobStore(options: NatsBlobStoreOptions): Promise<BlobStore> {
  const log = (options.logger ?? silentLogger()).child({ component: "blobs", adapter: "nats", bucket: options.bucket });
  const timeout = options.requestTimeoutMs ?? 10_000;
  if ((options.nc === undefined) === (options.url === undefined)) {
    throw new TypeError("createNatsBlobStore needs exactly one of nc or url");
  }
  let nc: NatsConnection;
  try {
    nc = options.nc ?? (await connect({ servers: options.url as string | string[], name: "voiceloc-blobs" }));
  } catch (error) {
    throw toBlobError("connect to NATS for blob bucket", options.bucket, error);
  }
  const ownsConnection = options.nc === undefined;

  let os: ObjectStore;
  try {
    const bucketOptions: Partial<ObjectStoreOptions> = {
      storage: options.storage === "memory" ? StorageType.Memory : StorageType.File,
      replicas: options.replicas ?? 1,
    };
    if (options.maxBytes !== undefined) bucketOptions.max_bytes = options.maxBytes;
    os = await new Objm(nc).create(options.bucket, bucketOptions);
  } catch (error) {
    if (ownsConnection) await nc.close().catch(() => undefined);
    throw toBlobError("open object store bucket", options.bucket, error);
  }
  const streamName = `OBJ_${options.bucket}`;
  const chunkSubject = (info: ObjectInfo): string => `$O.${options.bucket}.C.${info.nuid}`;

  const getChunk: ChunkGetter = async (subject, seq) => {
    const request = JSON.stringify({ seq, next_by_subj: subject });
    try {
      const m = await nc.request(`${JS_API}.DIRECT.GET.${streamName}`, request, { timeout });
      const msgSeq = Number(m.headers?.get("Nats-Sequence"));
      if (m.headers !== undefined && m.headers.code === 0 && m.headers.get("Nats-Subject") === subject && Number.isSafeInteger(msgSeq)) {
        return { seq: msgSeq, data: m.data };
      }
      // 404 from a replica that may lag behind, or anything unexpected: ask the leader.
    } catch (error) {
      log.debug({ err: error }, "direct get failed, asking the stream leader");
    }
    const m = await nc.request(`${JS_API}.STREAM.MSG.GET.${streamName}`, request, { timeout });
    const body = m.json<{
      message?: { subject: string; seq: number; data?: string };
      error?: { code: number; description?: string };
    }>();
    if (body.error?.code === 404) return null;
    if (body.error !== undefined || body.message === undefined) {
      throw new Error(`stream message get failed: ${body.error?.code ?? "?"} ${body.error?.description ?? "no message"}`);
    }
    if (body.message.subject !== subject) return null;
    return { seq: body.message.seq, data: Buffer.from(body.message.data ?? "", "base64") };
  };

  async function currentInfo(key: string): Promise<ObjectInfo | undefined> {
    const info = await os.info(key);
    return info === null || info.deleted ? undefined : info;
  }

  /** Yields the bytes `start..end` (inclusive) of the object described by `info`. */
  async function* readObject(key: string, info: ObjectInfo, start: number, end: number): AsyncGenerator<Uint8Array> {
    const subject = chunkSubject(info);
    const whole = start === 0 && end === info.size - 1;
    const hash = whole ? createHash("sha256") : undefined;
    const chunkSize = info.options?.max_chunk_size;

    let chunk = await getChunk(subject, 0);
    if (chunk === null) throw new BlobChangedError(key);
    let index = 0;
    let offset = 0; // byte offset of `chunk` in the object
    const wanted = chunkSize !== undefined && chunkSize > 0 ? Math.floor(start / chunkSize) : 0;
    if (wanted > 0 && chunkSize !== undefined) {
      // The metadata entry is published right after the last chunk. If exactly `chunks`
      // sequences separate the first chunk from it, the chunks fill that gap: chunk i is at first + i.
      if (info.revision - chunk.seq === info.chunks) {
        const seq = chunk.seq + wanted;
        chunk = await getChunk(subject, seq);
        if (chunk === null || chunk.seq !== seq) throw new BlobChangedError(key);
        index = wanted;
        offset = wanted * chunkSize;
        log.debug({ key, start }, `range starts in chunk ${wanted}, fetched directly`);
      } else {
        log.debug({ key, start }, "chunks not contiguous, reading from the first chunk to reach the range");
      }
    }

    for (;;) {
      const data = chunk.data;
      const last = index === info.chunks - 1;
      if (chunkSize !== undefined && !last && data.length !== chunkSize) {
        throw new BlobStoreError(`blob ${key} is corrupt: chunk ${index} holds ${data.length} bytes, expected ${chunkSize}`, { key });
      }
      hash?.update(data);
      const from = Math.max(0, start - offset);
      const to = Math.min(data.length, end + 1 - offset);
      offset += data.length;
      index += 1;
      if (to > from) yield from === 0 && to === data.length ? data : data.subarray(from, to);
      if (offset > end || index >= info.chunks) break;
      chunk = await getChunk(subject, chunk.seq + 1);
      if (chunk === null) throw new BlobChangedError(key);
    }

    if (offset <= end) throw new BlobStoreError(`blob ${key} is corrupt: ${offset} bytes stored, expected ${info.size}`, { key });
    if (hash !== undefined) {
      const expected = digestHex(info.digest);
      const actual = hash.digest("hex");
      if (offset !== info.size || (expected !== undefined && expected !== actual)) {
        log.warn({ key, expected, actual }, "blob digest mismatch");
        throw new BlobStoreError(`blob ${key} is corrupt: SHA-256 mismatch`, { key });
      }
    }
  }

  let closed = false;
  const store: BlobStore = {
    async put(key: string, source: BlobSource, putOptions: PutOptions = {}): Promise<PutResult> {
      validateBlobKey(key);
      const contentType = validateContentType(key, putOptions.contentType);
      const meta = contentType === undefined ? { name: key } : { name: key, metadata: { [CONTENT_TYPE_FIELD]: contentType } };
      const normalized = normalizeSource(source);
      try {
        const info =
          "bytes" in normalized
            ? await os.putBlob(meta, normalized.bytes)
            : await os.put(meta, toWebStream(normalized.stream, normalized.failure));
        log.debug({ key, size: info.size }, "blob written");
        // A file handed over is the store's now: its bytes are in the bucket.
        const file = fileSourceOf(source);
        if (file?.move === true) await rm(file.path, { force: true }).catch(() => undefined);
        const sha256 = digestHex(info.digest);
        return sha256 === undefined ? { key, size: info.size } : { key, size: info.size, sha256 };
      } catch (error) {
        if ("stream" in normalized) normalized.stream.destroy();
        throw toBlobError("put", key, error);
      }
    },

    async stat(key: string): Promise<BlobStat> {
      validateBlobKey(key);
      let info: ObjectInfo | undefined;
      try {
        info = await currentInfo(key);
      } catch (error) {
        throw toBlobError("stat", key, error);
      }
      if (info === undefined) throw new BlobNotFoundError(key);
      const explicit = info.metadata?.[CONTENT_TYPE_FIELD];
      return {
        size: info.size,
        contentType: typeof explicit === "string" && explicit !== "" ? explicit : contentTypeFor(key),
        modified: new Date(info.mtime),
      };
    },

    async createReadStream(key: string, range?: ReadRange): Promise<Readable> {
      validateBlobKey(key);
      let info: ObjectInfo | undefined;
      try {
        info = await currentInfo(key);
      } catch (error) {
        throw toBlobError("read", key, error);
      }
      if (info === undefined) throw new BlobNotFoundError(key);
      if (info.options?.link) throw new BlobStoreError(`blob ${key} is an object store link, which this store does not read`, { key });
      const { start, end } = resolveReadRange(key, range, info.size);
      if (end < start) return emptyStream();
      const chunks = readObject(key, info, start, end);
      // Fetch the first bytes now, so a blob deleted since `info` rejects here rather than mid-response.
      let first: IteratorResult<Uint8Array>;
      try {
        first = await chunks.next();
      } catch (error) {
        throw toBlobError("read", key, error);
      }
      async function* all(): AsyncGenerator<Uint8Array> {
        try {
          if (!first.done) yield first.value;
          yield* chunks;
        } catch (error) {
          throw toBlobError("read", key, error);
        }
      }
      return Readable.from(all(), { objectMode: false, highWaterMark: READ_HIGH_WATER_MARK });
    },

    async exists(key: string): Promise<boolean> {
      validateBlobKey(key);
      try {
        return (await currentInfo(key)) !== undefined;
      } catch (error) {
        throw toBlobError("exists", key, error);
      }
    },

    async delete(key: string): Promise<boolean> {
      validateBlobKey(key);
      try {
        if ((await currentInfo(key)) === undefined) return false;
        await os.delete(key);
        return true;
      } catch (error) {
        throw toBlobError("delete", key, error);
      }
    },

    async list(prefix: string): Promise<string[]> {
      validateBlobPrefix(prefix);
      try {
        const infos = await os.list();
        return infos
          .filter((info) => !info.deleted && info.name.startsWith(prefix) && isValidBlobKey(info.name))
          .map((info) => info.name)
          .sort();
      } catch (error) {
        throw toBlobError("list", prefix, error);
      }
    },

    async toLocalFile(key: string, dir: string): Promise<string> {
      validateBlobKey(key);
      const target = join(resolve(dir), ...key.split("/"));
      const tmp = `${target}.${randomUUID()}.part`;
      const input = await store.createReadStream(key);
      try {
        await mkdir(dirname(target), { recursive: true });
        await pipeline(input, createWriteStream(tmp, { flags: "wx" }));
        await rename(tmp, target);
        return target;
      } catch (error) {
        input.destroy();
        await rm(tmp, { force: true }).catch(() => undefined);
        throw toBlobError("toLocalFile", key, error);
      }
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      if (ownsConnection && !nc.isClosed()) await nc.close();
    },
  };
  return store;
}
