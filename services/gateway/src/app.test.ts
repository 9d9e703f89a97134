import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SignJWT } from "jose";
import { KEY_CACHE_TTL_MS } from "./auth/authenticator.ts";
import { ALICE_KEY, BASE, BOB_KEY, JWT_SECRET, startTestGateway, type TestGateway } from "./testing/harness.ts";

const LANGS =
  "'French', 'English', 'Amharic', 'Swahili', 'Chinese', 'Japanese', 'Korean', 'German', 'Russian', 'Portuguese', 'Spanish', 'Italian', 'Arabic', 'Dutch', 'Hindi' or 'Urdu'";

const book = (over: Record<string, unknown> = {}) => ({
  file: "https://example.com/book.txt",
  name: "The Little Prince",
  source_language: "English",
  target_language: "Spanish",
  ...over,
});

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(async () => {
  await t.close();
});

async function json(res: Response): Promise<any> {
  return res.json();
}

describe("audio books", () => {
  it("creates a record that starts queued, with Location", async () => {
    const res = await t.request("POST", "/v1/audio_books/", { body: book() });
    expect(res.status).toBe(201);
    const body = await json(res);
    expect(body).toMatchObject({
      file: "https://example.com/book.txt",
      name: "The Little Prince",
      source_language: "English",
      target_language: "Spanish",
      audio_book_cover: null,
      localized_file: null,
      task_status: "queued",
      task_progress: 0,
      task_error: null,
    });
    expect(body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.date_created).toBe(body.date_updated);
    expect(res.headers.get("location")).toBe(`/v1/audio_books/${body.id}`);
    const again = await json(await t.request("GET", `/v1/audio_books/${body.id}`));
    expect(again).toEqual(body);
  });

  it("redirects the path without a trailing slash like FastAPI (307)", async () => {
    const res = await t.request("GET", "/v1/audio_books?limit=5");
    expect(res.status).toBe(307);
    expect(res.headers.get("location")).toBe("/v1/audio_books/?limit=5");
  });

  it("answers a trailing slash more or less than a route's path with a 307 there, as FastAPI does", async () => {
    const id = "00000000-0000-4000-8000-000000000000";
    const cases: Array<[string, string, string]> = [
      ["POST", "/v1/audio_books", "/v1/audio_books/"],
      ["GET", "/v1/voices/streams/?limit=5", "/v1/voices/streams?limit=5"],
      ["POST", "/v1/voices/streams/", "/v1/voices/streams"],
      ["GET", "/v1/videos/subtitle/", "/v1/videos/subtitle"],
      ["GET", `/v1/audio_books/${id}/`, `/v1/audio_books/${id}`],
      ["GET", "/v1/voices/streams//", "/v1/voices/streams"],
      // the id as the request spelled it: the Location field stays ASCII
      ["GET", "/v1/audio_books/%E2%9C%93/", "/v1/audio_books/%E2%9C%93"],
    ];
    for (const [method, path, location] of cases) {
      const res = await t.request(method, path, method === "POST" ? { body: {} } : {});
      expect(res.status, `${method} ${path}`).toBe(307);
      expect(res.headers.get("location"), `${method} ${path}`).toBe(location);
    }
    // what no route's path becomes stays a 404, and the redirect is still behind the credential check
    for (const path of ["/v1/nothing-here/", "//evil.example/", "/v1/audio_books//x/"]) {
      expect((await t.request("GET", path)).status, path).toBe(404);
    }
    expect((await t.request("GET", "/v1/voices/streams/", { key: null })).status).toBe(401);
  });

  it("ignores unknown fields", async () => {
    const res = await t.request("POST", "/v1/audio_books/", { body: book({ colour: "blue" }) });
    expect(res.status).toBe(201);
    expect(await json(res)).not.toHaveProperty("colour");
  });

  it("updates name and cover, stamping date_updated with the time of the change; {} changes nothing", async () => {
    // A fake clock: the creation and the update happen at times chosen here, 90 s apart.
    let clock = Date.parse("2031-05-06T07:08:09.000Z");
    t.gateway.deps.now = () => new Date(clock);
    let created: any;
    let updated: any;
    try {
      created = await json(await t.request("POST", "/v1/audio_books/", { body: book() }));
      expect(created.date_created).toBe("2031-05-06T07:08:09.000Z");
      clock += 90_000;
      const res = await t.request("PATCH", `/v1/audio_books/${created.id}`, {
        body: { name: "Le Petit Prince", audio_book_cover: "https://example.com/cover.png" },
      });
      expect(res.status).toBe(200);
      updated = await json(res);
    } finally {
      delete t.gateway.deps.now;
    }
    expect(updated.name).toBe("Le Petit Prince");
    expect(updated.audio_book_cover).toBe("https://example.com/cover.png");
    expect(updated.date_updated).toBe("2031-05-06T07:09:39.000Z");
    expect(updated.date_created).toBe(created.date_created);
    const same = await json(await t.request("PATCH", `/v1/audio_books/${created.id}`, { body: {} }));
    expect(same).toEqual(updated);
    const cleared = await json(await t.request("PATCH", `/v1/audio_books/${created.id}`, { body: { audio_book_cover: null } }));
    expect(cleared.audio_book_cover).toBeNull();
  });

  it("refuses a cover that is not an http(s) URL", async () => {
    const created = await json(await t.request("POST", "/v1/audio_books/", { body: book() }));
    const res = await t.request("PATCH", `/v1/audio_books/${created.id}`, { body: { audio_book_cover: "ftp://x/y.png" } });
    expect(res.status).toBe(422);
    const body = await json(res);
    expect(body.detail[0]).toMatchObject({ type: "url_scheme", loc: ["body", "audio_book_cover"], msg: "URL scheme should be 'http' or 'https'" });
  });
});

