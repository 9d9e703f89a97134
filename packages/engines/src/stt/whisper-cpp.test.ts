import { join } from "node:path";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { makeSpeechWav, startWhisperCppStandIn, tempDir, wavSeconds, type EngineStandIn, type WhisperCppRoute } from "@voiceloc/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createPocketsphinxEngine } from "./pocketsphinx.ts";
import { createSttRegistry } from "./registry.ts";
import { createWhisperCppTranscriber } from "./whisper-cpp.ts";

const logger = silentLogger();
const SENTENCES = ["Welcome to our video about the ocean.", "The waves are calm today."];
let server: EngineStandIn<WhisperCppRoute>;
let media: MediaToolkit;
let speech: string;
let speechSeconds: number;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const dir = await tempDir("voiceloc-whisper-cpp-");
  cleanup = dir.cleanup;
  media = createMediaToolkit(await resolveFfmpeg({ logger }), logger);
  speech = await makeSpeechWav("Welcome to our video about the ocean. The waves are calm today.", { path: join(dir.path, "speech.wav") });
  speechSeconds = (await media.probe(speech)).durationSeconds ?? 0;
  server = await startWhisperCppStandIn({ sentences: SENTENCES, languages: ["en", "es"] });
});
afterAll(async () => {
  await server.close();
  await cleanup();
});
beforeEach(() => {
  server.requests.length = 0;
});

const engine = (timeoutMs?: number) => createWhisperCppTranscriber({ baseUrl: server.url, logger, media, ...(timeoutMs ? { timeoutMs } : {}) });

describe("whisper.cpp server adapter against a stand-in", () => {
  it("sends 16 kHz mono WAV as multipart file with verbose_json and the language, and reads timed segments", async () => {
    const transcript = await engine().transcribe({ path: speech, language: "English" });
    expect(transcript.text).toBe(SENTENCES.join(" "));
    expect(transcript.segments).toHaveLength(2);
    expect(transcript.durationSeconds).toBeCloseTo(speechSeconds, 1);
    expect(transcript.segments[1]?.end ?? 0).toBeLessThanOrEqual(transcript.durationSeconds + 1e-6);
    expect(transcript.segments[1]?.start ?? 0).toBeCloseTo(speechSeconds / 2, 1);
    const call = server.requests[0];
    expect(call?.path).toBe("/inference");
    expect(call?.fields).toMatchObject({ response_format: "verbose_json", language: "en" });
    const file = call?.files.find((f) => f.field === "file");
    expect(file?.bytes.readUInt32LE(24)).toBe(16000);
    expect(file?.bytes.readUInt16LE(22)).toBe(1);
    expect(wavSeconds(file?.bytes ?? Buffer.alloc(0))).toBeCloseTo(speechSeconds, 1);
  });

  it("names each failure: a language it does not have, 429, 5xx, malformed JSON, timeout", async () => {
    await expect(engine().transcribe({ path: speech, language: "French" })).rejects.toMatchObject({
      code: "RECOGNITION_SERVICE_REJECTED",
      message: expect.stringContaining("unknown language 'fr'") as unknown,
    });
    server.fail("inference", { status: 429, body: { error: "too many requests" }, headers: { "retry-after": "5" } });
    await expect(engine().transcribe({ path: speech, language: "English" })).rejects.toMatchObject({ code: "RECOGNITION_SERVICE_RATE_LIMITED" });
    server.fail("inference", { status: 500, body: { error: "failed to process audio" } });
    await expect(engine().transcribe({ path: speech, language: "English" })).rejects.toMatchObject({ code: "RECOGNITION_SERVICE_UNAVAILABLE" });
    server.fail("inference", { malformed: true });
    await expect(engine().transcribe({ path: speech, language: "English" })).rejects.toMatchObject({ code: "RECOGNITION_SERVICE_BAD_RESPONSE" });
    server.fail("inference", { hang: true });
    await expect(engine(500).transcribe({ path: speech, language: "English" })).rejects.toMatchObject({ code: "RECOGNITION_SERVICE_TIMEOUT" });
    await expect(engine().transcribe({ path: join(speech, "missing.wav"), language: "English" })).rejects.toMatchObject({ code: "RECOGNITION_MEDIA_UNUSABLE" });
  });

  it("falls back to the offline recogniser when the server fails", async () => {
    const offline = await createPocketsphinxEngine({ logger, media });
    const registry = createSttRegistry([engine(), offline], { logger });
    server.fail("inference", { status: 503, body: { error: "loading model" } });
    const transcript = await registry.transcribe({ path: speech, language: "English" });
    expect(transcript.text).not.toBe(SENTENCES.join(" "));
    expect(transcript.text.length).toBeGreaterThan(0);
    expect(server.requests).toHaveLength(1);
  });
});
