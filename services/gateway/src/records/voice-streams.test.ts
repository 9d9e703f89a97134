/** `original_audio` of a voice stream: validated, stored, echoed by the record and carried by the work message. */
import { afterEach, describe, expect, it } from "vitest";
import { createCatalogBus, createInProcessBus, outcome } from "@voiceloc/bus";
import { BUS_CATALOG, type WorkMessage } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { startTestGateway, type TestGateway } from "../testing/harness.ts";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(): Promise<{ t: TestGateway; received: WorkMessage[] }> {
  const bus = createInProcessBus({ logger: silentLogger() });
  const t = await startTestGateway({ PORT: "0", HOST: "127.0.0.1", ACCOUNT_MAX_TASKS_IN_FLIGHT: "4" }, { bus });
  await t.gateway.start();
  const received: WorkMessage[] = [];
  const sub = await createCatalogBus(bus, BUS_CATALOG).consumeWork("voice-stream", async ({ data }) => {
    received.push(data);
    return outcome.ack();
  });
  cleanups.push(async () => {
    await sub.stop();
    await t.close();
    await bus.close();
  });
  return { t, received };
}

async function until(ok: () => boolean, what: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const body = { file: "talk.mp4", source_language: "English", target_language: "French" };

describe("voice stream original_audio", () => {
  it("duck is stored, echoed on create and read, and sent to the worker", async () => {
    const { t, received } = await setup();
    const duck = await t.request("POST", "/v1/voices/streams", { body: { ...body, original_audio: "duck" } });
    expect(duck.status).toBe(201);
    const created = (await duck.json()) as { id: string; original_audio: string };
    expect(created.original_audio).toBe("duck");
    const read = (await (await t.request("GET", `/v1/voices/streams/${created.id}`)).json()) as { original_audio: string };
    expect(read.original_audio).toBe("duck");
    await until(() => received.length === 1, () => `the work message (got ${received.length})`);
    expect(received[0]).toMatchObject({ kind: "voice-stream", task_id: created.id, original_audio: "duck" });
  });

  it("absent means drop, in the record and in the work message", async () => {
    const { t, received } = await setup();
    const plain = (await (await t.request("POST", "/v1/voices/streams", { body })).json()) as { id: string; original_audio: string };
    expect(plain.original_audio).toBe("drop");
    await until(() => received.length === 1, () => `the work message (got ${received.length})`);
    expect(received[0]).toMatchObject({ kind: "voice-stream", task_id: plain.id, original_audio: "drop" });
  });

  it("another value is a 422 at original_audio naming the allowed ones", async () => {
    const { t, received } = await setup();
    const res = await t.request("POST", "/v1/voices/streams", { body: { ...body, original_audio: "louder" } });
    expect(res.status).toBe(422);
    const detail = ((await res.json()) as { detail: Array<{ loc: string[]; msg: string }> }).detail;
    expect(detail[0]?.loc).toEqual(["body", "original_audio"]);
    expect(detail[0]?.msg).toMatch(/'drop' or 'duck'/);
    expect(received).toHaveLength(0);
  });
});
