/**
 * PATCH of an audio book's cover as the gateway answers it, with the test playing the audio book
 * service on an in-process bus (`audiobook.cover`; the real re-wrap of a file is measured end to end in
 * services/standalone/src/audiobook-files.e2e.test.ts): a completed book waits for the re-wrap, a
 * refusal is a 422 at the field and changes nothing, no service is a 503, a book still rendering is
 * re-wrapped when its completion is projected, and what cannot be embedded then is a warning.
 */
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { createCatalogBus, createInProcessBus, type BusSubscription, type CatalogBus } from "@voiceloc/bus";
import { BUS_CATALOG, type AudioBookCoverRequest, type BusCatalogue } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { projectEvent } from "../mesh/tasks.ts";
import { BOB_KEY, startTestGateway, type TestGateway } from "../testing/harness.ts";
import { coverOnCompletion } from "./book-covers.ts";
import type { AudioBookDoc } from "./kinds.ts";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

async function setup(withBus = true): Promise<{ t: TestGateway; bus?: CatalogBus<BusCatalogue> }> {
  if (!withBus) {
    const t = await startTestGateway();
    cleanups.push(() => t.close());
    return { t };
  }
  const bus = createInProcessBus({ logger: silentLogger() });
  const t = await startTestGateway({ PORT: "0", HOST: "127.0.0.1" }, { bus });
  await t.gateway.start();
  cleanups.push(async () => {
    await t.close();
    await bus.close();
  });
  return { t, bus: createCatalogBus(bus, BUS_CATALOG) };
}

async function book(t: TestGateway, status: "queued" | "completed", extra: Partial<AudioBookDoc> = {}): Promise<AudioBookDoc> {
  const now = new Date().toISOString();
  const id = randomUUID();
  const doc: AudioBookDoc = {
    id,
    account_id: "alice",
    task_status: status,
    task_progress: status === "completed" ? 100 : 0,
    task_error: null,
    result_key: status === "completed" ? `results/audiobook/${id}.mp3` : null,
    seq: status === "completed" ? Number.MAX_SAFE_INTEGER : 0,
    published: true,
    date_created: now,
    date_updated: now,
    file: "book.epub",
    name: "The Harbour",
    source_language: "English",
    target_language: "English",
    audio_book_cover: "https://covers.example.org/old.png",
    use_voice_clone: false,
    preset_voice_name: null,
    voice_clone_sample: null,
    ...extra,
  };
  await t.gateway.deps.records.audiobook.create(doc);
  return doc;
}

const patch = (t: TestGateway, id: string, body: unknown, key?: string) => t.request("PATCH", `/v1/audio_books/${id}`, { body, ...(key ? { key } : {}) });

/** The audio book service as the test plays it: records every request, answers with `answer`. */
async function coverService(bus: CatalogBus<BusCatalogue>, answer: (request: AudioBookCoverRequest) => { refuse: "cover_unusable" | "cover_not_available" | "rewrap_failed"; message: string } | null): Promise<AudioBookCoverRequest[]> {
  const seen: AudioBookCoverRequest[] = [];
  const sub: BusSubscription = await bus.serve("audiobook.cover", (request, { refuse }) => {
    seen.push(request);
    const refusal = answer(request);
    if (refusal) return refuse(refusal.refuse, refusal.message);
    return { result_key: request.result_key, duration_seconds: 12.5, cover: request.cover === null ? null : { type: "png", width: 64, height: 48, bytes: 900 } };
  });
  cleanups.push(() => sub.stop());
  return seen;
}

