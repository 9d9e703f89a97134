import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, headers as natsHeaders } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { createLogger, silentLogger, withLogContext } from "@voiceloc/log";
import { startNatsServer, type NatsServerHandle } from "@voiceloc/testing";
import { createNatsBus, reconnectDelayMs } from "./nats.ts";
import type { Bus, DeadLetter } from "./types.ts";
import { describeCatalogContract } from "./testing/catalog-contract.ts";
import { JobSchema, describeBusContract, sleep, waitFor, workTopology } from "./testing/contract.ts";

let server: NatsServerHandle;

beforeAll(async () => {
  server = await startNatsServer();
}, 60_000);

afterAll(async () => {
  await server?.stop();
}, 60_000);

describeBusContract("nats", async () => {
  const bus = await createNatsBus({ url: server.url, logger: silentLogger(), name: "bus-contract" });
  return { bus, cleanup: () => bus.close({ graceMs: 5_000 }) };
});

describeCatalogContract("nats", async () => {
  const bus = await createNatsBus({ url: server.url, logger: silentLogger(), name: "bus-catalog-contract" });
  return { bus, cleanup: () => bus.close({ graceMs: 5_000 }) };
});

describe("nats specifics", { timeout: 90_000 }, () => {
  const open: Bus[] = [];
  const newBus = async (url = server.url) => {
    const bus = await createNatsBus({ url, logger: silentLogger(), name: "bus-nats-specifics" });
    open.push(bus);
    return bus;
  };
  afterAll(async () => {
    await Promise.all(open.map((bus) => bus.close({ graceMs: 5_000 })));
  }, 60_000);

  it("a durable event subscription resumes in a new process (new connection)", async () => {
    const stream = { name: "E_restart_sub", subjects: ["rsub.ev.>"], kind: "events" as const };
    const first = await newBus();
    await first.provision({ streams: [stream] });
    const seen1: number[] = [];
    await first.subscribeEvents("rsub.ev.>", JobSchema, (e) => void seen1.push(e.data.n), { durable: "projection" });
    for (const n of [1, 2, 3]) await first.publishEvent("rsub.ev.x", { n });
    await waitFor(() => seen1.length === 3, "the first events");
    await first.close();

    const publisher = await newBus();
    for (const n of [4, 5]) await publisher.publishEvent("rsub.ev.x", { n });
    const second = await newBus();
    const seen2: number[] = [];
    await second.subscribeEvents("rsub.ev.>", JobSchema, (e) => void seen2.push(e.data.n), { durable: "projection" });
    await waitFor(() => seen2.length === 2, "the events published while down");
    await sleep(300);
    expect(seen2).toEqual([4, 5]);
  });

  it("deletes an exhausted message from the work stream once its dead letter is handled", async () => {
    const t = workTopology({ ackWaitMs: 1_000, maxDeliver: 1 });
    const bus = await newBus();
    await bus.provision(t.topology);
    const dead: DeadLetter[] = [];
    await bus.onDeadLetter(t.queue, async (dl) => void dead.push(dl));
    await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      return { kind: "ack" };
    });
    await bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-x` });
    await waitFor(() => dead.length === 1, "the dead letter");
    expect(dead[0]).toMatchObject({ kind: "max_deliveries", msgId: `${t.id}-x` });

    const nc = await connect({ servers: server.url });
    try {
      const jsm = await jetstreamManager(nc);
      const deadline = Date.now() + 20_000;
      let messages = -1;
      while (Date.now() < deadline) {
        messages = (await jsm.streams.info(t.stream.name)).state.messages;
        if (messages === 0) break;
        await sleep(100);
      }
      expect(messages).toBe(0);
    } finally {
      await nc.close();
    }
  });

  it("work and durable events survive a nats-server restart; the bus reconnects", async () => {
    const own = await startNatsServer();
    try {
      const bus = await newBus(own.url);
      const t = workTopology({ ackWaitMs: 2_000 });
      const events = { name: "E_restart", subjects: ["rst.ev.>"], kind: "events" as const };
      await bus.provision({ streams: [...(t.topology.streams ?? []), events], queues: t.topology.queues ?? [] });
      const seen: number[] = [];
      await bus.subscribeEvents("rst.ev.>", JobSchema, (e) => void seen.push(e.data.n), { durable: "gateway" });
      await bus.publishEvent("rst.ev.x", { n: 1 });
      await waitFor(() => seen.length === 1, "the first event");
      await bus.publishWork(t.subject, { n: 42 }, { msgId: `${t.id}-survivor` });

      await own.restart();

      // Publishing right after a restart may fail until the client has reconnected; the msgId makes retrying safe.
      const publishRetrying = async (publish: () => Promise<unknown>) => {
        const deadline = Date.now() + 30_000;
        for (;;) {
          try {
            return await publish();
          } catch (error) {
            if (Date.now() > deadline) throw error;
            await sleep(250);
          }
        }
      };
      await publishRetrying(() => bus.publishEvent("rst.ev.x", { n: 2 }, { msgId: "rst-2" }));
      await waitFor(() => seen.length >= 2, "the event after the restart", 45_000);
      expect(seen).toEqual([1, 2]);

      const handled: { n: number; msgId: string | undefined }[] = [];
      await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
        handled.push({ n: ctx.data.n, msgId: ctx.msgId });
        return { kind: "ack" };
      });
      await waitFor(() => handled.length === 1, "the work published before the restart", 45_000);
      expect(handled[0]).toEqual({ n: 42, msgId: `${t.id}-survivor` });
    } finally {
      await own.stop();
      expect(existsSync(own.storeDir)).toBe(false);
    }
  });

  it("ping makes a round trip: it fails within its timeout while the server is down and answers again once it is back", async () => {
    const own = await startNatsServer();
    try {
      const bus = await newBus(own.url);
      expect(await bus.ping()).toBeGreaterThanOrEqual(0);
      await own.halt();
      const started = Date.now();
      // while disconnected the client refuses at once, or the timeout decides
      await expect(bus.ping({ timeoutMs: 1_000 })).rejects.toMatchObject({ name: "BusError", code: "timeout" });
      expect(Date.now() - started).toBeLessThan(10_000);
      await own.resume();
      const deadline = Date.now() + 30_000;
      let answered = false;
      while (!answered && Date.now() < deadline) {
        answered = await bus.ping({ timeoutMs: 1_000 }).then(() => true, () => false);
        if (!answered) await sleep(200);
      }
      expect(answered).toBe(true);
      await bus.close();
      await expect(bus.ping()).rejects.toMatchObject({ code: "closed" });
    } finally {
      await own.stop();
    }
  });

  it("workAckWaitMs replaces every queue's ack wait on the server consumer and for the lease: an abandoned task comes back within it", async () => {
    const t = workTopology({ ackWaitMs: 60_000 });
    const bus = await createNatsBus({ url: server.url, logger: silentLogger(), name: "bus-ack-wait", workAckWaitMs: 1_000 });
    open.push(bus);
    await bus.provision(t.topology);
    const nc = await connect({ servers: server.url });
    try {
      const info = await (await jetstreamManager(nc)).consumers.info(t.stream.name, t.queue.name);
      expect(info.config.ack_wait).toBe(1_000 * 1_000_000);
    } finally {
      await nc.close();
    }
    const deliveries: number[] = [];
    // no heartbeat and no settling: the first delivery is abandoned as by a worker that vanished
    await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
      deliveries.push(ctx.deliveryCount);
      if (ctx.deliveryCount === 1) await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      return { kind: "ack" };
    }, { concurrency: 2 });
    await bus.publishWork(t.subject, { n: 7 }, { msgId: `${t.id}-abandoned` });
    await waitFor(() => deliveries.length === 2, "the redelivery", 30_000);
    // redelivered long before the queue's own 60 s (the wait above gives up at 30 s)
    expect(deliveries).toEqual([1, 2]);
  });

  it("a request carries the ids of the request or task it is sent for: the serving process writes its lines under them", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ level: "info", destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } });
    // two connections, as two processes: the server's callback never runs in the requester's async context
    const serving = await createNatsBus({ url: server.url, logger, name: "bus-ids-serving" });
    const asking = await createNatsBus({ url: server.url, logger: silentLogger(), name: "bus-ids-asking" });
    open.push(serving, asking);
    await serving.serve("ids.echo", JobSchema, (req) => {
      logger.info({ n: req.n }, "served");
      return req;
    });
    await withLogContext({ requestId: "req-1" }, () => asking.request("ids.echo", { n: 1 }, { timeoutMs: 10_000 }));
    await withLogContext({ taskId: "task-2", kind: "audiobook" }, () => asking.request("ids.echo", { n: 2 }, { timeoutMs: 10_000 }));
    await asking.request("ids.echo", { n: 3 }, { timeoutMs: 10_000 });
    // a header value that is no id (control characters, too long) is not logged
    const nc = await connect({ servers: server.url });
    try {
      const hdrs = natsHeaders();
      hdrs.set("Voiceloc-Request-Id", "x".repeat(300));
      await nc.request("ids.echo", JSON.stringify({ n: 4 }), { timeout: 10_000, headers: hdrs });
    } finally {
      await nc.close();
    }
    const served = lines.filter((l) => l.msg === "served");
    expect(served.map((l) => [l.n, l.requestId, l.taskId, l.kind])).toEqual([
      [1, "req-1", undefined, undefined],
      [2, undefined, "task-2", "audiobook"],
      [3, undefined, undefined, undefined],
      [4, undefined, undefined, undefined],
    ]);
  });

  it("a process with another workAckWaitMs leaves the consumer's ack wait alone, says both values once, and runs its leases by the consumer's", async () => {
    const t = workTopology({ ackWaitMs: 60_000 });
    const first = await createNatsBus({ url: server.url, logger: silentLogger(), name: "bus-ack-wait-first", workAckWaitMs: 1_000 });
    open.push(first);
    await first.provision(t.topology);
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ level: "info", destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } });
    const second = await createNatsBus({ url: server.url, logger, name: "bus-ack-wait-second", workAckWaitMs: 20_000 });
    open.push(second);
    // every service of a process provisions the queues it uses: twice here
    await second.provision(t.topology);
    await second.provision(t.topology);
    const nc = await connect({ servers: server.url });
    try {
      const info = await (await jetstreamManager(nc)).consumers.info(t.stream.name, t.queue.name);
      expect(info.config.ack_wait).toBe(1_000 * 1_000_000);
    } finally {
      await nc.close();
    }
    const told = lines.filter((l) => l.consumerAckWaitMs !== undefined);
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({ level: "warn", queue: t.queue.name, consumerAckWaitMs: 1_000, configuredAckWaitMs: 20_000 });
    expect(String(told[0]!.msg)).toMatch(/1000 ms.*20000 ms/);

    // The second process's lease is the consumer's 1 s: a delivery it abandons is aborted as lost
    // within it (not after 20 s), while the server hands the message out again.
    const seen: Array<{ deliveryCount: number; aborted: string }> = [];
    await second.consumeWork(t.queue, JobSchema, async (ctx) => {
      if (ctx.deliveryCount > 1) {
        seen.push({ deliveryCount: ctx.deliveryCount, aborted: "" });
        return { kind: "ack" };
      }
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      seen.push({ deliveryCount: ctx.deliveryCount, aborted: String((ctx.signal.reason as { code?: unknown }).code) });
      return { kind: "ack" };
    }, { concurrency: 2 });
    await second.publishWork(t.subject, { n: 8 }, { msgId: `${t.id}-kept` });
    await waitFor(() => seen.length === 2, "the lost lease and the redelivery", 15_000);
    expect(seen.map((s) => s.deliveryCount).sort()).toEqual([1, 2]);
    expect(seen.find((s) => s.deliveryCount === 1)?.aborted).toBe("lease_expired");
  });

  it("reconnects with a growing, capped back-off, past the client's default 10 attempts, and logs each attempt (attempt, delayMs) and the reconnect", async () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => reconnectDelayMs(n, { initialMs: 250, maxMs: 2_000 }, 0))).toEqual([250, 500, 1_000, 2_000, 2_000, 2_000]);
    expect(reconnectDelayMs(3, { initialMs: 250, maxMs: 2_000 }, 1)).toBe(1_200);
    const own = await startNatsServer();
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ level: "info", destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } });
    try {
      const bus = await createNatsBus({ url: own.url, logger, name: "bus-reconnect", reconnectBackoff: { initialMs: 100, maxMs: 400 } });
      open.push(bus);
      await own.halt();
      await waitFor(() => lines.filter((l) => l.msg === "nats reconnect attempt").length >= 12, "twelve reconnect attempts", 60_000);
      expect(lines.some((l) => l.msg === "nats disconnected; reconnecting with back-off" && l.level === "warn")).toBe(true);
      const attempts = lines.filter((l) => l.msg === "nats reconnect attempt");
      expect(attempts.slice(0, 5).map((l) => l.attempt)).toEqual([1, 2, 3, 4, 5]);
      const delays = attempts.slice(0, 5).map((l) => l.delayMs as number);
      expect(delays[0]).toBeGreaterThanOrEqual(100);
      expect(delays[2]).toBeGreaterThanOrEqual(400);
      expect(Math.max(...delays)).toBeLessThanOrEqual(480);
      await own.resume();
      await waitFor(() => lines.some((l) => l.msg === "nats reconnected"), "the reconnect", 30_000);
      const reconnected = lines.find((l) => l.msg === "nats reconnected")!;
      expect(reconnected.attempts).toBeGreaterThanOrEqual(12);
      expect(reconnected.downMs).toBeGreaterThan(0);
      expect(await bus.ping({ timeoutMs: 5_000 })).toBeGreaterThanOrEqual(0);
    } finally {
      await own.stop();
    }
  });
});
