import { createHash } from "node:crypto";
import { InvalidBlobKeyError } from "./errors.ts";

/** Longest key accepted, in characters (all ASCII, so also bytes). */
export const MAX_BLOB_KEY_LENGTH = 1024;

const SEGMENT = /^[A-Za-z0-9._-]+$/;
const CONTROL = /[\u0000-\u001f\u007f]/;

function refusal(key: string, allowEmpty: boolean, allowTrailingSlash: boolean): string | undefined {
  if (typeof key !== "string") return "not a string";
  if (key.length === 0) return allowEmpty ? undefined : "empty";
  if (key.length > MAX_BLOB_KEY_LENGTH) return `longer than ${MAX_BLOB_KEY_LENGTH} characters`;
  if (key.includes("\u0000")) return "contains NUL";
  if (CONTROL.test(key)) return "contains a control character";
  if (key.includes("\\")) return "contains a backslash";
  if (key.startsWith("/")) return "absolute (starts with /)";
  const body = allowTrailingSlash && key.endsWith("/") ? key.slice(0, -1) : key;
  const segments = body.split("/");
  for (const segment of segments) {
    if (segment === "") return "empty path segment (//)";
    if (segment === "..") return "contains a .. segment";
    if (segment === ".") return "contains a . segment";
    if (!SEGMENT.test(segment)) return "contains a character outside [A-Za-z0-9._/-]";
  }
  return undefined;
}

/**
 * Throws InvalidBlobKeyError unless `key` is a relative slash path of segments
 * made of `[A-Za-z0-9._-]`, with no empty, `.` or `..` segment, no leading or
 * trailing slash, at most {@link MAX_BLOB_KEY_LENGTH} characters.
 * Backslashes, NUL and control characters are refused with their own reason.
 */
export function validateBlobKey(key: string): string {
  const reason = refusal(key, false, false);
  if (reason !== undefined) throw new InvalidBlobKeyError(String(key), reason);
  return key;
}

/** True when {@link validateBlobKey} would accept `key`. */
export function isValidBlobKey(key: string): boolean {
  return refusal(key, false, false) === undefined;
}

/**
 * A list prefix: "" (everything), or a key-like string that may end with "/"
 * (`tasks/42/chunks/`). Matching is by plain string prefix, so `tasks/4`
 * also matches `tasks/42/...`.
 */
export function validateBlobPrefix(prefix: string): string {
  const reason = refusal(prefix, true, true);
  if (reason !== undefined) throw new InvalidBlobKeyError(String(prefix), reason);
  return prefix;
}

/** Length of {@link accountKeySegment}'s result: 128 bits of SHA-256 in lower-case hex. */
export const ACCOUNT_KEY_SEGMENT_LENGTH = 32;

/**
 * One blob key segment for an account id (an API key's account or a JWT `sub`): the first 128 bits of
 * SHA-256 over the id's UTF-16 code units, in lower-case hex. Every id gives a valid segment of fixed
 * length (`carol@example.com`, `..`, `a/b`, lone surrogates, 128-character subjects), distinct ids give
 * distinct segments (`a/b` never lands in `a`'s folder), and case-insensitive file systems cannot merge
 * two accounts. One-way on purpose: the account is known from the record, never parsed from a key.
 */
export function accountKeySegment(accountId: string): string {
  // UTF-16 code units, not UTF-8: UTF-8 encoding replaces every lone surrogate by U+FFFD, which would
  // make different subjects collide.
  return createHash("sha256").update(Buffer.from(accountId, "utf16le")).digest("hex").slice(0, ACCOUNT_KEY_SEGMENT_LENGTH);
}

/**
 * The blob key of an upload: `uploads/<account segment>/<upload id>`. The gateway writes it, the workers
 * read it; both derive it from the task's account and the `upload:<id>` reference, so an id given by
 * another account names a key that account never wrote (and is "file not available").
 */
export function uploadBlobKey(ownerId: string, uploadId: string): string {
  return `${UPLOADS_PREFIX}${accountKeySegment(ownerId)}/${uploadId}`;
}

/** Every upload's blob key starts with this. */
export const UPLOADS_PREFIX = "uploads/";
