/**
 * One image per service: the workers of each kind run their own engines, so their capability tables differ.
 * Each process answers only for the kinds it runs, and the gateway checks a creation against its kind's
 * workers: a synthesis worker without translation never refuses an audio book for the audio book workers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNatsBus, type Bus, type BusSubscription } from "@voiceloc/bus";
import { loadConfig, type Config } from "@voiceloc/config";
import type { CapabilityKind } from "@voiceloc/contracts";
import { createGateway, type GatewayService } from "@voiceloc/gateway";
import { silentLogger } from "@voiceloc/log";
import { checkResponsesOf, freePort, startNatsServer, tempDir } from "@voiceloc/testing";
import { createEngineStack, serveCapabilities, type EngineStack } from "./engines.ts";

const KEY = "caps-mesh-key-alice-1";
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
const logger = silentLogger();

let nats: Awaited<ReturnType<typeof startNatsServer>>;
let dir: { path: string; cleanup: () => Promise<void> };
let config: Config;
/** The synthesis image: speech engines only (no Apertium, no pocketsphinx). */
let synthesisStack: EngineStack;
/** The audio book image: speech engines without flite, Apertium for translation. */
let audiobookStack: EngineStack;
const buses: Bus[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  dir = await tempDir("voiceloc-caps-mesh-");
  config = loadConfig({ DATA_DIR: dir.path, NATS_URL: nats.url, PORT: String(await freePort()), HOST: "127.0.0.1", VOICELOC_API_KEYS: `alice:${KEY}`, LOG_LEVEL: "silent" });
  synthesisStack = await createEngineStack(config, logger, { apertium: false, pocketsphinx: false });
  audiobookStack = await createEngineStack(config, logger, { offline: { flite: false }, pocketsphinx: false });
});

afterAll(async () => {
  for (const bus of buses.splice(0)) await bus.close({ graceMs: 1_000 });
  await nats?.stop();
  await dir?.cleanup();
});

/** A worker process's answers: its own bus connection, serving the tables of the kinds it runs. */
async function worker(stack: EngineStack, kinds: CapabilityKind[]): Promise<{ stop(): Promise<void> }> {
  const bus = await createNatsBus({ url: nats.url, logger, name: `caps-${kinds.join("+")}` });
  buses.push(bus);
  const subs: BusSubscription[] = await serveCapabilities(bus, stack, kinds);
  return {
    stop: async () => {
      await Promise.all(subs.map((s) => s.stop()));
    },
  };
}

/** A gateway that asks the workers on every creation (no cache), so every creation could meet any worker; spoken to over HTTP. */
async function gateway(): Promise<{ gw: GatewayService; stop(): Promise<void> }> {
  const bus = await createNatsBus({ url: nats.url, logger, name: "caps-gateway" });
  buses.push(bus);
  const gw = await createGateway({ config: { ...config, port: await freePort() }, logger, bus, capabilityTtlMs: 0 });
  const port = await gw.start();
  bases.set(gw, `http://127.0.0.1:${port}`);
  checkResponsesOf(`http://127.0.0.1:${port}`);
  return { gw, stop: () => gw.stop() };
}

const bases = new Map<GatewayService, string>();
const get = (gw: GatewayService, path: string) => fetch(`${bases.get(gw)}${path}`, { headers });
const post = (gw: GatewayService, path: string, body: unknown) => fetch(`${bases.get(gw)}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
const book = { file: "book.txt", name: "x", source_language: "English" };

describe("capability tables per kind, workers with different engines", () => {
  it("the engine stacks differ as the images would", () => {
    expect(synthesisStack.capabilities().translation.pairs).toEqual([]);
    expect(audiobookStack.capabilities().translation.pairs).toContainEqual(expect.objectContaining({ source: "English", target: "Spanish" }));
    expect(synthesisStack.capabilities().voices.some((v) => v.engine === "flite")).toBe(true);
    expect(audiobookStack.capabilities().voices.some((v) => v.engine === "flite")).toBe(false);
  });

  for (const order of [
    ["synthesis", "audiobook"],
    ["audiobook", "synthesis"],
  ] as const) {
    it(`accepts a translated audio book every time, the ${order[0]} worker started first`, async () => {
      const stacks = { synthesis: synthesisStack, audiobook: audiobookStack };
      const workers = [];
      for (const kind of order) workers.push(await worker(stacks[kind], [kind]));
      const { gw, stop } = await gateway();
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 12; i++) {
          const res = await post(gw, "/v1/audio_books/", { ...book, target_language: "Spanish", preset_voice_name: "espeak:es" });
          statuses.push(res.status);
        }
        expect(statuses).toEqual(Array(12).fill(201));

        // A voice the synthesis workers have but the audio book workers do not is refused for audio books.
        const flite = synthesisStack.capabilities().voices.find((v) => v.engine === "flite")!;
        for (let i = 0; i < 4; i++) {
          const res = await post(gw, "/v1/audio_books/", { ...book, target_language: "English", preset_voice_name: flite.name });
          expect(res.status).toBe(422);
          const body = (await res.json()) as { detail: Array<{ loc: string[]; msg: string }> };
          expect(body.detail).toContainEqual(expect.objectContaining({ loc: ["body", "preset_voice_name"], msg: expect.stringContaining(`unknown preset voice '${flite.name}'`) }));
        }
        // A pair neither has is still refused, naming it.
        const german = await post(gw, "/v1/audio_books/", { ...book, target_language: "German" });
        expect(german.status).toBe(422);
        expect(JSON.stringify(await german.json())).toContain("translation from English to German");
      } finally {
        await stop();
        for (const w of workers) await w.stop();
      }
    });
  }

  it("GET /v1/capabilities unites the kinds that answer; a kind nobody runs checks nothing and queues", async () => {
    const { gw, stop } = await gateway();
    try {
      const none = await get(gw, "/v1/capabilities");
      expect(none.status).toBe(503);

      const workers = [await worker(synthesisStack, ["synthesis"]), await worker(audiobookStack, ["audiobook"])];
      try {
        const res = await get(gw, "/v1/capabilities");
        expect(res.status).toBe(200);
        const caps = (await res.json()) as {
          synthesis: { languages: string[] };
          recognition: { languages: string[] };
          translation: { pairs: Array<{ source: string; target: string }> };
        };
        expect(caps.synthesis.languages).toEqual(expect.arrayContaining(synthesisStack.capabilities().synthesis.languages));
        expect(caps.translation.pairs).toContainEqual(expect.objectContaining({ source: "English", target: "Spanish" }));
        // No voice-stream or subtitle worker answers: nothing recognises speech yet.
        expect(caps.recognition.languages).toEqual([]);
        // ...and a voice stream is not refused for it: no table to check against, it waits in its queue.
        const stream = await post(gw, "/v1/voices/streams", { file: "talk.wav", source_language: "German", target_language: "English" });
        expect(stream.status).toBe(201);
      } finally {
        for (const w of workers) await w.stop();
      }
    } finally {
      await stop();
    }
  });
});
