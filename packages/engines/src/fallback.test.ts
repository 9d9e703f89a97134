/**
 * Run-time fallback and start-up self-tests of the translation and recognition registries, with the
 * real offline engines (Apertium, pocketsphinx) behind a local OpenAI-compatible stand-in that fails.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { makeSpeechWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApertiumEngine } from "./mt/apertium.ts";
import { createOpenAiTranslator } from "./mt/openai.ts";
import { createMtRegistry } from "./mt/registry.ts";
import type { MtEngine } from "./mt/types.ts";
import { createOpenAiTranscriber } from "./stt/openai.ts";
import { createPocketsphinxEngine } from "./stt/pocketsphinx.ts";
import { createSttRegistry } from "./stt/registry.ts";
import type { SttEngine } from "./stt/types.ts";

const logger = silentLogger();

/** Status the stand-in answers every request with; and the requests it saw. */
let status = 503;
const seen: string[] = [];
let server: Server;
let baseUrl: string;
let dir: { path: string; cleanup: () => Promise<void> };
let media: MediaToolkit;
let apertium: MtEngine;
let pocketsphinx: SttEngine;

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  for await (const _ of req) {
    // drain the body
  }
  seen.push(`${req.method} ${req.url} ${status}`);
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message: status === 404 ? "Not found" : "The server is overloaded", type: "server_error", param: null, code: null } }));
}

beforeAll(async () => {
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dir = await tempDir("voiceloc-fallback-");
  media = createMediaToolkit(await resolveFfmpeg({ logger }), logger);
  apertium = await createApertiumEngine({ logger });
  pocketsphinx = await createPocketsphinxEngine({ logger, media });
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await dir?.cleanup();
});

describe("translation registry", () => {
  it("a service failing at run time (HTTP 503) is replaced by the next engine for the pair", async () => {
    status = 503;
    const service = createOpenAiTranslator({ baseUrl, model: "m", logger });
    const registry = createMtRegistry([service, apertium]);
    expect(registry.resolve("English", "Spanish").engine.id).toBe(service.id);
    const before = seen.length;

    const out = await registry.translate({ text: "The house is red.", source: "English", target: "Spanish" });

    expect(seen.length).toBeGreaterThan(before);
    expect(out.toLowerCase()).toContain("casa");
  });

  it("a pair only the failing service covers still fails, with the service's error", async () => {
    status = 503;
    const registry = createMtRegistry([createOpenAiTranslator({ baseUrl, model: "m", logger }), apertium]);
    await expect(registry.translate({ text: "Guten Tag.", source: "German", target: "English" })).rejects.toMatchObject({ code: "TRANSLATION_SERVICE_UNAVAILABLE" });
  });

  it("a service failing its one-word self-test is not offered; the offline engine keeps its pairs", async () => {
    status = 404;
    const service = createOpenAiTranslator({ baseUrl, model: "m", logger });
    const registry = createMtRegistry([service, apertium]);
    expect(registry.supports("German", "English")).toBe(true);

    const report = await registry.selfTest();

    expect(report.dropped).toEqual([{ engine: service.id, reason: expect.stringContaining("404") }]);
    expect(registry.supports("German", "English")).toBe(false);
    expect(registry.capabilities().pairs.every((p) => p.engine === apertium.id)).toBe(true);
    expect(registry.resolve("English", "Spanish").engine.id).toBe(apertium.id);
  });
});

describe("recognition registry", () => {
  it("a service failing at run time (HTTP 503) is replaced by the offline engine for the language", async () => {
    status = 503;
    const speech = await makeSpeechWav("Please open the window and close the door.", { voice: "flite:slt", path: join(dir.path, "speech.wav") });
    const service = createOpenAiTranscriber({ baseUrl, logger, media });
    const registry = createSttRegistry([service, pocketsphinx]);
    expect(registry.engineFor("English")).toBe(service);
    const before = seen.length;

    const transcript = await registry.transcribe({ path: speech, language: "English" });

    expect(seen.slice(before).some((line) => line.startsWith("POST /v1/audio/transcriptions"))).toBe(true);
    expect(transcript.text.toLowerCase()).toMatch(/window|door|open/);
  });

  it("a service failing its self-test (a tiny generated WAV) is not offered", async () => {
    status = 404;
    const service = createOpenAiTranscriber({ baseUrl, logger, media });
    const registry = createSttRegistry([service, pocketsphinx]);
    expect(registry.capabilities().languages).toContain("Arabic");

    const report = await registry.selfTest();

    expect(report.dropped).toEqual([{ engine: service.id, reason: expect.stringContaining("404") }]);
    expect(registry.capabilities().languages).toEqual(["English"]);
    expect(registry.engineFor("English")).toBe(pocketsphinx);
  });
});