describe("PATCH /v1/audio_books/{id} audio_book_cover", () => {
  it("re-wraps a completed book through the audio book service as the owner, then changes the record and clears cover warnings", async () => {
    const { t, bus } = await setup();
    const seen = await coverService(bus!, () => null);
    const doc = await book(t, "completed", { warnings: ["The cover was not embedded: the cover cannot be fetched.", "Something else."] });
    const res = await patch(t, doc.id, { audio_book_cover: "https://covers.example.org/new.png" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ audio_book_cover: "https://covers.example.org/new.png", warnings: ["Something else."] });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ task_id: doc.id, account_id: "alice", result_key: doc.result_key, cover: "https://covers.example.org/new.png" });
    // null removes it the same way
    expect((await patch(t, doc.id, { audio_book_cover: null })).status).toBe(200);
    expect(seen[1]?.cover).toBeNull();
  });

  it("a cover the service refuses is a 422 at body.audio_book_cover in its words, and nothing changes", async () => {
    const { t, bus } = await setup();
    await coverService(bus!, () => ({ refuse: "cover_unusable", message: "The cover is neither a JPEG nor a PNG picture." }));
    const doc = await book(t, "completed");
    const res = await patch(t, doc.id, { name: "Renamed", audio_book_cover: "https://covers.example.org/words.txt" });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: Array<{ loc: string[]; msg: string; input: unknown }> };
    expect(body.detail[0]).toMatchObject({
      loc: ["body", "audio_book_cover"],
      msg: "Value error, The cover is neither a JPEG nor a PNG picture.",
      input: "https://covers.example.org/words.txt",
    });
    const after = (await (await t.request("GET", `/v1/audio_books/${doc.id}`)).json()) as Record<string, unknown>;
    expect(after).toMatchObject({ name: "The Harbour", audio_book_cover: "https://covers.example.org/old.png" });
  });

  it("a failed write is a 502 and nothing changes; another account's book is a 404 and the service is never asked", async () => {
    const { t, bus } = await setup();
    const seen = await coverService(bus!, () => ({ refuse: "rewrap_failed", message: "ffmpeg failed" }));
    const doc = await book(t, "completed");
    const failed = await patch(t, doc.id, { audio_book_cover: "https://covers.example.org/new.png" });
    expect(failed.status).toBe(502);
    expect(((await failed.json()) as { detail: string }).detail).toMatch(/^The cover was not changed/);
    expect(((await (await t.request("GET", `/v1/audio_books/${doc.id}`)).json()) as { audio_book_cover: string }).audio_book_cover).toBe("https://covers.example.org/old.png");
    expect((await patch(t, doc.id, { audio_book_cover: "https://covers.example.org/new.png" }, BOB_KEY)).status).toBe(404);
    expect(seen).toHaveLength(1);
  });

  it("with no audio book service to write the file, a completed book's cover is a 503 with Retry-After; its name still changes", async () => {
    const { t } = await setup(false);
    const doc = await book(t, "completed");
    const res = await patch(t, doc.id, { audio_book_cover: "https://covers.example.org/new.png" });
    expect(res.status).toBe(503);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await patch(t, doc.id, { name: "Renamed" })).status).toBe(200);
    const { t: withBus } = await setup();
    const other = await book(withBus, "completed");
    const none = await patch(withBus, other.id, { audio_book_cover: "https://covers.example.org/new.png" });
    expect(none.status).toBe(503);
    expect(((await none.json()) as { detail: string }).detail).toMatch(/no audio book service is running/);
  });

  it("a book still rendering answers at once and is re-wrapped when its completion is projected; a cover refused then is a warning", async () => {
    const { t, bus } = await setup();
    let refuse = false;
    const seen = await coverService(bus!, () => (refuse ? { refuse: "cover_not_available", message: "The cover cannot be fetched: the server answered 404." } : null));
    const complete = async (doc: AudioBookDoc) => {
      await projectEvent(t.gateway.deps.records, {
        task_id: doc.id, kind: "audiobook", seq: 9, status: "completed", progress: 100, result_key: `results/audiobook/${doc.id}.mp3`,
        warnings: ["The cover was not embedded: the cover cannot be fetched."], at: new Date().toISOString(),
      });
    };
    const doc = await book(t, "queued");
    const res = await patch(t, doc.id, { audio_book_cover: "https://covers.example.org/new.png" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ task_status: "queued", audio_book_cover: "https://covers.example.org/new.png" });
    expect(seen).toHaveLength(0);
    // the gateway's own projection of the completion (the mesh's listener) asks for the re-wrap
    await complete(doc);
    const listener = coverOnCompletion({ repo: t.gateway.deps.records.audiobook, covers: t.gateway.deps.bookCovers!, logger: silentLogger() });
    // the change the mesh hands its listeners when it projects the completion
    listener({ kind: "audiobook", record: (await t.gateway.deps.records.audiobook.get(doc.id))!, finishedNow: true });
    const done = await eventually(() => t.gateway.deps.records.audiobook.get(doc.id), (d) => d?.cover_pending === false);
    expect(seen.map((r) => r.cover)).toEqual(["https://covers.example.org/new.png"]);
    expect(done?.warnings).toEqual([]);

    refuse = true;
    const later = await book(t, "queued");
    expect((await patch(t, later.id, { audio_book_cover: "https://covers.example.org/gone.png" })).status).toBe(200);
    await complete(later);
    listener({ kind: "audiobook", record: (await t.gateway.deps.records.audiobook.get(later.id))!, finishedNow: true });
    const warned = await eventually(() => t.gateway.deps.records.audiobook.get(later.id), (d) => d?.cover_pending === false);
    expect(warned?.warnings).toEqual(["The new cover was not embedded: The cover cannot be fetched: the server answered 404."]);
    const read = (await (await t.request("GET", `/v1/audio_books/${later.id}`)).json()) as { warnings: string[] };
    expect(read.warnings).toEqual(warned?.warnings);
  });
});

async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000;
  let last = await read();
  while (!ok(last)) {
    if (Date.now() > deadline) throw new Error(`timed out; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
    last = await read();
  }
  return last;
}
