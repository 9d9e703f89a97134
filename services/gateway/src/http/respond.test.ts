import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALICE_KEY, startTestGateway, type TestGateway } from "../testing/harness.ts";

const BOOK = { file: "book.txt", name: "Headers", source_language: "English", target_language: "French" };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A real HTTP request (node:http, so header fields may be repeated), as clients send them. */
function send(port: number, method: string, path: string, headers: Record<string, string | string[]>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("responses over HTTP", () => {
  let t: TestGateway;
  let port: number;
  let id: string;

  beforeAll(async () => {
    t = await startTestGateway({ PORT: "0", HOST: "127.0.0.1", RATE_LIMIT_PER_MINUTE: "6000", RATE_LIMIT_BURST: "1000" });
    port = await t.gateway.start();
    const created = await send(port, "POST", "/v1/audio_books/", { "API-KEY": ALICE_KEY, "Content-Type": "application/json" }, JSON.stringify(BOOK));
    id = (JSON.parse(created.body) as { id: string }).id;
  });
  afterAll(async () => {
    await t.close();
  });

  it("answers a record read in one JSON body with its length, the request id and the rate limit fields", async () => {
    const res = await send(port, "GET", `/v1/audio_books/${id}`, { "API-KEY": ALICE_KEY });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json");
    expect(res.headers["transfer-encoding"]).toBeUndefined();
    expect(Number(res.headers["content-length"])).toBe(Buffer.byteLength(res.body));
    expect(JSON.parse(res.body)).toMatchObject({ id, name: "Headers", task_status: "queued" });
    expect(res.headers["x-request-id"]).toMatch(UUID);
    expect(res.headers["ratelimit-policy"]).toBe('"per-key";q=1000;w=10');
    expect(res.headers.ratelimit).toMatch(/^"per-key";r=\d+;t=\d+$/);
  });

  it("echoes a well-formed X-Request-Id and replaces one that is not", async () => {
    const kept = await send(port, "GET", `/v1/audio_books/${id}`, { "API-KEY": ALICE_KEY, "X-Request-Id": "trace-42_a=b" });
    expect(kept.headers["x-request-id"]).toBe("trace-42_a=b");
    const replaced = await send(port, "GET", `/v1/audio_books/${id}`, { "API-KEY": ALICE_KEY, "X-Request-Id": "no spaces; please" });
    expect(replaced.headers["x-request-id"]).toMatch(UUID);
  });

  it("reads a credential sent twice as one list of both values, which is no key (401)", async () => {
    const res = await send(port, "GET", `/v1/audio_books/${id}`, { "API-KEY": [ALICE_KEY, ALICE_KEY] });
    expect(res.status).toBe(401);
    expect(res.headers["x-request-id"]).toMatch(UUID);
    expect(JSON.parse(res.body)).toEqual({ detail: "Invalid API key" });
    const bearer = await send(port, "GET", `/v1/audio_books/${id}`, { Authorization: `Bearer ${ALICE_KEY}` });
    expect(bearer.status).toBe(200);
  });

  it("gives a created record's 201, and its replay, the request id and rate limit fields beside Location", async () => {
    const headers = { "API-KEY": ALICE_KEY, "Content-Type": "application/json", "Idempotency-Key": "respond-test-1" };
    const first = await send(port, "POST", "/v1/audio_books/", headers, JSON.stringify(BOOK));
    expect(first.status).toBe(201);
    const created = JSON.parse(first.body) as { id: string };
    expect(first.headers.location).toBe(`/v1/audio_books/${created.id}`);
    expect(first.headers["x-request-id"]).toMatch(UUID);
    expect(first.headers.ratelimit).toMatch(/^"per-key";r=\d+;t=\d+$/);
    expect(first.headers["idempotent-replayed"]).toBeUndefined();
    const replay = await send(port, "POST", "/v1/audio_books/", headers, JSON.stringify(BOOK));
    expect(replay.status).toBe(201);
    expect(replay.body).toBe(first.body);
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(replay.headers["x-request-id"]).toMatch(UUID);
    expect(replay.headers["x-request-id"]).not.toBe(first.headers["x-request-id"]);
    expect(replay.headers["ratelimit-policy"]).toBe('"per-key";q=1000;w=10');
  });

  it("gives errors, a list's Link and responses Hono builds itself (redirect, OpenAPI, HEAD) the same fields", async () => {
    const missing = await send(port, "GET", "/v1/audio_books/01890a5d-ac96-774b-bcce-b302099a8057", { "API-KEY": ALICE_KEY });
    expect(missing.status).toBe(404);
    expect(missing.headers["x-request-id"]).toMatch(UUID);
    expect(missing.headers.ratelimit).toMatch(/^"per-key";/);

    const invalid = await send(port, "GET", "/v1/audio_books/not-a-uuid", { "API-KEY": ALICE_KEY });
    expect(invalid.status).toBe(422);
    expect(invalid.headers["x-request-id"]).toMatch(UUID);

    const page = await send(port, "GET", "/v1/audio_books/?limit=1", { "API-KEY": ALICE_KEY });
    expect(page.status).toBe(200);
    expect(page.headers.link).toMatch(/^<http:\/\/api\.test\/v1\/audio_books\/\?limit=1&cursor=[^>]+>; rel="next"$/);
    expect(page.headers["x-request-id"]).toMatch(UUID);

    const redirect = await send(port, "GET", "/v1/audio_books?limit=1", { "API-KEY": ALICE_KEY });
    expect(redirect.status).toBe(307);
    expect(redirect.headers.location).toBe("/v1/audio_books/?limit=1");
    expect(redirect.headers["x-request-id"]).toMatch(UUID);

    const doc = await send(port, "GET", "/openapi.json", {});
    expect(doc.status).toBe(200);
    expect(doc.headers["x-request-id"]).toMatch(UUID);
    expect(JSON.parse(doc.body)).toMatchObject({ openapi: "3.1.0" });

    const head = await send(port, "HEAD", `/v1/audio_books/${id}`, { "API-KEY": ALICE_KEY });
    expect(head.status).toBe(200);
    expect(head.body).toBe("");
    expect(head.headers["x-request-id"]).toMatch(UUID);
    expect(head.headers["content-type"]).toBe("application/json");
  });
});
