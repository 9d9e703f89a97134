import { afterEach, describe, expect, it } from "vitest";
import { createCatalogBus, createInProcessBus, outcome, type Bus, type CatalogBus } from "@voiceloc/bus";
import { BUS_CATALOG, type BusCatalogue, type TaskEvent, type WorkMessage } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { startTestGateway, BOB_KEY, type TestGateway } from "../testing/harness.ts";
import type { AudioBookDoc } from "../records/kinds.ts";
import { DispatchSlots } from "./slots.ts";
import { TaskMesh, type TaskMeshOptions } from "./tasks.ts";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface SetupOptions {
  sweepIntervalMs?: number;
  sweepGraceMs?: number;
  onProjected?: TaskMeshOptions["onProjected"];
  env?: Record<string, string>;
  /** Wraps the bus the gateway uses (e.g. to count publishes the in-process bus would deduplicate). */
  wrap?: (bus: Bus) => Bus;
}

/** The gateway on an in-process bus, and that bus typed by the catalogue (the test plays the workers). */
async function setup(options: SetupOptions = {}): Promise<{ t: TestGateway; bus: CatalogBus<BusCatalogue> }> {
  const bus = createInProcessBus({ logger: silentLogger() });
  const { env, wrap, ...rest } = options;
  const t = await startTestGateway({ PORT: "0", HOST: "127.0.0.1", ...env }, { bus: wrap ? wrap(bus) : bus, ...rest });
  await t.gateway.start();
  cleanups.push(async () => {
    await t.close();
    await bus.close();
  });
  return { t, bus: createCatalogBus(bus, BUS_CATALOG) };
}

async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 20_000;
  let last: T = await read();
  while (!ok(last)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
    last = await read();
  }
  return last;
}

const event = (over: Partial<TaskEvent> & Pick<TaskEvent, "task_id" | "seq">): TaskEvent => ({
  kind: "audiobook",
  status: "processing",
  progress: 0,
  at: new Date().toISOString(),
  ...over,
});

