import { afterEach, describe, expect, it } from "vitest";
import { createCatalogBus, createInProcessBus, type CatalogBus } from "@voiceloc/bus";
import { BUS_CATALOG, type BusCatalogue, type TaskEvent, type TaskKind } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { SseReader, tempDir } from "@voiceloc/testing";
import { ALICE_KEY, BASE, BOB_KEY, startTestGateway, type TestGateway } from "../testing/harness.ts";
import type { PlaceDoc } from "../mesh/places.ts";
import { eventIdOf, parseLastEventId } from "./sse.ts";

/** Polls until `done` holds (a freed place is deleted from the store a moment after its stream ends). */
async function waitFor(done: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The response of `request` once it answers `status` (any other response is dropped and the request sent again). */
async function waitForStatus(request: () => Promise<Response>, status: number): Promise<Response> {
  let res: Response | undefined;
  await waitFor(async () => {
    res = await request();
    if (res.status === status) return true;
    await res.body?.cancel();
    return false;
  }, `HTTP ${status}`);
  return res!;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A gateway on an in-process bus (its TaskMesh projects the events the test publishes as a worker would). */
async function setup(env: Record<string, string> = {}, dataDir?: string, shared?: ReturnType<typeof createInProcessBus>) {
  const bus = shared ?? createInProcessBus({ logger: silentLogger() });
  const t = await startTestGateway({ PORT: "0", HOST: "127.0.0.1", ...env }, { bus }, dataDir);
  const port = await t.gateway.start();
  cleanups.push(async () => {
    await t.close();
    if (!shared) await bus.close();
  });
  return { t, port, bus: createCatalogBus(bus, BUS_CATALOG) as CatalogBus<BusCatalogue> };
}

const CREATE: Record<TaskKind, { path: string; body: Record<string, unknown> }> = {
  audiobook: { path: "/v1/audio_books/", body: { file: "book.txt", name: "Live", source_language: "English", target_language: "Spanish" } },
  "voice-stream": { path: "/v1/voices/streams", body: { file: "talk.wav", source_language: "English", target_language: "Spanish" } },
  subtitle: { path: "/v1/videos/subtitle", body: { file: "talk.mp4", source_language: "English", target_language: "Spanish" } },
};
const RECORD_PATH: Record<TaskKind, string> = { audiobook: "/v1/audio_books/", "voice-stream": "/v1/voices/streams/", subtitle: "/v1/videos/subtitle/" };

async function create(t: TestGateway, kind: TaskKind = "audiobook", key = ALICE_KEY): Promise<string> {
  const res = await t.request("POST", CREATE[kind].path, { body: CREATE[kind].body, key });
  expect(res.status).toBeLessThan(300);
  return ((await res.json()) as { id: string }).id;
}

function events(t: TestGateway, kind: TaskKind, id: string, headers: Record<string, string> = {}, key: string | null = ALICE_KEY): Promise<Response> {
  return t.request("GET", `${RECORD_PATH[kind]}${id}/events`, { headers, key });
}

async function open(t: TestGateway, kind: TaskKind, id: string, headers: Record<string, string> = {}): Promise<SseReader> {
  const res = await events(t, kind, id, headers);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/event-stream");
  expect(res.headers.get("cache-control")).toBe("no-cache, no-transform");
  expect(res.headers.get("x-request-id")).toBeTruthy();
  const reader = new SseReader(res);
  cleanups.push(() => reader.close());
  return reader;
}

let seqs = 0;
function progress(kind: TaskKind, id: string, over: Partial<TaskEvent>): TaskEvent {
  return { task_id: id, kind, seq: ++seqs, status: "processing", progress: 0, at: new Date().toISOString(), ...over };
}

const data = (e: { data: string } | undefined | null) => JSON.parse(e?.data ?? "{}") as Record<string, unknown>;

describe("live progress over Server-Sent Events", () => {
  it("event ids rise with progress and status, and only a whole number is taken as Last-Event-ID", () => {
    const ids = [
      { task_status: "queued", task_progress: 0 },
      { task_status: "processing", task_progress: 0 },
      { task_status: "processing", task_progress: 0.01 },
      { task_status: "processing", task_progress: 42.5 },
      { task_status: "failed", task_progress: 42.5 },
      { task_status: "processing", task_progress: 100 },
      { task_status: "completed", task_progress: 100 },
    ].map((r) => eventIdOf(r as never));
    expect(ids).toEqual([0, 1, 5, 17001, 17002, 40001, 40003]);
    expect(parseLastEventId(" 17001 ")).toBe(17001);
    for (const bad of ["", "-1", "1.5", "abc", "1e3", "9999999", "0x10"]) expect(parseLastEventId(bad)).toBeUndefined();
  });

  it("answers 401 without credentials, 422 for a malformed id, and 404 (JSON, before any stream) for unknown and foreign records", async () => {
    const { t } = await setup();
    const id = await create(t);
    const anonymous = await events(t, "audiobook", id, {}, null);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await events(t, "audiobook", "not-a-uuid").then((r) => r.status)).toBe(422);
    for (const kind of ["audiobook", "voice-stream", "subtitle"] as const) {
      const unknown = await events(t, kind, "0193a1b2-0000-7000-8000-000000000000");
      expect(unknown.status).toBe(404);
      expect(unknown.headers.get("content-type")).toMatch(/^application\/json/);
      expect(await unknown.json()).toEqual({ detail: expect.stringMatching(/not found/) });
    }
    const foreign = await events(t, "audiobook", id, {}, BOB_KEY);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toEqual({ detail: "Audio book not found" });
    // an audio book's id is not a voice stream's
    expect((await events(t, "voice-stream", id)).status).toBe(404);
    expect(t.gateway.deps.events.stats()).toEqual({ streams: 0, records: 0, owners: 0 });
  });

  it("streams the current state, each change as projected, then the final record exactly as GET returns it, and closes", async () => {
    const { t, bus } = await setup();
    const id = await create(t);
    const reader = await open(t, "audiobook", id);
    await reader.until(() => reader.events.length === 1, "the current state");
    expect(reader.retries).toEqual([2_000]);
    expect(reader.events[0]).toMatchObject({ event: "progress", id: "0" });
    expect(data(reader.events[0])).toEqual({ id, task_status: "queued", task_progress: 0, date_updated: expect.any(String) });

    for (const p of [5, 30, 30, 20, 75]) await bus.publishEvent("task", progress("audiobook", id, { progress: p }));
    await reader.until(() => reader.events.length === 4, "three changes");
    await bus.publishEvent("task", progress("audiobook", id, { status: "completed", progress: 100, result_key: `results/audiobook/${id}.mp3` }));
    const all = await reader.untilEnd();
    expect(all.map((e) => e.event)).toEqual(["progress", "progress", "progress", "progress", "completed"]);
    // the repeated 30 and the stale 20 change nothing a client sees: no event for them
    expect(all.slice(1, 4).map((e) => data(e).task_progress)).toEqual([5, 30, 75]);
    const ids = all.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    const final = data(all.at(-1));
    const get = (await (await t.request("GET", `/v1/audio_books/${id}`)).json()) as Record<string, unknown>;
    expect(final).toEqual({ ...get, localized_file: expect.stringMatching(new RegExp(`^${BASE}/v1/files/`)) });
    expect(Object.keys(final).sort()).toEqual(Object.keys(get).sort());
    expect(final.task_status).toBe("completed");
    expect(reader.done).toBe(true);
    expect(t.gateway.deps.events.stats()).toEqual({ streams: 0, records: 0, owners: 0 });
  });

  it("a finished record gets its final event at once (failed, with the reason), for every kind", async () => {
    const { t, bus } = await setup();
    for (const kind of ["audiobook", "voice-stream", "subtitle"] as const) {
      const id = await create(t, kind);
      await bus.publishEvent("task", progress(kind, id, { status: "failed", progress: 40, error: "The text could not be read" }));
      const read = async () => (await (await t.request("GET", `${RECORD_PATH[kind]}${id}`)).json()) as Record<string, unknown>;
      for (let i = 0; (await read()).task_status !== "failed"; i++) {
        if (i > 400) throw new Error("the failure was not projected");
        await new Promise((r) => setTimeout(r, 25));
      }
      const reader = await open(t, kind, id);
      const all = await reader.untilEnd();
      expect(all).toHaveLength(1);
      expect(all[0]).toMatchObject({ event: "failed", id: String(eventIdOf({ task_status: "failed", task_progress: 40 })) });
      expect(data(all[0])).toEqual(await read());
    }
  });

  it("resumes from Last-Event-ID without repeats; 204 once the client has the final event", async () => {
    const { t, bus } = await setup();
    const id = await create(t);
    await bus.publishEvent("task", progress("audiobook", id, { progress: 10 }));
    const first = await open(t, "audiobook", id);
    await first.until(() => data(first.events.at(-1)).task_progress === 10, "progress 10");
    const last = first.events.at(-1)!.id!;
    await first.close();

    // the client already has this state: nothing until the next change
    const resumed = await open(t, "audiobook", id, { "Last-Event-ID": last });
    await bus.publishEvent("task", progress("audiobook", id, { progress: 60 }));
    await resumed.until(() => resumed.events.length === 1, "the next change");
    expect(data(resumed.events[0]).task_progress).toBe(60);
    expect(Number(resumed.events[0]!.id)).toBeGreaterThan(Number(last));

    // an older id gets the current state at once; garbage is ignored (the current state too)
    for (const header of [String(Number(last) - 1), "yesterday"]) {
      const older = await open(t, "audiobook", id, { "Last-Event-ID": header });
      await older.until(() => older.events.length === 1, "the current state");
      expect(data(older.events[0]).task_progress).toBe(60);
      await older.close();
    }

    await bus.publishEvent("task", progress("audiobook", id, { status: "completed", progress: 100, result_key: `results/audiobook/${id}.mp3` }));
    const final = (await resumed.untilEnd()).at(-1)!;
    expect(final.event).toBe("completed");
    const again = await events(t, "audiobook", id, { "Last-Event-ID": final.id! });
    expect(again.status).toBe(204);
    expect(await again.text()).toBe("");
    // one id short of the final event: the final event again
    const short = await open(t, "audiobook", id, { "Last-Event-ID": String(Number(final.id) - 1) });
    expect((await short.untilEnd()).map((e) => e.event)).toEqual(["completed"]);
    expect(t.gateway.deps.events.stats().streams).toBe(0);
  });

  it("writes a heartbeat comment every SSE_HEARTBEAT_MS while nothing changes", async () => {
    const { t } = await setup({ SSE_HEARTBEAT_MS: "1000" });
    const id = await create(t, "subtitle");
    const reader = await open(t, "subtitle", id);
    await reader.until(() => reader.comments.filter((c) => c === "heartbeat").length >= 2, "two heartbeats", 30_000);
    expect(reader.events).toHaveLength(1);
  });

  it("a change no notice announced (a notice lost while NATS reconnects) still reaches the stream, within a heartbeat period", async () => {
    const { t } = await setup({ SSE_HEARTBEAT_MS: "1000" });
    const id = await create(t);
    const reader = await open(t, "audiobook", id);
    await reader.until(() => reader.events.length === 1, "the state");
    // straight into the store, as another gateway's projection would, but with its notice lost
    const at = new Date().toISOString();
    await t.gateway.deps.records.audiobook.applyEvent(id, 7, { task_status: "processing", date_updated: at }, 45);
    await reader.until(() => data(reader.events.at(-1)).task_progress === 45, "progress 45", 30_000);
    await t.gateway.deps.records.audiobook.applyEvent(id, 8, { task_status: "completed", date_updated: at, result_key: `results/audiobook/${id}.mp3` }, 100);
    const all = await reader.untilEnd(30_000);
    expect(all.map((e) => e.event)).toEqual(["progress", "progress", "completed"]);
  });

  it("caps the open streams per account (429 JSON), frees a place when a client goes away, and leaks nothing", async () => {
    const { t } = await setup({ SSE_MAX_STREAMS_PER_ACCOUNT: "3" });
    const id = await create(t);
    const bobs = await create(t, "audiobook", BOB_KEY);
    const readers = await Promise.all([1, 2, 3].map(() => open(t, "audiobook", id)));
    const refused = await events(t, "audiobook", id);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await refused.json()).toEqual({ detail: expect.stringContaining("at most 3") });
    // another account has its own places
    const bob = await events(t, "audiobook", bobs, {}, BOB_KEY);
    expect(bob.status).toBe(200);
    await new SseReader(bob).close();
    await readers[0]!.close();
    const next = await open(t, "audiobook", id);
    await next.until(() => next.events.length === 1, "the state");
    await Promise.all([...readers, next].map((r) => r.close()));
    expect(t.gateway.deps.events.stats()).toEqual({ streams: 0, records: 0, owners: 0 });

    // many opened and dropped, of several records: the map is empty again
    const ids = [id, await create(t), await create(t)];
    for (let round = 0; round < 20; round++) {
      const batch = await Promise.all([0, 1, 2].map((i) => open(t, "audiobook", ids[i]!)));
      await Promise.all(batch.map((r) => r.until(() => r.events.length === 1, "the state")));
      expect(t.gateway.deps.events.stats()).toEqual({ streams: 3, records: 3, owners: 1 });
      await Promise.all(batch.map((r) => r.close()));
    }
    expect(t.gateway.deps.events.stats()).toEqual({ streams: 0, records: 0, owners: 0 });
    // HEAD answers the headers and opens nothing
    const head = await t.request("HEAD", `/v1/audio_books/${id}/events`);
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("text/event-stream");
    expect(t.gateway.deps.events.stats().streams).toBe(0);
  });

  it("over real HTTP: a client that disconnects releases its stream on the server", async () => {
    const { t, port, bus } = await setup();
    const id = await create(t);
    const url = `http://127.0.0.1:${port}/v1/audio_books/${id}/events`;
    const stats = () => t.gateway.deps.events.stats();
    const waitForStreams = async (n: number) => {
      for (let i = 0; stats().streams !== n; i++) {
        if (i > 400) throw new Error(`expected ${n} open streams, have ${JSON.stringify(stats())}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    };
    // a reader that stops reading, and a fetch aborted outright
    const reader = await SseReader.open(url, { "API-KEY": ALICE_KEY });
    await reader.until(() => reader.events.length === 1, "the state");
    const aborted = new AbortController();
    const res = await fetch(url, { headers: { "API-KEY": ALICE_KEY }, signal: aborted.signal });
    expect(res.status).toBe(200);
    await waitForStreams(2);
    await reader.close();
    aborted.abort();
    await waitForStreams(0);
    expect(stats()).toEqual({ streams: 0, records: 0, owners: 0 });
    // and a stream still open gets the changes
    const live = await SseReader.open(url, { Authorization: `Bearer ${ALICE_KEY}` });
    cleanups.push(() => live.close());
    await bus.publishEvent("task", progress("audiobook", id, { progress: 33 }));
    await live.until(() => data(live.events.at(-1)).task_progress === 33, "progress 33");
  });

  it("reaches streams on another gateway of the same store and bus; a stopping gateway ends its streams at once", async () => {
    const dir = await tempDir("voiceloc-sse-two-");
    cleanups.push(() => dir.cleanup());
    const shared = createInProcessBus({ logger: silentLogger() });
    cleanups.push(() => shared.close());
    const a = await setup({}, dir.path, shared);
    const b = await setup({}, dir.path, shared);
    const id = await create(a.t, "voice-stream");
    const onA = await open(a.t, "voice-stream", id);
    const onB = await open(b.t, "voice-stream", id);
    for (const p of [10, 20, 30, 40, 50, 60]) await a.bus.publishEvent("task", progress("voice-stream", id, { progress: p }));
    await a.bus.publishEvent("task", progress("voice-stream", id, { status: "completed", progress: 100, result_key: `results/voice-stream/${id}.mp3` }));
    const [fromA, fromB] = await Promise.all([onA.untilEnd(), onB.untilEnd()]);
    for (const all of [fromA, fromB]) {
      expect(all.at(-1)?.event).toBe("completed");
      const seen = all.map((e) => data(e).task_progress as number);
      expect(seen).toEqual([...seen].sort((x, y) => x - y));
      const ids = all.map((e) => Number(e.id));
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toEqual([...ids].sort((x, y) => x - y));
    }
    expect(data(fromA.at(-1))).toEqual(data(fromB.at(-1)));

    const other = await create(b.t, "voice-stream");
    const held = await open(b.t, "voice-stream", other);
    await held.until(() => held.events.length === 1, "the state");
    const started = Date.now();
    await b.t.gateway.stop();
    await held.untilEnd(10_000);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(b.t.gateway.deps.events.stats()).toEqual({ streams: 0, records: 0, owners: 0 });
  });

  it("counts an account's streams across the gateways sharing the store; a killed gateway's places are taken again once its lease has expired", async () => {
    const dir = await tempDir("voiceloc-sse-cap-");
    cleanups.push(() => dir.cleanup());
    const shared = createInProcessBus({ logger: silentLogger() });
    cleanups.push(() => shared.close());
    const env = { SSE_MAX_STREAMS_PER_ACCOUNT: "2" };
    const a = await setup(env, dir.path, shared);
    const b = await setup(env, dir.path, shared);
    const id = await create(a.t);
    const onA = await open(a.t, "audiobook", id);
    const onB = await open(b.t, "audiobook", id);
    expect((await events(a.t, "audiobook", id)).status).toBe(429);
    expect((await events(b.t, "audiobook", id)).status).toBe(429);
    // another account has its own places
    const bob = await events(b.t, "audiobook", await create(a.t, "audiobook", BOB_KEY), {}, BOB_KEY);
    expect(bob.status).toBe(200);
    await new SseReader(bob).close();
    // a stream that ends on one gateway frees its place for the other
    await onA.close();
    const next = await waitForStatus(() => events(b.t, "audiobook", id), 200);
    await new SseReader(next).close();
    await onB.close();

    // a gateway killed outright: its places stay in the store, its lease is out of date
    const places = await a.t.gateway.deps.store.collection<PlaceDoc>({ name: "stream_places" });
    const leases = await a.t.gateway.deps.store.collection<{ id: string; expires_at: string }>({ name: "gateway_leases" });
    await waitFor(async () => (await places.count({ scope: "stream:alice" })) === 0, "the places to be free");
    await leases.insert({ id: "killed-gateway", expires_at: new Date(Date.now() - 1_000).toISOString() });
    for (const n of [0, 1]) await places.insert({ id: `stream:alice:${n}`, scope: "stream:alice", holder: "killed-gateway", date_created: new Date().toISOString() });
    const again = await Promise.all([open(a.t, "audiobook", id), open(b.t, "audiobook", id)]);
    expect((await events(a.t, "audiobook", id)).status).toBe(429);
    await Promise.all(again.map((r) => r.close()));
  });
});
