import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * API keys look like `vl_live_<key id>_<secret>` or `vl_test_<key id>_<secret>` (sandbox): the mode
 * is visible in the key itself. The key id (10 base32 characters) is stored in clear and used to find
 * the key; the whole key is stored only as a SHA-256 hash (the secret carries 256 bits, so a slow hash
 * adds nothing). Keys made before modes existed (`vl_<key id>_<secret>`) keep working as live keys.
 * Keys of any other shape (seeded from VOICELOC_API_KEYS for development) are found by an id derived
 * from their hash instead, and are live.
 */
const KEY_PATTERN = /^vl_(?:(live|test)_)?([a-z2-7]{10})_([A-Za-z0-9_-]{43})$/;
const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

export type KeyMode = "live" | "sandbox";

export interface GeneratedKey {
  key: string;
  keyId: string;
  hash: string;
  mode: KeyMode;
  /** What a listing may show: enough to recognise the key, useless to use it. */
  prefix: string;
}

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** The lookup id for any presented key. */
export function keyIdOf(key: string): string {
  const match = KEY_PATTERN.exec(key);
  if (match?.[2]) return match[2];
  return `h${hashApiKey(key).slice(0, 15)}`;
}

export function displayPrefix(key: string): string {
  const match = KEY_PATTERN.exec(key);
  if (match) return `vl_${match[1] ? `${match[1]}_` : ""}${match[2]}_…`;
  return `${key.slice(0, Math.min(4, Math.floor(key.length / 3)))}…`;
}

export function generateApiKey(mode: KeyMode = "live"): GeneratedKey {
  const idBytes = randomBytes(10);
  let keyId = "";
  for (const byte of idBytes) keyId += BASE32[byte % 32];
  const key = `vl_${mode === "sandbox" ? "test" : "live"}_${keyId}_${randomBytes(32).toString("base64url")}`;
  return { key, keyId, hash: hashApiKey(key), mode, prefix: displayPrefix(key) };
}

/** Constant-time comparison of a presented key with a stored hash. */
export function keyMatches(key: string, storedHash: string): boolean {
  const a = Buffer.from(hashApiKey(key), "hex");
  const b = Buffer.from(storedHash, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}
