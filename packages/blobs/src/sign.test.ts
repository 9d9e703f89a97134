import { describe, expect, it } from "vitest";
import { InvalidBlobKeyError, InvalidSigningSecretError } from "./errors.ts";
import { signBlobUrl, verifyBlobSignature } from "./sign.ts";

const SECRET = "s".repeat(32);
const OTHER = "o".repeat(40);
const NOW = Date.UTC(2025, 0, 1, 12, 0, 0); // ms
const NOW_S = NOW / 1000;

function parts(url: string): { key: string; expires: string; signature: string; url: URL } {
  const u = new URL(url);
  const prefix = "/v1/files/";
  const at = u.pathname.indexOf(prefix);
  return {
    key: u.pathname.slice(at + prefix.length),
    expires: u.searchParams.get("expires") ?? "",
    signature: u.searchParams.get("signature") ?? "",
    url: u,
  };
}

describe("signBlobUrl", () => {
  it("builds <baseUrl>/v1/files/<key>?expires&signature", () => {
    const url = signBlobUrl({ key: "tasks/1/out.mp3", baseUrl: "https://voice.example.com", secret: SECRET, now: NOW });
    const { url: u, expires, signature } = parts(url);
    expect(`${u.origin}${u.pathname}`).toBe("https://voice.example.com/v1/files/tasks/1/out.mp3");
    expect(expires).toBe(String(NOW_S + 3600));
    expect(signature).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("keeps a base path, drops trailing slashes, takes a Date and a ttl", () => {
    const url = signBlobUrl({ key: "a.wav", baseUrl: "http://h:8080/api//", secret: SECRET, ttlSeconds: 60, now: new Date(NOW) });
    expect(url).toMatch(/^http:\/\/h:8080\/api\/v1\/files\/a\.wav\?expires=\d+&signature=/);
    expect(parts(url).expires).toBe(String(NOW_S + 60));
  });

  it("is deterministic for the same inputs", () => {
    const a = signBlobUrl({ key: "a.wav", baseUrl: "http://h", secret: SECRET, now: NOW });
    expect(signBlobUrl({ key: "a.wav", baseUrl: "http://h", secret: SECRET, now: NOW })).toBe(a);
  });

  it("refuses bad keys, secrets, ttls and base URLs", () => {
    expect(() => signBlobUrl({ key: "../x", baseUrl: "http://h", secret: SECRET })).toThrow(InvalidBlobKeyError);
    expect(() => signBlobUrl({ key: "a", baseUrl: "http://h", secret: "short" })).toThrow(InvalidSigningSecretError);
    expect(() => signBlobUrl({ key: "a", baseUrl: "http://h", secret: [] })).toThrow(InvalidSigningSecretError);
    expect(() => signBlobUrl({ key: "a", baseUrl: "http://h", secret: SECRET, ttlSeconds: 0 })).toThrow(RangeError);
    expect(() => signBlobUrl({ key: "a", baseUrl: "http://h", secret: SECRET, ttlSeconds: 1.5 })).toThrow(RangeError);
    expect(() => signBlobUrl({ key: "a", baseUrl: "/relative", secret: SECRET })).toThrow();
    expect(() => signBlobUrl({ key: "a", baseUrl: "ftp://h", secret: SECRET })).toThrow(TypeError);
  });
});

describe("verifyBlobSignature", () => {
  const signed = parts(signBlobUrl({ key: "tasks/1/out.mp3", baseUrl: "https://x", secret: SECRET, ttlSeconds: 600, now: NOW }));
  const base = { key: signed.key, expires: signed.expires, signature: signed.signature, secret: SECRET, now: NOW };

  it("accepts a valid signature until the expiry second, as string or number", () => {
    expect(verifyBlobSignature(base)).toEqual({ ok: true });
    expect(verifyBlobSignature({ ...base, expires: Number(signed.expires) })).toEqual({ ok: true });
    expect(verifyBlobSignature({ ...base, now: (NOW_S + 600) * 1000 + 999 })).toEqual({ ok: true });
  });

  it("rejects an expired link", () => {
    expect(verifyBlobSignature({ ...base, now: (NOW_S + 601) * 1000 })).toEqual({ ok: false, reason: "expired" });
  });

  it("rejects a tampered key", () => {
    expect(verifyBlobSignature({ ...base, key: "tasks/2/out.mp3" })).toEqual({ ok: false, reason: "bad_signature" });
    expect(verifyBlobSignature({ ...base, key: "../etc/passwd" })).toEqual({ ok: false, reason: "malformed" });
  });

  it("rejects a tampered expiry, even a later one", () => {
    expect(verifyBlobSignature({ ...base, expires: String(Number(signed.expires) + 86_400) })).toEqual({ ok: false, reason: "bad_signature" });
    expect(verifyBlobSignature({ ...base, expires: String(Number(signed.expires) - 1) })).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("rejects a tampered signature", () => {
    const s = signed.signature;
    const flipped = (s[0] === "A" ? "B" : "A") + s.slice(1);
    expect(verifyBlobSignature({ ...base, signature: flipped })).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("rejects a signature made with another secret", () => {
    expect(verifyBlobSignature({ ...base, secret: OTHER })).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("checks the signature before the expiry", () => {
    expect(verifyBlobSignature({ ...base, secret: OTHER, now: (NOW_S + 10_000) * 1000 })).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("accepts a link signed with a rotated-out secret still in the list, and signs with the first", () => {
    expect(verifyBlobSignature({ ...base, secret: [OTHER, SECRET] })).toEqual({ ok: true });
    const fresh = parts(signBlobUrl({ key: "a.wav", baseUrl: "https://x", secret: [OTHER, SECRET], now: NOW }));
    const check = { key: "a.wav", expires: fresh.expires, signature: fresh.signature, now: NOW };
    expect(verifyBlobSignature({ ...check, secret: OTHER })).toEqual({ ok: true });
    expect(verifyBlobSignature({ ...check, secret: SECRET })).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("reports malformed input", () => {
    const cases: Array<Partial<typeof base> & { expires?: unknown; signature?: unknown }> = [
      { expires: undefined },
      { expires: "" },
      { expires: "12a" },
      { expires: "-5" },
      { expires: "0123" },
      { expires: "1".repeat(20) },
      { signature: undefined },
      { signature: "" },
      { signature: signed.signature.slice(0, 42) },
      { signature: `${signed.signature}=` },
      { signature: Buffer.from(signed.signature, "base64url").toString("hex") },
      { signature: signed.signature.replace(/.$/, "!") },
      { key: "" },
    ];
    for (const change of cases) {
      expect(verifyBlobSignature({ ...base, ...change } as Parameters<typeof verifyBlobSignature>[0]), JSON.stringify(change)).toEqual({
        ok: false,
        reason: "malformed",
      });
    }
  });

  it("refuses a non-canonical base64url spelling of the right bytes", () => {
    const s = signed.signature;
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const last = alphabet.indexOf(s[42] as string);
    const variant = s.slice(0, 42) + alphabet[last ^ 1]; // flips a padding bit only
    expect(Buffer.from(variant, "base64url")).toEqual(Buffer.from(s, "base64url"));
    expect(verifyBlobSignature({ ...base, signature: variant })).toEqual({ ok: false, reason: "malformed" });
  });

  it("throws on a missing or short secret (a configuration error, not a bad link)", () => {
    expect(() => verifyBlobSignature({ ...base, secret: [] })).toThrow(InvalidSigningSecretError);
    expect(() => verifyBlobSignature({ ...base, secret: [SECRET, "short"] })).toThrow(InvalidSigningSecretError);
  });
});
