import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SignJWT } from "jose";
import { createFsBlobStore, signBlobUrl } from "@voiceloc/blobs";
import { tempDir } from "@voiceloc/testing";
import type { Collection } from "@voiceloc/store";
import { HttpProblem } from "./http/errors.ts";
import { canonicalJson, type IdempotencyDoc } from "./http/idempotency.ts";
import { ECHO_LIMITS, MAX_JSON_DEPTH, TRUNCATED } from "./http/limits.ts";
import { BASE, JWT_SECRET, startTestGateway, type TestGateway } from "./testing/harness.ts";

const SIGNING_SECRET = "signing-secret-that-is-long-enough-0123456789";
const CHALLENGE = 'Bearer realm="voiceloc", error="invalid_token"';

const book = (over: Record<string, unknown> = {}) => ({
  file: "https://example.com/book.txt",
  name: "The Little Prince",
  source_language: "English",
  target_language: "Spanish",
  ...over,
});
const stream = (file: string) => ({ file, source_language: "English", target_language: "French" });
const CREATE = [
  ["/v1/audio_books/", (file: string) => book({ file })],
  ["/v1/voices/streams", stream],
  ["/v1/videos/subtitle", stream],
] as const;

let t: TestGateway;
let blobDir: { path: string; cleanup: () => Promise<void> };
beforeAll(async () => {
  blobDir = await tempDir("voiceloc-blobs-");
  const blobs = createFsBlobStore({ root: blobDir.path });
  await blobs.put("results/a-b.txt", Buffer.from("hello"), { contentType: "text/plain" });
  t = await startTestGateway({ SIGNING_SECRET }, { blobs });
});
afterAll(async () => {
  await t.close();
  await blobDir.cleanup();
});

async function json(res: Response): Promise<any> {
  return res.json();
}

const deepArray = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

describe("JSON nesting is capped at 64 levels", () => {
  it("a POST or PATCH body nested 5,000 levels deep is a 422 json_invalid, not a 500", async () => {
    const created = await json(await t.request("POST", "/v1/audio_books/", { body: book() }));
    for (const [method, path] of [
      ["POST", "/v1/audio_books/"],
      ["PATCH", `/v1/audio_books/${created.id}`],
      ["POST", "/v1/speech/synthesize"],
    ] as const) {
      for (const raw of [deepArray(5000), deepObject(5000), `{"name":"x","extra":${deepArray(5000)}}`]) {
        const res = await t.request(method, path, { raw, headers: { "Content-Type": "application/json" } });
        expect(res.status, `${method} ${path}`).toBe(422);
        const body = await json(res);
        expect(body.detail).toHaveLength(1);
        expect(body.detail[0]).toMatchObject({ type: "json_invalid", msg: "JSON decode error", ctx: { error: "Nesting deeper than 64 levels" } });
        expect(body.detail[0].loc[0]).toBe("body");
      }
    }
  });

  it("names the position of the first bracket too deep (in code points, as FastAPI does)", async () => {
    const raw = `{"name":"\u{1F600}","x":${deepArray(100)}}`;
    const res = await t.request("POST", "/v1/audio_books/", { raw, headers: { "Content-Type": "application/json" } });
    const item = (await json(res)).detail[0];
    // The top object is level 1; the 64th "[" opens level 65. The emoji counts as one position.
    expect(item.loc).toEqual(["body", '{"name":"\u{1F600}","x":'.length - 1 + 63]);
  });

  it("a valid body with a deep extra field and an Idempotency-Key is a 422, not a 500; 64 levels are accepted", async () => {
    const tooDeep = `{"file":"https://example.com/a.txt","name":"n","source_language":"English","target_language":"French","extra":${deepArray(5000)}}`;
    const res = await t.request("POST", "/v1/audio_books/", { raw: tooDeep, headers: { "Content-Type": "application/json", "Idempotency-Key": "deep-1" } });
    expect(res.status).toBe(422);
    const atLimit = book({ extra: JSON.parse(deepArray(MAX_JSON_DEPTH - 1)) });
    const first = await t.request("POST", "/v1/audio_books/", { body: atLimit, headers: { "Idempotency-Key": "deep-2" } });
    expect(first.status).toBe(201);
    const replay = await t.request("POST", "/v1/audio_books/", { body: atLimit, headers: { "Idempotency-Key": "deep-2" } });
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
  });

  it("canonical JSON is iterative: 50,000 levels do not overflow the stack", () => {
    let deep: unknown = { z: 1, a: [null, "s"] };
    for (let i = 0; i < 50_000; i++) deep = i % 2 === 0 ? [deep] : { b: 2, a: deep };
    const text = canonicalJson(deep);
    expect(text.length).toBe(25_000 * 14 + '{"a":[null,"s"],"z":1}'.length);
    expect(text.startsWith('{"a":[{"a":[{"a":[')).toBe(true);
    expect(text.slice(25_000 * 6, 25_000 * 6 + 30)).toBe('{"a":[null,"s"],"z":1}],"b":2}');
    expect(text.endsWith('],"b":2}],"b":2}')).toBe(true);
    expect(canonicalJson({ b: [1, undefined, { d: 1, c: undefined }], a: "x" })).toBe('{"a":"x","b":[1,null,{"d":1}]}');
  });
});

