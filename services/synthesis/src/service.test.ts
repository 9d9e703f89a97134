import { writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountKeySegment, createFsBlobStore, type BlobStore } from "@voiceloc/blobs";
import { INTERNAL_REPLY_MESSAGE, createCatalogBus, createInProcessBus, type Bus, type CatalogBus } from "@voiceloc/bus";
import { BUS_CATALOG, type BusCatalogue, type SynthesizeRequest } from "@voiceloc/contracts";
import { TtsError, createTtsRegistry, encodePcm16Wav, type TtsEngine, type TtsErrorCode } from "@voiceloc/engines";
import { silentLogger } from "@voiceloc/log";
import { tempDir } from "@voiceloc/testing";
import { createSpeechStack, type SpeechStack } from "./engines.ts";
import { TTS_ERROR_REPLY, createSynthesisService, type SynthesisService } from "./service.ts";

const logger = silentLogger();
let dir: { path: string; cleanup: () => Promise<void> };
let speech: SpeechStack;
const open: Array<{ bus: Bus; service: SynthesisService }> = [];

beforeAll(async () => {
  dir = await tempDir("voiceloc-synthesis-");
  speech = await createSpeechStack({ logger });
});

afterAll(async () => {
  for (const { bus, service } of open.splice(0)) {
    await service.stop();
    await bus.close();
  }
  await dir?.cleanup();
});

/** A synthesis service on its own in-process bus; returns the catalogue-typed requester. */
async function start(options: { blobs?: BlobStore; stack?: SpeechStack; maxCharacters?: number } = {}) {
  const bus = createInProcessBus({ logger });
  const blobs = options.blobs ?? createFsBlobStore({ root: `${dir.path}/blobs` });
  const service = createSynthesisService({ bus, blobs, speech: options.stack ?? speech, logger, ...(options.maxCharacters ? { maxCharacters: options.maxCharacters } : {}) });
  await service.start();
  open.push({ bus, service });
  return { typed: createCatalogBus(bus, BUS_CATALOG), blobs };
}

const ask = (typed: CatalogBus<BusCatalogue>, request: Partial<SynthesizeRequest>) =>
  typed.request("synthesize", { text: "Hello.", language: "English", voice: null, format: "mp3", account_id: "alice", request_id: "r1", ...request });

describe("synthesis service replies", () => {
  it("refuses text with nothing to speak as text_empty (it used to escape as a free-string code)", async () => {
    const { typed } = await start();
    for (const text of ["   ", "...", " \t\n ", "?!"]) {
      expect(await ask(typed, { text })).toEqual({ ok: false, code: "text_empty", message: "There is no text to speak." });
    }
  });

  it("refuses text over its limit as text_too_long, naming the limit", async () => {
    const { typed } = await start({ maxCharacters: 30 });
    const refused = await ask(typed, { text: "a".repeat(31) });
    expect(refused).toEqual({
      ok: false,
      code: "text_too_long",
      message: "The text has 31 characters; one request may have at most 30 (SYNTHESIS_MAX_CHARACTERS).",
    });
    expect(await ask(typed, { text: "Thirty characters exactly, ok." })).toMatchObject({ ok: true });
  });

  it("refuses an unknown voice and a voice of another language with their own codes", async () => {
    const { typed } = await start();
    expect(await ask(typed, { voice: "no-such-voice" })).toMatchObject({ ok: false, code: "unknown_voice" });
    expect(await ask(typed, { voice: "flite:slt", language: "Spanish", text: "Hola." })).toMatchObject({ ok: false, code: "voice_language_mismatch" });
  });

  it("stores each account's audio under its own encoded segment, for any allowed account id or JWT sub", async () => {
    const { typed, blobs } = await start();
    const keys: Record<string, string> = {};
    for (const account of ["carol@example.com", "..", "a/b", "a"]) {
      const result = await ask(typed, { account_id: account, text: "Good morning." });
      if (!result.ok) throw new Error(`${account}: ${result.code} ${result.message}`);
      expect(result.reply.key).toMatch(new RegExp(`^speech/${accountKeySegment(account)}/[0-9a-f-]{36}\\.mp3$`));
      expect((await blobs.stat(result.reply.key)).size).toBeGreaterThan(1_000);
      keys[account] = result.reply.key;
    }
    expect(keys["a/b"]?.split("/")[1]).not.toBe(keys.a?.split("/")[1]);
  });

  it("replies internal in plain words when storing fails, never the storage error", async () => {
    const real = createFsBlobStore({ root: `${dir.path}/broken` });
    const broken: BlobStore = Object.assign(Object.create(real) as BlobStore, {
      put: async () => {
        throw new Error(`EACCES: permission denied, open '${dir.path}/broken/speech/x.mp3'`);
      },
    });
    const { typed } = await start({ blobs: broken });
    expect(await ask(typed, {})).toEqual({ ok: false, code: "internal", message: INTERNAL_REPLY_MESSAGE });
  });
});

describe("engine errors", () => {
  const CLIENT_CODES = new Set(["text_empty", "text_too_long", "text_not_speakable", "unknown_voice", "voice_language_mismatch", "language_not_supported"]);
  const ENGINE_WORDS = "stderr: /opt/engine/bin at 0x7ffd1234 said no";

  /**
   * An engine (our own port) that fails with the engine error code written in the text; any other text (the
   * registry's self-test sentence on first use) is spoken as one second of silence, so the voice is claimed.
   */
  const failing: TtsEngine = {
    id: "failing",
    capabilities: () => ({
      languages: ["Swahili"],
      voices: [{ name: "failing:one", language: "Swahili", engine: "failing", description: "fails on purpose", quality: 1 }],
      cloning: false,
      maxInputChars: 1_000,
    }),
    synthesize: async (request) => {
      const code = request.text.trim();
      if (code in TTS_ERROR_REPLY) throw new TtsError(code as TtsErrorCode, `${code} ${ENGINE_WORDS}`);
      const wavPath = request.outPath ?? `${dir.path}/self-test-${Date.now()}.wav`;
      await writeFile(wavPath, encodePcm16Wav(new Int16Array(22_050), 22_050));
      return { wavPath, sampleRate: 22_050, voice: request.voice ?? "failing:one" };
    },
  };

  it.each(Object.entries(TTS_ERROR_REPLY))("replies %s as %s, in plain words for engine trouble", async (engineCode, replyCode) => {
    const { typed } = await start({ stack: { registry: createTtsRegistry([failing]), media: speech.media } });
    const result = await ask(typed, { text: engineCode, language: "Swahili" });
    expect(result).toMatchObject({ ok: false, code: replyCode });
    const message = result.ok ? "" : result.message;
    expect(message.includes(ENGINE_WORDS)).toBe(CLIENT_CODES.has(replyCode));
  });
});
