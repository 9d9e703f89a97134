import { createNatsBus } from "@voiceloc/bus";
import { startNatsServer, tempDir, type NatsServerHandle } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStack, makeTwoSentenceWav, startService, type ServiceHarness, type Stack, type TwoSentences } from "./testing/harness.ts";

let server: NatsServerHandle;
let stack: Stack;
let root: { path: string; cleanup: () => Promise<void> };
let speech: TwoSentences;
let h: ServiceHarness;

beforeAll(async () => {
  server = await startNatsServer();
  stack = await createStack();
  root = await tempDir("voiceloc-voice-stream-media-");
  speech = await makeTwoSentenceWav(stack.media, root.path, "two-sentences.wav");
  const bus = await createNatsBus({ url: server.url, logger: stack.logger, name: "voice-stream-test" });
  h = await startService(stack, { mediaRoot: root.path, bus });
});

afterAll(async () => {
  await h?.cleanup();
  await root?.cleanup();
  await server?.stop();
});

describe("voice-stream service over nats-server", () => {
  it("English → English completes with an MP3 as long as the original", async () => {
    await h.service.start(); // idempotent
    const id = await h.submit({ file: "two-sentences.wav", source: "English", target: "English" });
    const end = await h.finished(id);
    expect(end.error ?? null).toBeNull();
    expect(end.status).toBe("completed");
    const path = await h.download(end.result_key as string);
    const info = await stack.media.probe(path);
    expect(info.audio?.codec).toBe("mp3");
    expect(info.durationSeconds).toBeGreaterThanOrEqual(speech.durationSeconds - 0.2);
    expect(info.durationSeconds).toBeLessThanOrEqual(speech.durationSeconds + 1.5);
    const volume = await stack.media.measureVolume(path);
    expect(volume.maxVolumeDb).toBeGreaterThan(-20);
    const statuses = h.events.filter((e) => e.task_id === id).map((e) => e.status);
    expect(statuses[0]).toBe("processing");
    expect(statuses.at(-1)).toBe("completed");
  });
});
