import { randomUUID } from "node:crypto";
import { createCatalogBus, NoRespondersError } from "@voiceloc/bus";
import { BUS_CATALOG, TASK_KINDS, capabilityRequestName, type Capabilities, type TaskKind } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { afterEach, describe, expect, it } from "vitest";
import { defineTaskService, type TaskService } from "./service.ts";
import type { TaskHandler } from "./worker.ts";
import { createHarness, deferred, waitFor, type Harness, type TestTask } from "./testing/harness.ts";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const TABLE: Capabilities = {
  synthesis: { languages: ["English"] },
  recognition: { languages: [] },
  translation: { pairs: [] },
  cloning: { available: false, languages: [] },
  voices: [],
};

async function setup(kind: TaskKind, handle: TaskHandler<TestTask>, stopGraceMs?: number): Promise<{ h: Harness; service: TaskService }> {
  const h = await createHarness();
  cleanups.push(h.cleanup);
  const service = defineTaskService({
    settings: { bus: h.bus, blobs: h.blobs, logger: silentLogger(), capabilities: () => TABLE, ...(stopGraceMs === undefined ? {} : { stopGraceMs }) },
    catalog: h.catalog,
    kind,
    handle,
  });
  cleanups.push(() => service.stop({ graceMs: 0 }));
  return { h, service };
}

const ended = (h: Harness, id: string) => h.eventsOf(id).find((e) => e.status === "completed" || e.status === "failed");

// Every queue worker (audio book, voice stream, subtitles) is this skeleton with its own handler.
describe.each(TASK_KINDS)("the task service skeleton as the %s worker", (kind) => {
  it("starts again after a stop: tasks sent while it was stopped and after are done, and it answers its capabilities only while running", async () => {
    const { h, service } = await setup(kind, async (_task, ctx) => ctx.resultKey("txt"));
    const capabilities = createCatalogBus(h.bus, BUS_CATALOG);
    await service.start();
    await service.start(); // idempotent
    const first = randomUUID();
    await h.publish({ task_id: first });
    await waitFor(() => ended(h, first) !== undefined, "the first task");
    expect(await capabilities.request(capabilityRequestName(kind), {})).toEqual({ ok: true, reply: TABLE });

    await service.stop();
    await service.stop(); // idempotent
    await expect(capabilities.request(capabilityRequestName(kind), {}, { timeoutMs: 1_000 })).rejects.toBeInstanceOf(NoRespondersError);
    const whileStopped = randomUUID();
    await h.publish({ task_id: whileStopped });

    await service.start();
    const after = randomUUID();
    await h.publish({ task_id: after });
    await waitFor(() => ended(h, whileStopped) !== undefined && ended(h, after) !== undefined, "the tasks sent after the stop");
    expect([ended(h, whileStopped)?.status, ended(h, after)?.status]).toEqual(["completed", "completed"]);
    expect(await capabilities.request(capabilityRequestName(kind), {})).toEqual({ ok: true, reply: TABLE });
  });

  it("stops with grace: a task still running after it is aborted and done again by the restarted service", async () => {
    const running = deferred();
    const aborted = deferred();
    let deliveries = 0;
    const { h, service } = await setup(
      kind,
      async (_task, ctx) => {
        deliveries++;
        if (ctx.deliveryCount > 1) return ctx.resultKey("txt");
        running.resolve();
        // The first delivery runs until it is aborted.
        await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
        aborted.resolve();
        throw ctx.signal.reason;
      },
      200,
    );
    await service.start();
    const id = randomUUID();
    await h.publish({ task_id: id });
    await running.promise;
    const stopAt = Date.now();
    await service.stop(); // the service's stopGraceMs: 200 ms
    await aborted.promise;
    expect(Date.now() - stopAt).toBeLessThan(10_000);
    expect(ended(h, id)).toBeUndefined();

    await service.start();
    await waitFor(() => ended(h, id) !== undefined, "the task after the restart");
    expect(ended(h, id)).toMatchObject({ status: "completed", result_key: `results/${kind}/${id}.txt` });
    expect(deliveries).toBe(2);
  });
});