describe("422 items echo a bounded input", () => {
  it("a huge, wide or deep body is echoed cut, not in full", async () => {
    const wide = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, i]));
    const body = { colour: "é".repeat(300_000), wide, deep: JSON.parse(deepArray(40)), list: Array.from({ length: 10_000 }, () => "x") };
    const res = await t.request("POST", "/v1/audio_books/", { body });
    expect(res.status).toBe(422);
    const text = await res.text();
    expect(text.length).toBeLessThan(40_000);
    const detail = JSON.parse(text).detail;
    expect(detail.map((d: any) => d.loc)).toEqual([["body", "file"], ["body", "name"], ["body", "source_language"], ["body", "target_language"]]);
    const input = detail[0].input;
    expect(input.colour).toBe(`${"é".repeat(ECHO_LIMITS.stringLength)}${TRUNCATED}`);
    expect(Object.keys(input.wide)).toHaveLength(ECHO_LIMITS.items);
    expect(input.deep).toEqual([[TRUNCATED]]);
  });

  it("a huge non-object body is echoed cut in model_attributes_type", async () => {
    const res = await t.request("POST", "/v1/voices/streams", { raw: JSON.stringify(Array.from({ length: 100_000 }, (_, i) => i)), headers: { "Content-Type": "application/json" } });
    expect(res.status).toBe(422);
    const item = (await json(res)).detail[0];
    expect(item.type).toBe("model_attributes_type");
    expect(item.input).toHaveLength(ECHO_LIMITS.items);
  });

  it("a value error on a long file reference echoes it cut", async () => {
    const file = `ftp://example.com/${"a".repeat(1500)}`;
    const item = (await json(await t.request("POST", "/v1/audio_books/", { body: book({ file }) }))).detail[0];
    expect(item.loc).toEqual(["body", "file"]);
    expect(item.input).toBe(`${file.slice(0, ECHO_LIMITS.stringLength)}${TRUNCATED}`);
  });
});

describe("signed download paths are decoded once and never throw", () => {
  it("malformed percent-encoding is a 404 without credentials, not a 500 URIError", async () => {
    for (const path of ["/v1/files/%E0%A4%A?expires=1&signature=x", "/v1/files/%?expires=1&signature=x", "/v1/files/%ED%A0%80?expires=1&signature=x", "/v1/files/results/%FF.txt"]) {
      const res = await t.request("GET", path, { key: null });
      expect(res.status, path).toBe(404);
      expect(await json(res)).toEqual({ detail: "File not found" });
    }
  });

  it("an encoded key is decoded exactly once", async () => {
    const signed = new URL(signBlobUrl({ key: "results/a-b.txt", baseUrl: BASE, secret: SIGNING_SECRET }));
    const once = await t.request("GET", `/v1/files/results%2Fa%2Db.txt${signed.search}`, { key: null });
    expect(once.status).toBe(200);
    expect(await once.text()).toBe("hello");
    // Decoded twice this would be the same key; decoded once it is `results%2Fa-b.txt`, no key.
    const twice = await t.request("GET", `/v1/files/results%252Fa-b.txt${signed.search}`, { key: null });
    expect(twice.status).toBe(404);
  });
});

function tokenWithHeader(header: Record<string, unknown>, payload: Record<string, unknown> = { sub: "alice" }): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value), "utf8").toString("base64url");
  return `${part(header)}.${part(payload)}.${Buffer.from("sig").toString("base64url")}`;
}

