/**
 * Audio books in cloned voices, with the ElevenLabs engine against a local stand-in of its documented
 * protocol (over HTTP): a book made with `use_voice_clone` clones its sample once, is read in that voice
 * and removes it at the engine when it ends, completed or failed; a clone deleted at the engine while a
 * book uses it fails the book in plain words, without hanging; an unusable sample makes no voice.
 */
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { analyzeSample, createElevenLabsCloneEngine, type CloneEngine } from "@voiceloc/engines";
import { makeSpeechWav, startElevenLabsStandIn, type CloneServiceStandIn, type ElevenLabsRoute } from "@voiceloc/testing";
import { createBookHarness, createEngineStack, waitFor, type BookHarness, type EngineStack } from "./testing/harness.ts";

const API_KEY = "stand-in-key";
const SAMPLE_TEXT = "The old lighthouse stood at the edge of the cliff for more than a hundred years, and every night its keeper lit the lamp.";
const BOOK =
  "Morning came slowly over the harbour. The fishermen pulled their boats onto the sand and sorted the catch. " +
  "A small dog ran along the water, barking at the gulls. Later the wind rose and the clouds came in from the sea. " +
  "By noon the first drops of rain fell on the roofs of the village, and the children ran home from the beach.";

let stack: EngineStack;
let standIn: CloneServiceStandIn<ElevenLabsRoute>;
let clones: CloneEngine;

beforeAll(async () => {
  stack = await createEngineStack();
  standIn = await startElevenLabsStandIn({ apiKey: API_KEY });
  clones = createElevenLabsCloneEngine({ apiKey: API_KEY, baseUrl: standIn.url, model: "eleven_multilingual_v2", logger: stack.logger });
});

