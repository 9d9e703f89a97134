import { randomUUID } from "node:crypto";
import { constants, createWriteStream } from "node:fs";
import type { BigIntStats } from "node:fs";
import { copyFile, lstat, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, unlink, writeFile } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Logger } from "@voiceloc/log";
import { silentLogger } from "@voiceloc/log";
import { BlobKeyConflictError, BlobNotFoundError, toBlobError } from "./errors.ts";
import { isValidBlobKey, validateBlobKey, validateBlobPrefix } from "./keys.ts";
import { contentTypeFor } from "./range.ts";
import type { BlobSource, BlobStat, BlobStore, PutOptions, PutResult, ReadRange } from "./types.ts";
import { bytesOf, emptyStream, errnoCode, fileSourceOf, isReadable, normalizeSource, resolveReadRange, validateContentType } from "./util.ts";

export interface FsBlobStoreOptions {
  /** Directory holding the store; created on first write. Usually `blobRootFor(config.dataDir)`. */
  root: string;
  logger?: Logger;
  /**
   * fsync each blob before it is renamed into place, so a crash never leaves
   * a renamed but empty file. True by default.
   */
  fsync?: boolean;
}

/** The default store root under DATA_DIR: `<dataDir>/blobs`. */
export function blobRootFor(dataDir: string): string {
  return join(dataDir, "blobs");
}

/** A sidecar, kept only when a put gave a content type other than the one the extension implies. */
interface Sidecar {
  contentType: string;
  /** Inode and size of the blob file the sidecar describes; a mismatch means it is stale. */
  ino: string;
  size: string;
}

const RENAME_ATTEMPTS = 5;

/** Whether `path` is a regular file (the link itself, not its target, when `noFollow`); false when absent. */
async function isRegularFile(path: string, noFollow: boolean): Promise<boolean> {
  try {
    return (noFollow ? await lstat(path) : await stat(path)).isFile();
  } catch {
    return false;
  }
}

/**
 * Blob store on a local (or shared) file system.
 *
 * Layout under `root`:
 * - `objects/<key>` — the blob itself, a plain file (what `toLocalFile` returns);
 * - `meta/<key>.json` — content-type sidecar, written only when `put` is given a
 *   `contentType` different from `contentTypeFor(key)`. Otherwise the type comes
 *   from the extension and no sidecar exists. The sidecar records the inode and
 *   size of the file it describes, so a sidecar left by an earlier version (or a
 *   concurrent writer) is ignored rather than trusted;
 * - `tmp/` — files being written. A put streams to `tmp/<uuid>.tmp`, fsyncs,
 *   then `rename(2)`s it over `objects/<key>`: readers see the old file or the
 *   new one, and a reader that already opened the old file keeps reading it.
 *   A process killed mid-put can leave a stale `*.tmp` here; it is never listed
 *   and is safe to delete once no put is running.
 *
 * Because keys map to paths, a key cannot also be a "directory" of other keys
 * (`a` and `a/b`): that put fails with BlobKeyConflictError. Empty directories
 * are removed on delete.
 */
