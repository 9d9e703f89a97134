import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { LeaseExpiredError, createCatalogBus, type Bus, type DeadLetter } from "@voiceloc/bus";
import { BUS_CATALOG, type AudioBookWork, type TaskEvent, type VoiceStreamWork } from "@voiceloc/contracts";
import { createLogger, silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg } from "@voiceloc/media";
import { afterEach, describe, expect, it } from "vitest";
import { TaskInputError, RetryableTaskError } from "./errors.ts";
import { taskFailure } from "./policy.ts";
import { SEQ_DELIVERY_SPAN, taskEventSeq } from "./seq.ts";
import { checkpointKey, checkpointPrefix, resultKeyFor } from "./keys.ts";
import { createTaskWorker, type TaskHandler, type TaskWorker, type TaskWorkerOptions } from "./worker.ts";
import { createHarness, deferred, recordingSettlements, sleep, waitFor, type Harness, type TestCatalog, type TestTask } from "./testing/harness.ts";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(options: Parameters<typeof createHarness>[0] = {}): Promise<Harness> {
  const h = await createHarness(options);
  cleanups.push(h.cleanup);
  return h;
}

function worker(
  h: Harness,
  handle: TaskHandler<TestTask>,
  extra: { concurrency?: number; progressIntervalMs?: number; bus?: Bus; initialProgress?: TaskWorkerOptions<TestCatalog, "subtitle">["initialProgress"] } = {},
): TaskWorker {
  const w = createTaskWorker({
    bus: extra.bus ?? h.bus,
    blobs: h.blobs,
    kind: "subtitle",
    catalog: h.catalog,
    logger: silentLogger(),
    handle,
    ...(extra.concurrency === undefined ? {} : { concurrency: extra.concurrency }),
    ...(extra.progressIntervalMs === undefined ? {} : { progressIntervalMs: extra.progressIntervalMs }),
    ...(extra.initialProgress === undefined ? {} : { initialProgress: extra.initialProgress }),
  });
  cleanups.push(() => w.stop({ graceMs: 5_000 }));
  return w;
}

const terminal = (e: TaskEvent) => e.status === "completed" || e.status === "failed";
const deliveryOf = (e: TaskEvent) => Math.floor(e.seq / SEQ_DELIVERY_SPAN);

function expectRisingSeq(events: TaskEvent[]): void {
  for (let i = 1; i < events.length; i++) expect(events[i]!.seq).toBeGreaterThan(events[i - 1]!.seq);
}

describe("seq", () => {
  it("is deliveryCount * 2^20 + counter, so a later delivery outranks an earlier one", () => {
    expect(taskEventSeq(1, 0)).toBe(1_048_576);
    expect(taskEventSeq(2, 0)).toBeGreaterThan(taskEventSeq(1, SEQ_DELIVERY_SPAN - 1));
    expect(() => taskEventSeq(0, 0)).toThrow();
    expect(() => taskEventSeq(1, SEQ_DELIVERY_SPAN)).toThrow();
  });
});

describe("keys", () => {
  it("builds checkpoint and result keys and refuses bad names", () => {
    const id = randomUUID();
    expect(checkpointKey(id, "part-1")).toBe(`tasks/${id}/checkpoints/part-1`);
    expect(resultKeyFor("audiobook", id, ".mp3")).toBe(`results/audiobook/${id}.mp3`);
    expect(() => checkpointKey(id, "../x")).toThrow(expect.objectContaining({ name: "InvalidCheckpointNameError", code: "invalid_checkpoint_name" }));
    expect(() => checkpointPrefix("a.b")).toThrow(expect.objectContaining({ code: "invalid_argument" }));
    expect(() => resultKeyFor("subtitle", id, "s/rt")).toThrow();
  });
});

