import { constants } from "node:fs";
import { open, readlink, realpath, stat, type FileHandle } from "node:fs/promises";
import { resolve, sep } from "node:path";
import { FetchRefusedError } from "./errors.ts";
import { FILE_NOT_AVAILABLE } from "./media.ts";
import { tooLarge, writeCapped } from "./sink.ts";

function isUnder(path: string, root: string): boolean {
  const prefix = root.endsWith(sep) ? root : root + sep;
  return path.startsWith(prefix);
}

function errnoCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined;
}

/**
 * Every refusal of a path says {@link FILE_NOT_AVAILABLE}: missing, not a regular file, outside the root
 * (lexically or through a link) and unreadable read the same, so a caller cannot probe what exists
 * beyond what it may read. The codes still tell them apart for logs and the failure policy.
 */
const OUTSIDE = FILE_NOT_AVAILABLE;

/** The real path of an open descriptor, where the system tells it (Linux /proc). */
async function openedPath(handle: FileHandle): Promise<string | undefined> {
  try {
    return await readlink(`/proc/self/fd/${handle.fd}`);
  } catch {
    return undefined;
  }
}

/**
 * Opens `relative` under `mediaRoot` for reading, refusing anything whose real
 * path (all symlinks followed) is not under the media root's real path, and
 * anything that is not a regular file. The check is made again on the opened
 * descriptor, so swapping a path component for a symlink between check and
 * open is caught too.
 */
export async function openUnderRoot(mediaRoot: string, relative: string): Promise<{ handle: FileHandle; size: number }> {
  let root: string;
  try {
    root = await realpath(mediaRoot);
  } catch (cause) {
    throw new FetchRefusedError("not_found", FILE_NOT_AVAILABLE, { cause });
  }
  const candidate = resolve(root, relative);
  if (!isUnder(candidate, root)) throw new FetchRefusedError("path_outside_media_root", OUTSIDE);
  let real: string;
  try {
    real = await realpath(candidate);
  } catch (cause) {
    const code = errnoCode(cause);
    if (code === "ENOENT" || code === "ENOTDIR" || code === "EACCES" || code === "EPERM" || code === "ENAMETOOLONG") {
      throw new FetchRefusedError("not_found", FILE_NOT_AVAILABLE, { cause });
    }
    if (code === "ELOOP") throw new FetchRefusedError("not_a_file", FILE_NOT_AVAILABLE, { cause });
    throw new FetchRefusedError("io_error", `The file "${relative}" could not be read.`, { cause });
  }
  if (!isUnder(real, root)) throw new FetchRefusedError("path_outside_media_root", OUTSIDE);

  let handle: FileHandle;
  try {
    // O_NOFOLLOW: the last component must not have become a symlink; O_NONBLOCK: a FIFO must not hang the open.
    handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (cause) {
    const code = errnoCode(cause);
    if (code === "ENOENT" || code === "EACCES" || code === "EPERM") throw new FetchRefusedError("not_found", FILE_NOT_AVAILABLE, { cause });
    if (code === "ELOOP") throw new FetchRefusedError("path_outside_media_root", OUTSIDE, { cause });
    throw new FetchRefusedError("io_error", `The file "${relative}" could not be read.`, { cause });
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new FetchRefusedError("not_a_file", FILE_NOT_AVAILABLE);
    const opened = await openedPath(handle);
    if (opened !== undefined) {
      if (!isUnder(opened, root)) throw new FetchRefusedError("path_outside_media_root", OUTSIDE);
    } else {
      // No /proc: the path must still lead, under the root, to the very file we opened.
      const again = await realpath(candidate);
      const againInfo = await stat(again);
      if (!isUnder(again, root) || againInfo.ino !== info.ino || againInfo.dev !== info.dev) {
        throw new FetchRefusedError("path_outside_media_root", OUTSIDE);
      }
    }
    return { handle, size: info.size };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Copies a file under the media root to `dest`, within `maxBytes`. */
export async function copyFromMediaRoot(mediaRoot: string, relative: string, dest: string, maxBytes: number, signal: AbortSignal): Promise<number> {
  const { handle, size } = await openUnderRoot(mediaRoot, relative);
  try {
    if (size > maxBytes) throw tooLarge(maxBytes);
    return await writeCapped(handle.createReadStream({ start: 0, autoClose: false }), dest, maxBytes, signal);
  } finally {
    await handle.close();
  }
}
