import { randomUUID } from "node:crypto";
import { readFile, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { checkpointKey, checkpointPrefix, SEQ_DELIVERY_SPAN } from "@voiceloc/worker";
import { FILE_NOT_AVAILABLE } from "@voiceloc/fetch";
import type { TaskEvent } from "@voiceloc/contracts";
import type { MtRegistry, TtsRegistry } from "@voiceloc/engines";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { chunkText, cutTextWithin, normaliseText, speakableText } from "./text.ts";
import { createBookHarness, createEngineStack, decodeErrors, isTerminal, waitFor, type BookHarness, type EngineStack } from "./testing/harness.ts";
import { ENGLISH_BOOK, SHORT_ENGLISH, SHORT_SPANISH } from "./testing/texts.ts";
import { AUDIO_BOOK_MP3 } from "./pipeline.ts";
import type { AudioBookService } from "./service.ts";

let stack: EngineStack;
beforeAll(async () => {
  stack = await createEngineStack();
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

/** A started service on the harness. */
async function started(h: BookHarness, extra: Parameters<BookHarness["service"]>[0] = {}): Promise<AudioBookService> {
  const service = h.service(extra);
  await service.start();
  return service;
}

function expectRisingSeq(events: TaskEvent[]): void {
  for (let i = 1; i < events.length; i++) expect(events[i]!.seq).toBeGreaterThan(events[i - 1]!.seq);
}

/** Duration (s) of the result, after checking that every frame decodes. */
async function resultSeconds(h: BookHarness, key: string): Promise<number> {
  const path = await h.localFile(key);
  expect(await decodeErrors(stack.media, path)).toEqual([]);
  const info = await stack.media.probe(path);
  expect(info.audio?.codec).toBe("mp3");
  return info.durationSeconds;
}

describe("audio book service (in-process bus, fs blobs, real engines and ffmpeg)", () => {
  it("turns an English text of several thousand characters into one MP3 that fits its length", async () => {
    const h = await harness();
    // Chunks smaller than the engine's limit, so that several finish one after the other.
    await started(h, { chunkChars: 1_000 });
    const file = await h.writeInput("books/keeper.txt", ENGLISH_BOOK);
    const id = await h.publish({ file });
    const end = await h.waitForEnd(id);
    expect(end).toMatchObject({ status: "completed", progress: 100, result_key: `results/audiobook/${id}.mp3` });

    const events = h.eventsOf(id);
    expect(events.filter(isTerminal)).toHaveLength(1);
    expectRisingSeq(events);
    const progress = events.map((e) => e.progress);
    expect([...progress].sort((a, b) => a - b)).toEqual(progress);
    expect(progress[0]).toBe(0);
    // Chunks report as they finish: several steps between the translation band and the end.
    expect(new Set(progress.filter((p) => p > 20 && p < 100)).size).toBeGreaterThan(1);

    // The default English voice speaks about 55–60 ms per character (flite and espeak-ng alike).
    const chars = normaliseText(ENGLISH_BOOK).length;
    const seconds = await resultSeconds(h, end.result_key!);
    expect(seconds * 1000 / chars).toBeGreaterThan(40);
    expect(seconds * 1000 / chars).toBeLessThan(100);
    // Checkpoints are removed once the book is done.
    expect(await h.blobs.list(checkpointPrefix(id))).toEqual([]);
  });

  it("speaks a book shorter than the engine's limit on every core: one chunk per core at least, none smaller than an encoder start", async () => {
    const h = await harness();
    const totals: number[] = [];
    await started(h, { parallelism: 2, onChunkDone: ({ total }) => void totals.push(total) });
    // 2,400 characters: one chunk for flite (3,000) or espeak-ng (10,000) alone, two of about 1,200 for two cores.
    const mid = await h.publish({ file: await h.writeInput("mid.txt", ENGLISH_BOOK.slice(0, 2_400)) });
    expect(await h.waitForEnd(mid)).toMatchObject({ status: "completed" });
    expect(totals[0]).toBeGreaterThanOrEqual(2);
    expect(totals[0]).toBeLessThanOrEqual(3);
    // 600 characters: under what starting a second encoder costs, so one chunk.
    totals.length = 0;
    const short = await h.publish({ file: await h.writeInput("short.txt", ENGLISH_BOOK.slice(0, 600)) });
    expect(await h.waitForEnd(short)).toMatchObject({ status: "completed" });
    expect(totals).toEqual([1]);
  });

  it("translates English to Spanish and Spanish to English (Apertium) before speaking", async () => {
    const h = await harness();
    await started(h);
    const en = await h.writeInput("en.txt", SHORT_ENGLISH);
    const es = await h.writeInput("es.txt", SHORT_SPANISH);
    const toSpanish = await h.publish({ file: en, source: "English", target: "Spanish" });
    const toEnglish = await h.publish({ file: es, source: "Spanish", target: "English" });
    for (const [id, chars] of [[toSpanish, SHORT_ENGLISH.length], [toEnglish, SHORT_SPANISH.length]] as const) {
      const end = await h.waitForEnd(id);
      expect(end, JSON.stringify(end)).toMatchObject({ status: "completed", result_key: `results/audiobook/${id}.mp3` });
      const seconds = await resultSeconds(h, end.result_key!);
      // A translation is longer or shorter than its source, but of the same order.
      expect(seconds * 1000 / chars).toBeGreaterThan(25);
      expect(seconds * 1000 / chars).toBeLessThan(150);
    }
  });

  it("reads UTF-16 LE text with a byte order mark", async () => {
    const h = await harness();
    await started(h);
    const bytes = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(SHORT_ENGLISH.replaceAll("\n", "\r\n"), "utf16le")]);
    const id = await h.publish({ file: await h.writeInput("windows.txt", bytes) });
    const end = await h.waitForEnd(id);
    expect(end).toMatchObject({ status: "completed" });
    const seconds = await resultSeconds(h, end.result_key!);
    expect(seconds * 1000 / SHORT_ENGLISH.length).toBeGreaterThan(40);
  });

  const NOT_AVAILABLE = new RegExp(`^${FILE_NOT_AVAILABLE.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);

  it("fails, in plain words, books whose file is binary, empty, missing or outside MEDIA_ROOT, and keeps serving", async () => {
    const h = await harness();
    await started(h);
    const png = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082", "hex");
    const secret = join(dirname(h.mediaRoot), "secret.txt");
    await writeFile(secret, "A secret outside the media root.");
    const link = async (name: string, target: string) => {
      await symlink(target, join(h.mediaRoot, name));
      return name;
    };
    const cases: Array<[string, RegExp]> = [
      [await h.writeInput("cover.png", png), /^The file is not text: it contains binary data/],
      [await h.writeInput("noise.txt", Buffer.from([0x41, 0xff, 0xfe, 0x80, 0x81, 0x42])), /^The file is not text: it is not valid UTF-8/],
      [await h.writeInput("empty.txt", "  \r\n\r\n "), /^The file contains no text\.$/],
      // missing, '..', outside, a link out and a directory: one reason, nothing told about what exists
      ["books/missing.txt", NOT_AVAILABLE],
      ["../secret.txt", NOT_AVAILABLE],
      [secret, NOT_AVAILABLE],
      [await link("escape.txt", secret), NOT_AVAILABLE],
      [await link("a-directory", dirname(h.mediaRoot)), NOT_AVAILABLE],
    ];
    const ids = await Promise.all(cases.map(([file]) => h.publish({ file })));
    const good = await h.publish({ file: await h.writeInput("ok.txt", "A short book that works.") });
    for (const [i, [, reason]] of cases.entries()) {
      const end = await h.waitForEnd(ids[i]!);
      expect(end.status).toBe("failed");
      expect(end.error).toMatch(reason);
      expect(h.eventsOf(ids[i]!).filter(isTerminal)).toHaveLength(1);
    }
    expect(await h.waitForEnd(good)).toMatchObject({ status: "completed" });
  });

  it("fails books asking for a pair, voice or feature the engines lack, naming it", async () => {
    const h = await harness();
    await started(h);
    const file = await h.writeInput("en.txt", SHORT_ENGLISH);
    const pair = await h.publish({ file, source: "English", target: "German" });
    const voice = await h.publish({ file, voice: "flite:nobody" });
    const mismatch = await h.publish({ file, target: "English", voice: "espeak:es" });
    const clone = await h.publish({ file, useVoiceClone: true });
    expect((await h.waitForEnd(pair)).error).toMatch(/Translation from English to German is not available/);
    expect((await h.waitForEnd(voice)).error).toMatch(/There is no voice called "flite:nobody"/);
    expect((await h.waitForEnd(mismatch)).error).toMatch(/"espeak:es" does not speak English/);
    expect((await h.waitForEnd(clone)).error).toMatch(/Voice cloning is not available/);
  });

  it("resumes a book whose worker stopped mid-way, without speaking finished chunks again; resume progress opens at the chunks done", async () => {
    const h = await harness();
    const spoken: Array<{ run: number; index: number; total: number }> = [];
    let stopping: Promise<void> | undefined;
    const first: AudioBookService = await started(h, {
      chunkChars: 300,
      onChunkDone: ({ index, total }) => {
        spoken.push({ run: 1, index, total });
        // The worker is shut down after its second chunk, with no grace: running chunks are aborted.
        if (spoken.length === 2) stopping ??= first.stop({ graceMs: 0 });
      },
    });
    const file = await h.writeInput("keeper.txt", ENGLISH_BOOK.slice(0, 2_400));
    const id = await h.publish({ file });
    await waitFor(() => stopping !== undefined, "the first worker to stop");
    await stopping;
    expect(h.eventsOf(id).some(isTerminal)).toBe(false);
    const checkpoints = await h.blobs.list(checkpointPrefix(id));
    const stored = checkpoints.filter((k) => k.endsWith(".mp3")).length;
    expect(stored).toBe(spoken.length);

    await started(h, { chunkChars: 300, onChunkDone: ({ index, total }) => void spoken.push({ run: 2, index, total }) });
    const end = await h.waitForEnd(id);
    expect(end).toMatchObject({ status: "completed", result_key: `results/audiobook/${id}.mp3` });

    const total = spoken[0]!.total;
    expect(total).toBeGreaterThanOrEqual(6);
    const indexes = spoken.map((s) => s.index).sort((a, b) => a - b);
    expect(indexes).toEqual(Array.from({ length: total }, (_, i) => i)); // every chunk spoken exactly once
    expect(spoken.filter((s) => s.run === 1).length).toBeGreaterThanOrEqual(2);
    expect(spoken.filter((s) => s.run === 2).length).toBeGreaterThan(0);

    const events = h.eventsOf(id);
    expectRisingSeq(events);
    expect(events.filter(isTerminal)).toHaveLength(1);
    // The redelivery's opening event reports the chunks already spoken (20–95 is the speaking band), not 0.
    const reopened = events.find((e) => Math.floor(e.seq / SEQ_DELIVERY_SPAN) === 2);
    expect(reopened?.status).toBe("processing");
    expect(reopened?.progress).toBeCloseTo(20 + (75 * stored) / total, 5);
    const seconds = await resultSeconds(h, end.result_key!);
    expect(seconds * 1000 / normaliseText(ENGLISH_BOOK.slice(0, 2_400)).length).toBeGreaterThan(40);
  });

  it("a long book opens with a small first chunk, stored first; a redelivery replays the same cut from the plan", async () => {
    const h = await harness();
    const spoken: Array<{ run: number; index: number; total: number }> = [];
    let stopping: Promise<void> | undefined;
    const first: AudioBookService = await started(h, {
      parallelism: 2,
      onChunkDone: ({ index, total }) => {
        spoken.push({ run: 1, index, total });
        if (spoken.length === 2) stopping ??= first.stop({ graceMs: 0 });
      },
    });
    let text = "";
    while (text.length < 8_000) text += `${ENGLISH_BOOK}\n\n`;
    const id = await h.publish({ file: await h.writeInput("long.txt", text) });
    await waitFor(() => stopping !== undefined, "the first worker to stop");
    await stopping;
    // The first chunk is the book's first stored, and it is small (the lead: 250 characters at most).
    expect(spoken[0]?.index).toBe(0);
    const plan = JSON.parse(await readFile(await h.localFile(checkpointKey(id, "plan.json")), "utf8")) as { leadChars?: number[]; chunks: number };
    expect(plan.leadChars?.[0]).toBe(250);
    expect(plan.chunks).toBe(spoken[0]?.total);

    await started(h, { parallelism: 2, onChunkDone: ({ index, total }) => void spoken.push({ run: 2, index, total }) });
    const end = await h.waitForEnd(id);
    expect(end).toMatchObject({ status: "completed" });
    // The redelivery cut the book alike: same number of chunks, every chunk spoken exactly once.
    expect(new Set(spoken.map((s) => s.total))).toEqual(new Set([plan.chunks]));
    expect(spoken.map((s) => s.index).sort((a, b) => a - b)).toEqual(Array.from({ length: plan.chunks }, (_, i) => i));
    expect(spoken.some((s) => s.run === 2)).toBe(true);
    const seconds = await resultSeconds(h, end.result_key!);
    expect(seconds * 1000 / normaliseText(text).length).toBeGreaterThan(40);
  });

  it.each([
    ["uniform (no chunkLimits: every chunk cut to chunkChars)", undefined],
    ["tapered (each chunk cut to its own limit in chunkLimits)", [900, 600, 400, 300, 900, 600, 400, 300]],
  ] as const)("keeps the cut of a plan stored by an earlier version: %s", async (_shape, chunkLimits) => {
    const h = await harness();
    const said: string[] = [];
    const tts: TtsRegistry = {
      ...stack.tts,
      resolve: (language, voice) => {
        const resolved = stack.tts.resolve(language, voice);
        const synthesize: typeof resolved.engine.synthesize = (request) => {
          said.push(request.text);
          return resolved.engine.synthesize(request);
        };
        return { ...resolved, engine: { ...resolved.engine, synthesize } };
      },
    };
    const text = normaliseText(ENGLISH_BOOK.slice(0, 2_400));
    const stored = chunkLimits === undefined ? chunkText(text, 700) : cutTextWithin(text, chunkLimits);
    const id = randomUUID();
    const plan = {
      voice: stack.tts.resolve("English").voice.name,
      chunkChars: chunkLimits === undefined ? 700 : Math.max(...chunkLimits),
      chunks: stored.length,
      ...(chunkLimits === undefined ? {} : { chunkLimits }),
      encoding: `mp3 ${AUDIO_BOOK_MP3.bitrateKbps}k q${AUDIO_BOOK_MP3.quality} mono`,
    };
    await h.blobs.put(checkpointKey(id, "text.txt"), Buffer.from(text, "utf8"));
    await h.blobs.put(checkpointKey(id, "plan.json"), Buffer.from(JSON.stringify(plan), "utf8"));
    await started(h, { tts });
    await h.publish({ file: await h.writeInput("keeper.txt", text), taskId: id });
    const end = await h.waitForEnd(id);
    expect(end).toMatchObject({ status: "completed" });
    // A new plan would have cut chunks of up to the engine's limit; the stored one is kept.
    expect([...said].sort()).toEqual(stored.map(speakableText).sort());
    const seconds = await resultSeconds(h, end.result_key!);
    expect(seconds * 1000 / text.length).toBeGreaterThan(40);
  });

  it("does not translate again when a translated book is redelivered", async () => {
    const h = await harness();
    const translated: Array<{ run: number; text: string }> = [];
    const counting = (run: number): MtRegistry => ({
      ...stack.mt,
      translate: (request) => {
        translated.push({ run, text: request.text });
        return stack.mt.translate(request);
      },
    });
    let stopping: Promise<void> | undefined;
    let spoken = 0;
    const first: AudioBookService = await started(h, {
      chunkChars: 200,
      mt: counting(1),
      onChunkDone: () => {
        spoken++;
        stopping ??= first.stop({ graceMs: 0 });
      },
    });
    const id = await h.publish({ file: await h.writeInput("en.txt", SHORT_ENGLISH), source: "English", target: "Spanish" });
    await waitFor(() => stopping !== undefined, "the first worker to stop");
    await stopping;
    await started(h, { chunkChars: 200, mt: counting(2), onChunkDone: () => void spoken++ });
    const end = await h.waitForEnd(id);
    expect(end).toMatchObject({ status: "completed" });

    const parts = chunkText(normaliseText(SHORT_ENGLISH), 200);
    expect(parts.length).toBeGreaterThan(1);
    expect(translated.map((t) => t.text).sort()).toEqual([...parts].sort());
    expect(translated.every((t) => t.run === 1)).toBe(true);
    expect(spoken).toBeGreaterThan(1);
  });

  it("MAX_BOOK_CHARACTERS: a longer book fails on its first delivery with a reason naming the limit", async () => {
    const h = await harness();
    await started(h, { maxBookCharacters: 100 });
    const long = await h.publish({ file: await h.writeInput("long.txt", SHORT_ENGLISH) });
    const short = await h.publish({ file: await h.writeInput("short.txt", "A short book that fits.") });
    const end = await h.waitForEnd(long);
    expect(end.status).toBe("failed");
    expect(end.error).toBe(
      `The book has more than the 100 characters this server accepts for one audio book (MAX_BOOK_CHARACTERS).`,
    );
    expect(Math.floor(end.seq / SEQ_DELIVERY_SPAN)).toBe(1);
    expect(await h.waitForEnd(short)).toMatchObject({ status: "completed" });
  });

  it("SANDBOX_MAX_BOOK_CHARACTERS: a sandbox owner's longer book fails naming the sandbox limit; the same book of a live owner is read", async () => {
    const h = await harness();
    await started(h, { sandboxMaxBookCharacters: 100 });
    const file = await h.writeInput("sandbox.txt", SHORT_ENGLISH);
    const sandbox = await h.publish({ file, owner: "sandbox:alice" });
    const live = await h.publish({ file });
    const end = await h.waitForEnd(sandbox);
    expect(end.status).toBe("failed");
    expect(end.error).toBe(
      `The book has more than the 100 characters a sandbox key may have read (SANDBOX_MAX_BOOK_CHARACTERS): send a shorter text or use a live key.`,
    );
    expect(await h.waitForEnd(live)).toMatchObject({ status: "completed" });
  });
});