describe("validation errors in the FastAPI / Pydantic v2 shape", () => {
  it("missing field", async () => {
    const body = { file: "https://example.com/a.txt", source_language: "English", target_language: "French" };
    const res = await t.request("POST", "/v1/audio_books/", { body });
    expect(res.status).toBe(422);
    expect(await json(res)).toEqual({
      detail: [{ type: "missing", loc: ["body", "name"], msg: "Field required", input: body }],
    });
  });

  it("every missing field, in field order", async () => {
    const res = await t.request("POST", "/v1/audio_books/", { body: {} });
    const body = await json(res);
    expect(body.detail.map((d: { loc: string[] }) => d.loc[1])).toEqual(["file", "name", "source_language", "target_language"]);
    expect(body.detail.every((d: { type: string }) => d.type === "missing")).toBe(true);
  });

  it("enum", async () => {
    for (const value of ["Klingon", "Hindu", "english"]) {
      const res = await t.request("POST", "/v1/audio_books/", { body: book({ target_language: value }) });
      expect(res.status).toBe(422);
      expect(await json(res)).toEqual({
        detail: [
          {
            type: "enum",
            loc: ["body", "target_language"],
            msg: `Input should be ${LANGS}`,
            input: value,
            ctx: { expected: LANGS },
          },
        ],
      });
    }
  });

  it("string_type", async () => {
    const res = await t.request("POST", "/v1/audio_books/", { body: book({ name: 42 }) });
    expect(await json(res)).toEqual({
      detail: [{ type: "string_type", loc: ["body", "name"], msg: "Input should be a valid string", input: 42 }],
    });
    const nul = await json(await t.request("POST", "/v1/audio_books/", { body: book({ file: null }) }));
    expect(nul.detail).toEqual([{ type: "string_type", loc: ["body", "file"], msg: "Input should be a valid string", input: null }]);
  });

  it("bool_parsing, and lax booleans accepted", async () => {
    const res = await t.request("POST", "/v1/audio_books/", { body: book({ use_voice_clone: "maybe" }) });
    expect(await json(res)).toEqual({
      detail: [
        {
          type: "bool_parsing",
          loc: ["body", "use_voice_clone"],
          msg: "Input should be a valid boolean, unable to interpret input",
          input: "maybe",
        },
      ],
    });
    const ok = await t.request("POST", "/v1/audio_books/", { body: book({ use_voice_clone: "false" }) });
    expect(ok.status).toBe(201);
  });

  it("uuid_parsing on path parameters", async () => {
    const res = await t.request("GET", "/v1/audio_books/not-a-uuid");
    expect(res.status).toBe(422);
    const body = await json(res);
    expect(body.detail).toHaveLength(1);
    expect(body.detail[0]).toMatchObject({ type: "uuid_parsing", loc: ["path", "audio_book_id"], input: "not-a-uuid" });
    expect(body.detail[0].msg).toMatch(/^Input should be a valid UUID, /);
    const vs = await json(await t.request("GET", "/v1/voices/streams/123"));
    expect(vs.detail[0]).toMatchObject({ type: "uuid_parsing", loc: ["path", "voice_id"], input: "123" });
  });

  it("json_invalid with Python's message and position", async () => {
    const res = await t.request("POST", "/v1/audio_books/", { raw: '{"name": }', headers: { "Content-Type": "application/json" } });
    expect(res.status).toBe(422);
    expect(await json(res)).toEqual({
      detail: [{ type: "json_invalid", loc: ["body", 9], msg: "JSON decode error", input: {}, ctx: { error: "Expecting value" } }],
    });
  });

  it("model_attributes_type for a non-object body", async () => {
    for (const raw of ["[]", '"text"', "3"]) {
      const res = await t.request("POST", "/v1/audio_books/", { raw, headers: { "Content-Type": "application/json" } });
      expect(res.status).toBe(422);
      expect(await json(res)).toEqual({
        detail: [
          {
            type: "model_attributes_type",
            loc: ["body"],
            msg: "Input should be a valid dictionary or object to extract fields from",
            input: JSON.parse(raw),
          },
        ],
      });
    }
  });

  it("missing body", async () => {
    const res = await t.request("POST", "/v1/audio_books/", { raw: "", headers: { "Content-Type": "application/json" } });
    expect(res.status).toBe(422);
    expect(await json(res)).toEqual({ detail: [{ type: "missing", loc: ["body"], msg: "Field required", input: null }] });
  });

  it("query parameters", async () => {
    const zero = await json(await t.request("GET", "/v1/audio_books/?limit=0"));
    expect(zero.detail).toEqual([
      { type: "greater_than_equal", loc: ["query", "limit"], msg: "Input should be greater than or equal to 1", input: "0", ctx: { ge: 1 } },
    ]);
    const big = await json(await t.request("GET", "/v1/audio_books/?limit=500"));
    expect(big.detail).toEqual([
      { type: "less_than_equal", loc: ["query", "limit"], msg: "Input should be less than or equal to 200", input: "500", ctx: { le: 200 } },
    ]);
    const text = await json(await t.request("GET", "/v1/audio_books/?limit=ten"));
    expect(text.detail).toEqual([
      { type: "int_parsing", loc: ["query", "limit"], msg: "Input should be a valid integer, unable to parse string as an integer", input: "ten" },
    ]);
    const status = await json(await t.request("GET", "/v1/audio_books/?task_status=done"));
    expect(status.detail[0]).toMatchObject({ type: "enum", loc: ["query", "task_status"], input: "done" });
    const cursor = await t.request("GET", "/v1/audio_books/?cursor=garbage");
    expect(cursor.status).toBe(422);
    expect((await json(cursor)).detail[0]).toMatchObject({ type: "value_error", loc: ["query", "cursor"], input: "garbage" });
  });

  it("unsafe or unsupported file references", async () => {
    for (const file of ["../../etc/passwd", "ftp://example.com/a.txt", "file:///etc/passwd", "books/\u0000.txt", "s3://bucket/key.txt", "http://127.0.0.1/a.txt"]) {
      const res = await t.request("POST", "/v1/audio_books/", { body: book({ file }) });
      expect(res.status).toBe(422);
      const body = await json(res);
      expect(body.detail[0]).toMatchObject({ type: "value_error", loc: ["body", "file"], input: file });
      expect(body.detail[0].msg).toMatch(/^Value error, /);
    }
    for (const file of ["books/a.txt", "http://example.com/a.txt"]) {
      expect((await t.request("POST", "/v1/audio_books/", { body: book({ file }) })).status).toBe(201);
    }
  });

  it("never a 500 for odd input", async () => {
    const odd = [book({ name: "x".repeat(501) }), book({ name: "" }), book({ preset_voice_name: 5 }), book({ file: ["a"] })];
    for (const body of odd) {
      expect((await t.request("POST", "/v1/audio_books/", { body })).status).toBe(422);
    }
  });
});