describe("no client value is reflected into a header", () => {
  it("a JWT whose alg holds CR/LF, NUL or non-Latin-1 text is a 401 with a constant challenge", async () => {
    for (const alg of ["HS256\r\nX-Injected: 1", "none\u0000", "日本語", "\u202eHS256", "x".repeat(5000), 42, { a: 1 }]) {
      const res = await t.request("GET", "/v1/audio_books/", { key: null, headers: { Authorization: `Bearer ${tokenWithHeader({ alg })}` } });
      expect(res.status, JSON.stringify(alg).slice(0, 40)).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe(CHALLENGE);
      expect(res.headers.get("x-injected")).toBeNull();
      const body = await json(res);
      expect(body.detail).toMatch(/^Invalid access token: algorithm .* is not accepted/);
      expect(body.detail.length).toBeLessThan(120);
    }
  });

  it("other 401s carry the same constant challenge", async () => {
    const expired = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("alice").setExpirationTime(Math.floor(Date.now() / 1000) - 60).sign(new TextEncoder().encode(JWT_SECRET));
    const cases: Array<Record<string, string>> = [{ "API-KEY": "wrong\u00ff" }, { Authorization: `Bearer ${expired}` }, { Authorization: "Basic abc" }];
    for (const headers of cases) {
      const res = await t.request("GET", "/v1/audio_books/", { key: null, headers });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe(CHALLENGE);
    }
  });
  it("an error whose header value is unsafe is answered without that header, never a 500", async () => {
    const g = await startTestGateway();
    try {
      g.gateway.app.get("/test/unsafe-header", () => {
        throw new HttpProblem(409, "conflict", "bad", { headers: { "X-Echo": "a\r\nX-Injected: 1", "X-Wide": "日本", "X-Fine": "ok" } });
      });
      const res = await g.gateway.app.request(`${BASE}/test/unsafe-header`);
      expect(res.status).toBe(409);
      expect(await res.json()).toEqual({ detail: "bad" });
      expect([res.headers.get("x-echo"), res.headers.get("x-wide"), res.headers.get("x-injected")]).toEqual([null, null, null]);
      expect(res.headers.get("x-fine")).toBe("ok");
    } finally {
      await g.close();
    }
  });
});

describe("access tokens must carry exp", () => {
  const secret = new TextEncoder().encode(JWT_SECRET);
  const noExp = () => new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("alice").sign(secret);

  it("a token without exp is a 401 by default", async () => {
    const res = await t.request("GET", "/v1/audio_books/", { key: null, headers: { Authorization: `Bearer ${await noExp()}` } });
    expect(res.status).toBe(401);
    expect((await json(res)).detail).toBe("Invalid access token: the 'exp' claim (expiry time) is required");
    const withExp = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("alice").setExpirationTime("5m").sign(secret);
    expect((await t.request("GET", "/v1/audio_books/", { key: null, headers: { Authorization: `Bearer ${withExp}` } })).status).toBe(200);
  });

  it("JWT_REQUIRE_EXP=false accepts it", async () => {
    const lax = await startTestGateway({ JWT_REQUIRE_EXP: "false" });
    try {
      const res = await lax.request("GET", "/v1/audio_books/", { key: null, headers: { Authorization: `Bearer ${await noExp()}` } });
      expect(res.status).toBe(200);
    } finally {
      await lax.close();
    }
  });
});

const PRIVATE_LITERALS = [
  "http://127.0.0.1/a.wav",
  "http://127.1/a.wav",
  "http://2130706433/a.wav",
  "http://0x7f000001/a.wav",
  "http://0177.0.0.1/a.wav",
  "http://0.0.0.0/a.wav",
  "http://[::1]/a.wav",
  "http://[::ffff:127.0.0.1]/a.wav",
  "http://[::ffff:a9fe:a9fe]/a.wav",
  "http://10.1.2.3/a.wav",
  "http://172.16.0.1/a.wav",
  "http://192.168.1.1./a.wav",
  "https://169.254.169.254/latest/meta-data/",
  "http://[fd00::1]/a.wav",
  "http://[fe80::1]/a.wav",
  "http://100.64.0.1/a.wav",
  "http://localhost:8080/a.wav",
  "http://api.localhost/a.wav",
  "http://metadata.google.internal/computeMetadata/v1/",
];

