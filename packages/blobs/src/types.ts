import type { Readable } from "node:stream";

/**
 * What `put` accepts: bytes in memory, a Node stream (consumed once), or a local file. A file is
 * copied, or with `move: true` handed over: the store may take the file itself (a rename on the file
 * system store when it is on the same file system), and it is gone once the put succeeds (left in
 * place when the put fails).
 */
export type BlobSource = Buffer | Uint8Array | Readable | { path: string; move?: boolean };

export interface PutOptions {
  /**
   * Stored with the blob and returned by `stat`. When omitted, `stat` derives
   * the type from the key's extension with {@link contentTypeFor}.
   */
  contentType?: string;
}

export interface PutResult {
  key: string;
  /** Bytes written. */
  size: number;
  /**
   * Lower-case hex SHA-256 of the content, when the adapter has it for free: the NATS object store
   * computes it as part of its protocol; the file system store does not hash what it writes.
   */
  sha256?: string;
}

export interface BlobStat {
  size: number;
  contentType: string;
  /** When the current version was written. */
  modified: Date;
}

/** Inclusive byte range, as in HTTP `Range: bytes=start-end`. */
export interface ReadRange {
  /** First byte, 0 by default. */
  start?: number;
  /** Last byte (inclusive), `size - 1` by default; clamped to `size - 1`. */
  end?: number;
}

/**
 * The blob port. Keys are relative slash paths validated by
 * {@link validateBlobKey}; every method throws InvalidBlobKeyError before
 * touching storage when the key is refused.
 */
export interface BlobStore {
  /**
   * Writes the whole source under `key`, replacing any previous blob
   * atomically: readers see the old blob or the new one, never a part.
   * If the source fails, the previous blob (if any) is left intact.
   */
  put(key: string, source: BlobSource, options?: PutOptions): Promise<PutResult>;
  /** Size, content type and modification time; BlobNotFoundError if absent. */
  stat(key: string): Promise<BlobStat>;
  /**
   * A stream of the blob's bytes, or of the inclusive range `start..end`.
   * BlobNotFoundError if absent, BlobRangeError when `start > end` or
   * `start >= size` (a range on an empty blob is refused; read it whole).
   */
  createReadStream(key: string, range?: ReadRange): Promise<Readable>;
  exists(key: string): Promise<boolean>;
  /** Removes the blob; resolves true if it existed, false if it did not. */
  delete(key: string): Promise<boolean>;
  /** Keys starting with `prefix` (plain string prefix, "" for all), sorted by code unit. */
  list(prefix: string): Promise<string[]>;
  /**
   * A local file holding the blob, for tools that only open local paths
   * (ffmpeg). The file system adapter returns the blob's own file without
   * copying and ignores `dir`; other adapters copy the blob to `dir/<key>`.
   * Treat the returned file as read-only and never delete it: clean up `dir`
   * itself when done. BlobNotFoundError if absent.
   */
  toLocalFile(key: string, dir: string): Promise<string>;
  /** Releases resources the store owns (a NATS connection it opened). Idempotent. */
  close(): Promise<void>;
}
