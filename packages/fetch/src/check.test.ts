import { describe, expect, it } from "vitest";
import { checkReference, FetchRefusedError } from "./index.ts";

function refusal(ref: string, options: Parameters<typeof checkReference>[1] = {}): string {
  const error: unknown = (() => {
    try {
      checkReference(ref, options);
      return undefined;
    } catch (caught) {
      return caught;
    }
  })();
  expect(error, ref).toBeInstanceOf(FetchRefusedError);
  return (error as FetchRefusedError).code;
}

describe("checkReference (what the gateway refuses at creation, without DNS)", () => {
  it.each([
    "http://127.0.0.1/a",
    "http://127.1/a",
    "http://2130706433/a",
    "http://0x7f.0.0.1/a",
    "http://0177.0.0.1/a",
    "http://0/a",
    "http://[::]/a",
    "http://[::1]/a",
    "http://[::ffff:10.0.0.1]/a",
    "http://[64:ff9b::a9fe:a9fe]/a",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.100.100.200/",
    "http://[fd00::1]/a",
    "http://[fe80::1]/a",
    "http://192.168.0.1./a",
    "http://LOCALHOST/a",
    "http://x.localhost/a",
    "http://metadata.google.internal/",
  ])("refuses %s as address_not_allowed", (ref) => {
    expect(refusal(ref)).toBe("address_not_allowed");
  });

  it("passes public literals and names, paths, and configured object stores", () => {
    for (const ref of ["http://8.8.8.8/a", "https://[2606:4700:4700::1111]/a", "https://example.com/a", "https://internal.example/a", "a/b.wav"]) {
      expect(checkReference(ref, { mediaRoot: "/srv/media" }).kind, ref).toMatch(/^(http|path)$/);
    }
    expect(checkReference("s3://bucket/key", { s3: true })).toEqual({ kind: "object", scheme: "s3", bucket: "bucket", key: "key" });
    expect(checkReference("gs://bucket/key", { gs: true }).kind).toBe("object");
  });

  it("refuses s3:// and gs:// while the store is not configured", () => {
    expect(refusal("s3://bucket/key")).toBe("object_storage_not_configured");
    expect(refusal("gs://bucket/key", { s3: true })).toBe("object_storage_not_configured");
  });

  it("honours the allow-list (host and port), never for metadata", () => {
    const allowPrivateHosts = ["10.0.0.5:9000", "localhost", "169.254.169.254", "metadata.google.internal"];
    expect(checkReference("http://10.0.0.5:9000/b/k", { allowPrivateHosts }).kind).toBe("http");
    expect(checkReference("http://localhost:8080/x", { allowPrivateHosts }).kind).toBe("http");
    expect(refusal("http://10.0.0.5:9001/b/k", { allowPrivateHosts })).toBe("address_not_allowed");
    expect(refusal("http://169.254.169.254/", { allowPrivateHosts })).toBe("address_not_allowed");
    expect(refusal("http://metadata.google.internal/", { allowPrivateHosts })).toBe("address_not_allowed");
  });

  it("still refuses what classifyReference refuses", () => {
    expect(refusal("ftp://example.com/a")).toBe("scheme_not_allowed");
    expect(refusal("../etc/passwd")).toBe("path_outside_media_root");
  });
});