describe("file references refused at creation", () => {
  it("private, loopback, link-local and metadata IP literals are a 422 in every file field", async () => {
    for (const [path, body] of CREATE) {
      for (const file of PRIVATE_LITERALS) {
        const res = await t.request("POST", path, { body: body(file) });
        expect(res.status, `${path} ${file}`).toBe(422);
        const item = (await json(res)).detail[0];
        expect(item).toMatchObject({ type: "value_error", loc: ["body", "file"], input: file, ctx: { error: {} } });
        expect(item.msg).toMatch(/^Value error, The (address|host) .* (non-public address|cloud metadata service); fetching from it is not allowed\.$/);
      }
    }
    for (const sample of ["http://10.0.0.1/voice.wav", "http://[::1]/v.wav"]) {
      const res = await t.request("POST", "/v1/audio_books/", { body: book({ use_voice_clone: true, voice_clone_sample: sample }) });
      expect(res.status).toBe(422);
      expect((await json(res)).detail[0]).toMatchObject({ loc: ["body", "voice_clone_sample"], input: sample });
    }
  });

  it("public literals and names pass (names are checked when fetched)", async () => {
    for (const file of ["http://8.8.8.8/a.wav", "http://[2606:4700:4700::1111]/a.wav", "https://example.com/a.wav", "https://intranet.example/a.wav"]) {
      expect((await t.request("POST", "/v1/voices/streams", { body: stream(file) })).status, file).toBe(201);
    }
  });

  it("s3:// and gs:// without a configured object store are a 422", async () => {
    for (const [path, body] of CREATE) {
      for (const file of ["s3://bucket/key.wav", "gs://bucket/key.wav"]) {
        const res = await t.request("POST", path, { body: body(file) });
        expect(res.status, `${path} ${file}`).toBe(422);
        expect((await json(res)).detail[0].msg).toMatch(/^Value error, (s3|gs):\/\/ references are not enabled on this server/);
      }
    }
  });

  it("FETCH_ALLOW_PRIVATE_HOSTS and a configured store are honoured; metadata stays refused", async () => {
    const open = await startTestGateway({
      FETCH_ALLOW_PRIVATE_HOSTS: "10.0.0.5:9000,localhost,169.254.169.254",
      S3_ACCESS_KEY_ID: "id",
      S3_SECRET_ACCESS_KEY: "secret",
    });
    try {
      for (const file of ["http://10.0.0.5:9000/b/a.wav", "http://localhost/a.wav", "s3://bucket/key.wav"]) {
        expect((await open.request("POST", "/v1/voices/streams", { body: stream(file) })).status, file).toBe(201);
      }
      for (const file of ["http://10.0.0.5:9001/b/a.wav", "http://169.254.169.254/", "gs://bucket/key.wav"]) {
        expect((await open.request("POST", "/v1/voices/streams", { body: stream(file) })).status, file).toBe(422);
      }
    } finally {
      await open.close();
    }
  });
});

describe("idempotency keys", () => {
  it("expired keys are purged on a timer once the gateway starts, and the timer stops with it", async () => {
    const g = await startTestGateway({ PORT: "0", HOST: "127.0.0.1" }, { idempotencyPurgeIntervalMs: 50 });
    let closed = false;
    try {
      const idempotency = g.gateway.deps.idempotency;
      const original = idempotency.startPurging.bind(idempotency);
      let stopped = 0;
      vi.spyOn(idempotency, "startPurging").mockImplementation((...args) => {
        const stop = original(...args);
        return async () => {
          stopped++;
          await stop();
        };
      });
      await g.gateway.start();
      expect(idempotency.startPurging).toHaveBeenCalledTimes(1);
      const docs: Collection<IdempotencyDoc> = await g.gateway.deps.store.collection<IdempotencyDoc>({ name: "idempotency_keys" });
      const old = await idempotency.claim("alice", "route", "old", { a: 1 }, new Date(Date.now() - 25 * 60 * 60 * 1000));
      const fresh = await idempotency.claim("alice", "route", "fresh", { a: 1 });
      if (old.kind !== "new" || fresh.kind !== "new") throw new Error("expected new claims");
      expect(await docs.get(old.id)).not.toBeNull();
      await vi.waitFor(async () => expect(await docs.get(old.id)).toBeNull(), { timeout: 10_000, interval: 20 });
      expect(await docs.get(fresh.id)).not.toBeNull();
      closed = true;
      await g.close();
      expect(stopped).toBe(1);
    } finally {
      if (!closed) await g.close();
    }
  });
});
