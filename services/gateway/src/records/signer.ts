import { signBlobUrl, type SigningSecrets } from "@voiceloc/blobs";
import type { UrlSigner } from "./kinds.ts";

/** Signed URLs remembered (one per blob key, for the current second) before the memo starts over. */
const MEMO_MAX = 10_000;

/**
 * Signs download URLs valid `ttlSeconds` (1 hour) from the read that returned them. A link's expiry is
 * a whole second, so every read of one blob within one second gets the same URL: it is signed once
 * per key and second and reused (a record read thousands of times a second costs one HMAC a second,
 * not one per read). The URLs are exactly those `signBlobUrl` gives at that instant.
 */
export function urlSigner(options: { baseUrl: string; secret: SigningSecrets; now?: () => number; ttlSeconds?: number }): UrlSigner {
  const clock = options.now ?? Date.now;
  const memo = new Map<string, { second: number; url: string }>();
  return {
    sign(key) {
      const second = Math.floor(clock() / 1000);
      const hit = memo.get(key);
      if (hit !== undefined && hit.second === second) return hit.url;
      const url = signBlobUrl({
        key,
        baseUrl: options.baseUrl,
        secret: options.secret,
        now: second * 1000,
        ...(options.ttlSeconds !== undefined ? { ttlSeconds: options.ttlSeconds } : {}),
      });
      if (hit === undefined && memo.size >= MEMO_MAX) memo.clear();
      memo.set(key, { second, url });
      return url;
    },
  };
}
