import { createHash } from "node:crypto";
import { join } from "node:path";
import { FetchRefusedError } from "./errors.ts";

/**
 * The one reason given for a path or upload the caller cannot use: missing, not a regular file,
 * outside the media root (lexically or through a symbolic link), unreadable, in another account's
 * folder, or an upload that is not the caller's (or expired). One text for all of them, at request
 * time and in task errors, so nobody learns whether another tenant's file exists. No slash in it: task
 * errors replace anything that looks like an absolute path.
 */
export const FILE_NOT_AVAILABLE = "file not available: name a regular file under your media root, or upload the file and pass upload:<id>";

/** `shared`: every account reads the whole MEDIA_ROOT (single tenant); `account`: each reads `MEDIA_ROOT/<its folder>/`. */
export const MEDIA_ROOT_SCOPES = ["shared", "account"] as const;
export type MediaRootScope = (typeof MEDIA_ROOT_SCOPES)[number];

/** Longest folder name written as the encoded id; longer ones use a hash (file systems stop at 255 bytes). */
const MAX_FOLDER_CHARS = 200;

/**
 * The folder of an account under MEDIA_ROOT with `MEDIA_ROOT_SCOPE=account`: the account id
 * percent-encoded (`alice` → `alice`, `sandbox:acme` → `sandbox%3Aacme`, `carol@example.com` →
 * `carol%40example.com`), `.` and `..` spelled `%2E`/`%2E%2E`, a lone surrogate as `%uD800`. Distinct
 * ids give distinct folders and none contains `/`. An id whose encoding passes 200 characters gets
 * `%h-` and the SHA-256 of the id instead (cannot collide: `%h` is never produced by the encoding).
 */
export function accountMediaFolder(accountId: string): string {
  let out = "";
  for (const char of accountId) {
    const code = char.codePointAt(0) ?? 0;
    if (code >= 0xd800 && code <= 0xdfff) out += `%u${code.toString(16).toUpperCase().padStart(4, "0")}`;
    else out += encodeURIComponent(char);
  }
  if (out === "." || out === "..") out = out.replace(/\./g, "%2E");
  if (out === "" || out.length > MAX_FOLDER_CHARS) {
    out = `%h-${createHash("sha256").update(Buffer.from(accountId, "utf16le")).digest("hex")}`;
  }
  return out;
}

/**
 * The directory an account's path references resolve under: MEDIA_ROOT itself (`shared`), or its
 * folder in it (`account`). With `account` and no owner nothing is readable.
 */
export function mediaRootFor(mediaRoot: string, scope: MediaRootScope | undefined, owner: string | undefined): string {
  if (scope !== "account") return mediaRoot;
  if (owner === undefined || owner === "") throw new FetchRefusedError("not_found", FILE_NOT_AVAILABLE);
  return join(mediaRoot, accountMediaFolder(owner));
}

/** Upload ids are UUIDs (v7 from the gateway); anything else is no upload. */
export const UPLOAD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