describe("createTaskWorker (in-process bus, fs blobs)", () => {
  it("publishes processing first, throttled rising progress, then completed with the result key", async () => {
    const h = await setup();
    let workDir = "";
    let workDirExisted = false;
    const w = worker(h, async (task, ctx) => {
      workDir = ctx.workDir;
      workDirExisted = existsSync(ctx.workDir);
      for (let p = 1; p <= 100; p++) ctx.progress(p, "translating");
      ctx.progress(50); // lower than published: never goes back
      ctx.progress(250); // clamped to 100
      await sleep(400);
      ctx.progress(100);
      const key = ctx.resultKey("srt");
      await h.blobs.put(key, Buffer.from(`result of ${task.task_id}`));
      return { resultKey: key, subtitleKey: key };
    });
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await waitFor(() => h.eventsOf(id).some(terminal), "the completed event");
    await w.stop();

    const events = h.eventsOf(id);
    expect(events[0]).toMatchObject({ status: "processing", progress: 0, seq: taskEventSeq(1, 0), kind: "subtitle" });
    expect(events[1]).toMatchObject({ status: "processing", progress: 1 });
    expectRisingSeq(events);
    const progress = events.map((e) => e.progress);
    expect([...progress].sort((a, b) => a - b)).toEqual(progress);
    expect(events.length).toBeLessThan(10); // 100 reports in a tight loop are throttled
    const last = events.at(-1)!;
    expect(last).toMatchObject({ status: "completed", progress: 100, result_key: `results/subtitle/${id}.srt`, subtitle_key: `results/subtitle/${id}.srt` });
    expect(events.at(-2)).toMatchObject({ status: "processing", progress: 100 }); // the latest report goes out
    expect(events.filter(terminal)).toHaveLength(1);
    expect(workDirExisted).toBe(true);
    expect(existsSync(workDir)).toBe(false);
  });

  it("a TaskInputError fails the task with its message once, without redelivery", async () => {
    const h = await setup();
    const deadLetters: DeadLetter[] = [];
    await h.bus.onDeadLetter(h.queue, async (d) => void deadLetters.push(d));
    const { bus, settled } = recordingSettlements(h.bus);
    let calls = 0;
    const w = worker(
      h,
      async () => {
        calls++;
        throw new TaskInputError("The file is not a text file.");
      },
      { bus },
    );
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await waitFor(() => settled.length > 0, "the delivery to be settled");
    await w.stop();

    // Acked on its first delivery: the bus never delivers it again.
    expect(settled).toEqual([{ msgId: id, deliveryCount: 1, outcome: { kind: "ack" } }]);
    expect(calls).toBe(1);
    const events = h.eventsOf(id);
    expect(events.map((e) => e.status)).toEqual(["processing", "failed"]);
    expect(events[1]).toMatchObject({ error: "The file is not a text file." });
    expect(deadLetters).toHaveLength(0);
  });

  it("retries a failing handler with back-off and completes; a later delivery's events outrank earlier ones", async () => {
    const h = await setup({ queue: { backoffMs: [300, 300] } });
    const starts: number[] = [];
    const failures: number[] = [];
    const deliveries: number[] = [];
    const w = worker(h, async (_task, ctx) => {
      starts.push(Date.now());
      deliveries.push(ctx.deliveryCount);
      ctx.progress(10 * ctx.deliveryCount);
      if (ctx.deliveryCount === 1) {
        failures.push(Date.now());
        throw new Error("engine unavailable");
      }
      if (ctx.deliveryCount === 2) {
        failures.push(Date.now());
        throw new RetryableTaskError("engine still busy");
      }
      return ctx.resultKey("mp3");
    });
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await waitFor(() => h.eventsOf(id).some(terminal), "the completed event");
    await w.stop();

    expect(starts).toHaveLength(3);
    expect(deliveries).toEqual([1, 2, 3]);
    expect(starts[1]! - failures[0]!).toBeGreaterThanOrEqual(250);
    expect(starts[2]! - failures[1]!).toBeGreaterThanOrEqual(250);
    const events = h.eventsOf(id);
    expect(events.filter((e) => e.status === "failed")).toHaveLength(0);
    expect(events.at(-1)).toMatchObject({ status: "completed", result_key: `results/subtitle/${id}.mp3` });
    expectRisingSeq(events);
    expect(events.map(deliveryOf)).toEqual([1, 1, 2, 2, 3, 3, 3]);
    const maxOf = (d: number) => Math.max(...events.filter((e) => deliveryOf(e) === d).map((e) => e.seq));
    const minOf = (d: number) => Math.min(...events.filter((e) => deliveryOf(e) === d).map((e) => e.seq));
    expect(minOf(2)).toBeGreaterThan(maxOf(1));
    expect(minOf(3)).toBeGreaterThan(maxOf(2));
  });

  it("fails the task on its last attempt with a plain-words reason and acks it (no dead letter)", async () => {
    const h = await setup();
    const deadLetters: DeadLetter[] = [];
    await h.bus.onDeadLetter(h.queue, async (d) => void deadLetters.push(d));
    const { bus, settled } = recordingSettlements(h.bus);
    const lastAttempts: boolean[] = [];
    const w = worker(
      h,
      async (_task, ctx) => {
        lastAttempts.push(ctx.lastAttempt);
        throw new RetryableTaskError("the speech engine is busy");
      },
      { bus },
    );
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await waitFor(() => settled.some((s) => s.outcome.kind === "ack"), "the delivery to be acked");
    await w.stop();

    expect(lastAttempts).toEqual([false, false, true]);
    expect(settled.map((s) => [s.deliveryCount, s.outcome.kind])).toEqual([
      [1, "retry"],
      [2, "retry"],
      [3, "ack"],
    ]);
    const failed = h.eventsOf(id).filter(terminal);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ status: "failed" });
    expect(failed[0]!.error).toBe("The subtitles could not be completed after 3 attempts: the speech engine is busy");
    expect(deliveryOf(failed[0]!)).toBe(3);
    expect(deadLetters).toHaveLength(0);
  });

  it("a bug is retried, logged, and reported as an internal error without its message, path or stack", async () => {
    const h = await setup();
    const { bus, settled } = recordingSettlements(h.bus);
    const w = worker(
      h,
      async () => {
        const bug = new TypeError("Cannot read properties of undefined (reading 'segments') in /srv/voiceloc/pipeline.ts");
        throw bug;
      },
      { bus },
    );
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await waitFor(() => settled.some((s) => s.outcome.kind === "ack"), "the delivery to be acked");
    await w.stop();

    expect(settled.map((s) => s.outcome.kind)).toEqual(["retry", "retry", "ack"]);
    expect(h.eventsOf(id).filter(terminal).map((e) => e.error)).toEqual([
      "The subtitles could not be completed after 3 attempts: an internal error on the server stopped it.",
    ]);
  });

  it("task_error is plain words: stderr, a heap address, a path and a stack trace never reach the failed event", async () => {
    const h = await setup();
    const w = worker(h, async () => {
      const error = new TaskInputError(
        "Decoding the audio failed: [pcm_s16le @ 0x55abdb24a500] Decoder requires channel count in /tmp/voiceloc-subtitle-x/input.wav from 10.1.2.3:9000",
      );
      error.message += "\n    at decode (/work/services/voice-stream/src/pipeline.ts:120:11)";
      throw error;
    });
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await waitFor(() => h.eventsOf(id).some(terminal), "the failed event");
    await w.stop();

    const error = h.eventsOf(id).find(terminal)?.error ?? "";
    expect(error).toBe("Decoding the audio failed: Decoder requires channel count in (a file on the server) from (address)");
    expect(error).not.toMatch(/0x|\/tmp|\/work|10\.1|\bat\b|\n/);
  });

  it("the retry reason handed to the bus (which a dead letter carries into the task error) is plain words too", async () => {
    const h = await setup();
    const { bus, settled } = recordingSettlements(h.bus);
    const w = worker(
      h,
      async () => {
        throw new RetryableTaskError("The speech service at 10.0.0.7:8000 failed: [http @ 0x7f00aa11bb22] reset\n    at fetch (node:internal/deps/undici:1:1)");
      },
      { bus },
    );
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await waitFor(() => settled.length > 0, "the first delivery to be settled");
    await w.stop();
    expect(settled[0]?.outcome).toMatchObject({ kind: "retry", reason: "The speech service at (address) failed: reset" });
  });

  it("a redelivery opens with the progress its checkpoints show, not 0 (initialProgress)", async () => {
    const h = await setup({ queue: { backoffMs: [50] } });
    const opened: number[] = [];
    const w = worker(
      h,
      async (_task, ctx) => {
        for (let i = 1; i <= 5; i++) {
          if (await ctx.checkpoints.has(`part-${i}`)) continue;
          await ctx.checkpoints.put(`part-${i}`, Buffer.from(String(i)));
          ctx.progress(i * 20);
          if (ctx.deliveryCount === 1 && i === 3) throw new RetryableTaskError("worker crashed after part 3");
        }
        return ctx.resultKey("srt");
      },
      {
        progressIntervalMs: 0,
        initialProgress: async (_task, ctx) => {
          const done = (await ctx.checkpoints.list()).length * 20;
          opened.push(done);
          return done;
        },
      },
    );
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await waitFor(() => h.eventsOf(id).some(terminal), "the completed event");
    await w.stop();

    expect(opened).toEqual([0, 60]);
    const events = h.eventsOf(id);
    const firstOf = (d: number) => events.find((e) => deliveryOf(e) === d);
    expect(firstOf(1)).toMatchObject({ status: "processing", progress: 0 });
    expect(firstOf(2)).toMatchObject({ status: "processing", progress: 60 });
    // Within a delivery progress never goes below its opening value.
    for (const d of [1, 2]) {
      const progress = events.filter((e) => deliveryOf(e) === d).map((e) => e.progress);
      expect([...progress].sort((a, b) => a - b)).toEqual(progress);
    }
    expect(events.at(-1)).toMatchObject({ status: "completed", progress: 100 });
  });

  it("resumes from checkpoints on redelivery: parts 1-3 are not redone", async () => {
    const h = await setup();
    const ran: number[] = [];
    const runPart = (i: number) => {
      ran.push(i);
      return Buffer.from(`part ${i};`);
    };
    let seenOnRedelivery: string[] = [];
    const w = worker(h, async (_task, ctx) => {
      if (ctx.deliveryCount > 1) seenOnRedelivery = await ctx.checkpoints.list();
      for (let i = 1; i <= 5; i++) {
        const name = `part-${i}`;
        if (await ctx.checkpoints.has(name)) continue;
        await ctx.checkpoints.put(name, runPart(i));
        ctx.progress(i * 18);
        if (ctx.deliveryCount === 1 && i === 3) throw new Error("worker crashed after part 3");
      }
      const parts: Buffer[] = [];
      for (let i = 1; i <= 5; i++) parts.push(await readFile(await ctx.checkpoints.get(`part-${i}`)));
      const key = ctx.resultKey("txt");
      await h.blobs.put(key, Buffer.concat(parts));
      return { resultKey: key };
    });
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await waitFor(() => h.eventsOf(id).some(terminal), "the completed event");
    await w.stop();

    expect(ran).toEqual([1, 2, 3, 4, 5]);
    expect(seenOnRedelivery).toEqual(["part-1", "part-2", "part-3"]);
    expect(h.eventsOf(id).at(-1)).toMatchObject({ status: "completed", result_key: `results/subtitle/${id}.txt` });
    const result = await readFile(await h.blobs.toLocalFile(`results/subtitle/${id}.txt`, "/unused"), "utf8");
    expect(result).toBe("part 1;part 2;part 3;part 4;part 5;");
    expect(await h.blobs.list(checkpointPrefix(id))).toEqual([]);
  });

  it("never runs more than `concurrency` tasks at once and handles them all", async () => {
    const h = await setup();
    let active = 0;
    let maxActive = 0;
    const gate = deferred();
    const w = worker(
      h,
      async (task) => {
        active++;
        maxActive = Math.max(maxActive, active);
        try {
          await gate.promise;
          return `results/subtitle/${task.task_id}.srt`;
        } finally {
          active--;
        }
      },
      { concurrency: 2 },
    );
    const ids = Array.from({ length: 6 }, () => randomUUID());
    for (const id of ids) await h.publish({ task_id: id });
    await w.start();
    await waitFor(() => active === 2, "two tasks in flight");
    gate.resolve();
    await waitFor(() => ids.every((id) => h.eventsOf(id).some(terminal)), "every task to complete");
    await w.stop();
    expect(maxActive).toBe(2);
    for (const id of ids) expect(h.eventsOf(id).filter(terminal).map((e) => e.status)).toEqual(["completed"]);
  });

  it("stop() drains: waits for the task in flight, settles it, and pulls nothing new", async () => {
    const h = await setup();
    const started: string[] = [];
    const gate = deferred();
    const { bus, settled } = recordingSettlements(h.bus);
    const w = worker(
      h,
      async (task) => {
        started.push(task.task_id);
        await gate.promise;
        return `results/subtitle/${task.task_id}.srt`;
      },
      { bus },
    );
    await w.start();
    const first = randomUUID();
    await h.publish({ task_id: first });
    await waitFor(() => started.length === 1, "the first task to start");
    let stopped = false;
    const stopping = w.stop().then(() => {
      stopped = true;
    });
    const second = randomUUID();
    await h.publish({ task_id: second });
    await sleep(300);
    expect(stopped).toBe(false);
    gate.resolve();
    await stopping;
    expect(h.eventsOf(first).at(-1)).toMatchObject({ status: "completed" });
    expect(started).toEqual([first]);
    expect(h.eventsOf(second)).toEqual([]);
    // The first task was acked before stop() returned: it is never delivered again.
    expect(settled).toEqual([{ msgId: first, deliveryCount: 1, outcome: { kind: "ack" } }]);

    const next: string[] = [];
    const w2 = worker(h, async (task) => {
      next.push(task.task_id);
      return `results/subtitle/${task.task_id}.srt`;
    });
    await w2.start();
    await waitFor(() => h.eventsOf(second).some(terminal), "the second task");
    await w2.stop();
    expect(next).toEqual([second]);
  });

  it("stop({ graceMs }) aborts an overrunning handler without failing the task; another worker redoes it", async () => {
    const h = await setup();
    const w = worker(h, async (_task, ctx) => {
      await new Promise((_resolve, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason as Error)));
      return "never";
    });
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await waitFor(() => h.eventsOf(id).length === 1, "the processing event");
    const stopStarted = performance.now();
    await w.stop({ graceMs: 200 });
    // The grace period bounds the stop: a hang would not return (the bound is loose for loaded machines).
    expect(performance.now() - stopStarted).toBeLessThan(5_000);
    expect(h.eventsOf(id).filter(terminal)).toEqual([]);

    const w2 = worker(h, async (_task, ctx) => ctx.resultKey("srt"));
    await w2.start();
    await waitFor(() => h.eventsOf(id).some(terminal), "the redelivered task to complete");
    await w2.stop();
    const events = h.eventsOf(id);
    expect(events.filter(terminal).map((e) => e.status)).toEqual(["completed"]);
    expect(deliveryOf(events.at(-1)!)).toBe(2);
  });

  it("after a lost lease the stale delivery publishes nothing more; the redelivery completes", async () => {
    const h = await setup();
    // The real bus, with the first delivery's signal replaced by one the test aborts as the bus would.
    const lease = new AbortController();
    const proxy: Bus = {
      ...h.bus,
      consumeWork: (queue, schema, handler, options) =>
        h.bus.consumeWork(queue, schema, (ctx) => handler(ctx.deliveryCount === 1 ? { ...ctx, signal: lease.signal } : ctx), options),
    };
    const progressed = deferred();
    const resume = deferred();
    const w = worker(
      h,
      async (_task, ctx) => {
        ctx.progress(20);
        if (ctx.deliveryCount === 1) {
          progressed.resolve();
          await resume.promise;
          ctx.progress(90); // after the lease is lost: dropped
          return ctx.resultKey("srt"); // finishing anyway publishes nothing
        }
        return ctx.resultKey("vtt");
      },
      { bus: proxy, progressIntervalMs: 0 },
    );
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await progressed.promise;
    await waitFor(() => h.eventsOf(id).length === 2, "the first delivery's progress");
    lease.abort(new LeaseExpiredError(5_000));
    resume.resolve();
    await waitFor(() => h.eventsOf(id).some(terminal), "the redelivery to complete");
    await w.stop();

    const events = h.eventsOf(id);
    expect(events.filter((e) => deliveryOf(e) === 1).map((e) => [e.status, e.progress])).toEqual([
      ["processing", 0],
      ["processing", 20],
    ]);
    expect(events.filter(terminal)).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ status: "completed", result_key: `results/subtitle/${id}.vtt` });
    expect(deliveryOf(events.at(-1)!)).toBe(2);
  });

  it("a redelivery whose task the overtaken delivery finished meanwhile ends quietly: no failed event, no \"file is damaged\"", async () => {
    const h = await setup({ queue: { ackWaitMs: 1_000 } });
    const media = createMediaToolkit(await resolveFfmpeg({ logger: silentLogger() }), silentLogger());
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } });
    // The first delivery never learns that its lease ran out (as after a nats-server restart): no
    // heartbeat reaches the server, which hands the task to a second delivery while the first goes on.
    const unaware = new AbortController();
    const proxy: Bus = {
      ...h.bus,
      consumeWork: (queue, schema, handler, options) =>
        h.bus.consumeWork(queue, schema, (ctx) => handler(ctx.deliveryCount === 1 ? { ...ctx, signal: unaware.signal } : ctx), { ...options, heartbeat: false }),
    };
    const secondRead = deferred();
    const firstDone = deferred();
    const w = createTaskWorker({
      bus: proxy,
      blobs: h.blobs,
      kind: "subtitle",
      catalog: h.catalog,
      logger,
      concurrency: 2,
      handle: async (_task, ctx) => {
        if (ctx.deliveryCount === 1) {
          await ctx.checkpoints.put("audio.wav", Buffer.from("RIFF"));
          await secondRead.promise;
          return ctx.resultKey("srt"); // completes the task and removes its checkpoints
        }
        const names = await ctx.checkpoints.list(); // the first delivery's audio, to resume from
        secondRead.resolve();
        await firstDone.promise;
        const audio = join(ctx.workDir, names[0] ?? "audio.wav");
        // Probing a file that is not there: ffprobe's "damaged or not a media file".
        await media.probe(audio).catch((error: unknown) => {
          throw taskFailure(error, { scope: "input" });
        });
        return ctx.resultKey("vtt");
      },
    });
    cleanups.push(() => w.stop({ graceMs: 5_000 }));
    await w.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await waitFor(() => h.eventsOf(id).some(terminal), "the first delivery to complete the task");
    firstDone.resolve();
    await waitFor(() => lines.some((l) => l.deliveryCount === 2 && /without a verdict|task failed|attempt failed/.test(String(l.msg))), "the second delivery to end");
    await w.stop();

    expect(h.eventsOf(id).filter(terminal).map((e) => [e.status, deliveryOf(e)])).toEqual([["completed", 1]]);
    const second = lines.filter((l) => l.taskId === id && l.deliveryCount === 2);
    expect(second.filter((l) => l.level === "warn" || l.level === "error")).toEqual([]);
    expect(JSON.stringify(second.filter((l) => l.level !== "debug"))).not.toMatch(/damaged/);
    expect(second).toContainEqual(expect.objectContaining({ level: "info", msg: expect.stringMatching(/another delivery finished this task/) }));
  });

  it("consumes the catalogue's queue of its kind with that queue's payload type, and publishes the task events of the catalogue", async () => {
    const h = await setup();
    await h.bus.provision({ queues: [BUS_CATALOG.work.audiobook.queue] });
    const names: string[] = [];
    const w = createTaskWorker({
      bus: h.bus,
      catalog: BUS_CATALOG,
      blobs: h.blobs,
      kind: "audiobook",
      logger: silentLogger(),
      // The handler's task is the audio book payload: its fields type-check without a cast.
      handle: async (task: AudioBookWork, ctx) => {
        names.push(task.name);
        return ctx.resultKey("mp3");
      },
    });
    cleanups.push(() => w.stop({ graceMs: 5_000 }));
    await w.start();
    const book: AudioBookWork = {
      kind: "audiobook",
      task_id: randomUUID(),
      account_id: "alice",
      file: "book.txt",
      source_language: "English",
      target_language: "English",
      name: "Typed",
      preset_voice_name: null,
      use_voice_clone: false,
      voice_clone_sample: null,
    };
    await createCatalogBus(h.bus, BUS_CATALOG).publishWork("audiobook", book);
    await waitFor(() => h.eventsOf(book.task_id).some(terminal), "the audio book to complete");
    expect(names).toEqual(["Typed"]);
    expect(h.eventsOf(book.task_id).at(-1)).toMatchObject({ kind: "audiobook", status: "completed", result_key: `results/audiobook/${book.task_id}.mp3` });

    const voiceStreamHandler: TaskHandler<VoiceStreamWork> = async (task) => task.voice ?? "none";
    // A handler of another queue's payload does not compile, nor does a kind the catalogue lacks (refused at run time too).
    // @ts-expect-error the audio book queue does not carry voice stream work
    createTaskWorker({ bus: h.bus, catalog: BUS_CATALOG, blobs: h.blobs, kind: "audiobook", logger: silentLogger(), handle: voiceStreamHandler });
    const onlyEvents = { work: {}, events: { task: BUS_CATALOG.events.task }, requests: {} } as const;
    // @ts-expect-error this catalogue has no audio book queue
    expect(() => createTaskWorker({ bus: h.bus, catalog: onlyEvents, blobs: h.blobs, kind: "audiobook", logger: silentLogger(), handle: async () => "x" })).toThrow(
      expect.objectContaining({ code: "invalid_argument" }),
    );
  });

  it("start() after stop() is refused; invalid concurrency is refused", async () => {
    const h = await setup();
    const w = worker(h, async () => "x");
    await w.start();
    await w.stop();
    await expect(w.start()).rejects.toMatchObject({ name: "WorkerStoppedError", code: "worker_stopped" });
    expect(() =>
      createTaskWorker({ bus: h.bus, blobs: h.blobs, kind: "subtitle", catalog: h.catalog, logger: silentLogger(), concurrency: 0, handle: async () => "x" }),
    ).toThrow(expect.objectContaining({ code: "invalid_argument" }));
  });
});
