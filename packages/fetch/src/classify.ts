import { posix, resolve, relative as relativePath, sep, isAbsolute } from "node:path";
import { FetchRefusedError } from "./errors.ts";
import { FILE_NOT_AVAILABLE, UPLOAD_ID } from "./media.ts";

/** What a `file` reference points at, as told by {@link classifyReference}. */
export type ClassifiedReference =
  | { kind: "path"; relative: string }
  | { kind: "http"; url: string }
  | { kind: "object"; scheme: "s3" | "gs"; bucket: string; key: string }
  | { kind: "upload"; id: string };

export interface ClassifyOptions {
  /**
   * The media root. Needed to accept an absolute path: it is accepted only
   * when it lies (lexically) under this directory, and is returned relative to
   * it. Without it, absolute paths are refused.
   */
  mediaRoot?: string;
}

/** Longest reference accepted, in characters. */
export const MAX_REFERENCE_LENGTH = 8192;

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;
const CONTROL = /[\u0000-\u001f\u007f]/;
/** S3 and GCS bucket names: lower-case letters, digits, `.`, `-` (`_` for GCS), 3–222 characters. */
const BUCKET = /^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/;
const MAX_KEY_BYTES = 1024;

function refuse(code: "invalid_reference" | "path_outside_media_root" | "scheme_not_allowed" | "credentials_not_allowed", message: string): never {
  throw new FetchRefusedError(code, message);
}

/** True when one of the `/`- (or `\`-) separated segments is `..`, `%2e%2e` and the like. */
function hasDotDotSegment(text: string, alsoBackslash: boolean): boolean {
  const segments = text.split(alsoBackslash ? /[/\\]/ : "/");
  return segments.some((segment) => segment.replace(/%2e/gi, ".") === "..");
}

/**
 * Tells what kind of input a `file` reference names, without touching the
 * disk or the network, so that the gateway can answer 422 at request time.
 *
 * - `http://…`, `https://…` → `{ kind: "http", url }` (normalized URL);
 * - `s3://bucket/key`, `gs://bucket/key` → `{ kind: "object", … }` (the key is taken as written, not percent-decoded);
 * - `upload:<id>` → `{ kind: "upload", id }` (an id of POST /v1/uploads; any other text after `upload:`
 *   is refused as `not_found` with {@link FILE_NOT_AVAILABLE});
 * - anything without a scheme → `{ kind: "path", relative }`, relative to the media root.
 *
 * Throws {@link FetchRefusedError} for other schemes (`file:`, `ftp:`, `data:`,
 * `javascript:`…), NUL or control characters, `..` segments, malformed URLs and
 * URLs with credentials. A relative path whose first segment contains `:` reads
 * as a scheme: write it as `./name:with:colons.wav`.
 */
export function classifyReference(ref: string, options: ClassifyOptions = {}): ClassifiedReference {
  if (typeof ref !== "string" || ref.length === 0) refuse("invalid_reference", "The file reference is empty.");
  if (ref.length > MAX_REFERENCE_LENGTH) refuse("invalid_reference", `The file reference is longer than ${MAX_REFERENCE_LENGTH} characters.`);
  if (ref.includes("\u0000")) refuse("invalid_reference", "The file reference contains a NUL byte.");
  if (CONTROL.test(ref)) refuse("invalid_reference", "The file reference contains control characters.");

  const schemeMatch = SCHEME.exec(ref);
  if (schemeMatch) {
    const scheme = (schemeMatch[1] ?? "").toLowerCase();
    if (scheme === "http" || scheme === "https") return classifyHttp(ref, scheme);
    if (scheme === "s3" || scheme === "gs") return classifyObject(ref, scheme);
    if (scheme === "upload") return classifyUpload(ref);
    return refuse(
      "scheme_not_allowed",
      `References with the "${scheme.slice(0, 20)}:" scheme are not accepted; use http(s)://, s3://, gs://, upload:<id> or a path under the media root.`,
    );
  }
  return classifyPath(ref, options.mediaRoot);
}

/** Checks one http(s) URL (a reference or a redirect target). */
export function classifyHttp(ref: string, scheme: "http" | "https"): { kind: "http"; url: string } {
  const afterScheme = ref.slice(scheme.length + 1);
  if (!afterScheme.startsWith("//")) refuse("invalid_reference", `The URL is malformed: expected ${scheme}:// followed by a host.`);
  let url: URL;
  try {
    url = new URL(ref);
  } catch (cause) {
    throw new FetchRefusedError("invalid_reference", "The URL is malformed.", { cause });
  }
  if (url.username !== "" || url.password !== "") {
    refuse("credentials_not_allowed", "URLs with a user name or password are not accepted; use a pre-signed URL instead.");
  }
  if (url.hostname === "") refuse("invalid_reference", "The URL has no host.");
  // The URL parser folds `..` away: look at what was written, up to the query or fragment.
  const rest = afterScheme.slice(2);
  const pathStart = rest.search(/[/\\?#]/);
  const rawPath = pathStart < 0 ? "" : rest.slice(pathStart).split(/[?#]/, 1)[0] ?? "";
  if (hasDotDotSegment(rawPath, true)) refuse("invalid_reference", "The URL contains '..' path segments.");
  return { kind: "http", url: url.href };
}

function classifyObject(ref: string, scheme: "s3" | "gs"): ClassifiedReference {
  const prefix = ref.slice(0, scheme.length + 3).toLowerCase();
  if (prefix !== `${scheme}://`) refuse("invalid_reference", `The object URI is malformed: expected ${scheme}://bucket/key.`);
  const rest = ref.slice(scheme.length + 3);
  const slash = rest.indexOf("/");
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const key = slash < 0 ? "" : rest.slice(slash + 1);
  if (!BUCKET.test(bucket) || bucket.includes("..")) {
    refuse("invalid_reference", `The object URI is malformed: "${bucket.slice(0, 64)}" is not a valid bucket name.`);
  }
  if (key === "") refuse("invalid_reference", `The object URI is malformed: expected ${scheme}://bucket/key with a key.`);
  if (Buffer.byteLength(key, "utf8") > MAX_KEY_BYTES) refuse("invalid_reference", "The object key is longer than 1024 bytes.");
  if (hasDotDotSegment(key, false)) refuse("invalid_reference", "The object key contains '..' segments.");
  return { kind: "object", scheme, bucket, key };
}

function classifyUpload(ref: string): ClassifiedReference {
  const id = ref.slice("upload:".length);
  if (!UPLOAD_ID.test(id)) throw new FetchRefusedError("not_found", FILE_NOT_AVAILABLE);
  return { kind: "upload", id };
}

function classifyPath(ref: string, mediaRoot: string | undefined): ClassifiedReference {
  if (hasDotDotSegment(ref, false)) refuse("path_outside_media_root", FILE_NOT_AVAILABLE);
  let relative: string;
  if (isAbsolute(ref)) {
    if (mediaRoot === undefined) refuse("path_outside_media_root", FILE_NOT_AVAILABLE);
    const root = resolve(mediaRoot);
    const target = resolve(ref);
    if (target !== root && !target.startsWith(root.endsWith(sep) ? root : root + sep)) {
      refuse("path_outside_media_root", FILE_NOT_AVAILABLE);
    }
    relative = relativePath(root, target);
  } else {
    relative = posix.normalize(ref);
  }
  relative = relative.replace(/^(\.\/)+/, "").replace(/\/+$/, "");
  if (relative === "" || relative === ".") refuse("invalid_reference", "The path names the media root itself, not a file.");
  return { kind: "path", relative };
}