afterAll(async () => {
  await standIn?.close();
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function harness(): Promise<BookHarness> {
  const h = await createBookHarness(stack);
  cleanups.push(h.cleanup);
  return h;
}

async function sample(h: BookHarness, name = "voice.wav", text = SAMPLE_TEXT): Promise<string> {
  await makeSpeechWav(text, { voice: "flite:kal", path: join(h.mediaRoot, name) });
  return name;
}

const requestsOf = (route: "create" | "speak" | "delete") =>
  standIn.requests.filter((r) =>
    route === "create" ? r.method === "POST" && r.path === "/v1/voices/add" : route === "speak" ? r.path.startsWith("/v1/text-to-speech/") : r.method === "DELETE",
  ).length;

describe("audio books in cloned voices (ElevenLabs stand-in over HTTP)", () => {
  it("use_voice_clone: the sample is cloned once, every chunk is spoken in that voice, and the voice is deleted when the book completes", async () => {
    const h = await harness();
    const before = { create: requestsOf("create"), speak: requestsOf("speak"), delete: requestsOf("delete") };
    const spokenBefore = standIn.speeches.length;
    const service = h.service({ clones, chunkChars: 200, parallelism: 2 });
    await service.start();
    const file = await h.writeInput("book.txt", BOOK);
    const id = await h.publish({ file, useVoiceClone: true, voiceCloneSample: await sample(h) });
    const end = await h.waitForEnd(id);
    expect(end.status, end.error ?? "").toBe("completed");
    expect(requestsOf("create") - before.create).toBe(1);
    const speeches = standIn.speeches.slice(spokenBefore);
    expect(speeches.length).toBeGreaterThan(1);
    // every chunk in the one clone, which the engine no longer has once the book is done
    expect(new Set(speeches.map((s) => s.voice)).size).toBe(1);
    expect(requestsOf("delete") - before.delete).toBe(1);
    expect([...standIn.voices.values()].some((v) => v.name === `audio book ${id}`)).toBe(false);
    // the book is as long as its text read aloud by the stand-in's voice (65 ms a character)
    const info = await stack.media.probe(await h.localFile(end.result_key!));
    expect(info.durationSeconds).toBeGreaterThan(BOOK.length * 0.05);
  });

  it("a book cut short resumes from its checkpoints: the clone is made again under the same voice name, no chunk is spoken twice", async () => {
    const h = await harness();
    const spoken: Array<{ run: number; index: number; total: number }> = [];
    const creates = requestsOf("create");
    let stopping: Promise<void> | undefined;
    const first = h.service({
      clones,
      chunkChars: 150,
      parallelism: 1,
      onChunkDone: ({ index, total }) => {
        spoken.push({ run: 1, index, total });
        // shut down after the second chunk, with no grace: the running chunk is aborted
        if (spoken.length === 2) stopping ??= first.stop({ graceMs: 0 });
      },
    });
    await first.start();
    const file = await h.writeInput("book.txt", Array.from({ length: 4 }, () => BOOK).join("\n\n"));
    const id = await h.publish({ file, useVoiceClone: true, voiceCloneSample: await sample(h) });
    await waitFor(() => stopping !== undefined, "the first worker to stop");
    await stopping;
    const second = h.service({ clones, chunkChars: 150, parallelism: 1, onChunkDone: ({ index, total }) => void spoken.push({ run: 2, index, total }) });
    await second.start();
    const end = await h.waitForEnd(id);
    expect(end.status, end.error ?? "").toBe("completed");
    const total = spoken[0]!.total;
    expect(total).toBeGreaterThanOrEqual(3);
    expect(spoken.map((s) => s.index).sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, i) => i));
    expect(spoken.filter((s) => s.run === 2).length).toBeGreaterThan(0);
    // one voice per delivery, each deleted when its delivery ended
    expect(requestsOf("create") - creates).toBe(2);
    await waitFor(() => ![...standIn.voices.values()].some((v) => v.name === `audio book ${id}`), "the clones to be deleted", 30_000);
  });

  it("the book's own clone is deleted when the book fails too", async () => {
    const h = await harness();
    const service = h.service({ clones });
    await service.start();
    const id = await h.publish({ file: "missing.txt", useVoiceClone: true, voiceCloneSample: await sample(h) });
    const end = await h.waitForEnd(id);
    expect(end.status).toBe("failed");
    expect(end.error).toMatch(/file/i);
    expect([...standIn.voices.values()].some((v) => v.name === `audio book ${id}`)).toBe(false);
  });

  it("an unusable sample fails the book in plain words and makes no voice", async () => {
    const h = await harness();
    const service = h.service({ clones });
    await service.start();
    const file = await h.writeInput("book.txt", BOOK);
    const creates = requestsOf("create");
    const id = await h.publish({ file, useVoiceClone: true, voiceCloneSample: await sample(h, "short.wav", "Hi.") });
    const end = await h.waitForEnd(id);
    expect(end.status).toBe("failed");
    expect(end.error).toMatch(/The voice sample cannot be cloned: .*shorter than the 3 seconds/);
    expect(requestsOf("create")).toBe(creates);
  });

  it("a clone deleted at the engine while the book is read fails it in plain words; nothing hangs", async () => {
    const h = await harness();
    const analysisSample = await sample(h);
    // the caller's clone, made at the engine as the synthesis service would
    const analysis = await analyzeSample({ media: stack.media, inputPath: join(h.mediaRoot, analysisSample), workDir: h.mediaRoot });
    const made = await clones.create({ id: "0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0", name: "Narrator", sample: analysis });
    const wire = {
      id: "0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0",
      name: "Narrator",
      engine: "elevenlabs" as const,
      ref: made.ref,
      profile: { median_pitch_hz: analysis.profile.medianPitchHz, pitch_low_hz: analysis.profile.pitchLowHz, pitch_high_hz: analysis.profile.pitchHighHz, syllables_per_second: analysis.profile.syllablesPerSecond },
    };
    // one lane, small chunks: the voice is deleted after the first chunk is stored
    const service = h.service({
      clones,
      chunkChars: 120,
      parallelism: 1,
      onChunkDone: async ({ index }) => {
        if (index === 0) standIn.voices.delete(made.ref);
      },
    });
    await service.start();
    const file = await h.writeInput("book.txt", Array.from({ length: 6 }, () => BOOK).join("\n\n"));
    const started = Date.now();
    const id = await h.publish({ file, voice: "clone:0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0", clone: wire });
    const end = await h.waitForEnd(id, 60_000);
    expect(end.status).toBe("failed");
    expect(end.error).toMatch(/could not speak part \d+ of \d+ of the text: .*(deleted|no longer|not found)/i);
    // failed on that delivery (an input failure), not retried until the attempts ran out
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});