describe("task mesh: work out, progress back", () => {
  it("publishes work for a new record and projects its progress events into the record", async () => {
    const { t, bus } = await setup();
    const received: WorkMessage[] = [];
    const sub = await bus.consumeWork("audiobook", async ({ data }) => {
      received.push(data);
      return outcome.ack();
    });
    cleanups.push(() => sub.stop());
    const res = await t.request("POST", "/v1/audio_books/", {
      body: { file: "book.txt", name: "Mesh", source_language: "English", target_language: "Spanish", preset_voice_name: "espeak:es" },
    });
    const created = (await res.json()) as { id: string };
    await eventually(async () => received.length, (n) => n === 1, "the work message");
    expect(received[0]).toMatchObject({ kind: "audiobook", task_id: created.id, account_id: "alice", file: "book.txt", preset_voice_name: "espeak:es" });

    const read = async () => (await (await t.request("GET", `/v1/audio_books/${created.id}`)).json()) as Record<string, unknown>;
    await bus.publishEvent("task", event({ task_id: created.id, seq: 1, progress: 10 }));
    await eventually(read, (r) => r.task_progress === 10 && r.task_status === "processing", "progress 10");
    await bus.publishEvent(
      "task",
      event({ task_id: created.id, seq: 4, status: "completed", progress: 100, result_key: `results/audiobook/${created.id}.mp3` }),
    );
    const done = await eventually(read, (r) => r.task_status === "completed", "completion");
    expect(done.task_progress).toBe(100);
    expect(String(done.localized_file)).toMatch(new RegExp(`^http://api.test/v1/files/results/audiobook/${created.id}\\.mp3\\?expires=\\d+&signature=`));
  });

  it("a stale event or a retry's opening event never moves task_progress backwards, on any projection update", async () => {
    const samples: Array<{ seq: number; status: string | undefined; progress: number | undefined }> = [];
    let projected!: () => void;
    let expected = 0;
    const allProjected = new Promise<void>((resolve) => (projected = resolve));
    const { t, bus } = await setup({
      onProjected: (e, record) => {
        samples.push({ seq: e.seq, status: record?.task_status, progress: record?.task_progress });
        if (samples.length === expected) projected();
      },
    });
    const created = (await (
      await t.request("POST", "/v1/audio_books/", { body: { file: "book.txt", name: "Backwards", source_language: "English", target_language: "English" } })
    ).json()) as { id: string };
    const events: TaskEvent[] = [
      event({ task_id: created.id, seq: 1, progress: 10 }),
      event({ task_id: created.id, seq: 3, progress: 60 }),
      // an earlier event arriving late (lower seq, lower progress)
      event({ task_id: created.id, seq: 2, progress: 30 }),
      // a redelivery after a crash opens at 0 with a higher seq
      event({ task_id: created.id, seq: 1_000_001, progress: 0 }),
      event({ task_id: created.id, seq: 1_000_002, progress: 40 }),
      event({ task_id: created.id, seq: 1_000_003, progress: 75 }),
      event({ task_id: created.id, seq: 1_999_999, status: "completed", progress: 100, result_key: "results/x.mp3" }),
    ];
    expected = events.length;
    for (const e of events) await bus.publishEvent("task", e);
    await allProjected;
    expect(samples.map((x) => x.progress)).toEqual([10, 60, 60, 60, 60, 75, 100]);
    // status follows the newest event only: the stale one changed nothing, the redelivery's did
    expect(samples.map((x) => x.status)).toEqual(["processing", "processing", "processing", "processing", "processing", "processing", "completed"]);
    const record = (await (await t.request("GET", `/v1/audio_books/${created.id}`)).json()) as Record<string, unknown>;
    expect(record).toMatchObject({ task_status: "completed", task_progress: 100 });
  });

  it("a completed event from a delivery overtaken by a redelivery still completes the task, and nothing moves it back", async () => {
    const samples: Array<{ status: string | undefined; progress: number | undefined }> = [];
    let projected!: () => void;
    let expected = 0;
    const allProjected = new Promise<void>((resolve) => (projected = resolve));
    const { t, bus } = await setup({
      onProjected: (_e, record) => {
        samples.push({ status: record?.task_status, progress: record?.task_progress });
        if (samples.length === expected) projected();
      },
    });
    const created = (await (
      await t.request("POST", "/v1/audio_books/", { body: { file: "book.txt", name: "Overtaken", source_language: "English", target_language: "English" } })
    ).json()) as { id: string };
    const events: TaskEvent[] = [
      event({ task_id: created.id, seq: 2 * 2 ** 20, progress: 20 }),
      // the server redelivered while delivery 2 was still running: delivery 3 opens
      event({ task_id: created.id, seq: 3 * 2 ** 20, progress: 95 }),
      // delivery 2 finishes (and acks: the work message is gone, delivery 3 will never be retried)
      event({ task_id: created.id, seq: 2 * 2 ** 20 + 5, status: "completed", progress: 100, result_key: "results/x.mp3" }),
      // delivery 3 goes on (or fails) after that
      event({ task_id: created.id, seq: 3 * 2 ** 20 + 1, progress: 95 }),
    ];
    expected = events.length;
    for (const e of events) await bus.publishEvent("task", e);
    await allProjected;
    expect(samples.map((x) => x.status)).toEqual(["processing", "processing", "completed", "completed"]);
    expect(samples.map((x) => x.progress)).toEqual([20, 95, 100, 100]);
    const record = (await (await t.request("GET", `/v1/audio_books/${created.id}`)).json()) as Record<string, unknown>;
    expect(record).toMatchObject({ task_status: "completed", task_progress: 100 });
    expect(record.localized_file).toEqual(expect.any(String));
  });

  it("a failure keeps the highest progress reached", async () => {
    const samples: number[] = [];
    let projected!: () => void;
    const done = new Promise<void>((resolve) => (projected = resolve));
    const { t, bus } = await setup({
      onProjected: (e, record) => {
        samples.push(record?.task_progress ?? -1);
        if (e.status === "failed") projected();
      },
    });
    const created = (await (
      await t.request("POST", "/v1/audio_books/", { body: { file: "book.txt", name: "Fails", source_language: "English", target_language: "English" } })
    ).json()) as { id: string };
    await bus.publishEvent("task", event({ task_id: created.id, seq: 1, progress: 70 }));
    await bus.publishEvent("task", event({ task_id: created.id, seq: 1_000_001, progress: 0 }));
    await bus.publishEvent(
      "task",
      event({ task_id: created.id, seq: 1_999_999, status: "failed", progress: 0, error: "The text file is empty." }),
    );
    await done;
    expect(samples).toEqual([70, 70, 70]);
    const record = (await (await t.request("GET", `/v1/audio_books/${created.id}`)).json()) as Record<string, unknown>;
    expect(record).toMatchObject({ task_status: "failed", task_progress: 70, task_error: "The text file is empty." });
  });

  it("carries a voice stream's speakers to its work and projects the completed event's timing into the record", async () => {
    const { t, bus } = await setup();
    const received: WorkMessage[] = [];
    const sub = await bus.consumeWork("voice-stream", async ({ data }) => {
      received.push(data);
      return outcome.ack();
    });
    cleanups.push(() => sub.stop());
    const res = await t.request("POST", "/v1/voices/streams", { body: { file: "x.wav", source_language: "English", target_language: "French", speakers: "one" } });
    const created = (await res.json()) as { id: string; speakers: string; timing: unknown };
    expect(created).toMatchObject({ speakers: "one", timing: null });
    await eventually(async () => received.length, (n) => n === 1, "the work message");
    expect(received[0]).toMatchObject({ kind: "voice-stream", speakers: "one" });
    const timing = { lines_sped_up: 2, largest_factor: 1.35 };
    await bus.publishEvent("task", { ...event({ task_id: created.id, seq: 4, status: "completed", progress: 100, result_key: `results/voice-stream/${created.id}.mp3` }), kind: "voice-stream", timing });
    const done = await eventually(
      async () => (await (await t.request("GET", `/v1/voices/streams/${created.id}`)).json()) as Record<string, unknown>,
      (r) => r.task_status === "completed",
      "completion",
    );
    expect(done).toMatchObject({ speakers: "one", timing });
    const bad = await t.request("POST", "/v1/voices/streams", { body: { file: "x.wav", source_language: "English", target_language: "French", speakers: "two" } });
    expect(bad.status).toBe(422);
  });

  it("marks a dead-lettered task failed with a reason in plain words", async () => {
    const { t, bus } = await setup();
    const sub = await bus.consumeWork("voice-stream", async () => outcome.term("the audio file could not be decoded"));
    cleanups.push(() => sub.stop());
    const created = (await (await t.request("POST", "/v1/voices/streams", { body: { file: "x.wav", source_language: "English", target_language: "French" } })).json()) as { id: string };
    const failed = await eventually(
      async () => (await (await t.request("GET", `/v1/voices/streams/${created.id}`)).json()) as Record<string, unknown>,
      (r) => r.task_status === "failed",
      "the failure",
    );
    expect(failed.task_error).toBe("The task could not be processed: the audio file could not be decoded");
  });

  it("re-publishes a record whose work was never published (crash between store and publish), and only once", async () => {
    const published: string[] = [];
    // Count publishes before the bus: the in-process bus drops a repeated message id, which would hide a sweep
    // that re-published the same record on every pass.
    const counting = (bus: Bus): Bus =>
      new Proxy(bus, {
        get(target, prop, receiver) {
          if (prop === "publishWork") {
            return (subject: string, payload: unknown, options: { msgId: string }) => {
              published.push(options.msgId);
              return target.publishWork(subject, payload, options);
            };
          }
          return Reflect.get(target, prop, receiver) as unknown;
        },
      });
    const { t, bus } = await setup({ sweepIntervalMs: 60_000, wrap: counting });
    const id = "0190c4c2-8d3e-7000-8000-000000000001";
    await t.gateway.deps.records.subtitle.create(storedSubtitle(id, "alice", new Date(Date.now() - 60_000)));
    const received: string[] = [];
    const sub = await bus.consumeWork("subtitle", async ({ data }) => {
      received.push(data.task_id);
      return outcome.ack();
    });
    cleanups.push(() => sub.stop());
    const mesh = t.gateway.deps.dispatcher as TaskMesh;
    for (let pass = 0; pass < 3; pass += 1) await mesh.sweep();
    await eventually(async () => received, (r) => r.includes(id), "the work message");
    expect(published.filter((x) => x === id)).toHaveLength(1);
    const record = await t.gateway.deps.records.subtitle.getOwned("alice", id);
    expect(record?.published).toBe(true);
  });
});

