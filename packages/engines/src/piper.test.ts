import { join } from "node:path";
import { silentLogger } from "@voiceloc/log";
import { freePort, startPiperStandIn, tempDir, type PiperStandIn } from "@voiceloc/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { measurePitch } from "./clone/pitch.ts";
import { createEspeakEngine } from "./espeak.ts";
import { createPiperTtsEngine, piperVoiceLanguage, type PiperTtsOptions } from "./piper.ts";
import { createTtsRegistry } from "./registry.ts";
import type { TtsEngine } from "./types.ts";
import { readWavInfo, wavSeconds } from "./wav.ts";

const logger = silentLogger();
let server: PiperStandIn;
let legacy: PiperStandIn;
let espeak: TtsEngine;
let dir: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-piper-"));
  server = await startPiperStandIn({
    voices: [
      { id: "en_US-lessac-medium", pitchHz: 300 },
      { id: "es_ES-davefx-medium", pitchHz: 200 },
      { id: "en_US-libritts_r-medium", pitchHz: 160, speakers: ["p1", "p2", "p3"] },
      // Czech is not one of the service's languages
      { id: "cs_CZ-jirka-medium", pitchHz: 140 },
    ],
  });
  legacy = await startPiperStandIn({ voices: [{ id: "de_DE-thorsten-medium", pitchHz: 250 }], legacy: true });
  espeak = await createEspeakEngine({ logger });
});
afterAll(async () => {
  await server.close();
  await legacy.close();
  await cleanup();
});
beforeEach(() => {
  server.requests.length = 0;
  server.speeches.length = 0;
});

const piper = (overrides: Partial<PiperTtsOptions> = {}) => createPiperTtsEngine({ baseUrl: server.url, logger, ...overrides });

async function pitchOf(path: string): Promise<number> {
  return (await measurePitch(path)).medianHz ?? 0;
}

