import { afterEach, describe, expect, it, vi } from "vitest";
import { silentLogger } from "@voiceloc/log";
import { openEmbeddedStore, type Collection } from "@voiceloc/store";
import { tempDir } from "@voiceloc/testing";
import { IDEMPOTENCY_TTL_MS, IdempotencyStore, type IdempotencyDoc } from "./idempotency.ts";

afterEach(() => {
  vi.useRealTimers();
});

describe("purging expired idempotency keys", () => {
  it("purges at start and on every tick, keeps live keys, and stopping clears the timer", async () => {
    const dir = await tempDir("voiceloc-idem-");
    const store = await openEmbeddedStore({ dir: dir.path, logger: silentLogger() });
    try {
      const keys = await IdempotencyStore.open(store);
      const docs: Collection<IdempotencyDoc> = await store.collection<IdempotencyDoc>({ name: "idempotency_keys" });
      const now = new Date("2031-01-10T00:00:00.000Z");
      const longAgo = new Date(now.getTime() - IDEMPOTENCY_TTL_MS - 1000);
      const claim = async (key: string, at: Date) => {
        const c = await keys.claim("alice", "route", key, { n: 1 }, at);
        if (c.kind !== "new") throw new Error("expected a new claim");
        return c.id;
      };
      const first = await claim("first", longAgo);
      const live = await claim("live", now);

      vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
      const stop = keys.startPurging(60_000, silentLogger(), () => now);
      await vi.waitFor(async () => expect(await docs.get(first)).toBeNull());

      const second = await claim("second", longAgo);
      expect(await docs.get(second)).not.toBeNull();
      vi.advanceTimersByTime(60_000);
      await vi.waitFor(async () => expect(await docs.get(second)).toBeNull());
      expect(await docs.get(live)).not.toBeNull();

      expect(vi.getTimerCount()).toBe(1);
      await stop();
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      await store.close();
      await dir.cleanup();
    }
  });
});
