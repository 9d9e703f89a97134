import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "@voiceloc/testing";
import { FetchRefusedError, fetchToFile, type FetchOptions, type ObjectStoreOptions } from "./index.ts";
import { serveHttp, type TestServer } from "./test-servers.ts";

let tmp: { path: string; cleanup: () => Promise<void> };
let dest: string;
let s3: TestServer;

const OBJECTS: Record<string, { body: string; type: string }> = {
  "/media/in/speech.wav": { body: "RIFF-object", type: "audio/wav" },
  "/media/with space.mp3": { body: "ID3-space", type: "audio/mpeg" },
  "/gcs-bucket/a.ogg": { body: "OggS-gcs", type: "audio/ogg" },
  "/media/big.wav": { body: "x".repeat(5000), type: "audio/wav" },
};

function xmlError(code: string, message: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message><RequestId>1</RequestId></Error>`;
}

beforeAll(async () => {
  tmp = await tempDir("voiceloc-fetch-s3-");
  dest = join(tmp.path, "dest");
  // Just enough of S3 GetObject, path-style: GET /bucket/key.
  s3 = await serveHttp((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    if (req.method !== "GET") {
      res.writeHead(405);
      res.end();
      return;
    }
    if (path === "/media/hang.wav") return;
    if (path === "/media/forbidden.wav") {
      res.writeHead(403, { "content-type": "application/xml" });
      res.end(xmlError("AccessDenied", "Access Denied"));
      return;
    }
    const object = OBJECTS[path];
    if (object === undefined) {
      res.writeHead(404, { "content-type": "application/xml" });
      res.end(xmlError("NoSuchKey", "The specified key does not exist."));
      return;
    }
    res.writeHead(200, {
      "content-type": object.type,
      "content-length": String(Buffer.byteLength(object.body)),
      etag: '"0123456789abcdef"',
      "last-modified": new Date(0).toUTCString(),
    });
    res.end(object.body);
  });
});

afterAll(async () => {
  await s3.close();
  await tmp.cleanup();
});

function store(): ObjectStoreOptions {
  return { endpoint: s3.origin, region: "us-east-1", accessKeyId: "AKIATESTKEY", secretAccessKey: "test-secret", forcePathStyle: true };
}

function withStore(extra: Partial<FetchOptions> = {}): FetchOptions {
  return { mediaRoot: tmp.path, s3: store(), maxBytes: 1000, timeoutMs: 5000, ...extra };
}

async function refusal(ref: string, options: FetchOptions): Promise<FetchRefusedError> {
  try {
    await fetchToFile(ref, dest, options);
  } catch (error) {
    expect(error).toBeInstanceOf(FetchRefusedError);
    return error as FetchRefusedError;
  }
  throw new Error(`expected ${ref} to be refused`);
}

describe("fetchToFile: object storage not configured", () => {
  it("refuses s3:// and gs:// with object_storage_not_configured and a clear message", async () => {
    const bare: FetchOptions = { mediaRoot: tmp.path };
    const e3 = await refusal("s3://media/in/speech.wav", bare);
    expect(e3.code).toBe("object_storage_not_configured");
    expect(e3.message).toMatch(/s3:\/\/ references are not enabled/);
    const eg = await refusal("gs://media/in/speech.wav", withStore()); // s3 configured, gs not
    expect(eg.code).toBe("object_storage_not_configured");
    expect(eg.message).toMatch(/gs:\/\/ references are not enabled/);
  });
});

describe("fetchToFile: S3-compatible endpoint (local GetObject server)", () => {
  it("gets s3://bucket/key path-style, signed, into a file", async () => {
    const result = await fetchToFile("s3://media/in/speech.wav", dest, withStore());
    expect(result).toMatchObject({ size: 11, contentType: "audio/wav", sourceKind: "object" });
    expect(result.path.endsWith(".wav")).toBe(true);
    expect(await readFile(result.path, "utf8")).toBe("RIFF-object");
    const seen = s3.requests.at(-1);
    expect(seen?.method).toBe("GET");
    expect(seen?.url.startsWith("/media/in/speech.wav")).toBe(true);
    expect(String(seen?.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIATESTKEY\//);
  });

  it("takes keys as written (spaces are encoded on the wire)", async () => {
    const result = await fetchToFile("s3://media/with space.mp3", dest, withStore());
    expect(await readFile(result.path, "utf8")).toBe("ID3-space");
    expect(s3.requests.at(-1)?.url.startsWith("/media/with%20space.mp3")).toBe(true);
  });

  it("gets gs://bucket/key through the configured (GCS-interoperability style) endpoint", async () => {
    const result = await fetchToFile("gs://gcs-bucket/a.ogg", dest, { mediaRoot: tmp.path, gs: { ...store(), region: "auto" } });
    expect(result).toMatchObject({ size: 8, contentType: "audio/ogg", sourceKind: "object" });
  });

  it("maps NoSuchKey to not_found and AccessDenied to object_storage_error", async () => {
    expect(await refusal("s3://media/missing.wav", withStore())).toMatchObject({ code: "not_found", status: 404 });
    expect(await refusal("s3://media/forbidden.wav", withStore())).toMatchObject({ code: "object_storage_error", status: 403 });
  });

  it("enforces the size cap", async () => {
    expect((await refusal("s3://media/big.wav", withStore({ maxBytes: 4999 }))).code).toBe("too_large");
    expect((await fetchToFile("s3://media/big.wav", dest, withStore({ maxBytes: 5000 }))).size).toBe(5000);
  });

  it("enforces the time cap", async () => {
    expect((await refusal("s3://media/hang.wav", withStore({ timeoutMs: 300 }))).code).toBe("timeout");
  });
});