describe("authentication", () => {
  it("401 without credentials, with WWW-Authenticate", async () => {
    const res = await t.request("GET", "/v1/audio_books/", { key: null });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await json(res)).toEqual({ detail: "Not authenticated" });
  });

  it("401 for a wrong key, before validation", async () => {
    const res = await t.request("POST", "/v1/audio_books/", { key: "wrong-key-123", body: {} });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect(await json(res)).toEqual({ detail: "Invalid API key" });
  });

  it("accepts the API key as a bearer token", async () => {
    const res = await t.request("GET", "/v1/audio_books/", { key: null, headers: { Authorization: `Bearer ${BOB_KEY}` } });
    expect(res.status).toBe(200);
  });

  it("accepts an HS256 access token whose sub is the account", async () => {
    const token = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("alice").setExpirationTime("5m").sign(new TextEncoder().encode(JWT_SECRET));
    const created = await json(await t.request("POST", "/v1/audio_books/", { key: null, headers: { Authorization: `Bearer ${token}` }, body: book() }));
    const viaKey = await t.request("GET", `/v1/audio_books/${created.id}`, { key: ALICE_KEY });
    expect(viaKey.status).toBe(200);
  });

  it("refuses expired, not-yet-valid, wrongly signed and subject-less tokens", async () => {
    const secret = new TextEncoder().encode(JWT_SECRET);
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[string, RegExp]> = [
      [await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("alice").setExpirationTime(now - 60).sign(secret), /expired/],
      [await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("alice").setNotBefore(now + 3600).setExpirationTime(now + 7200).sign(secret), /not valid yet/],
      [await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("alice").sign(new TextEncoder().encode("another-secret-another-secret-another!")), /signature/],
      [await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setExpirationTime("5m").sign(secret), /sub/],
    ];
    for (const [token, detail] of cases) {
      const res = await t.request("GET", "/v1/audio_books/", { key: null, headers: { Authorization: `Bearer ${token}` } });
      expect(res.status).toBe(401);
      expect((await json(res)).detail).toMatch(detail);
    }
  });

  it("a revoked key stops working", async () => {
    const keys = await import("./auth/api-keys.ts");
    const repo = await keys.ApiKeyRepository.open(t.gateway.deps.store);
    const { key, view } = await repo.create("carol", "test");
    expect((await t.request("GET", "/v1/audio_books/", { key })).status).toBe(200);
    await repo.revoke(view.key_id);
    // verified keys are cached for KEY_CACHE_TTL_MS: revocation takes effect within that time
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + KEY_CACHE_TTL_MS + 1);
      const res = await t.request("GET", "/v1/audio_books/", { key });
      expect(res.status).toBe(401);
      expect((await json(res)).detail).toBe("API key has been revoked");
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("tenant isolation", () => {
  it("another account's record is a 404, and lists show only the caller's", async () => {
    const mine = await json(await t.request("POST", "/v1/audio_books/", { body: book({ name: "alice only" }), key: ALICE_KEY }));
    const res = await t.request("GET", `/v1/audio_books/${mine.id}`, { key: BOB_KEY });
    expect(res.status).toBe(404);
    expect(await json(res)).toEqual({ detail: "Audio book not found" });
    expect((await t.request("PATCH", `/v1/audio_books/${mine.id}`, { key: BOB_KEY, body: { name: "stolen" } })).status).toBe(404);
    const bobs = await json(await t.request("GET", "/v1/audio_books/?limit=200", { key: BOB_KEY }));
    expect(bobs.find((b: { id: string }) => b.id === mine.id)).toBeUndefined();
    const unknown = await t.request("GET", "/v1/audio_books/00000000-0000-4000-8000-000000000000");
    expect(unknown.status).toBe(404);
  });
});

describe("pagination", () => {
  it("pages newest first through Link headers, filtered by status", async () => {
    const dave = await startTestGateway({ VOICELOC_API_KEYS: "dave:dave-key-0003" });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 5; i += 1) {
        const created = await json(await dave.request("POST", "/v1/voices/streams", { key: "dave-key-0003", body: { file: `a${i}.wav`, source_language: "English", target_language: "French" } }));
        ids.push(created.id);
      }
      const seen: string[] = [];
      let url: string | null = "/v1/voices/streams?limit=2";
      let pages = 0;
      while (url) {
        const res = await dave.request("GET", url, { key: "dave-key-0003" });
        expect(res.status).toBe(200);
        const items = await json(res);
        expect(Array.isArray(items)).toBe(true);
        seen.push(...items.map((x: { id: string }) => x.id));
        pages += 1;
        const link = res.headers.get("link");
        url = link ? (/^<([^>]+)>; rel="next"$/.exec(link)?.[1] ?? null) : null;
        if (url) url = url.replace(BASE, "");
      }
      expect(pages).toBe(3);
      expect(seen).toEqual([...ids].reverse());
      const queued = await json(await dave.request("GET", "/v1/voices/streams?task_status=queued", { key: "dave-key-0003" }));
      expect(queued).toHaveLength(5);
      const done = await json(await dave.request("GET", "/v1/voices/streams?task_status=completed", { key: "dave-key-0003" }));
      expect(done).toEqual([]);
    } finally {
      await dave.close();
    }
  });
});

