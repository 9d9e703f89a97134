import { afterEach, describe, expect, it } from "vitest";
import { createInProcessBus, outcome, type Bus } from "@voiceloc/bus";
import { SUBJECTS, WORK_QUEUES, WorkMessageSchema, type TaskEvent, type WorkMessage } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { startTestGateway, type TestGateway } from "../testing/harness.ts";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(options: { sweepIntervalMs?: number } = {}): Promise<{ t: TestGateway; bus: Bus }> {
  const bus = createInProcessBus({ logger: silentLogger() });
  const t = await startTestGateway({ PORT: "0", HOST: "127.0.0.1" }, { bus, ...options });
  await t.gateway.start();
  cleanups.push(async () => {
    await t.close();
    await bus.close();
  });
  return { t, bus };
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
    const sub = await bus.consumeWork(WORK_QUEUES.audiobook, WorkMessageSchema, async ({ data }) => {
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
    await bus.publishEvent(SUBJECTS.taskEvent("audiobook", created.id), event({ task_id: created.id, seq: 1, progress: 10 }));
    await eventually(read, (r) => r.task_progress === 10 && r.task_status === "processing", "progress 10");
    await bus.publishEvent(SUBJECTS.taskEvent("audiobook", created.id), event({ task_id: created.id, seq: 3, progress: 60 }));
    // a stale event (lower sequence) arriving late never moves the record backwards
    await bus.publishEvent(SUBJECTS.taskEvent("audiobook", created.id), event({ task_id: created.id, seq: 2, progress: 30 }));
    await bus.publishEvent(
      SUBJECTS.taskEvent("audiobook", created.id),
      event({ task_id: created.id, seq: 4, status: "completed", progress: 100, result_key: `results/audiobook/${created.id}.mp3` }),
    );
    const done = await eventually(read, (r) => r.task_status === "completed", "completion");
    expect(done.task_progress).toBe(100);
    expect(String(done.localized_file)).toMatch(new RegExp(`^http://api.test/v1/files/results/audiobook/${created.id}\\.mp3\\?expires=\\d+&signature=`));
    const history = await read();
    expect(history.task_progress).toBe(100);
  });

  it("marks a dead-lettered task failed with a reason in plain words", async () => {
    const { t, bus } = await setup();
    const sub = await bus.consumeWork(WORK_QUEUES["voice-stream"], WorkMessageSchema, async () => outcome.term("the audio file could not be decoded"));
    cleanups.push(() => sub.stop());
    const created = (await (await t.request("POST", "/v1/voices/streams", { body: { file: "x.wav", source_language: "English", target_language: "French" } })).json()) as { id: string };
    const failed = await eventually(
      async () => (await (await t.request("GET", `/v1/voices/streams/${created.id}`)).json()) as Record<string, unknown>,
      (r) => r.task_status === "failed",
      "the failure",
    );
    expect(failed.task_error).toBe("The task could not be processed: the audio file could not be decoded");
  });

  it("re-publishes a record whose work was never published (crash between store and publish)", async () => {
    const { t, bus } = await setup({ sweepIntervalMs: 200 });
    // Store a record directly, as if the process died before publishing.
    const now = new Date(Date.now() - 60_000).toISOString();
    const id = "0190c4c2-8d3e-7000-8000-000000000001";
    await t.gateway.deps.subtitles.create({
      id,
      account_id: "alice",
      task_status: "queued",
      task_progress: 0,
      task_error: null,
      result_key: null,
      seq: 0,
      published: false,
      date_created: now,
      date_updated: now,
      file: "clip.mp4",
      source_language: "English",
      target_language: "French",
      mode: "burn_in",
      subtitle_format: "srt",
      subtitle_key: null,
    });
    const received: string[] = [];
    const sub = await bus.consumeWork(WORK_QUEUES.subtitle, WorkMessageSchema, async ({ data }) => {
      received.push(data.task_id);
      return outcome.ack();
    });
    cleanups.push(() => sub.stop());
    await eventually(async () => received, (r) => r.includes(id), "the sweep to publish the record");
    // once published, the sweep leaves it alone (and the bus deduplicates by task id anyway)
    await new Promise((r) => setTimeout(r, 600));
    expect(received.filter((x) => x === id)).toHaveLength(1);
  });
});
