/**
 * The fast path for record reads against the app it stands in front of: a read it serves must be
 * the app's answer (body, header fields and their order, log line, metrics), and every read it
 * cannot serve exactly must reach the app untouched.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { createLogger } from "@voiceloc/log";
import { scrape } from "@voiceloc/telemetry";
import { tempDir } from "@voiceloc/testing";
import { EXTERNAL_CHANGES_MS, openEmbeddedStore } from "@voiceloc/store";
import { createGateway, gatewayDataDir, type GatewayService } from "../gateway.ts";
import { ALICE_KEY, BOB_KEY, jsonLogSink, wireRequest, type WireAnswer } from "../testing/harness.ts";

type Answer = WireAnswer;
const get = (f: { url: string }, path: string, headers: Record<string, string> = {}, method = "GET") => wireRequest(f.url, path, headers, method);
import { withFastRecordReads } from "./fast-read.ts";
import { recordReaders } from "./read.ts";


interface Fixture {
  gateway: GatewayService;
  /** The gateway's own data directory (its store). */
  storeDir: string;
  url: string;
  /** Paths the fast path handed to the app, in order. */
  handedOn: string[];
  lines: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

let fixture: Fixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

async function start(env: Record<string, string> = {}, options: { withoutStoredText?: boolean } = {}): Promise<Fixture> {
  const dir = await tempDir("voiceloc-fast-");
  const lines: Array<Record<string, unknown>> = [];
  const { sink } = jsonLogSink(lines);
  const config = loadConfig({
    DATA_DIR: dir.path,
    VOICELOC_API_KEYS: `alice:${ALICE_KEY},bob:${BOB_KEY}`,
    PUBLIC_BASE_URL: "http://api.test",
    RATE_LIMIT_PER_MINUTE: "off",
    ...env,
  });
  const gateway = await createGateway({ config, logger: createLogger({ name: "gateway", destination: sink }) });
  const handedOn: string[] = [];
  const app = getRequestListener(gateway.app.fetch);
  // MongoDB keeps no JSON text: the same repositories without it
  const withoutText = <T extends object>(repo: T): T => Object.assign(Object.create(repo) as T, { getTextSync: () => undefined, listTextSync: () => undefined });
  const deps = options.withoutStoredText
    ? {
        ...gateway.deps,
        reads: recordReaders(
          { audiobook: withoutText(gateway.deps.records.audiobook), "voice-stream": withoutText(gateway.deps.records["voice-stream"]), subtitle: withoutText(gateway.deps.records.subtitle) },
          gateway.deps,
        ),
      }
    : gateway.deps;
  const listener = withFastRecordReads(deps, (req: IncomingMessage, res: ServerResponse) => {
    handedOn.push(`${req.method ?? ""} ${req.url ?? ""}`);
    void app(req, res);
  });
  const server: Server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const f: Fixture = {
    gateway,
    storeDir: gatewayDataDir(config),
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    handedOn,
    lines,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await gateway.stop();
      await dir.cleanup();
    },
  };
  fixture = f;
  return f;
}


async function completedBook(f: Fixture, owner: string, name: string, created = new Date()): Promise<string> {
  const repo = f.gateway.deps.records.audiobook;
  const id = crypto.randomUUID();
  const now = created.toISOString();
  await repo.create({
    id,
    account_id: owner,
    task_status: "completed",
    task_progress: 100,
    task_error: null,
    result_key: `results/audiobook/${id}.mp3`,
    seq: 3,
    published: true,
    date_created: now,
    date_updated: now,
    file: "book.txt",
    name,
    source_language: "English",
    target_language: "Spanish",
    audio_book_cover: null,
    use_voice_clone: false,
    preset_voice_name: null,
    voice_clone_sample: null,
  });
  return id;
}

const bookPath = (id: string) => `/v1/audio_books/${id}`;

/**
 * A body with its download links' expiry and signature blanked: links are signed per second (see
 * "signs download links anew"), and two reads compared here may fall on either side of a second.
 */
const unsigned = (body: string) => body.replace(/expires=\d+&signature=[\w-]+/g, "expires=E&signature=S");