export function createFsBlobStore(options: FsBlobStoreOptions): BlobStore {
  const root = resolve(options.root);
  const objectsDir = join(root, "objects");
  const metaDir = join(root, "meta");
  const tmpDir = join(root, "tmp");
  const fsync = options.fsync ?? true;
  const log = (options.logger ?? silentLogger()).child({ component: "blobs", adapter: "fs" });

  const objectPath = (key: string): string => join(objectsDir, ...key.split("/"));
  const metaPath = (key: string): string => `${join(metaDir, ...key.split("/"))}.json`;

  async function statFile(key: string): Promise<BigIntStats | undefined> {
    try {
      const st = await stat(objectPath(key), { bigint: true });
      return st.isFile() ? st : undefined;
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return undefined;
      throw error;
    }
  }

  async function readSidecar(key: string, st: BigIntStats): Promise<string | undefined> {
    let text: string;
    try {
      text = await readFile(metaPath(key), "utf8");
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return undefined;
      throw error;
    }
    try {
      const sidecar = JSON.parse(text) as Partial<Sidecar>;
      if (sidecar.ino === st.ino.toString() && sidecar.size === st.size.toString() && typeof sidecar.contentType === "string") {
        return sidecar.contentType;
      }
    } catch {
      log.warn({ key }, "ignoring unreadable content-type sidecar");
    }
    return undefined;
  }

  /** Removes now-empty directories from `dir` up to (not including) `stop`. */
  async function prune(dir: string, stop: string): Promise<void> {
    let current = dir;
    while (current.startsWith(stop + sep) && current !== stop) {
      try {
        await rmdir(current);
      } catch {
        return; // not empty (ENOTEMPTY), already gone, or busy: leave it
      }
      current = dirname(current);
    }
  }

  /** mkdir -p the parent, then rename; retried when a concurrent delete prunes the parent in between. */
  async function renameInto(from: string, to: string, key: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await mkdir(dirname(to), { recursive: true });
        await rename(from, to);
        return;
      } catch (error) {
        const code = errnoCode(error);
        if (code === "ENOTDIR" || code === "EEXIST" || code === "EISDIR") throw new BlobKeyConflictError(key, { cause: error });
        if (code === "ENOENT" && attempt < RENAME_ATTEMPTS) continue;
        throw error;
      }
    }
  }

  /**
   * Writes the source to `tmp` (created new): bytes in one write, a regular file copied by the kernel
   * (or renamed, when the caller hands it over and it is on this file system), anything else streamed.
   * Returns how it got there (`moved` once the source file itself became `tmp`).
   */
  async function writeTemp(source: BlobSource, tmp: string): Promise<{ st: BigIntStats; moved: string | undefined }> {
    const file = fileSourceOf(source);
    let moved: string | undefined;
    if (file !== undefined && (await isRegularFile(file.path, file.move))) {
      if (file.move) {
        try {
          await rename(file.path, tmp);
          moved = file.path;
        } catch (error) {
          if (errnoCode(error) !== "EXDEV") throw error;
        }
      }
      // copy_file_range or sendfile: no bytes pass through this process.
      if (moved === undefined) await copyFile(file.path, tmp, constants.COPYFILE_EXCL);
    } else {
      const normalized = normalizeSource(source);
      if ("bytes" in normalized) {
        await writeFile(tmp, normalized.bytes, { flag: "wx" });
      } else {
        try {
          await pipeline(normalized.stream, bytesOf, createWriteStream(tmp, { flags: "wx" }));
        } catch (error) {
          normalized.stream.destroy();
          throw normalized.failure() ?? error;
        }
        const early = normalized.failure();
        if (early !== undefined) throw early;
      }
    }
    const handle = await open(tmp, "r+");
    try {
      if (fsync) await handle.sync();
      return { st: await handle.stat({ bigint: true }), moved };
    } finally {
      await handle.close();
    }
  }

  const store: BlobStore = {
    async put(key: string, source: BlobSource, putOptions: PutOptions = {}): Promise<PutResult> {
      validateBlobKey(key);
      const explicitType = validateContentType(key, putOptions.contentType);
      const tmp = join(tmpDir, `${randomUUID()}.tmp`);
      const metaTmp = `${tmp}.meta`;
      let moved: string | undefined;
      try {
        await mkdir(tmpDir, { recursive: true });
        const written = await writeTemp(source, tmp);
        moved = written.moved;
        const st = written.st;
        const keepSidecar = explicitType !== undefined && explicitType !== contentTypeFor(key);
        if (keepSidecar) {
          const sidecar: Sidecar = { contentType: explicitType, ino: st.ino.toString(), size: st.size.toString() };
          await writeFile(metaTmp, JSON.stringify(sidecar), { flag: "wx" });
          await renameInto(metaTmp, metaPath(key), key);
        }
        await renameInto(tmp, objectPath(key), key);
        if (!keepSidecar) await rm(metaPath(key), { force: true }).catch(() => undefined);
        // A file handed over but copied (another file system, or not a regular file) is the store's now.
        const file = fileSourceOf(source);
        if (file?.move === true && moved === undefined) await rm(file.path, { force: true }).catch(() => undefined);
        const size = Number(st.size);
        log.debug({ key, size }, "blob written");
        return { key, size };
      } catch (error) {
        if (isReadable(source)) source.destroy();
        // A file handed over goes back where it was: a failed put leaves its source in place.
        if (moved !== undefined) await rename(tmp, moved).catch(() => undefined);
        await rm(tmp, { force: true }).catch(() => undefined);
        await rm(metaTmp, { force: true }).catch(() => undefined);
        throw toBlobError("put", key, error);
      }
    },

    async stat(key: string): Promise<BlobStat> {
      validateBlobKey(key);
      try {
        const st = await statFile(key);
        if (st === undefined) throw new BlobNotFoundError(key);
        const contentType = (await readSidecar(key, st)) ?? contentTypeFor(key);
        return { size: Number(st.size), contentType, modified: st.mtime };
      } catch (error) {
        throw toBlobError("stat", key, error);
      }
    },

    async createReadStream(key: string, range?: ReadRange): Promise<Readable> {
      validateBlobKey(key);
      let handle;
      try {
        handle = await open(objectPath(key), "r");
      } catch (error) {
        const code = errnoCode(error);
        if (code === "ENOENT" || code === "ENOTDIR" || code === "EISDIR") throw new BlobNotFoundError(key);
        throw toBlobError("read", key, error);
      }
      try {
        // The open handle pins this version: an overwrite renames a new inode in, ours stays readable.
        const st = await handle.stat();
        if (!st.isFile()) throw new BlobNotFoundError(key);
        const { start, end } = resolveReadRange(key, range, st.size);
        if (end < start) {
          await handle.close();
          return emptyStream();
        }
        return handle.createReadStream({ start, end, autoClose: true });
      } catch (error) {
        await handle.close().catch(() => undefined);
        throw toBlobError("read", key, error);
      }
    },

    async exists(key: string): Promise<boolean> {
      validateBlobKey(key);
      try {
        return (await statFile(key)) !== undefined;
      } catch (error) {
        throw toBlobError("exists", key, error);
      }
    },

    async delete(key: string): Promise<boolean> {
      validateBlobKey(key);
      const path = objectPath(key);
      let existed = true;
      try {
        await unlink(path);
      } catch (error) {
        const code = errnoCode(error);
        // EISDIR/EPERM: the key names a directory of other keys, not a blob.
        if (code === "ENOENT" || code === "ENOTDIR" || code === "EISDIR" || code === "EPERM") existed = false;
        else throw toBlobError("delete", key, error);
      }
      try {
        await rm(metaPath(key), { force: true });
      } catch (error) {
        log.warn({ key, err: error }, "could not remove content-type sidecar");
      }
      if (existed) {
        await prune(dirname(path), objectsDir);
        await prune(dirname(metaPath(key)), metaDir);
      }
      return existed;
    },

    async list(prefix: string): Promise<string[]> {
      validateBlobPrefix(prefix);
      // Walk only the deepest directory the prefix fully names.
      const slash = prefix.lastIndexOf("/");
      const dirKey = slash < 0 ? "" : prefix.slice(0, slash);
      const start = dirKey === "" ? objectsDir : objectPath(dirKey);
      const keys: string[] = [];
      const walk = async (dir: string, keyPrefix: string): Promise<void> => {
        let entries;
        try {
          entries = await readdir(dir, { withFileTypes: true });
        } catch (error) {
          const code = errnoCode(error);
          if (code === "ENOENT" || code === "ENOTDIR") return; // absent, or removed by a concurrent delete
          throw error;
        }
        for (const entry of entries) {
          const key = `${keyPrefix}${entry.name}`;
          if (entry.isDirectory()) {
            if ((key + "/").startsWith(prefix) || prefix.startsWith(key + "/")) {
              await walk(join(dir, entry.name), `${key}/`);
            }
          } else if (entry.isFile() && key.startsWith(prefix) && isValidBlobKey(key)) {
            keys.push(key);
          }
        }
      };
      try {
        await walk(start, dirKey === "" ? "" : `${dirKey}/`);
      } catch (error) {
        throw toBlobError("list", prefix, error);
      }
      return keys.sort();
    },

    async toLocalFile(key: string, _dir: string): Promise<string> {
      validateBlobKey(key);
      try {
        if ((await statFile(key)) === undefined) throw new BlobNotFoundError(key);
        return objectPath(key);
      } catch (error) {
        throw toBlobError("toLocalFile", key, error);
      }
    },

    async close(): Promise<void> {},
  };
  return store;
}
