/**
 * SANDBOX_MAX_TASKS_IN_FLIGHT across the mesh: creations fired at once, on two gateways sharing the
 * store, never store more unfinished sandbox tasks than the limit; a replay of an accepted request
 * (same Idempotency-Key and body) is answered even at the limit; a finished task frees its place.
 */
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "@voiceloc/testing";
import { ApiKeyRepository } from "../auth/api-keys.ts";
import { startTestGateway, type TestGateway } from "../testing/harness.ts";

const STREAM = { file: "talk.wav", source_language: "English", target_language: "French" };
const LIMIT = { SANDBOX_MAX_TASKS_IN_FLIGHT: "2" };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Gateways on one store (no bus: records stay queued, so every created task is unfinished). */
async function gateways(count: number): Promise<{ all: TestGateway[]; sandboxKey: string }> {
  const dir = await tempDir("voiceloc-sandbox-");
  cleanups.push(() => dir.cleanup());
  const all: TestGateway[] = [];
  for (let i = 0; i < count; i++) {
    const t = await startTestGateway(LIMIT, {}, dir.path);
    cleanups.push(() => t.close());
    all.push(t);
  }
  const keys = await ApiKeyRepository.open(all[0]!.gateway.deps.store);
  return { all, sandboxKey: (await keys.create("alice", "sandbox", new Date(), "sandbox")).key };
}

const createStream = (t: TestGateway, key: string, headers: Record<string, string> = {}) => t.request("POST", "/v1/voices/streams", { key, body: STREAM, headers });

describe("sandbox tasks in flight", () => {
  it("creations fired at once on two gateways sharing the store: exactly the limit is accepted, the rest are 429", async () => {
    const { all, sandboxKey } = await gateways(2);
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => createStream(all[i % 2]!, sandboxKey)));
    const statuses = answers.map((res) => res.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(2);
    expect(statuses.filter((s) => s === 429)).toHaveLength(14);
    const refused = answers.find((res) => res.status === 429)!;
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(((await refused.json()) as { detail: string }).detail).toContain("at most 2 unfinished tasks");
    const stored = await all[1]!.request("GET", "/v1/voices/streams", { key: sandboxKey });
    expect(((await stored.json()) as unknown[]).length).toBe(2);
  });

  it("answers a replay of an accepted request at the limit, and takes another task once one has finished", async () => {
    const { all, sandboxKey } = await gateways(1);
    const t = all[0]!;
    const first = await createStream(t, sandboxKey, { "Idempotency-Key": "first" });
    expect(first.status).toBe(201);
    const firstBody = await first.text();
    expect((await createStream(t, sandboxKey, { "Idempotency-Key": "second" })).status).toBe(201);
    expect((await createStream(t, sandboxKey, { "Idempotency-Key": "third" })).status).toBe(429);

    const replay = await createStream(t, sandboxKey, { "Idempotency-Key": "first" });
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await replay.text()).toBe(firstBody);

    const { id } = JSON.parse(firstBody) as { id: string };
    expect(await t.gateway.deps.records["voice-stream"].failIfUnfinished(id, "The test failed it", new Date().toISOString())).toBe(true);
    expect((await createStream(t, sandboxKey, { "Idempotency-Key": "third" })).status).toBe(201);
    expect((await createStream(t, sandboxKey)).status).toBe(429);
    // live keys of the same account are not held by the sandbox's places
    expect((await t.request("POST", "/v1/voices/streams", { body: STREAM })).status).toBe(201);
  });
});