describe("idempotency", () => {
  it("replays the first response for the same key and body; 409 for another body", async () => {
    const headers = { "Idempotency-Key": "create-book-1" };
    const first = await t.request("POST", "/v1/audio_books/", { body: book(), headers });
    expect(first.status).toBe(201);
    const firstBody = await json(first);
    const second = await t.request("POST", "/v1/audio_books/", { body: book(), headers });
    expect(second.status).toBe(201);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect(await json(second)).toEqual(firstBody);
    const other = await t.request("POST", "/v1/audio_books/", { body: book({ name: "Other" }), headers });
    expect(other.status).toBe(409);
    expect((await json(other)).detail).toMatch(/different request body/);
    // the same key belongs to each account separately
    expect((await t.request("POST", "/v1/audio_books/", { body: book({ name: "Other" }), headers, key: BOB_KEY })).status).toBe(201);
  });

  it("a request that failed validation does not burn the key", async () => {
    const headers = { "Idempotency-Key": "fix-and-retry" };
    expect((await t.request("POST", "/v1/voices/streams", { body: { file: "a.wav" }, headers })).status).toBe(422);
    expect((await t.request("POST", "/v1/voices/streams", { body: { file: "a.wav", source_language: "English", target_language: "English" }, headers })).status).toBe(201);
  });

  it("refuses an over-long key", async () => {
    const res = await t.request("POST", "/v1/audio_books/", { body: book(), headers: { "Idempotency-Key": "k".repeat(300) } });
    expect(res.status).toBe(422);
    expect((await json(res)).detail[0]).toMatchObject({ type: "string_too_long", loc: ["header", "idempotency-key"] });
  });
});

