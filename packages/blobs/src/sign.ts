import { createHmac, timingSafeEqual } from "node:crypto";
import { InvalidSigningSecretError } from "./errors.ts";
import { isValidBlobKey, validateBlobKey } from "./keys.ts";

/** Shortest secret accepted, matching SIGNING_SECRET in @voiceloc/config. */
export const MIN_SIGNING_SECRET_LENGTH = 32;

/** One secret, or several for rotation: the first signs, any of them verifies. */
export type SigningSecrets = string | readonly string[];

export interface SignBlobUrlOptions {
  key: string;
  /** Public origin (and optional path prefix) of the gateway, e.g. `https://voice.example.com`. */
  baseUrl: string;
  secret: SigningSecrets;
  /** Lifetime of the link; 3600 by default. */
  ttlSeconds?: number;
  /** The current time, as a Date or milliseconds since the epoch (like Date.now()). */
  now?: Date | number;
}

export interface VerifyBlobSignatureOptions {
  key: string;
  /** The `expires` query parameter as received (unix seconds). */
  expires: string | number | undefined | null;
  /** The `signature` query parameter as received. */
  signature: string | undefined | null;
  secret: SigningSecrets;
  now?: Date | number;
}

export type VerifyBlobSignatureResult =
  | { ok: true }
  | { ok: false; reason: "expired" | "bad_signature" | "malformed" };

/** Path under the gateway where signed blobs are served. */
export const SIGNED_FILES_PATH = "/v1/files/";

const SIGNATURE_BYTES = 32;
const SIGNATURE_PATTERN = /^[A-Za-z0-9_-]{43}$/; // 32 bytes, unpadded base64url
const EXPIRES_PATTERN = /^(0|[1-9][0-9]{0,14})$/; // canonical: one spelling per instant

function secretList(secret: SigningSecrets): readonly string[] {
  const list = typeof secret === "string" ? [secret] : secret;
  if (list.length === 0) throw new InvalidSigningSecretError("no signing secret given");
  for (const s of list) {
    if (typeof s !== "string" || s.length < MIN_SIGNING_SECRET_LENGTH) {
      throw new InvalidSigningSecretError(`signing secrets must be at least ${MIN_SIGNING_SECRET_LENGTH} characters`);
    }
  }
  return list;
}

function nowSeconds(now: Date | number | undefined): number {
  const ms = now === undefined ? Date.now() : typeof now === "number" ? now : now.getTime();
  return Math.floor(ms / 1000);
}

function mac(secret: string, key: string, expires: number): Buffer {
  return createHmac("sha256", secret).update(`${key}\n${expires}`, "utf8").digest();
}

/**
 * Signs a download link for `key`:
 * `<baseUrl>/v1/files/<key>?expires=<unix seconds>&signature=<base64url HMAC-SHA256(secret, key + "\n" + expires)>`.
 * Keys only hold `[A-Za-z0-9._/-]`, so they appear in the path unescaped.
 */
export function signBlobUrl(options: SignBlobUrlOptions): string {
  const key = validateBlobKey(options.key);
  const [secret] = secretList(options.secret) as [string];
  const ttl = options.ttlSeconds ?? 3600;
  if (!Number.isSafeInteger(ttl) || ttl <= 0) throw new RangeError(`ttlSeconds must be a positive integer, got ${ttl}`);
  const expires = nowSeconds(options.now) + ttl;
  const url = new URL(options.baseUrl);
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new TypeError(`baseUrl must be http or https: ${options.baseUrl}`);
  url.pathname = `${url.pathname.replace(/\/+$/, "")}${SIGNED_FILES_PATH}${key}`;
  url.search = "";
  url.hash = "";
  url.searchParams.set("expires", String(expires));
  url.searchParams.set("signature", mac(secret, key, expires).toString("base64url"));
  return url.toString();
}

/**
 * Checks `signature` for `key` and `expires` against every secret (constant
 * time per comparison, all secrets always tried), then the expiry.
 * `malformed`: key, expires or signature missing or not of the expected shape.
 * `bad_signature`: well-formed but signed with none of the secrets (a changed
 * key or expiry lands here). `expired`: valid signature, `expires` in the past.
 * The link stays valid through the second of `expires`.
 */
export function verifyBlobSignature(options: VerifyBlobSignatureOptions): VerifyBlobSignatureResult {
  const secrets = secretList(options.secret);
  const { key, signature } = options;
  const expiresText = typeof options.expires === "number" ? String(options.expires) : options.expires;
  if (typeof key !== "string" || !isValidBlobKey(key)) return { ok: false, reason: "malformed" };
  if (typeof expiresText !== "string" || !EXPIRES_PATTERN.test(expiresText)) return { ok: false, reason: "malformed" };
  if (typeof signature !== "string" || !SIGNATURE_PATTERN.test(signature)) return { ok: false, reason: "malformed" };
  const given = Buffer.from(signature, "base64url");
  // Re-encoding refuses non-canonical spellings of the same bytes (stray low bits in the last character).
  if (given.length !== SIGNATURE_BYTES || given.toString("base64url") !== signature) return { ok: false, reason: "malformed" };
  const expires = Number(expiresText);

  let matched = false;
  for (const secret of secrets) {
    // No early exit: the time taken does not depend on which secret matched.
    if (timingSafeEqual(mac(secret, key, expires), given)) matched = true;
  }
  if (!matched) return { ok: false, reason: "bad_signature" };
  if (nowSeconds(options.now) > expires) return { ok: false, reason: "expired" };
  return { ok: true };
}
