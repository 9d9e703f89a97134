import { describe, expect, it } from "vitest";
import { signBlobUrl, verifyBlobSignature } from "@voiceloc/blobs";
import { urlSigner } from "./signer.ts";

const secret = "a-signing-secret-that-is-long-enough-0123";
const baseUrl = "https://voice.example.com";

describe("urlSigner", () => {
  it("gives the URL signBlobUrl gives at that instant, valid one hour from the read", () => {
    let now = 1_800_000_000_250;
    const signer = urlSigner({ baseUrl, secret, now: () => now });
    const url = new URL(signer.sign("results/a.mp3"));
    expect(url.toString()).toBe(signBlobUrl({ key: "results/a.mp3", baseUrl, secret, now }));
    expect(url.searchParams.get("expires")).toBe(String(1_800_000_000 + 3600));
    const check = (at: number) =>
      verifyBlobSignature({ key: "results/a.mp3", expires: url.searchParams.get("expires"), signature: url.searchParams.get("signature"), secret, now: at });
    expect(check(now)).toEqual({ ok: true });
    now += 3_600_000;
    expect(check(now)).toEqual({ ok: true });
    expect(check(now + 1000)).toEqual({ ok: false, reason: "expired" });
  });

  it("reuses a URL within the second and signs a fresh one the next second, per key", () => {
    let now = 1_800_000_000_000;
    const signer = urlSigner({ baseUrl, secret, now: () => now });
    const first = signer.sign("results/a.mp3");
    now += 999;
    expect(signer.sign("results/a.mp3")).toBe(first);
    expect(signer.sign("results/b.mp3")).not.toBe(first);
    expect(new URL(signer.sign("results/b.mp3")).pathname).toBe("/v1/files/results/b.mp3");
    now += 1;
    const next = signer.sign("results/a.mp3");
    expect(next).not.toBe(first);
    expect(new URL(next).searchParams.get("expires")).toBe(String(1_800_000_001 + 3600));
  });
});
