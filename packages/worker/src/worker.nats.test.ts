import { randomUUID } from "node:crypto";
import { createNatsBus } from "@voiceloc/bus";
import type { TaskEvent } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { startNatsServer, type NatsServerHandle } from "@voiceloc/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TaskInputError } from "./errors.ts";
import { checkpointPrefix } from "./keys.ts";
import { SEQ_DELIVERY_SPAN } from "./seq.ts";
import { createTaskWorker, type TaskHandler, type TaskWorker } from "./worker.ts";
import { createHarness, recordingSettlements, waitFor, type Harness, type TestTask } from "./testing/harness.ts";

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(name: string): Promise<Harness> {
  const bus = await createNatsBus({ url: server.url, logger: silentLogger(), name: "worker-test" });
  const h = await createHarness({ bus, queue: { name, subject: `work.test.${name}` } });
  cleanups.push(h.cleanup);
  return h;
}

function worker(h: Harness, handle: TaskHandler<TestTask>, bus = h.bus): TaskWorker {
  const w = createTaskWorker({
    bus,
    blobs: h.blobs,
    kind: "audiobook",
    catalog: h.catalog,
    logger: silentLogger(),
    handle,
    // Parts already checkpointed, 20 % each.
    initialProgress: async (_task, ctx) => (await ctx.checkpoints.list()).length * 20,
  });
  cleanups.push(() => w.stop({ graceMs: 5_000 }));
  return w;
}

const terminal = (e: TaskEvent) => e.status === "completed" || e.status === "failed";

describe("createTaskWorker over nats-server", () => {
  it("retries after a crash, resumes from checkpoints (opening at the progress done) and completes with rising seq", async () => {
    const h = await setup("nats-resume");
    const ran: number[] = [];
    const w = worker(h, async (_task, ctx) => {
      for (let i = 1; i <= 4; i++) {
        if (await ctx.checkpoints.has(`part-${i}`)) continue;
        ran.push(i);
        await ctx.checkpoints.put(`part-${i}`, Buffer.from(String(i)));
        ctx.progress(i * 20);
        if (ctx.deliveryCount === 1 && i === 2) throw new Error("connection reset");
      }
      const key = ctx.resultKey("mp3");
      await h.blobs.put(key, Buffer.from("audio"));
      return { resultKey: key };
    });
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await waitFor(() => h.eventsOf(id).some(terminal), "the completed event");
    await w.stop();

    expect(ran).toEqual([1, 2, 3, 4]);
    const events = h.eventsOf(id);
    for (let i = 1; i < events.length; i++) expect(events[i]!.seq).toBeGreaterThan(events[i - 1]!.seq);
    expect(events[0]).toMatchObject({ status: "processing", seq: SEQ_DELIVERY_SPAN, progress: 0 });
    // The redelivery opens at the two parts already stored, not at 0.
    expect(events.find((e) => e.seq === 2 * SEQ_DELIVERY_SPAN)).toMatchObject({ status: "processing", progress: 40 });
    expect(events.at(-1)).toMatchObject({ status: "completed", progress: 100, result_key: `results/audiobook/${id}.mp3` });
    expect(Math.floor(events.at(-1)!.seq / SEQ_DELIVERY_SPAN)).toBe(2);
    expect(await h.blobs.list(checkpointPrefix(id))).toEqual([]);
  });

  it("a TaskInputError fails the task once, without redelivery", async () => {
    const h = await setup("nats-input");
    const { bus, settled } = recordingSettlements(h.bus);
    let calls = 0;
    const w = worker(
      h,
      async () => {
        calls++;
        throw new TaskInputError("The audio file could not be read.");
      },
      bus,
    );
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await waitFor(() => settled.length > 0 && h.eventsOf(id).some(terminal), "the failed event and the settled delivery");
    await w.stop();
    // Acked on its first delivery: nats-server never delivers it again.
    expect(settled).toEqual([{ msgId: id, deliveryCount: 1, outcome: { kind: "ack" } }]);
    expect(calls).toBe(1);
    expect(h.eventsOf(id).map((e) => [e.status, e.error ?? null])).toEqual([
      ["processing", null],
      ["failed", "The audio file could not be read."],
    ]);
  });
});
