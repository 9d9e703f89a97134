import { join } from "node:path";
import { silentLogger } from "@voiceloc/log";
import { startKokoroStandIn, tempDir, type KokoroStandIn } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { measurePitch } from "./clone/pitch.ts";
import { createOpenAiTtsEngine } from "./openai.ts";
import { discoverOpenAiTtsVoices, kokoroVoiceConfig } from "./openai-voices.ts";
import { createTtsRegistry } from "./registry.ts";

const logger = silentLogger();
const VOICES = { af_bella: 280, am_adam: 110, ef_dora: 230, ff_siwis: 250, custom_narrator: 180 };
let kokoro: KokoroStandIn;
let legacy: KokoroStandIn;
let bare: KokoroStandIn;
let dir: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-kokoro-"));
  kokoro = await startKokoroStandIn({ voices: VOICES });
  legacy = await startKokoroStandIn({ voices: { bf_emma: 240, zf_xiaobei: 260 }, legacyList: true });
  bare = await startKokoroStandIn({ voices: { alloy: 200 }, noVoiceList: true });
});
afterAll(async () => {
  await Promise.all([kokoro.close(), legacy.close(), bare.close()]);
  await cleanup();
});

describe("voice discovery on OpenAI-compatible speech servers (Kokoro-style stand-in)", () => {
  it("lists the server's voices with the language and gender their names carry", async () => {
    const voices = await discoverOpenAiTtsVoices({ baseUrl: `${kokoro.url}/v1`, model: "kokoro", logger });
    expect(voices?.map((v) => [v.id, v.languages?.join("+") ?? "any", v.gender ?? "-"])).toEqual([
      ["af_bella", "English", "female"],
      ["am_adam", "English", "male"],
      ["ef_dora", "Spanish", "female"],
      ["ff_siwis", "French", "female"],
      ["custom_narrator", "any", "-"],
    ]);
    expect(kokoro.requests.map((r) => `${r.method} ${r.path}`)).toContain("GET /v1/audio/voices");
    const old = await discoverOpenAiTtsVoices({ baseUrl: legacy.url, model: "kokoro", logger });
    expect(old?.map((v) => `${v.id} ${v.languages?.join("+") ?? "any"}`)).toEqual(["bf_emma English", "zf_xiaobei Chinese"]);
    // No voice list and no voices in the model list (OpenAI itself): the caller keeps its presets.
    expect(await discoverOpenAiTtsVoices({ baseUrl: bare.url, model: "tts-1", logger })).toBeUndefined();
    expect(bare.requests.map((r) => r.path)).toEqual(["/v1/audio/voices", "/v1/models"]);
    // A failing list is no list, and never an exception.
    kokoro.fail("voices", { status: 500, body: { detail: { error: "server_error", message: "Failed to retrieve voice list", type: "server_error" } } });
    expect(await discoverOpenAiTtsVoices({ baseUrl: kokoro.url, model: "kokoro", logger })).toBeUndefined();
    kokoro.fail("voices", { malformed: true });
    expect(await discoverOpenAiTtsVoices({ baseUrl: kokoro.url, model: "kokoro", logger })).toBeUndefined();
    // A server that never answers holds the start for at most the time limit of each request.
    kokoro.fail("any", { hang: true }, 2);
    const started = Date.now();
    expect(await discoverOpenAiTtsVoices({ baseUrl: kokoro.url, model: "kokoro", logger, timeoutMs: 300 })).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("speaks each discovered voice in its own language, and passes on the server's reason for a refusal", async () => {
    const voices = (await discoverOpenAiTtsVoices({ baseUrl: kokoro.url, model: "kokoro", logger })) ?? [];
    const engine = createOpenAiTtsEngine({ baseUrl: kokoro.url, model: "kokoro", voices, logger });
    const registry = createTtsRegistry([engine], { logger });
    expect(registry.voicesFor("Spanish").map((v) => v.name)).toEqual(["openai:ef_dora", "openai:custom_narrator"]);
    expect(registry.voicesFor("French").map((v) => v.name)).toEqual(["openai:ff_siwis", "openai:custom_narrator"]);
    expect(() => registry.resolve("Spanish", "openai:af_bella")).toThrow(/does not speak Spanish/);
    const result = await engine.synthesize({ text: "Buenos días a todos.", language: "Spanish", voice: "openai:ef_dora", outPath: join(dir, "es.wav") });
    expect(kokoro.speeches.at(-1)).toMatchObject({ voice: "ef_dora", model: "kokoro" });
    const pitch = (await measurePitch(result.wavPath)).medianHz ?? 0;
    expect(pitch).toBeGreaterThan(215);
    expect(pitch).toBeLessThan(245);
    const gone = createOpenAiTtsEngine({ baseUrl: kokoro.url, model: "kokoro", voices: ["af_gone"], logger });
    await expect(gone.synthesize({ text: "Hello", language: "English" })).rejects.toMatchObject({
      code: "SPEECH_SERVICE_REJECTED",
      message: expect.stringContaining("Voice 'af_gone' not found") as unknown,
    });
  });

  it("reads Kokoro's naming convention only where it applies", () => {
    expect(kokoroVoiceConfig("jm_kumo", "h")).toMatchObject({ languages: ["Japanese"], gender: "male" });
    expect(kokoroVoiceConfig("pf_dora", "h")).toMatchObject({ languages: ["Portuguese"], gender: "female" });
    expect(kokoroVoiceConfig("xf_unknown", "h").languages).toBeUndefined();
    expect(kokoroVoiceConfig("alloy", "h").languages).toBeUndefined();
  });
});
