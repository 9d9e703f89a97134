/**
 * The behaviour every Bus adapter must share. Run it from an adapter's test file:
 *   describeBusContract("nats", async () => { const bus = ...; return { bus, cleanup: () => bus.close() }; });
 * Timings use short ack waits but wait for conditions with generous deadlines (loaded CI machines).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  LeaseExpiredError,
  NoRespondersError,
  NotProvisionedError,
  ProvisionError,
  PublishError,
  RemoteError,
  RequestTimeoutError,
  StoppingError,
  BusClosedError,
} from "../errors.ts";
import type {
  Bus,
  BusSubscription,
  DeadLetter,
  Schema,
  StreamSpec,
  Topology,
  WorkContext,
  WorkQueueSpec,
} from "../types.ts";

export interface BusFixture {
  bus: Bus;
  cleanup: () => Promise<void>;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls until the condition holds; fails with `what` after timeoutMs. */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export interface Job {
  n: number;
}

export const JobSchema: Schema<Job> = {
  parse(input: unknown): Job {
    if (typeof input === "object" && input !== null && typeof (input as { n?: unknown }).n === "number") {
      return { n: (input as { n: number }).n };
    }
    throw new Error("expected { n: number }");
  },
};

const AddSchema: Schema<{ a: number; b: number }> = {
  parse(input: unknown) {
    const o = input as { a?: unknown; b?: unknown } | null;
    if (typeof o?.a === "number" && typeof o.b === "number") return { a: o.a, b: o.b };
    throw new Error("expected { a: number, b: number }");
  },
};

let counter = 0;

/** A fresh work stream + queue per test, so tests never see each other's messages. */
export function workTopology(queueOverrides: Partial<WorkQueueSpec> = {}) {
  const id = `c${++counter}${Math.random().toString(36).slice(2, 8)}`;
  const stream: StreamSpec = { name: `W_${id}`, subjects: [`${id}.work.>`], kind: "work" };
  const queue: WorkQueueSpec = {
    stream: stream.name,
    name: `q_${id}`,
    subject: `${id}.work.job`,
    ackWaitMs: 1_500,
    maxDeliver: 5,
    backoffMs: [200],
    ...queueOverrides,
  };
  const topology: Topology = { streams: [stream], queues: [queue] };
  return { id, stream, queue, subject: queue.subject, topology };
}

function eventsTopology() {
  const id = `e${++counter}${Math.random().toString(36).slice(2, 8)}`;
  const stream: StreamSpec = { name: `E_${id}`, subjects: [`${id}.ev.>`], kind: "events" };
  return { id, stream, pattern: `${id}.ev.>`, subject: `${id}.ev.task`, topology: { streams: [stream] } satisfies Topology };
}

interface Call {
  n: number;
  deliveryCount: number;
  msgId: string | undefined;
  lastAttempt: boolean;
  at: number;
}

function record(calls: Call[], ctx: WorkContext<Job>): void {
  calls.push({ n: ctx.data.n, deliveryCount: ctx.deliveryCount, msgId: ctx.msgId, lastAttempt: ctx.lastAttempt, at: Date.now() });
}

/** Resolves when the signal aborts (or after a safety timeout), with the abort reason. */
function aborted(signal: AbortSignal, safetyMs = 20_000): Promise<unknown> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(signal.reason);
    const timer = setTimeout(() => resolve(undefined), safetyMs);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve(signal.reason);
    });
  });
}