function storedSubtitle(id: string, account: string, created: Date) {
  const at = created.toISOString();
  return {
    id,
    account_id: account,
    task_status: "queued" as const,
    task_progress: 0,
    task_error: null,
    result_key: null,
    seq: 0,
    published: false,
    date_created: at,
    date_updated: at,
    file: "clip.mp4",
    source_language: "English" as const,
    target_language: "French" as const,
    mode: "burn_in" as const,
    subtitle_format: "srt" as const,
    subtitle_key: null,
  };
}

function storedBook(id: string, account: string, name: string, created: Date): AudioBookDoc {
  const at = created.toISOString();
  return {
    id, account_id: account, task_status: "queued", task_progress: 0, task_error: null, result_key: null, seq: 0, published: false,
    date_created: at, date_updated: at, file: "book.txt", name, source_language: "English", target_language: "English",
    audio_book_cover: null, use_voice_clone: false, preset_voice_name: null, voice_clone_sample: null,
  };
}

describe("fair scheduling: a limit of tasks in flight per account and kind", () => {
  const book = (name: string) => ({ file: "book.txt", name, source_language: "English", target_language: "English" });

  it("holds an account's excess tasks queued in the store, publishes another account's at once, and releases them oldest first as tasks finish, across two gateways sharing the store", async () => {
    // a queue long enough for every place in flight: the test's worker never starts a task
    const { t, bus } = await setup({ env: { ACCOUNT_MAX_TASKS_IN_FLIGHT: "2", QUEUE_MAX_UNSTARTED_TASKS: "100" }, sweepIntervalMs: 60_000 });
    // a second gateway on the same store: its own TaskMesh and its own slot handle, nothing shared in memory
    const deps = t.gateway.deps;
    const repos = deps.records;
    const slots = await DispatchSlots.open(deps.store, { accountInFlight: 2, queueUnstarted: 100 });
    const second = new TaskMesh(bus.bus, repos, slots, silentLogger(), { sweepIntervalMs: 60_000 });
    await second.start();
    cleanups.push(() => second.stop());

    const received: string[] = [];
    const sub = await bus.consumeWork("audiobook", async ({ data }) => {
      received.push(data.task_id);
      return outcome.ack();
    });
    cleanups.push(() => sub.stop());

    const aliceIds: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      await new Promise((r) => setTimeout(r, 3)); // distinct creation times: "oldest first" is then one order
      if (i % 2 === 0) {
        const res = await t.request("POST", "/v1/audio_books/", { body: book(`alice ${i}`) });
        aliceIds.push(((await res.json()) as { id: string }).id);
      } else {
        // through the second gateway: store, then dispatch (what its route does)
        const id = `0190c4c2-8d3e-7000-8000-00000000000${i}`;
        const doc = storedBook(id, "alice", `alice ${i}`, new Date());
        await deps.records.audiobook.create(doc);
        await second.dispatch("audiobook", doc);
        aliceIds.push(id);
      }
    }
    const bobRes = await t.request("POST", "/v1/audio_books/", { body: book("bob"), key: BOB_KEY });
    const bobId = ((await bobRes.json()) as { id: string }).id;

    await eventually(async () => received, (r) => r.includes(bobId) && r.length === 3, "alice's first two and bob's one");
    expect(received.filter((id) => id !== bobId)).toEqual(aliceIds.slice(0, 2));
    const waiting = await Promise.all(aliceIds.slice(2).map((id) => deps.records.audiobook.getOwned("alice", id)));
    expect(waiting.map((d) => [d?.task_status, d?.published])).toEqual(Array.from({ length: 4 }, () => ["queued", false]));
    expect([await slots.inFlight("audiobook", "alice"), await slots.inFlight("audiobook", "bob")]).toEqual([2, 1]);

    // a sweep on either gateway respects the limit too
    await second.sweep();
    await (deps.dispatcher as TaskMesh).sweep();
    expect(received).toHaveLength(3);

    // each finished task lets the account's oldest waiting one go, never more than two in flight
    for (let done = 0; done < 4; done += 1) {
      const finished = aliceIds[done]!;
      await bus.publishEvent("task", event({ task_id: finished, seq: 9, status: "completed", progress: 100 }));
      await eventually(async () => received.length, (n) => n === 4 + done, `alice's task ${done + 3}`);
      expect(received.at(-1)).toBe(aliceIds[done + 2]);
      expect(await slots.inFlight("audiobook", "alice")).toBe(2);
    }
    const all = await Promise.all(aliceIds.map((id) => deps.records.audiobook.getOwned("alice", id)));
    expect(all.every((d) => d?.published === true)).toBe(true);
  });

  it("publishes, after a crash, records stored but never published, within the account's limit", async () => {
    // a queue long enough for every place in flight: the test's worker never starts a task
    const { t, bus } = await setup({ env: { ACCOUNT_MAX_TASKS_IN_FLIGHT: "2", QUEUE_MAX_UNSTARTED_TASKS: "100" }, sweepIntervalMs: 60_000 });
    const received: string[] = [];
    const sub = await bus.consumeWork("subtitle", async ({ data }) => {
      received.push(data.task_id);
      return outcome.ack();
    });
    cleanups.push(() => sub.stop());
    const ids = [1, 2, 3].map((n) => `0190c4c2-8d3e-7000-8000-00000000010${n}`);
    for (const [n, id] of ids.entries()) await t.gateway.deps.records.subtitle.create(storedSubtitle(id, "alice", new Date(Date.now() - 60_000 + n)));
    await t.gateway.deps.records.subtitle.create(storedSubtitle("0190c4c2-8d3e-7000-8000-000000000200", "bob", new Date(Date.now() - 50_000)));
    const mesh = t.gateway.deps.dispatcher as TaskMesh;
    await mesh.sweep();
    await eventually(async () => received.length, (n) => n === 3, "three work messages");
    expect(received.sort()).toEqual([ids[0], ids[1], "0190c4c2-8d3e-7000-8000-000000000200"].sort());
    await mesh.sweep();
    expect(received).toHaveLength(3);
    const third = await t.gateway.deps.records.subtitle.getOwned("alice", ids[2]!);
    expect(third).toMatchObject({ task_status: "queued", published: false });
  });

  it("keeps at most QUEUE_MAX_UNSTARTED_TASKS of a kind in the queue unstarted, across two gateways sharing the store; each start lets the next turn out", async () => {
    const { t, bus } = await setup({ env: { QUEUE_MAX_UNSTARTED_TASKS: "2" }, sweepIntervalMs: 60_000 });
    const deps = t.gateway.deps;
    const repos = deps.records;
    const second = new TaskMesh(bus.bus, repos, await DispatchSlots.open(deps.store, { accountInFlight: 4, queueUnstarted: 2 }), silentLogger(), { sweepIntervalMs: 60_000 });
    await second.start();
    cleanups.push(() => second.stop());
    // the test's worker takes every message and starts nothing on its own
    const received: string[] = [];
    const sub = await bus.consumeWork("audiobook", async ({ data }) => {
      received.push(data.task_id);
      return outcome.ack();
    });
    cleanups.push(() => sub.stop());

    const at = Date.now();
    const docs = ["x", "x", "x", "y", "y", "z"].map((account, n) => storedBook(`0190c4c2-8d3e-7000-8000-0000000004${String(n).padStart(2, "0")}`, account, `${account} ${n}`, new Date(at + n)));
    for (const [n, doc] of docs.entries()) {
      await deps.records.audiobook.create(doc);
      await (n % 2 === 0 ? (deps.dispatcher as TaskMesh) : second).dispatch("audiobook", doc);
    }
    // x's first two came alone: they fill the queue, the rest wait
    await eventually(async () => received.length, (n) => n === 2, "two books in the queue");
    await second.sweep();
    expect(received).toEqual([docs[0]!.id, docs[1]!.id]);

    // each start frees one place: to y (no turn yet, older than z's), to z, then to y again (one in flight against x's two)
    const start = async (doc: AudioBookDoc, count: number) => {
      await bus.publishEvent("task", event({ task_id: doc.id, seq: 2 ** 20, progress: 0 }));
      await eventually(async () => received.length, (n) => n === count, `book ${count} out`);
    };
    await start(docs[0]!, 3);
    await start(docs[1]!, 4);
    await start(docs[3]!, 5);
    expect(received.slice(2)).toEqual([docs[3]!.id, docs[5]!.id, docs[4]!.id]);
    // later progress events of a started task free nothing more
    await bus.publishEvent("task", event({ task_id: docs[0]!.id, seq: 2 ** 20 + 1, progress: 50 }));
    await (deps.dispatcher as TaskMesh).sweep();
    expect(received).toHaveLength(5);
  });

  it("the sweep frees a place in the queue left taken by a start never projected, or by a crash between claiming it and publishing", async () => {
    const { t, bus } = await setup({ sweepIntervalMs: 60_000, sweepGraceMs: 0 });
    const deps = t.gateway.deps;
    const received: string[] = [];
    const sub = await bus.consumeWork("audiobook", async ({ data }) => {
      received.push(data.task_id);
      return outcome.ack();
    });
    cleanups.push(() => sub.stop());
    const slots = await DispatchSlots.open(deps.store, { accountInFlight: 4, queueUnstarted: 1 });
    const book = (n: number, account: string) => storedBook(`0190c4c2-8d3e-7000-8000-00000000050${n}`, account, account, new Date(Date.now() - 60_000 + n));
    const mesh = deps.dispatcher as TaskMesh;
    // the places claimed below are then older than the sweep's grace (0 ms), to the millisecond
    const sweepLater = async () => {
      await new Promise((r) => setTimeout(r, 5));
      await mesh.sweep();
    };

    // a task a worker started, whose place the gateway projecting its start did not free (it died): the only place
    const started = book(0, "started");
    await deps.records.audiobook.create({ ...started, task_status: "processing", published: true });
    expect(await slots.claimQueued("audiobook", started.account_id, started.id)).toBe(true);
    const first = book(1, "first");
    await deps.records.audiobook.create(first);
    await mesh.dispatch("audiobook", first);
    expect(received).toEqual([]);
    await sweepLater();
    await eventually(async () => received.length, (n) => n === 1, "the waiting book");
    expect(received).toEqual([first.id]);

    // the first book started; a gateway claimed the freed place for the next book and died before publishing it
    await slots.leaveQueue(first.id);
    const next = book(2, "next");
    await deps.records.audiobook.create(next);
    expect(await slots.claimQueued("audiobook", next.account_id, next.id)).toBe(true);
    await sweepLater();
    await eventually(async () => received.length, (n) => n === 2, "the next book");
    expect(received).toEqual([first.id, next.id]);
  });

  it("takes accounts in turn: of one account's twelve books and then four other accounts' one each, each of the four finishes before the first account's third", async () => {
    const { t, bus } = await setup({ sweepIntervalMs: 60_000 });
    const deps = t.gateway.deps;
    const mesh = deps.dispatcher as TaskMesh;
    // One worker taking one book at a time (the audio book service's default): it opens the task, works a moment, completes it.
    const finished: string[] = [];
    const sub = await bus.consumeWork("audiobook", async ({ data }) => {
      await bus.publishEvent("task", event({ task_id: data.task_id, seq: 2 ** 20, progress: 0 }));
      await new Promise((r) => setTimeout(r, 20));
      await bus.publishEvent("task", event({ task_id: data.task_id, seq: 2 ** 20 + 1, status: "completed", progress: 100 }));
      finished.push(data.account_id);
      return outcome.ack();
    });
    cleanups.push(() => sub.stop());

    const accounts = ["first", "second", "third", "fourth", "fifth"];
    const submissions = [...Array.from({ length: 12 }, () => "first"), ...accounts.slice(1)];
    const start = Date.now();
    for (const [n, account] of submissions.entries()) {
      const doc = storedBook(`0190c4c2-8d3e-7000-8000-0000000003${String(n).padStart(2, "0")}`, account, `${account} ${n}`, new Date(start + n));
      await deps.records.audiobook.create(doc);
      await mesh.dispatch("audiobook", doc);
    }
    await eventually(async () => finished.length, (n) => n === submissions.length, "every book finished");
    const firstsThird = finished.map((a, i) => (a === "first" ? i : -1)).filter((i) => i >= 0)[2]!;
    const others = accounts.slice(1).map((account) => ({ account, finishedAt: finished.indexOf(account) }));
    // on a first-in-first-out queue the four wait for the first account's first four (its places in flight)
    expect(others.filter((o) => o.finishedAt > firstsThird)).toEqual([]);
  });
});