describe("HTTP edges", () => {
  it("413 for a body over the limit", async () => {
    const res = await t.request("POST", "/v1/audio_books/", { body: book({ name: "x".repeat(2 * 1024 * 1024) }) });
    expect(res.status).toBe(413);
    expect((await json(res)).detail).toMatch(/larger than the limit/);
  });

  it("415 for a body that is not JSON", async () => {
    const res = await t.request("POST", "/v1/audio_books/", { raw: "name=x", headers: { "Content-Type": "application/x-www-form-urlencoded" } });
    expect(res.status).toBe(415);
    expect((await json(res)).detail).toMatch(/application\/json/);
  });

  it("405 with Allow for a known path and another method", async () => {
    const res = await t.request("DELETE", "/v1/audio_books/00000000-0000-4000-8000-000000000000");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD, PATCH");
    const list = await t.request("PUT", "/v1/audio_books/");
    expect(list.status).toBe(405);
    expect(list.headers.get("allow")).toBe("GET, HEAD, POST");
    const streams = await t.request("DELETE", "/v1/voices/streams");
    expect(streams.status).toBe(405);
    expect(streams.headers.get("allow")).toBe("GET, HEAD, POST");
  });

  it("404 for an unknown path", async () => {
    expect((await t.request("GET", "/v1/nothing-here")).status).toBe(404);
  });

  it("carries a request id", async () => {
    const res = await t.request("GET", "/v1/audio_books/");
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("voice streams", () => {
  it("create, read, list", async () => {
    const res = await t.request("POST", "/v1/voices/streams", { body: { file: "talk.wav", source_language: "English", target_language: "Spanish" } });
    expect(res.status).toBe(201);
    const created = await json(res);
    expect(created).toMatchObject({ file: "talk.wav", task_status: "queued", task_progress: 0, localized_file: null });
    expect(await json(await t.request("GET", `/v1/voices/streams/${created.id}`))).toEqual(created);
    const list = await json(await t.request("GET", "/v1/voices/streams"));
    expect(list[0].id).toBe(created.id);
    expect((await t.request("GET", `/v1/voices/streams/${created.id}`, { key: BOB_KEY })).status).toBe(404);
  });
});

describe("subtitles", () => {
  it("answers 202 with a job, defaults burn_in and srt", async () => {
    const res = await t.request("POST", "/v1/videos/subtitle", { body: { file: "https://example.com/clip.mp4", source_language: "English", target_language: "French" } });
    expect(res.status).toBe(202);
    const job = await json(res);
    expect(job).toMatchObject({ mode: "burn_in", subtitle_format: "srt", task_status: "queued", subtitle_file: null, localized_file: null });
    expect(res.headers.get("location")).toBe(`/v1/videos/subtitle/${job.id}`);
    expect(await json(await t.request("GET", `/v1/videos/subtitle/${job.id}`))).toEqual(job);
    const side = await json(await t.request("POST", "/v1/videos/subtitle", { body: { file: "clip.mp4", source_language: "English", target_language: "French", mode: "side_file", subtitle_format: "vtt" } }));
    expect(side).toMatchObject({ mode: "side_file", subtitle_format: "vtt" });
    const bad = await json(await t.request("POST", "/v1/videos/subtitle", { body: { file: "clip.mp4", source_language: "English", target_language: "French", mode: "karaoke" } }));
    expect(bad.detail[0]).toEqual({ type: "enum", loc: ["body", "mode"], msg: "Input should be 'burn_in' or 'side_file'", input: "karaoke", ctx: { expected: "'burn_in' or 'side_file'" } });
    const list = await json(await t.request("GET", "/v1/videos/subtitle"));
    expect(list.map((j: { id: string }) => j.id)).toContain(job.id);
    expect((await t.request("POST", "/v1/videos/subtitle", { key: null, body: { file: "clip.mp4", source_language: "English", target_language: "French" } })).status).toBe(401);
  });
});

describe("speech synthesis", () => {
  it("validates text, language (names and ISO codes), voice and format", async () => {
    const empty = await json(await t.request("POST", "/v1/speech/synthesize", { body: { text: "", language: "English" } }));
    expect(empty.detail).toEqual([
      { type: "string_too_short", loc: ["body", "text"], msg: "String should have at least 1 character", input: "", ctx: { min_length: 1 } },
    ]);
    const long = await json(await t.request("POST", "/v1/speech/synthesize", { body: { text: "a".repeat(5001), language: "en" } }));
    expect(long.detail[0]).toMatchObject({ type: "string_too_long", loc: ["body", "text"], msg: "String should have at most 5000 characters", ctx: { max_length: 5000 } });
    const lang = await json(await t.request("POST", "/v1/speech/synthesize", { body: { text: "hi", language: "xx" } }));
    expect(lang.detail[0]).toMatchObject({ type: "enum", loc: ["body", "language"], input: "xx" });
    const format = await json(await t.request("POST", "/v1/speech/synthesize", { body: { text: "hi", language: "English", format: "aac" } }));
    expect(format.detail[0]).toMatchObject({ type: "enum", loc: ["body", "format"], msg: "Input should be 'mp3', 'wav', 'ogg' or 'flac'" });
  });

  it("answers 503 with a clear detail while no synthesis service runs", async () => {
    for (const language of ["fr", "French"]) {
      const res = await t.request("POST", "/v1/speech/synthesize", { key: null, headers: { Authorization: `Bearer ${ALICE_KEY}` }, body: { text: "Bonjour", language } });
      expect(res.status).toBe(503);
      expect((await json(res)).detail).toMatch(/not available/);
    }
  });
});

describe("service endpoints", () => {
  it("healthz and readyz need no credentials", async () => {
    expect(await json(await t.request("GET", "/healthz", { key: null }))).toEqual({ status: "ok" });
    const ready = await t.request("GET", "/readyz", { key: null });
    expect(ready.status).toBe(200);
    expect(await json(ready)).toEqual({ status: "ready", checks: { store: "ok" } });
  });

  it("serves a docs page", async () => {
    const res = await t.request("GET", "/docs", { key: null });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("/openapi.json");
  });
});

describe("records survive a restart", () => {
  it("reads a record written before the gateway stopped", async () => {
    const first = await startTestGateway();
    const created = await json(await first.request("POST", "/v1/audio_books/", { body: book({ name: "Persistent" }) }));
    await first.gateway.stop();
    const second = await startTestGateway({}, {}, first.dataDir);
    try {
      const res = await second.request("GET", `/v1/audio_books/${created.id}`);
      expect(res.status).toBe(200);
      expect((await json(res)).name).toBe("Persistent");
    } finally {
      await second.close();
      await first.close().catch(() => undefined);
    }
  });
});
