import { createNatsBus } from "@voiceloc/bus";
import { silentLogger } from "@voiceloc/log";
import { startNatsServer, type NatsServerHandle } from "@voiceloc/testing";
import { FILE_NOT_AVAILABLE } from "@voiceloc/fetch";
import { checkpointPrefix } from "@voiceloc/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBookHarness, createEngineStack, decodeErrors, isTerminal, type EngineStack } from "./testing/harness.ts";
import { SHORT_ENGLISH } from "./testing/texts.ts";

let server: NatsServerHandle;
let stack: EngineStack;
beforeAll(async () => {
  [server, stack] = await Promise.all([startNatsServer(), createEngineStack()]);
});
afterAll(async () => {
  await server?.stop();
});

describe("audio book service over nats-server", () => {
  it("provisions its queue, speaks a short book end to end and publishes rising events", async () => {
    const bus = await createNatsBus({ url: server.url, logger: silentLogger(), name: "audiobook-test" });
    const h = await createBookHarness(stack, { bus });
    try {
      const service = h.service({ chunkChars: 200 });
      await service.start();
      await service.start(); // idempotent
      const id = await h.publish({ file: await h.writeInput("short.txt", SHORT_ENGLISH) });
      const end = await h.waitForEnd(id);
      expect(end).toMatchObject({ status: "completed", progress: 100, result_key: `results/audiobook/${id}.mp3` });

      const events = h.eventsOf(id);
      for (let i = 1; i < events.length; i++) expect(events[i]!.seq).toBeGreaterThan(events[i - 1]!.seq);
      expect(events.filter(isTerminal)).toHaveLength(1);
      const path = await h.localFile(end.result_key!);
      expect(await decodeErrors(stack.media, path)).toEqual([]);
      const seconds = (await stack.media.probe(path)).durationSeconds;
      expect(seconds * 1000 / SHORT_ENGLISH.length).toBeGreaterThan(40);
      expect(seconds * 1000 / SHORT_ENGLISH.length).toBeLessThan(100);
      expect(await h.blobs.list(checkpointPrefix(id))).toEqual([]);

      // started again after a stop, it takes the next book
      await service.stop();
      await service.start();
      const next = await h.publish({ file: "nowhere/missing.txt" });
      expect(await h.waitForEnd(next, 30_000)).toMatchObject({ status: "failed", error: FILE_NOT_AVAILABLE });
    } finally {
      await h.cleanup();
    }
  });
});