describe("Piper HTTP server adapter against a stand-in", () => {
  it("offers the voices the server lists, in the service's languages, and speaks with the one asked for", async () => {
    const engine = await piper();
    const names = engine.capabilities().voices.map((v) => `${v.name} ${v.language}`);
    expect(names).toEqual(["piper:en_US-lessac-medium English", "piper:es_ES-davefx-medium Spanish", "piper:en_US-libritts_r-medium English"]);
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["GET /voices"]);

    const result = await engine.synthesize({ text: "Hola a todos, buenos días.", language: "Spanish", voice: "piper:es_ES-davefx-medium", outPath: join(dir, "es.wav") });
    expect(result).toMatchObject({ voice: "piper:es_ES-davefx-medium", sampleRate: 22050 });
    const call = server.requests.at(-1);
    expect(call?.path).toBe("/synthesize");
    expect(call?.json).toEqual({ text: "Hola a todos, buenos días.", voice: "es_ES-davefx-medium" });
    // The stand-in's Spanish voice speaks at 200 Hz: the audio written is that voice's.
    expect(await pitchOf(result.wavPath)).toBeGreaterThan(185);
    expect(await pitchOf(result.wavPath)).toBeLessThan(215);
    const info = await readWavInfo(result.wavPath);
    expect(info ? wavSeconds(info) : 0).toBeGreaterThan(1);
  });

  it("takes voices per language from the settings, with a speaker; a voice the server lacks is not offered (it would speak another voice)", async () => {
    const engine = await piper({
      voices: [
        { id: "en_US-libritts_r-medium", language: "English", speaker: "p3" },
        { id: "en_US-nobody-low", language: "English" },
        { id: "en_US-libritts_r-medium", language: "English", speaker: "p9" },
        { id: "en_US-lessac-medium", language: "Dutch" },
      ],
    });
    expect(engine.capabilities().voices.map((v) => v.name)).toEqual(["piper:en_US-libritts_r-medium:p3", "piper:en_US-lessac-medium"]);
    const result = await engine.synthesize({ text: "Good morning to everyone here.", language: "English", outPath: join(dir, "p3.wav") });
    expect(server.requests.at(-1)?.json).toEqual({ text: "Good morning to everyone here.", voice: "en_US-libritts_r-medium", speaker: "p3" });
    // speaker p3 (the third) of a 160 Hz voice: 160 × 1.3 = 208 Hz
    expect(await pitchOf(result.wavPath)).toBeGreaterThan(190);
    expect(await pitchOf(result.wavPath)).toBeLessThan(225);
    await expect(engine.synthesize({ text: "Hallo", language: "Dutch", voice: "piper:en_US-nobody-low" })).rejects.toMatchObject({ code: "UNKNOWN_VOICE" });
  });

  it("speaks through a server of the releases before /synthesize (POST /)", async () => {
    const engine = await piper({ baseUrl: legacy.url });
    const first = await engine.synthesize({ text: "Guten Morgen zusammen.", language: "German", outPath: join(dir, "de1.wav") });
    await engine.synthesize({ text: "Guten Abend zusammen.", language: "German", outPath: join(dir, "de2.wav") });
    expect(legacy.requests.filter((r) => r.method === "POST").map((r) => r.path)).toEqual(["/synthesize", "/", "/"]);
    expect(await pitchOf(first.wavPath)).toBeGreaterThan(235);
  });

  it("names each failure: 5xx, a malformed body, a timeout, an unreachable server, empty text", async () => {
    const engine = await piper();
    const speak = (e: TtsEngine = engine) => e.synthesize({ text: "Hello there.", language: "English", outPath: join(dir, "fail.wav") });
    server.fail("synthesize", { status: 500, body: "<!doctype html><title>500 Internal Server Error</title>" });
    await expect(speak()).rejects.toMatchObject({ code: "SPEECH_SERVICE_UNAVAILABLE", status: 500, message: expect.stringMatching(/^The Piper server at 127\.0\.0\.1:\d+ failed \(HTTP 500\)\.$/) as unknown });
    server.fail("synthesize", { malformed: true });
    await expect(speak()).rejects.toMatchObject({ code: "SPEECH_SERVICE_BAD_RESPONSE", message: expect.stringContaining("not WAV audio") as unknown });
    server.fail("synthesize", { hang: true });
    await expect(speak(await piper({ timeoutMs: 500 }))).rejects.toMatchObject({ code: "SPEECH_SERVICE_TIMEOUT", message: expect.stringContaining("did not answer within") as unknown });
    await expect(engine.synthesize({ text: " … ", language: "English" })).rejects.toMatchObject({ code: "TEXT_EMPTY" });

    const port = await freePort();
    await expect(piper({ baseUrl: `http://127.0.0.1:${port}` })).rejects.toMatchObject({ code: "ENGINE_UNAVAILABLE", message: expect.stringContaining("could not list its voices") as unknown });
    // With voices configured the engine is made; each request says the server cannot be reached.
    const offline = await piper({ baseUrl: `http://127.0.0.1:${port}`, voices: [{ id: "en_US-lessac-medium", language: "English" }] });
    await expect(speak(offline)).rejects.toMatchObject({ code: "SPEECH_SERVICE_UNAVAILABLE", message: `The Piper server at 127.0.0.1:${port} could not be reached.` });
    // A voice list that is not JSON is no list.
    server.fail("voices", { malformed: true });
    await expect(piper()).rejects.toMatchObject({ code: "ENGINE_UNAVAILABLE" });
    await expect(piper({ baseUrl: "ftp://x" })).rejects.toMatchObject({ code: "ENGINE_CONFIG_INVALID" });
    await expect(piper({ voices: [{ id: "en_US-nobody-low", language: "English" }] })).rejects.toMatchObject({
      code: "ENGINE_UNAVAILABLE",
      message: expect.stringContaining("holds none of the voices PIPER_VOICES names") as unknown,
    });
  });

  it("falls back to the next engine of the language when the server fails, and ENGINE_ORDER_TTS puts an engine first", async () => {
    const registry = createTtsRegistry([await piper(), espeak], { logger });
    expect(registry.defaultVoice("English")?.name).toBe("piper:en_US-lessac-medium");
    expect(registry.capabilities().chains.English).toEqual(["piper", "espeak"]);
    await registry.selfTest();
    const ok = await registry.resolve("English").engine.synthesize({ text: "The first words.", language: "English", outPath: join(dir, "piper.wav") });
    expect(await pitchOf(ok.wavPath)).toBeGreaterThan(280);

    // The server fails from now on: espeak-ng speaks instead (its voice is near 100 Hz, the stand-in's 300 Hz).
    server.fail("synthesize", { status: 503, body: "<title>503 Service Unavailable</title>" }, 10);
    const before = server.requests.length;
    const fallback = await registry.resolve("English").engine.synthesize({ text: "The second words, spoken all the same.", language: "English", outPath: join(dir, "fallback.wav") });
    expect(server.requests.length).toBeGreaterThan(before);
    expect(await pitchOf(fallback.wavPath)).toBeLessThan(170);

    const ordered = createTtsRegistry([await piper(), espeak], { logger, order: ["espeak"] });
    expect(ordered.defaultVoice("English")?.engine).toBe("espeak");
    expect(ordered.defaultVoice("Spanish")?.engine).toBe("espeak");
    expect(ordered.capabilities().chains.English).toEqual(["espeak", "piper"]);
    expect(ordered.capabilities().chains.French).toEqual(["espeak"]);
  });

  it("reads a voice's language from its config, its id, or its espeak voice", () => {
    expect(piperVoiceLanguage("x", { language: { code: "fr_FR", family: "fr" } })).toBe("French");
    expect(piperVoiceLanguage("zh_CN-huayan-medium", {})).toBe("Chinese");
    expect(piperVoiceLanguage("custom", { espeak: { voice: "pt-br" } })).toBe("Portuguese");
    expect(piperVoiceLanguage("cs_CZ-jirka-medium", { language: { family: "cs" } })).toBeUndefined();
  });
});