export function describeBusContract(name: string, makeBus: () => Promise<BusFixture>): void {
  // Generous limits: a loaded 2-core CI machine and a real server; tests wait for conditions, not fixed times.
  describe(`bus contract: ${name}`, { timeout: 60_000 }, () => {
    let fixture: BusFixture;
    let bus: Bus;

    beforeEach(async () => {
      fixture = await makeBus();
      bus = fixture.bus;
    }, 60_000);

    afterEach(async () => {
      await fixture.cleanup();
    }, 60_000);

    function deadLetters(queue: WorkQueueSpec): Promise<{ list: DeadLetter[]; sub: BusSubscription }> {
      const list: DeadLetter[] = [];
      return bus.onDeadLetter(queue, async (dl) => {
        list.push(dl);
      }).then((sub) => ({ list, sub }));
    }

    describe("provisioning", () => {
      it("is idempotent and accepts updated settings", async () => {
        const t = workTopology();
        await bus.provision(t.topology);
        await bus.provision(t.topology);
        await bus.provision({ streams: t.topology.streams ?? [], queues: [{ ...t.queue, ackWaitMs: 2_500, maxDeliver: 7 }] });
        await bus.provision(t.topology);
        const calls: Call[] = [];
        const sub = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          record(calls, ctx);
          return { kind: "ack" };
        });
        await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-1` });
        await waitFor(() => calls.length === 1, "the message");
        await sub.stop();
      });

      it("refuses to consume or listen before provisioning, and to publish where no stream listens", async () => {
        const t = workTopology();
        await expect(bus.consumeWork(t.queue, JobSchema, async () => ({ kind: "ack" }))).rejects.toBeInstanceOf(NotProvisionedError);
        await expect(bus.onDeadLetter(t.queue, async () => undefined)).rejects.toBeInstanceOf(NotProvisionedError);
        const error = await bus.publishWork(`${t.id}.nowhere`, { n: 1 }, { msgId: "x" }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(PublishError);
        expect((error as PublishError).code).toBe("no_stream");
      });

      it("rejects changing a stream's kind", async () => {
        const t = workTopology();
        await bus.provision(t.topology);
        await expect(bus.provision({ streams: [{ ...t.stream, kind: "events" }] })).rejects.toBeInstanceOf(ProvisionError);
      });
    });

    describe("work queues", () => {
      it("delivers a message once and acks it", async () => {
        const t = workTopology({ ackWaitMs: 1_000 });
        await bus.provision(t.topology);
        const calls: Call[] = [];
        const sub = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          record(calls, ctx);
          return { kind: "ack" };
        });
        const published = await bus.publishWork(t.subject, { n: 7 }, { msgId: `${t.id}-task` });
        expect(published.duplicate).toBe(false);
        expect(published.stream).toBe(t.stream.name);
        await waitFor(() => calls.length === 1, "the delivery");
        expect(calls[0]).toMatchObject({ n: 7, deliveryCount: 1, msgId: `${t.id}-task`, lastAttempt: false });
        await sleep(2_500); // > 2 ack waits: an unacked message would be back by now
        expect(calls).toHaveLength(1);
        await sub.stop();
      });

      it("queueStats reports the backlog: pending, then delivered and unsettled, then drained", async () => {
        const t = workTopology({ ackWaitMs: 10_000 });
        await bus.provision(t.topology);
        const statsUntil = async (want: { pending: number; ackPending: number; redelivered: number }) => {
          let last: unknown;
          for (let i = 0; i < 100; i += 1) {
            const [stats] = await bus.queueStats([t.queue]);
            last = stats;
            if (stats?.pending === want.pending && stats.ackPending === want.ackPending && stats.redelivered === want.redelivered) return;
            await sleep(100);
          }
          expect(last).toEqual({ queue: t.queue.name, ...want });
        };
        for (const n of [1, 2, 3]) await bus.publishWork(t.subject, { n }, { msgId: `${t.id}-${n}` });
        await statsUntil({ pending: 3, ackPending: 0, redelivered: 0 });
        let release: () => void = () => undefined;
        const gate = new Promise<void>((resolve) => (release = resolve));
        const calls: Call[] = [];
        const sub = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          record(calls, ctx);
          await gate;
          return { kind: "ack" };
        });
        await waitFor(() => calls.length === 1, "the first delivery");
        await statsUntil({ pending: 2, ackPending: 1, redelivered: 0 });
        release();
        await waitFor(() => calls.length === 3, "every delivery");
        await statsUntil({ pending: 0, ackPending: 0, redelivered: 0 });
        await sub.stop();
      });

      it("drops a republished msgId within the duplicate window", async () => {
        const t = workTopology();
        await bus.provision(t.topology);
        const first = await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-a` });
        const again = await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-a` });
        const other = await bus.publishWork(t.subject, { n: 2 }, { msgId: `${t.id}-b` });
        expect(again).toEqual({ stream: first.stream, seq: first.seq, duplicate: true });
        expect(other.duplicate).toBe(false);
        const calls: Call[] = [];
        const sub = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          record(calls, ctx);
          return { kind: "ack" };
        });
        await waitFor(() => calls.length >= 2, "both messages");
        await sleep(500);
        expect(calls.map((c) => c.msgId).sort()).toEqual([`${t.id}-a`, `${t.id}-b`]);
        await sub.stop();
      });

      it("redelivers after a retry outcome's delay with deliveryCount 2", async () => {
        const t = workTopology();
        await bus.provision(t.topology);
        const calls: Call[] = [];
        let returnedAt = 0;
        const sub = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          record(calls, ctx);
          if (ctx.deliveryCount === 1) {
            returnedAt = Date.now();
            return { kind: "retry", delayMs: 800 };
          }
          return { kind: "ack" };
        });
        await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-1` });
        await waitFor(() => calls.length === 2, "the redelivery");
        expect(calls.map((c) => c.deliveryCount)).toEqual([1, 2]);
        expect((calls[1]?.at ?? 0) - returnedAt).toBeGreaterThanOrEqual(600);
        await sleep(1_000);
        expect(calls).toHaveLength(2);
        await sub.stop();
      });

      it("redelivers after a thrown handler, with the queue's back-off", async () => {
        const t = workTopology({ backoffMs: [300] });
        await bus.provision(t.topology);
        const calls: Call[] = [];
        const sub = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          record(calls, ctx);
          if (ctx.deliveryCount === 1) throw new Error("transient failure");
          return { kind: "ack" };
        });
        await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-1` });
        await waitFor(() => calls.length === 2, "the redelivery");
        expect(calls.map((c) => c.deliveryCount)).toEqual([1, 2]);
        expect((calls[1]?.at ?? 0) - (calls[0]?.at ?? 0)).toBeGreaterThanOrEqual(200);
        await sleep(1_000);
        expect(calls).toHaveLength(2);
        await sub.stop();
      });

      // The consumer's idle pull lasts a minute here: a redelivery that is not handed out when its
      // delay is over waits for the next pull, and the deadlines below (far shorter) catch it.
      it("hands out a retry when its delay is over, even when the wall clock is stepped back meanwhile", async () => {
        const t = workTopology();
        await bus.provision(t.topology);
        const calls: Call[] = [];
        const realNow = Date.now.bind(Date);
        let clock: ReturnType<typeof vi.spyOn> | undefined;
        try {
          const sub = await bus.consumeWork(
            t.queue,
            JobSchema,
            async (ctx) => {
              record(calls, ctx);
              if (ctx.deliveryCount > 1) return { kind: "ack" };
              // After the retry is settled, the wall clock goes back 5 s (an NTP step); timers keep their time.
              setTimeout(() => {
                clock = vi.spyOn(Date, "now").mockImplementation(() => realNow() - 5_000);
              }, 100);
              return { kind: "retry", delayMs: 400 };
            },
            { pullExpiresMs: 60_000 },
          );
          await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-1` });
          await waitFor(() => calls.length === 2, "the redelivery, due 400 ms after the retry", 20_000);
          expect(calls.map((c) => c.deliveryCount)).toEqual([1, 2]);
          await sub.stop();
        } finally {
          clock?.mockRestore();
        }
      });

      it("hands out every short retry when its delay is over, not at the consumer's next pull", async () => {
        const t = workTopology({ maxDeliver: 100 });
        await bus.provision(t.topology);
        const calls: Call[] = [];
        const retries = 30;
        const sub = await bus.consumeWork(
          t.queue,
          JobSchema,
          async (ctx) => {
            record(calls, ctx);
            // 1–7 ms: timers fire on a clock of whole milliseconds of their own, often a little before Date.now() reaches their end
            return ctx.deliveryCount <= retries ? { kind: "retry", delayMs: 1 + (ctx.deliveryCount % 7) } : { kind: "ack" };
          },
          { pullExpiresMs: 60_000 },
        );
        await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-1` });
        for (let delivery = 2; delivery <= retries + 1; delivery++) {
          await waitFor(() => calls.length >= delivery, `delivery ${delivery}, due a few ms after the retry before it`, 15_000);
        }
        expect(calls.map((c) => c.deliveryCount)).toEqual(Array.from({ length: retries + 1 }, (_, i) => i + 1));
        await sub.stop();
      });

      it("terminates a poison payload without calling the handler and reports it", async () => {
        const t = workTopology({ ackWaitMs: 1_000 });
        await bus.provision(t.topology);
        const dead = await deadLetters(t.queue);
        const calls: Call[] = [];
        const sub = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          record(calls, ctx);
          return { kind: "ack" };
        });
        await bus.publishWork(t.subject, { wrong: true }, { msgId: `${t.id}-poison` });
        await waitFor(() => dead.list.length === 1, "the dead letter");
        expect(dead.list[0]).toMatchObject({
          kind: "terminated",
          stream: t.stream.name,
          queue: t.queue.name,
          subject: t.subject,
          msgId: `${t.id}-poison`,
          deliveryCount: 1,
          payload: { wrong: true },
        });
        expect(dead.list[0]?.reason).toMatch(/invalid payload/);
        await sleep(2_000);
        expect(calls).toHaveLength(0);
        expect(dead.list).toHaveLength(1);
        await sub.stop();
        await dead.sub.stop();
      });

      it("reports a term outcome with its reason and never redelivers", async () => {
        const t = workTopology({ ackWaitMs: 1_000 });
        await bus.provision(t.topology);
        const dead = await deadLetters(t.queue);
        const calls: Call[] = [];
        const sub = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          record(calls, ctx);
          return { kind: "term", reason: "unsupported language" };
        });
        await bus.publishWork(t.subject, { n: 3 }, { msgId: `${t.id}-term` });
        await waitFor(() => dead.list.length === 1, "the dead letter");
        expect(dead.list[0]).toMatchObject({ kind: "terminated", reason: "unsupported language", msgId: `${t.id}-term`, payload: { n: 3 } });
        await sleep(2_000);
        expect(calls).toHaveLength(1);
        expect(dead.list).toHaveLength(1);
        await sub.stop();
        await dead.sub.stop();
      });

      it("dead-letters after maxDeliver attempts, handing over the msgId", async () => {
        const t = workTopology({ maxDeliver: 3 });
        await bus.provision(t.topology);
        const dead = await deadLetters(t.queue);
        const calls: Call[] = [];
        const sub = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          record(calls, ctx);
          return { kind: "retry", delayMs: 100, reason: "engine busy" };
        });
        await bus.publishWork(t.subject, { n: 9 }, { msgId: `${t.id}-doomed` });
        await waitFor(() => dead.list.length === 1, "the dead letter");
        expect(calls.map((c) => c.deliveryCount)).toEqual([1, 2, 3]);
        expect(calls.map((c) => c.lastAttempt)).toEqual([false, false, true]);
        expect(dead.list[0]).toMatchObject({ kind: "max_deliveries", msgId: `${t.id}-doomed`, deliveryCount: 3, payload: { n: 9 } });
        expect(dead.list[0]?.reason).toMatch(/engine busy/);
        await sleep(1_000);
        expect(calls).toHaveLength(3);
        await sub.stop();
        await dead.sub.stop();
      });

      it("keeps dead letters until a listener comes", async () => {
        const t = workTopology();
        await bus.provision(t.topology);
        const calls: Call[] = [];
        const sub = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          record(calls, ctx);
          return { kind: "term", reason: "bad input" };
        });
        await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-early` });
        await waitFor(() => calls.length === 1, "the delivery");
        await sub.stop();
        const dead = await deadLetters(t.queue);
        await waitFor(() => dead.list.length === 1, "the stored dead letter");
        expect(dead.list[0]).toMatchObject({ msgId: `${t.id}-early`, reason: "bad input" });
        await dead.sub.stop();
      });

      it("redelivers a lost handler's message after ack wait and aborts its signal", async () => {
        const t = workTopology({ ackWaitMs: 1_000 });
        await bus.provision(t.topology);
        const calls: Call[] = [];
        let firstAbortReason: unknown;
        const sub = await bus.consumeWork(
          t.queue,
          JobSchema,
          async (ctx) => {
            record(calls, ctx);
            if (ctx.deliveryCount === 1) {
              firstAbortReason = await aborted(ctx.signal); // hangs: never calls working()
              return { kind: "ack" }; // too late: ignored
            }
            return { kind: "ack" };
          },
          { concurrency: 2 },
        );
        await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-lost` });
        await waitFor(() => calls.length === 2, "the redelivery");
        expect(calls.map((c) => c.deliveryCount)).toEqual([1, 2]);
        await waitFor(() => firstAbortReason !== undefined, "the lease to expire");
        expect(firstAbortReason).toBeInstanceOf(LeaseExpiredError);
        await sleep(2_000);
        expect(calls).toHaveLength(2);
        await sub.stop();
      });

      it("dead-letters a message whose handler is lost on every delivery", async () => {
        const t = workTopology({ ackWaitMs: 1_000, maxDeliver: 2 });
        await bus.provision(t.topology);
        const dead = await deadLetters(t.queue);
        const calls: Call[] = [];
        const sub = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          record(calls, ctx);
          await aborted(ctx.signal);
          return { kind: "ack" };
        });
        await bus.publishWork(t.subject, { n: 5 }, { msgId: `${t.id}-gone` });
        await waitFor(() => dead.list.length === 1, "the dead letter");
        expect(dead.list[0]).toMatchObject({ kind: "max_deliveries", msgId: `${t.id}-gone`, payload: { n: 5 } });
        expect(calls.map((c) => c.deliveryCount)).toEqual([1, 2]);
        await sub.stop();
        await dead.sub.stop();
      });

      it("working() keeps a long handler's message from being redelivered past ack wait", async () => {
        const t = workTopology({ ackWaitMs: 1_500 });
        await bus.provision(t.topology);
        const calls: Call[] = [];
        let abortedEarly = false;
        const sub = await bus.consumeWork(
          t.queue,
          JobSchema,
          async (ctx) => {
            record(calls, ctx);
            for (let i = 0; i < 16; i++) {
              await sleep(250);
              ctx.working();
            }
            abortedEarly = ctx.signal.aborted;
            return { kind: "ack" };
          },
          { concurrency: 2 },
        );
        await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-long` });
        await waitFor(() => calls.length >= 1, "the delivery");
        await sleep(5_500);
        expect(calls).toHaveLength(1);
        expect(abortedEarly).toBe(false);
        await sub.stop();
      });

      it("the heartbeat option keeps a long handler alive without explicit working()", async () => {
        const t = workTopology({ ackWaitMs: 1_500 });
        await bus.provision(t.topology);
        const calls: Call[] = [];
        const sub = await bus.consumeWork(
          t.queue,
          JobSchema,
          async (ctx) => {
            record(calls, ctx);
            await sleep(4_000);
            return { kind: "ack" };
          },
          { concurrency: 2, heartbeat: true },
        );
        await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-hb` });
        await waitFor(() => calls.length >= 1, "the delivery");
        await sleep(5_500);
        expect(calls).toHaveLength(1);
        await sub.stop();
      });

      it("never exceeds the concurrency bound", async () => {
        const t = workTopology({ ackWaitMs: 5_000 });
        await bus.provision(t.topology);
        let running = 0;
        let maxRunning = 0;
        const done: number[] = [];
        const sub = await bus.consumeWork(
          t.queue,
          JobSchema,
          async (ctx) => {
            running++;
            maxRunning = Math.max(maxRunning, running);
            await sleep(300);
            running--;
            done.push(ctx.data.n);
            return { kind: "ack" };
          },
          { concurrency: 3 },
        );
        for (let n = 0; n < 9; n++) await bus.publishWork(t.subject, { n }, { msgId: `${t.id}-${n}` });
        await waitFor(() => done.length === 9, "all messages");
        expect(maxRunning).toBeLessThanOrEqual(3);
        expect(maxRunning).toBeGreaterThan(1);
        expect([...done].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
        await sub.stop();
      });

      it("shares a queue between two consumers, each message handled once", async () => {
        const t = workTopology({ ackWaitMs: 5_000 });
        await bus.provision(t.topology);
        const seen: { who: string; n: number }[] = [];
        const worker = (who: string) =>
          bus.consumeWork(t.queue, JobSchema, async (ctx) => {
            seen.push({ who, n: ctx.data.n });
            await sleep(100);
            return { kind: "ack" };
          });
        const a = await worker("a");
        const b = await worker("b");
        for (let n = 0; n < 12; n++) await bus.publishWork(t.subject, { n }, { msgId: `${t.id}-${n}` });
        await waitFor(() => seen.length >= 12, "all messages");
        await sleep(500);
        expect(seen).toHaveLength(12);
        expect(new Set(seen.map((s) => s.n)).size).toBe(12);
        expect(seen.some((s) => s.who === "a")).toBe(true);
        expect(seen.some((s) => s.who === "b")).toBe(true);
        await a.stop();
        await b.stop();
      });

      it("stop() drains in-flight handlers and settles their messages", async () => {
        const t = workTopology({ ackWaitMs: 1_500 });
        await bus.provision(t.topology);
        let started = 0;
        let finished = 0;
        const sub = await bus.consumeWork(
          t.queue,
          JobSchema,
          async (ctx) => {
            started++;
            for (let i = 0; i < 6; i++) {
              await sleep(250);
              ctx.working();
            }
            finished++;
            return { kind: "ack" };
          },
          { concurrency: 2 },
        );
        await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-1` });
        await bus.publishWork(t.subject, { n: 2 }, { msgId: `${t.id}-2` });
        await waitFor(() => started === 2, "both handlers to start");
        await sub.stop();
        expect(finished).toBe(2);
        const again: Call[] = [];
        const next = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          record(again, ctx);
          return { kind: "ack" };
        });
        await sleep(2_500);
        expect(again).toHaveLength(0);
        await next.stop();
      });

      it("stop({ graceMs }) aborts handlers that outlive the grace period", async () => {
        const t = workTopology({ ackWaitMs: 5_000 });
        await bus.provision(t.topology);
        let reason: unknown;
        let started = false;
        const sub = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          started = true;
          reason = await aborted(ctx.signal);
          return { kind: "retry", delayMs: 100 };
        });
        await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-1` });
        await waitFor(() => started, "the handler to start");
        await sub.stop({ graceMs: 300 });
        expect(reason).toBeInstanceOf(StoppingError);
        const again: Call[] = [];
        const next = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
          record(again, ctx);
          return { kind: "ack" };
        });
        await waitFor(() => again.length === 1, "the retried message");
        expect(again[0]?.deliveryCount).toBe(2);
        await next.stop();
      });
    });

    describe("events", () => {
      it("fan out to every subscriber in order; a durable resumes where it stopped", async () => {
        const t = eventsTopology();
        await bus.provision(t.topology);
        const a: number[] = [];
        const b: number[] = [];
        const live: number[] = [];
        const subA = await bus.subscribeEvents(t.pattern, JobSchema, (e) => void a.push(e.data.n), { durable: `${t.id}_a` });
        const subB = await bus.subscribeEvents(t.pattern, JobSchema, (e) => void b.push(e.data.n), { durable: `${t.id}_b` });
        const subLive = await bus.subscribeEvents(t.pattern, JobSchema, (e) => void live.push(e.data.n));
        const first = Array.from({ length: 10 }, (_, n) => n);
        for (const n of first) await bus.publishEvent(t.subject, { n });
        await waitFor(() => a.length === 10 && b.length === 10 && live.length === 10, "every event at every subscriber");
        expect(a).toEqual(first);
        expect(b).toEqual(first);
        expect(live).toEqual(first);

        await subA.stop();
        for (const n of [10, 11, 12]) await bus.publishEvent(t.subject, { n });
        await waitFor(() => b.length === 13 && live.length === 13, "the later events");
        const resumed: number[] = [];
        const subA2 = await bus.subscribeEvents(t.pattern, JobSchema, (e) => void resumed.push(e.data.n), { durable: `${t.id}_a` });
        await waitFor(() => resumed.length === 3, "the events missed while stopped");
        await sleep(300);
        expect(resumed).toEqual([10, 11, 12]);
        await Promise.all([subA2.stop(), subB.stop(), subLive.stop()]);
      });

      it("a new durable replays retained events (deliver all) or starts at new ones", async () => {
        const t = eventsTopology();
        await bus.provision(t.topology);
        for (const n of [1, 2, 3]) await bus.publishEvent(t.subject, { n });
        const all: { n: number; seq: number | undefined }[] = [];
        const fresh: number[] = [];
        const subAll = await bus.subscribeEvents(t.pattern, JobSchema, (e) => void all.push({ n: e.data.n, seq: e.seq }), { durable: `${t.id}_all` });
        const subNew = await bus.subscribeEvents(t.pattern, JobSchema, (e) => void fresh.push(e.data.n), { durable: `${t.id}_new`, deliver: "new" });
        await waitFor(() => all.length === 3, "the retained events");
        await bus.publishEvent(t.subject, { n: 4 });
        await waitFor(() => all.length === 4 && fresh.length === 1, "the new event");
        expect(all.map((e) => e.n)).toEqual([1, 2, 3, 4]);
        expect(all.every((e) => typeof e.seq === "number")).toBe(true);
        expect(fresh).toEqual([4]);
        await Promise.all([subAll.stop(), subNew.stop()]);
      });

      it("a failing durable handler gets the event again before later ones", async () => {
        const t = eventsTopology();
        await bus.provision(t.topology);
        const handled: number[] = [];
        const attempts: { n: number; deliveryCount: number }[] = [];
        let failed = false;
        const sub = await bus.subscribeEvents(
          t.pattern,
          JobSchema,
          (e) => {
            attempts.push({ n: e.data.n, deliveryCount: e.deliveryCount });
            if (e.data.n === 2 && !failed) {
              failed = true;
              throw new Error("projection store unavailable");
            }
            handled.push(e.data.n);
          },
          { durable: `${t.id}_proj` },
        );
        for (const n of [0, 1, 2, 3, 4]) await bus.publishEvent(t.subject, { n });
        await waitFor(() => handled.length === 5, "all events");
        expect(handled).toEqual([0, 1, 2, 3, 4]);
        expect(attempts.filter((x) => x.n === 2).map((x) => x.deliveryCount)).toEqual([1, 2]);
        await sub.stop();
      });

      it("skips an event that fails the schema", async () => {
        const t = eventsTopology();
        await bus.provision(t.topology);
        const handled: number[] = [];
        const sub = await bus.subscribeEvents(t.pattern, JobSchema, (e) => void handled.push(e.data.n), { durable: `${t.id}_p` });
        await bus.publishEvent(t.subject, { n: 1 });
        await bus.publishEvent(t.subject, { bogus: true });
        await bus.publishEvent(t.subject, { n: 2 });
        await waitFor(() => handled.length === 2, "the valid events");
        expect(handled).toEqual([1, 2]);
        await sub.stop();
      });
    });

    describe("notices", () => {
      it("reach every subscriber of a matching pattern, in order, with no stream capturing them", async () => {
        const id = `n${++counter}${Math.random().toString(36).slice(2, 8)}`;
        const all: Array<{ subject: string; n: number }> = [];
        const one: number[] = [];
        const other: number[] = [];
        const subAll = await bus.subscribeNotices(`${id}.record.>`, JobSchema, (e) => void all.push({ subject: e.subject, n: e.data.n }));
        const subOne = await bus.subscribeNotices(`${id}.record.book.*`, JobSchema, (e) => void one.push(e.data.n));
        const subOther = await bus.subscribeNotices(`${id}.elsewhere`, JobSchema, (e) => void other.push(e.data.n));
        for (let n = 0; n < 20; n++) await bus.notify(`${id}.record.${n % 2 === 0 ? "book" : "voice"}.r${n}`, { n });
        await waitFor(() => all.length === 20 && one.length === 10, "every notice at every matching subscriber");
        expect(all.map((e) => e.n)).toEqual(Array.from({ length: 20 }, (_, n) => n));
        expect(all[3]?.subject).toBe(`${id}.record.voice.r3`);
        expect(one).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 16, 18]);
        // a notice with no subscriber is dropped, not an error; nothing was kept for a late subscriber
        await bus.notify(`${id}.nobody`, { n: 1 });
        const late: number[] = [];
        const subLate = await bus.subscribeNotices(`${id}.record.>`, JobSchema, (e) => void late.push(e.data.n));
        await bus.notify(`${id}.record.book.last`, { n: 99 });
        await waitFor(() => late.length === 1 && all.length === 21, "the notice after the late subscription");
        expect(late).toEqual([99]);
        expect(other).toEqual([]);
        await Promise.all([subAll.stop(), subOne.stop(), subOther.stop(), subLate.stop()]);
      });

      it("skips a notice failing the schema or a throwing handler and goes on; stop() ends delivery", async () => {
        const id = `n${++counter}${Math.random().toString(36).slice(2, 8)}`;
        const seen: number[] = [];
        const sub = await bus.subscribeNotices(`${id}.>`, JobSchema, (e) => {
          if (e.data.n === 2) throw new Error("listener failed");
          seen.push(e.data.n);
        });
        await bus.notify(`${id}.a`, { n: 1 });
        await bus.notify(`${id}.a`, { bogus: true });
        await bus.notify(`${id}.a`, { n: 2 });
        await bus.notify(`${id}.a`, { n: 3 });
        await waitFor(() => seen.length === 2, "the valid notices");
        expect(seen).toEqual([1, 3]);
        await sub.stop();
        await bus.notify(`${id}.a`, { n: 4 });
        const probe: number[] = [];
        const after = await bus.subscribeNotices(`${id}.>`, JobSchema, (e) => void probe.push(e.data.n));
        await bus.notify(`${id}.a`, { n: 5 });
        await waitFor(() => probe.length === 1, "a notice to the new subscription");
        expect(seen).toEqual([1, 3]);
        await after.stop();
      });

      it("rejects wildcards in a notice subject", async () => {
        await expect(bus.notify("notices.*", { n: 1 })).rejects.toThrow();
      });
    });

    describe("request/reply", () => {
      it("round-trips through a queue group, each request served once", async () => {
        const id = `r${++counter}`;
        const served: string[] = [];
        const server = (who: string) =>
          bus.serve(`${id}.add`, AddSchema, async (req) => {
            served.push(who);
            return { sum: req.a + req.b };
          }, { queue: "adders" });
        const s1 = await server("one");
        const s2 = await server("two");
        for (let i = 0; i < 10; i++) {
          const reply = await bus.request<{ sum: number }>(`${id}.add`, { a: i, b: 1 }, { timeoutMs: 10_000 });
          expect(reply).toEqual({ sum: i + 1 });
        }
        expect(served).toHaveLength(10);
        await Promise.all([s1.stop(), s2.stop()]);
      });

      it("parses the reply through a schema when given", async () => {
        const id = `r${++counter}`;
        const s = await bus.serve(`${id}.add`, AddSchema, (req) => ({ a: req.a + req.b, b: 0 }));
        const reply = await bus.request(`${id}.add`, { a: 1, b: 2 }, { timeoutMs: 10_000, schema: AddSchema });
        expect(reply).toEqual({ a: 3, b: 0 });
        await s.stop();
      });

      it("times out", async () => {
        const id = `r${++counter}`;
        const s = await bus.serve(`${id}.slow`, AddSchema, async () => {
          await sleep(2_000);
          return { sum: 0 };
        });
        const error = await bus.request(`${id}.slow`, { a: 1, b: 1 }, { timeoutMs: 300 }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(RequestTimeoutError);
        expect((error as RequestTimeoutError).code).toBe("timeout");
        await s.stop();
      });

      it("reports no responders", async () => {
        const error = await bus.request(`r${++counter}.nobody`, { a: 1, b: 1 }, { timeoutMs: 5_000 }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(NoRespondersError);
        expect((error as NoRespondersError).code).toBe("no_responders");
      });

      it("carries a remote error's code and message back", async () => {
        const id = `r${++counter}`;
        const s = await bus.serve(`${id}.voice`, AddSchema, () => {
          throw Object.assign(new Error("voice not found"), { code: "voice_not_found" });
        });
        const error = await bus.request(`${id}.voice`, { a: 1, b: 1 }, { timeoutMs: 10_000 }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(RemoteError);
        expect(error).toMatchObject({ code: "remote_error", remoteCode: "voice_not_found", message: "voice not found" });
        const invalid = await bus.request(`${id}.voice`, { nope: 1 }, { timeoutMs: 10_000 }).catch((e: unknown) => e);
        expect(invalid).toMatchObject({ name: "RemoteError", remoteCode: "invalid_request" });
        await s.stop();
      });
    });

    describe("close", () => {
      it("drains in-flight handlers and rejects later calls", async () => {
        const t = workTopology();
        await bus.provision(t.topology);
        let started = false;
        let finished = false;
        await bus.consumeWork(t.queue, JobSchema, async () => {
          started = true;
          await sleep(500);
          finished = true;
          return { kind: "ack" };
        });
        await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-1` });
        await waitFor(() => started, "the handler to start");
        await bus.close();
        expect(finished).toBe(true);
        await bus.close();
        await expect(bus.publishWork(t.subject, { n: 2 }, { msgId: `${t.id}-2` })).rejects.toBeInstanceOf(BusClosedError);
        await expect(bus.request(`${t.id}.x`, {}, { timeoutMs: 1_000 })).rejects.toBeInstanceOf(BusClosedError);
      });
    });
  });
}