describe("fast record reads", () => {
  it("answers a read of a verified key exactly as the app does: body, header fields in order, log line, metrics", async () => {
    const f = await start({ RATE_LIMIT_PER_MINUTE: "60", RATE_LIMIT_BURST: "1000" });
    const id = await completedBook(f, "alice", "The lighthouse");
    const headers = { "API-KEY": ALICE_KEY, "X-Request-Id": "trace-1" };

    const viaApp = await get(f, bookPath(id), headers);
    expect(f.handedOn).toEqual([`GET ${bookPath(id)}`]); // the key was not verified yet
    // every later read, new rate-limit leases included, is the fast path's
    const answers: Answer[] = [];
    for (let i = 0; i < 12; i += 1) answers.push(await get(f, bookPath(id), headers));
    expect(f.handedOn).toHaveLength(1);
    const fast = answers[5] as Answer;
    const fastAgain = answers[6] as Answer;
    const fastIndex = 5;

    expect(viaApp.status).toBe(200);
    expect(fast.status).toBe(200);
    expect(unsigned(fast.body)).toBe(unsigned(viaApp.body));
    expect(JSON.parse(fast.body)).toMatchObject({ id, name: "The lighthouse", task_status: "completed", task_progress: 100 });
    expect((JSON.parse(fast.body) as { localized_file: string }).localized_file).toMatch(/^http:\/\/api\.test\/v1\/files\/results\/audiobook\/.+\?expires=\d+&signature=/);
    // the same fields in the same order; the remaining budget goes down by one a request
    expect(fast.fields.map(([name]) => name)).toEqual(viaApp.fields.map(([name]) => name));
    expect(fast.fields.map(([name]) => name)).toEqual(["X-Request-Id", "RateLimit-Policy", "RateLimit", "content-type", "Content-Length"]);
    const field = (a: Answer, name: string) => a.fields.find(([n]) => n === name)?.[1];
    expect(field(fast, "X-Request-Id")).toBe("trace-1");
    expect(field(fast, "RateLimit-Policy")).toBe(field(viaApp, "RateLimit-Policy"));
    const remaining = (a: Answer) => Number(/;r=(\d+);/.exec(field(a, "RateLimit") ?? "")?.[1]);
    // tokens spent are gone from the budget (at 60 a minute over a burst of 1000, refills are rare)
    expect(remaining(fast)).toBeLessThan(remaining(viaApp));
    expect(remaining(fastAgain)).toBeLessThan(remaining(viaApp));
    expect(field(fastAgain, "RateLimit")).toMatch(/^"per-key";r=\d+;t=\d+$/);

    // one request line per request, the fast path's the same as the app's but for time and duration
    const requestLines = f.lines.filter((l) => l.msg === "request");
    expect(requestLines).toHaveLength(13);
    const shape = (l: Record<string, unknown>) => ({ ...l, time: "t", ms: "ms" });
    const fastLine = requestLines[fastIndex + 1] as Record<string, unknown>;
    expect(shape(fastLine)).toEqual(shape(requestLines[0] as Record<string, unknown>));
    expect(typeof fastLine.ms).toBe("number");
    expect(fastLine).toMatchObject({ level: "info", service: "gateway", requestId: "trace-1", method: "GET", path: bookPath(id), status: 200, account: "alice" });

    const { body: metrics } = await scrape();
    const series = /voiceloc_http_request_duration_seconds_count\{[^}]*method="GET"[^}]*route="\/v1\/audio_books\/:audio_book_id"[^}]*status="200"[^}]*\} (\d+)/.exec(metrics);
    expect(Number(series?.[1])).toBeGreaterThanOrEqual(13);
  });

  it("reads the store on every request: progress shows at once", async () => {
    const f = await start();
    const id = await completedBook(f, "alice", "Progress");
    await f.gateway.deps.records.audiobook.updateOwned("alice", id, { task_status: "processing", task_progress: 40, result_key: null });
    await get(f, bookPath(id), { "API-KEY": ALICE_KEY });
    expect(JSON.parse((await get(f, bookPath(id), { "API-KEY": ALICE_KEY })).body)).toMatchObject({ task_status: "processing", task_progress: 40, localized_file: null });
    await f.gateway.deps.records.audiobook.updateOwned("alice", id, { task_progress: 75 });
    expect(JSON.parse((await get(f, bookPath(id), { "API-KEY": ALICE_KEY })).body)).toMatchObject({ task_progress: 75 });
    expect(f.handedOn).toHaveLength(1);
  });

  it("shows within EXTERNAL_CHANGES_MS what another connection to the store committed (the CLI, another process)", async () => {
    const f = await start();
    const id = await completedBook(f, "alice", "Elsewhere");
    expect(JSON.parse((await get(f, bookPath(id), { "API-KEY": ALICE_KEY })).body)).toMatchObject({ task_status: "completed", name: "Elsewhere" });
    const other = await openEmbeddedStore({ dir: f.storeDir });
    try {
      const books = await other.collection<{ id: string; name: string; task_status: string; task_error: string | null }>({ name: "audio_books" });
      for (const name of ["Renamed once", "Renamed twice"]) {
        await books.updateOne({ id }, { name, task_status: "failed", task_error: `${name}: stopped` });
        await new Promise((resolve) => setTimeout(resolve, EXTERNAL_CHANGES_MS + 5));
        expect(JSON.parse((await get(f, bookPath(id), { "API-KEY": ALICE_KEY })).body)).toMatchObject({ name, task_status: "failed", task_error: `${name}: stopped` });
      }
    } finally {
      await other.close();
    }
    expect(f.handedOn).toHaveLength(1); // the first read, before the key was verified
  });

  it("reads and presents the document on every request where the store keeps no text (MongoDB)", async () => {
    const f = await start({}, { withoutStoredText: true });
    const id = await completedBook(f, "alice", "No text");
    const viaApp = await get(f, bookPath(id), { "API-KEY": ALICE_KEY });
    const fast = await get(f, bookPath(id), { "API-KEY": ALICE_KEY });
    expect(unsigned(fast.body)).toBe(unsigned(viaApp.body));
    await f.gateway.deps.records.audiobook.updateOwned("alice", id, { task_progress: 99, task_status: "processing" });
    expect(JSON.parse((await get(f, bookPath(id), { "API-KEY": ALICE_KEY })).body)).toMatchObject({ task_progress: 99, task_status: "processing" });
    expect((await get(f, bookPath(id), { "API-KEY": BOB_KEY })).status).toBe(404);
    expect(f.handedOn).toEqual([`GET ${bookPath(id)}`, `GET ${bookPath(id)}`]); // the first read, and bob's
  });

  it("a stored record the presenter cannot read is the app's 500, not an unhandled rejection that ends the process (MongoDB)", async () => {
    const f = await start({}, { withoutStoredText: true });
    const id = await completedBook(f, "alice", "Corrupt");
    const good = await completedBook(f, "alice", "Good");
    expect((await get(f, bookPath(id), { "API-KEY": ALICE_KEY })).status).toBe(200); // verifies the key
    // a result key no download link can be signed for, as a corrupt store could give: the presenter throws
    await f.gateway.deps.records.audiobook.updateOwned("alice", id, { result_key: "../outside" });
    f.handedOn.length = 0;
    const corrupt = await get(f, bookPath(id), { "API-KEY": ALICE_KEY });
    expect(corrupt.status).toBe(500);
    expect(JSON.parse(corrupt.body)).toEqual({ detail: "Internal Server Error" });
    expect(f.handedOn).toEqual([`GET ${bookPath(id)}`]); // the fast path handed it to the app, which answered
    // the process goes on serving
    expect((await get(f, bookPath(good), { "API-KEY": ALICE_KEY })).status).toBe(200);
  });

  it("signs download links anew as time passes, as the app does", async () => {
    const f = await start();
    const id = await completedBook(f, "alice", "Links");
    const expires = async () => Number(/expires=(\d+)/.exec((JSON.parse((await get(f, bookPath(id), { "API-KEY": ALICE_KEY })).body) as { localized_file: string }).localized_file)?.[1]);
    await expires(); // verifies the key
    const first = await expires();
    // the next whole second (links are signed per second)
    await new Promise((resolve) => setTimeout(resolve, 1_000 - (Date.now() % 1_000) + 20));
    expect(await expires()).toBeGreaterThan(first);
    expect(f.handedOn).toHaveLength(1);
  });

  it("hands to the app whatever it cannot answer exactly, and the app's answers stand", async () => {
    const f = await start();
    const id = await completedBook(f, "alice", "Alice's");
    const alice = { "API-KEY": ALICE_KEY };
    expect((await get(f, bookPath(id), alice)).status).toBe(200); // verifies the key
    f.handedOn.length = 0;

    const cases: Array<[string, Record<string, string>, number, string?]> = [
      [bookPath(id), { "API-KEY": BOB_KEY }, 404], // another account's record: bob's key is verified by the app first
      [bookPath(id), { "API-KEY": BOB_KEY }, 404], // and again once it is cached: still the app's 404
      [bookPath(crypto.randomUUID()), alice, 404],
      [bookPath(id.toUpperCase()), alice, 200],
      [`${bookPath(id)}?x=1`, alice, 200],
      [bookPath(id), {}, 401],
      [bookPath(id), { "API-KEY": "not-a-key" }, 401],
      [bookPath(id), { "API-KEY": `${ALICE_KEY}` , Authorization: "Bearer x" }, 200, "fast"],
      [bookPath(id), { Authorization: `Bearer ${ALICE_KEY}` }, 200, "fast"],
      [bookPath(id), alice, 200, "HEAD"],
      [`/v1/voices/streams/${id}`, alice, 404],
      [`/v1/videos/subtitle/${id}`, alice, 404],
    ];
    for (const [path, headers, status, how] of cases) {
      const before = f.handedOn.length;
      const answer = await get(f, path, headers, how === "HEAD" ? "HEAD" : "GET");
      expect(answer.status, `${path} ${JSON.stringify(headers)}`).toBe(status);
      expect(f.handedOn.length - before, `${path} ${JSON.stringify(headers)}`).toBe(how === "fast" ? 0 : 1);
    }
  });

  it("says so on every answer to a sandbox key, and keeps sandbox records apart", async () => {
    const f = await start();
    const keys = f.gateway.deps.dashboard?.keys;
    if (!keys) throw new Error("the gateway has no key repository");
    const { key } = await keys.create("carol", "test", new Date(), "sandbox");
    const id = await completedBook(f, "sandbox:carol", "Sandboxed");
    const viaApp = await get(f, bookPath(id), { "API-KEY": key });
    const fast = await get(f, bookPath(id), { "API-KEY": key });
    expect(f.handedOn).toHaveLength(1);
    expect(fast.status).toBe(200);
    expect(unsigned(fast.body)).toBe(unsigned(viaApp.body));
    expect(fast.fields.map(([n]) => n)).toEqual(viaApp.fields.map(([n]) => n));
    expect(fast.fields).toContainEqual(["VoiceLoc-Mode", "sandbox"]);
    // carol's live records are not her sandbox's
    const live = await completedBook(f, "carol", "Live");
    expect((await get(f, bookPath(live), { "API-KEY": key })).status).toBe(404);
  });

  it("spends the rate limit once per request, whichever path answers, and leaves refusals to the app", async () => {
    const f = await start({ RATE_LIMIT_PER_MINUTE: "60", RATE_LIMIT_BURST: "30" });
    const id = await completedBook(f, "alice", "Metered");
    const statuses: number[] = [];
    for (let i = 0; i < 34; i += 1) statuses.push((await get(f, bookPath(id), { "API-KEY": ALICE_KEY })).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    expect(statuses.slice(30)).toEqual([429, 429, 429, 429]);
    const refused = await get(f, bookPath(id), { "API-KEY": ALICE_KEY });
    expect(refused.fields.map(([n]) => n)).toContain("Retry-After");
    // the first read verified the key in the app; the fast path took new leases itself; refusals are the app's
    expect(f.handedOn).toHaveLength(1 + 5);
  });

  it("answers lists exactly as the app does: pages and their Link, a status, progress at once, each caller's own", async () => {
    const f = await start({ RATE_LIMIT_PER_MINUTE: "60", RATE_LIMIT_BURST: "1000" });
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) ids.push(await completedBook(f, "alice", `Book ${i}`, new Date(Date.UTC(2026, 0, 1 + i))));
    await completedBook(f, "bob", "Bob's");
    await f.gateway.deps.records.audiobook.updateOwned("alice", ids[1] as string, { task_status: "processing", task_progress: 30, result_key: null });
    const alice = { "API-KEY": ALICE_KEY, "X-Request-Id": "list-1" };
    expect((await get(f, "/v1/audio_books/?limit=1", alice)).status).toBe(200); // verifies the key
    f.handedOn.length = 0;
    const field = (a: Answer, name: string) => a.fields.find(([n]) => n === name)?.[1];

    // `&x=1`: a field the fast path leaves to the app, which ignores it: the app's answer to the same list
    const same = async (path: string): Promise<Answer> => {
      const fast = await get(f, path, alice);
      const viaApp = await get(f, `${path}${path.includes("?") ? "&" : "?"}x=1`, alice);
      expect(fast.status, path).toBe(200);
      expect(unsigned(fast.body), path).toBe(unsigned(viaApp.body));
      expect(fast.fields.map(([n]) => n), path).toEqual(viaApp.fields.map(([n]) => n));
      expect(field(fast, "Link"), path).toBe(field(viaApp, "Link"));
      return fast;
    };
    const first = await same("/v1/audio_books/?limit=2");
    expect((JSON.parse(first.body) as Array<{ id: string }>).map((b) => b.id)).toEqual([ids[4], ids[3]]);
    expect(first.fields.map(([n]) => n)).toEqual(["X-Request-Id", "RateLimit-Policy", "RateLimit", "Link", "content-type", "Content-Length"]);
    const next = /^<http:\/\/api\.test(\/v1\/audio_books\/\?limit=2&cursor=[\w-]+)>; rel="next"$/.exec(field(first, "Link") ?? "")?.[1];
    expect(next).toBeDefined();
    const second = await same(next as string);
    expect((JSON.parse(second.body) as Array<{ id: string }>).map((b) => b.id)).toEqual([ids[2], ids[1]]);
    const all = await same("/v1/audio_books/");
    expect(JSON.parse(all.body)).toHaveLength(5);
    expect(field(all, "Link")).toBeUndefined();
    const processing = await same("/v1/audio_books/?task_status=processing&limit=50");
    expect(JSON.parse(processing.body)).toMatchObject([{ id: ids[1], task_status: "processing", task_progress: 30, localized_file: null }]);
    expect((await same("/v1/voices/streams")).body).toBe("[]");
    expect((await same("/v1/videos/subtitle?limit=3")).body).toBe("[]");
    expect(f.handedOn.every((line) => line.endsWith("x=1"))).toBe(true);

    // progress, and new records, show at once (a list is remembered only while no record changed)
    expect(JSON.parse((await get(f, "/v1/audio_books/?task_status=processing", alice)).body)).toMatchObject([{ id: ids[1], task_progress: 30 }]);
    await f.gateway.deps.records.audiobook.updateOwned("alice", ids[1] as string, { task_progress: 80 });
    expect(JSON.parse((await get(f, "/v1/audio_books/?task_status=processing", alice)).body)).toMatchObject([{ id: ids[1], task_progress: 80 }]);
    const newest = await completedBook(f, "alice", "Newest", new Date(Date.UTC(2026, 5, 1)));
    expect((JSON.parse((await get(f, "/v1/audio_books/?limit=2", alice)).body) as Array<{ id: string }>).map((b) => b.id)).toEqual([newest, ids[4]]);
    // bob sees his own only
    await get(f, "/v1/audio_books/", { "API-KEY": BOB_KEY });
    expect((JSON.parse((await get(f, "/v1/audio_books/", { "API-KEY": BOB_KEY })).body) as Array<{ name: string }>).map((b) => b.name)).toEqual(["Bob's"]);

    // the request line and the metrics series are the list route's, as the app's
    const line = f.lines.filter((l) => l.msg === "request" && l.requestId === "list-1").at(-1);
    expect(line).toMatchObject({ method: "GET", path: "/v1/audio_books/", status: 200, account: "alice" });
    const { body: metrics } = await scrape();
    const series = /voiceloc_http_request_duration_seconds_count\{[^}]*method="GET"[^}]*route="\/v1\/audio_books\/"[^}]*status="200"[^}]*\} (\d+)/.exec(metrics);
    expect(Number(series?.[1])).toBeGreaterThanOrEqual(8);
  });

  it("hands to the app every list query it cannot read plainly, and the app's answers stand", async () => {
    const f = await start();
    await completedBook(f, "alice", "Listed");
    const alice = { "API-KEY": ALICE_KEY };
    expect((await get(f, "/v1/audio_books/", alice)).status).toBe(200); // verifies the key
    f.handedOn.length = 0;
    const notACursor = Buffer.from("not a cursor").toString("base64url");
    const cases: Array<[string, number]> = [
      ["/v1/audio_books/?limit=0", 422],
      ["/v1/audio_books/?limit=201", 422],
      ["/v1/audio_books/?limit=050", 200],
      ["/v1/audio_books/?limit=2&limit=3", 422],
      ["/v1/audio_books/?task_status=done", 422],
      ["/v1/audio_books/?cursor=%21", 422],
      [`/v1/audio_books/?cursor=${notACursor}`, 422],
      ["/v1/audio_books/?limit", 422],
      ["/v1/voices/streams/", 307],
    ];
    for (const [path, status] of cases) {
      const before = f.handedOn.length;
      expect((await get(f, path, alice)).status, path).toBe(status);
      expect(f.handedOn.length - before, path).toBe(1);
    }
    expect((await get(f, "/v1/audio_books/?limit=200&task_status=completed", alice)).status).toBe(200);
    expect(f.handedOn).toHaveLength(cases.length);
  });

  it("leaves lists to the app where the store keeps no text (MongoDB)", async () => {
    const f = await start({}, { withoutStoredText: true });
    await completedBook(f, "alice", "Listed");
    await get(f, "/v1/audio_books/", { "API-KEY": ALICE_KEY });
    expect(JSON.parse((await get(f, "/v1/audio_books/", { "API-KEY": ALICE_KEY })).body)).toMatchObject([{ name: "Listed" }]);
    expect(f.handedOn).toEqual(["GET /v1/audio_books/", "GET /v1/audio_books/"]);
  });
});
