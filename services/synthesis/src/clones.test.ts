/**
 * The synthesis service's cloned voices on request/reply (`clone.create`, `clone.delete`, `synthesize`
 * with a clone): real offline engines and ffmpeg for `match`, the ElevenLabs engine against its local
 * stand-in over HTTP for an outside engine's trouble.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFsBlobStore } from "@voiceloc/blobs";
import { createCatalogBus, createInProcessBus, type Bus } from "@voiceloc/bus";
import { BUS_CATALOG, type CloneCreateRequest } from "@voiceloc/contracts";
import { createElevenLabsCloneEngine, createVoiceLibraryCloneEngine, measureSpeech } from "@voiceloc/engines";
import { silentLogger } from "@voiceloc/log";
import { ELEVENLABS_QUOTA_FAULT, makeSpeechWav, startElevenLabsStandIn, startVoiceLibraryStandIn, tempDir, type CloneServiceStandIn, type ElevenLabsRoute } from "@voiceloc/testing";
import { createSpeechStack, type SpeechStack } from "./engines.ts";
import { createSynthesisService, type SynthesisService } from "./service.ts";

const logger = silentLogger();
const API_KEY = "stand-in-key";
let dir: { path: string; cleanup: () => Promise<void> };
let speech: SpeechStack;
let standIn: CloneServiceStandIn<ElevenLabsRoute>;
let samplePitch: number;
const blobs = () => createFsBlobStore({ root: join(dir.path, "blobs") });
const open: Array<{ bus: Bus; service: SynthesisService }> = [];

beforeAll(async () => {
  dir = await tempDir("voiceloc-synthesis-clones-");
  speech = await createSpeechStack({ logger, clone: { engine: "match" } });
  standIn = await startElevenLabsStandIn({ apiKey: API_KEY });
  const sample = await makeSpeechWav(
    "The old lighthouse stood at the edge of the cliff for more than a hundred years, and every night its keeper climbed the stairs to light the lamp.",
    { voice: "flite:kal", path: join(dir.path, "kal.wav") },
  );
  samplePitch = (await measureSpeech(sample)).profile.medianPitchHz ?? Number.NaN;
  await makeSpeechWav("Hi.", { voice: "flite:kal", path: join(dir.path, "short.wav") });
  await writeFile(join(dir.path, "notes.wav"), "these are not sounds, only words in a text file\n".repeat(50));
});

afterAll(async () => {
  for (const { bus, service } of open.splice(0)) {
    await service.stop();
    await bus.close();
  }
  await standIn?.close();
  await dir?.cleanup();
});

async function start(stack: SpeechStack = speech) {
  const bus = createInProcessBus({ logger });
  const service = createSynthesisService({ bus, blobs: blobs(), speech: stack, logger, fetch: { mediaRoot: dir.path } });
  await service.start();
  open.push({ bus, service });
  return createCatalogBus(bus, BUS_CATALOG);
}

const createRequest = (over: Partial<CloneCreateRequest> = {}): CloneCreateRequest => ({
  id: "0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0",
  name: "Kal",
  sample: "kal.wav",
  language: "English",
  account_id: "alice",
  request_id: "r1",
  ...over,
});

describe("clone.create, synthesize in a clone, clone.delete (match engine)", () => {
  it("makes a clone from a sample under the account's rights and speaks in it, near the sample's pitch", async () => {
    const typed = await start();
    const made = await typed.request("clone.create", createRequest());
    if (!made.ok) throw new Error(`${made.code}: ${made.message}`);
    expect(made.reply).toMatchObject({ engine: "match", ref: "" });
    expect(made.reply.sample_seconds).toBeGreaterThan(5);
    expect(made.reply.languages).toEqual(expect.arrayContaining(["English", "Spanish"]));
    expect(made.reply.profile.median_pitch_hz).toBeCloseTo(samplePitch, 0);

    const clone = { id: "0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0", name: "Kal", engine: made.reply.engine, ref: made.reply.ref, profile: made.reply.profile };
    const spoken = await typed.request("synthesize", {
      text: "We are going for a long walk along the river before dinner tonight.",
      language: "English",
      voice: "clone:0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0",
      clone,
      format: "wav",
      account_id: "alice",
      request_id: "r2",
    });
    if (!spoken.ok) throw new Error(`${spoken.code}: ${spoken.message}`);
    expect(spoken.reply.voice).toBe("clone:0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0");
    const wav = await blobs().toLocalFile(spoken.reply.key, join(dir.path, "copies"));
    const hz = (await measureSpeech(wav)).profile.medianPitchHz ?? 0;
    expect(Math.abs(hz - samplePitch) / samplePitch).toBeLessThanOrEqual(0.1);

    expect(await typed.request("clone.delete", { clone, account_id: "alice", request_id: "r3" })).toEqual({ ok: true, reply: { deleted: true } });
  }, 120_000);

  it("refuses samples in plain words: not available, too short, not audio", async () => {
    const typed = await start();
    const missing = await typed.request("clone.create", createRequest({ sample: "nope.wav" }));
    expect(missing).toMatchObject({ ok: false, code: "sample_not_available" });
    expect(!missing.ok && missing.message).toMatch(/^The voice sample cannot be fetched: /);
    const short = await typed.request("clone.create", createRequest({ sample: "short.wav" }));
    expect(short).toMatchObject({ ok: false, code: "sample_unusable" });
    expect(!short.ok && short.message).toMatch(/shorter than the 3 seconds/);
    const text = await typed.request("clone.create", createRequest({ sample: "notes.wav" }));
    expect(text).toMatchObject({ ok: false, code: "sample_unusable" });
    expect(!text.ok && text.message).toMatch(/not an audio file/);
    // a path outside the media root is not available, in the same words as a missing one
    expect(await typed.request("clone.create", createRequest({ sample: "../etc/passwd" }))).toMatchObject({ ok: false, code: "sample_not_available" });
  });

  it("answers cloning_unavailable without a clone engine, and refuses a clone made by another engine as an unknown voice", async () => {
    const typed = await start({ registry: speech.registry, media: speech.media });
    expect(await typed.request("clone.create", createRequest())).toMatchObject({ ok: false, code: "cloning_unavailable" });
    const spoken = await typed.request("synthesize", {
      text: "Hello there.",
      language: "English",
      voice: "clone:x",
      clone: { id: "x", name: "Gone", engine: "elevenlabs", ref: "abc", profile: { median_pitch_hz: 100, pitch_low_hz: 90, pitch_high_hz: 120, syllables_per_second: 4 } },
      format: "mp3",
      account_id: "alice",
      request_id: "r4",
    });
    expect(spoken).toMatchObject({ ok: false, code: "unknown_voice" });
  });
});

describe("an outside engine's trouble as cloning refusals (ElevenLabs stand-in)", () => {
  it("quota → engine_unavailable, 429 → engine_busy, 5xx → engine_unavailable; a voice made is deleted there", async () => {
    const clones = createElevenLabsCloneEngine({ apiKey: API_KEY, baseUrl: standIn.url, model: "eleven_multilingual_v2", logger, timeoutMs: 10_000 });
    const typed = await start({ ...speech, clones });
    standIn.fail("create", ELEVENLABS_QUOTA_FAULT);
    expect(await typed.request("clone.create", createRequest())).toMatchObject({ ok: false, code: "engine_unavailable" });
    standIn.fail("create", { status: 429, body: { detail: { status: "too_many_concurrent_requests", message: "busy" } }, headers: { "retry-after": "3" } });
    expect(await typed.request("clone.create", createRequest())).toMatchObject({ ok: false, code: "engine_busy" });
    standIn.fail("create", { status: 503, body: { detail: "down" } });
    const down = await typed.request("clone.create", createRequest());
    expect(down).toMatchObject({ ok: false, code: "engine_unavailable" });
    expect(!down.ok && down.message).not.toMatch(/down/);

    const made = await typed.request("clone.create", createRequest({ id: "0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d1" }));
    if (!made.ok) throw new Error(`${made.code}: ${made.message}`);
    expect(made.reply.engine).toBe("elevenlabs");
    expect(standIn.voices.has(made.reply.ref)).toBe(true);
    const clone = { id: "0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d1", name: "Kal", engine: made.reply.engine, ref: made.reply.ref, profile: made.reply.profile };
    expect(await typed.request("clone.delete", { clone, account_id: "alice", request_id: "r5" })).toEqual({ ok: true, reply: { deleted: true } });
    expect(standIn.voices.has(made.reply.ref)).toBe(false);
  });
});

describe("a voice library clone through the synthesis service (chatterbox-style stand-in)", () => {
  it("makes the voice there once, speaks a synthesis request in it (English and Spanish), deletes it there", async () => {
    const library = await startVoiceLibraryStandIn();
    try {
      const clones = createVoiceLibraryCloneEngine({ baseUrl: library.url, logger, timeoutMs: 10_000 });
      const typed = await start({ ...speech, clones });
      const id = "0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d2";
      const made = await typed.request("clone.create", createRequest({ id }));
      if (!made.ok) throw new Error(`${made.code}: ${made.message}`);
      expect(made.reply.engine).toBe("voice-library");
      expect(made.reply.languages).toEqual(expect.arrayContaining(["English", "Spanish"]));
      expect(library.voices.has(made.reply.ref)).toBe(true);
      const uploads = library.requests.filter((r) => r.method === "POST" && r.path === "/v1/voices");
      expect(uploads).toHaveLength(1);
      const clone = { id, name: "Kal", engine: made.reply.engine, ref: made.reply.ref, profile: made.reply.profile };
      for (const [language, text] of [["English", "Good evening, and welcome."], ["Spanish", "Buenas noches y bienvenidos."]] as const) {
        const spoken = await typed.request("synthesize", { text, language, voice: `clone:${id}`, clone, format: "mp3", account_id: "alice", request_id: `r-${language}` });
        if (!spoken.ok) throw new Error(`${spoken.code}: ${spoken.message}`);
        expect(spoken.reply.voice).toBe(`clone:${id}`);
        expect(spoken.reply.duration_seconds).toBeGreaterThan(0.5);
        const last = library.speeches.at(-1);
        // spoken by the clone's own voice (or its language variant), never the server's default voice
        expect(last?.spokenBy, language).not.toBe("default");
        expect(last?.text).toContain(text.split(" ")[0]);
        expect(Math.abs((last?.pitchHz ?? 0) - samplePitch) / samplePitch, `${language}: the library's voice pitch against the sample's`).toBeLessThanOrEqual(0.1);
      }
      expect(await typed.request("clone.delete", { clone, account_id: "alice", request_id: "r-del" })).toEqual({ ok: true, reply: { deleted: true } });
      expect(library.voices.has(made.reply.ref)).toBe(false);
      const again = await typed.request("synthesize", { text: "Hello.", language: "English", voice: `clone:${id}`, clone, format: "mp3", account_id: "alice", request_id: "r-gone" });
      expect(again).toMatchObject({ ok: false, code: "unknown_voice" });
    } finally {
      await library.close();
    }
  });
});
