/**
 * What the gateway answers when a worker fails it, checked against its own `/openapi.json`: the
 * status of each answer must be one the operation documents, and the body must match its schema.
 * The workers are stand-ins on the real in-process bus that fail every capability and voice request.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCatalogBus, createInProcessBus, type Bus, type BusSubscription } from "@voiceloc/bus";
import { BUS_CATALOG, CAPABILITY_KINDS, capabilityRequestName } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { createResponseChecker, type ResponseChecker } from "@voiceloc/testing";
import { BASE, startTestGateway, type TestGateway } from "./testing/harness.ts";

const logger = silentLogger();

async function checkerOf(t: TestGateway): Promise<ResponseChecker> {
  return createResponseChecker(await (await t.request("GET", "/openapi.json", { key: null })).json());
}

async function answer(t: TestGateway, checker: ResponseChecker, method: string, path: string, body?: unknown): Promise<{ status: number; detail: unknown; problems: unknown[] }> {
  const res = await t.request(method, path, body === undefined ? {} : { body });
  const problems = await checker.check({ method, url: `${BASE}${path}` }, res);
  return { status: res.status, detail: ((await res.json()) as { detail: unknown }).detail, problems };
}

describe("workers that fail the gateway's requests", () => {
  let bus: Bus;
  let t: TestGateway;
  let checker: ResponseChecker;
  const subs: BusSubscription[] = [];

  beforeAll(async () => {
    bus = createInProcessBus({ logger });
    const catalog = createCatalogBus(bus, BUS_CATALOG);
    const broken = () => {
      throw new Error("the engine table could not be read");
    };
    for (const kind of CAPABILITY_KINDS) subs.push(await catalog.serve(capabilityRequestName(kind), broken));
    subs.push(await catalog.serve("voices", broken));
    t = await startTestGateway({}, { bus, capabilityTtlMs: 0 });
    checker = await checkerOf(t);
  });

  afterAll(async () => {
    await t?.close();
    for (const s of subs.splice(0)) await s.stop();
    await bus?.close();
  });

  it("GET /v1/capabilities and GET /v1/voices: a 502 in plain words, as documented", async () => {
    const caps = await answer(t, checker, "GET", "/v1/capabilities");
    expect(caps).toMatchObject({ status: 502, detail: expect.stringContaining("capability table could not be read") });
    expect(caps.problems).toEqual([]);
    const voices = await answer(t, checker, "GET", "/v1/voices");
    expect(voices).toMatchObject({ status: 502, detail: expect.stringContaining("voice catalogue could not be read") });
    expect(voices.problems).toEqual([]);
  });

  it("creating a task whose workers cannot say what they can do: a 502, as documented, and nothing created", async () => {
    const book = await answer(t, checker, "POST", "/v1/audio_books/", { file: "book.txt", name: "x", source_language: "English", target_language: "Spanish" });
    const stream = await answer(t, checker, "POST", "/v1/voices/streams", { file: "talk.wav", source_language: "English", target_language: "Spanish" });
    const video = await answer(t, checker, "POST", "/v1/videos/subtitle", { file: "talk.mp4", source_language: "English", target_language: "Spanish" });
    for (const created of [book, stream, video]) {
      expect(created).toMatchObject({ status: 502, detail: expect.stringContaining("capability table could not be read") });
      expect(created.problems).toEqual([]);
    }
    expect(await (await t.request("GET", "/v1/audio_books/")).json()).toEqual([]);
  });
});

describe("a gateway that is shutting down", () => {
  it("answers a new event stream with a 503 and Retry-After, as documented", async () => {
    const t = await startTestGateway();
    try {
      const checker = await checkerOf(t);
      const created = await t.request("POST", "/v1/audio_books/", { body: { file: "book.txt", name: "x", source_language: "English", target_language: "English" } });
      const { id } = (await created.json()) as { id: string };
      await t.gateway.deps.events.stop();
      const path = `/v1/audio_books/${id}/events`;
      const res = await t.request("GET", path);
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(await checker.check({ method: "GET", url: `${BASE}${path}` }, res)).toEqual([]);
      expect(((await res.json()) as { detail: string }).detail).toContain("shutting down");
    } finally {
      await t.close();
    }
  });
});
