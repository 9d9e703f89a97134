import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import type { Language } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { freePort, tempDir, checkResponsesOf } from "@voiceloc/testing";
import { createEngineStack } from "./engines.ts";
import { startRuntime, type Runtime } from "./runtime.ts";
import { SELF_TEST_SENTENCES as SAMPLE_SENTENCES } from "@voiceloc/engines";

const KEY = "caps-key-alice-1";
let runtime: Runtime;
let base: string;
let dir: { path: string; cleanup: () => Promise<void> };
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };

beforeAll(async () => {
  dir = await tempDir("voiceloc-caps-");
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  checkResponsesOf(base);
  runtime = await startRuntime(
    loadConfig({ DATA_DIR: dir.path, PORT: String(port), HOST: "127.0.0.1", PUBLIC_BASE_URL: base, VOICELOC_API_KEYS: `alice:${KEY}`, LOG_LEVEL: "silent" }),
    silentLogger(),
  );
});

afterAll(async () => {
  await runtime?.stop();
  await dir?.cleanup();
});

interface Caps {
  synthesis: { languages: Language[] };
  recognition: { languages: Language[] };
  translation: { pairs: Array<{ source: Language; target: Language; pivot: Language | null }> };
  cloning: { available: boolean; languages: Language[] };
}

const post = (path: string, body: unknown) => fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) });

describe("capabilities", () => {
  it("GET /v1/capabilities describes the configured engines", async () => {
    const res = await fetch(`${base}/v1/capabilities`, { headers });
    expect(res.status).toBe(200);
    const caps = (await res.json()) as Caps;
    expect(caps.synthesis.languages).toContain("English");
    expect(caps.translation.pairs).toContainEqual(expect.objectContaining({ source: "English", target: "Spanish", pivot: null }));
    expect(caps.translation.pairs).toContainEqual(expect.objectContaining({ source: "English", target: "French", pivot: "Spanish" }));
    // CLONE_ENGINE's default without an ElevenLabs key: match, offline, in the languages of the installed voices
    expect(caps.cloning.available).toBe(true);
    expect(caps.cloning.languages).toEqual(expect.arrayContaining(["English", "Spanish"]));
    expect(caps.recognition.languages).toEqual(["English"]);
  });

  it("every translation pair it claims translates", async () => {
    const caps = (await (await fetch(`${base}/v1/capabilities`, { headers })).json()) as Caps;
    const stack = await createEngineStack(loadConfig({ DATA_DIR: dir.path, LOG_LEVEL: "silent" }), silentLogger());
    for (const pair of caps.translation.pairs) {
      const text = SAMPLE_SENTENCES[pair.source];
      const out = await stack.mt.translate({ text, source: pair.source, target: pair.target });
      expect(out.trim().length, `${pair.source}→${pair.target}`).toBeGreaterThan(0);
      expect(out, `${pair.source}→${pair.target}`).not.toBe(text);
    }
  });

  it("refuses at creation what the engines cannot do, naming it", async () => {
    const book = { file: "book.txt", name: "x", source_language: "English" };
    const german = await post("/v1/audio_books/", { ...book, target_language: "German" });
    expect(german.status).toBe(422);
    const g = (await german.json()) as { detail: Array<{ loc: string[]; msg: string; type: string }> };
    expect(g.detail).toContainEqual(
      expect.objectContaining({ type: "value_error", loc: ["body", "target_language"], msg: expect.stringContaining("translation from English to German") }),
    );
    const voice = await post("/v1/audio_books/", { ...book, target_language: "English", preset_voice_name: "nobody" });
    expect(voice.status).toBe(422);
    expect(((await voice.json()) as { detail: Array<{ loc: string[] }> }).detail[0]?.loc).toEqual(["body", "preset_voice_name"]);
    const clone = await post("/v1/audio_books/", { ...book, target_language: "English", use_voice_clone: true });
    expect(clone.status).toBe(422);
    expect(((await clone.json()) as { detail: Array<{ loc: string[] }> }).detail[0]?.loc).toEqual(["body", "voice_clone_sample"]);
    const stream = await post("/v1/voices/streams", { file: "talk.wav", source_language: "German", target_language: "English" });
    expect(stream.status).toBe(422);
    expect(JSON.stringify(await stream.json())).toContain("speech recognition in German is not available");
    const ok = await post("/v1/audio_books/", { ...book, target_language: "Spanish", preset_voice_name: "espeak:es" });
    expect(ok.status).toBe(201);
  });
});
