import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountKeySegment } from "@voiceloc/blobs";
import { loadConfig } from "@voiceloc/config";
import { LANGUAGES, type Language } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { probe, resolveFfmpeg } from "@voiceloc/media";
import { freePort, tempDir, checkResponsesOf } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";
import { SELF_TEST_SENTENCES as SAMPLE_SENTENCES } from "@voiceloc/engines";

const KEY = "e2e-key-alice-1";
let runtime: Runtime;
let base: string;
let dir: { path: string; cleanup: () => Promise<void> };
let ffprobePath: string;

beforeAll(async () => {
  dir = await tempDir("voiceloc-e2e-");
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  checkResponsesOf(base);
  const config = loadConfig({
    DATA_DIR: dir.path,
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_BASE_URL: base,
    VOICELOC_API_KEYS: `alice:${KEY}`,
    LOG_LEVEL: "silent",
  });
  runtime = await startRuntime(config, silentLogger());
  ffprobePath = (await resolveFfmpeg({ logger: silentLogger() })).ffprobe;
});

afterAll(async () => {
  await runtime?.stop();
  await dir?.cleanup();
});

const auth = { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" };

async function synthesize(body: Record<string, unknown>): Promise<Response> {
  return fetch(`${base}/v1/speech/synthesize`, { method: "POST", headers: auth, body: JSON.stringify(body) });
}

async function download(url: string, name: string): Promise<{ path: string; res: Response; bytes: Buffer }> {
  const res = await fetch(url);
  const bytes = Buffer.from(await res.arrayBuffer());
  const path = join(dir.path, name);
  await writeFile(path, bytes);
  return { path, res, bytes };
}

describe("speech synthesis end to end (single process)", () => {
  it("lists voices with one default per language", async () => {
    const res = await fetch(`${base}/v1/voices`, { headers: auth });
    expect(res.status).toBe(200);
    const voices = (await res.json()) as Array<{ name: string; language: string; default: boolean }>;
    const languages = new Set(voices.map((v) => v.language));
    expect(languages.has("English")).toBe(true);
    for (const language of languages) {
      expect(voices.filter((v) => v.language === language && v.default)).toHaveLength(1);
    }
    const french = (await (await fetch(`${base}/v1/voices?language=fr`, { headers: auth })).json()) as Array<{ language: string }>;
    expect(french.length).toBeGreaterThan(0);
    expect(french.every((v) => v.language === "French")).toBe(true);
  });

  it("speaks every language the capability table claims, with a measured duration", async () => {
    const voices = (await (await fetch(`${base}/v1/voices`, { headers: auth })).json()) as Array<{ language: Language }>;
    const claimed = LANGUAGES.filter((l) => voices.some((v) => v.language === l));
    expect(claimed.length).toBeGreaterThan(10);
    for (const language of claimed) {
      const res = await synthesize({ text: SAMPLE_SENTENCES[language], language });
      expect(res.status, `${language}: ${res.status}`).toBe(200);
      const body = (await res.json()) as { audio_url: string; duration_seconds: number };
      expect(body.audio_url.startsWith(`${base}/v1/files/`)).toBe(true);
      const file = await download(body.audio_url, `${language}.mp3`);
      expect(file.res.status).toBe(200);
      expect(file.res.headers.get("content-type")).toBe("audio/mpeg");
      const info = await probe(file.path, { ffprobePath });
      expect(info.audio?.codec).toBe("mp3");
      expect(Math.abs(info.durationSeconds - body.duration_seconds)).toBeLessThan(0.15);
      expect(body.duration_seconds).toBeGreaterThan(0.8);
      expect(body.duration_seconds).toBeLessThan(15);
    }
  });

  it("encodes wav, ogg (opus) and flac, and accepts ISO codes", async () => {
    const expected = { wav: ["audio/wav", "pcm_s16le"], ogg: ["audio/ogg", "opus"], flac: ["audio/flac", "flac"] } as const;
    for (const [format, [type, codec]] of Object.entries(expected)) {
      const res = await synthesize({ text: "Testing one two three.", language: "en", format });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { audio_url: string; duration_seconds: number };
      const file = await download(body.audio_url, `x.${format}`);
      expect(file.res.headers.get("content-type")).toBe(type);
      const info = await probe(file.path, { ffprobePath });
      expect(info.audio?.codec).toBe(codec);
      expect(Math.abs(info.durationSeconds - body.duration_seconds)).toBeLessThan(0.15);
    }
  });

  it("serves byte ranges and refuses tampered links", async () => {
    const body = (await (await synthesize({ text: "Range request test.", language: "English", format: "wav" })).json()) as { audio_url: string };
    const range = await fetch(body.audio_url, { headers: { Range: "bytes=0-43" } });
    expect(range.status).toBe(206);
    expect(range.headers.get("content-length")).toBe("44");
    expect(range.headers.get("content-range")).toMatch(/^bytes 0-43\/\d+$/);
    expect(Buffer.from(await range.arrayBuffer()).subarray(0, 4).toString("latin1")).toBe("RIFF");
    const tampered = body.audio_url.replace(/signature=./, (m) => (m.endsWith("A") ? `${m.slice(0, -1)}B` : `${m.slice(0, -1)}A`));
    expect((await fetch(tampered)).status).toBe(403);
    const otherKey = body.audio_url.replace(`/v1/files/speech/${accountKeySegment("alice")}/`, `/v1/files/speech/${accountKeySegment("bob")}/`);
    expect(otherKey).not.toBe(body.audio_url);
    expect((await fetch(otherKey)).status).toBe(403);
    const unsigned = body.audio_url.split("?")[0] ?? "";
    expect((await fetch(unsigned)).status).toBe(403);
  });

  it("answers 422 naming the voice or text no engine can speak", async () => {
    const unknown = await synthesize({ text: "Hello", language: "English", voice: "no-such-voice" });
    expect(unknown.status).toBe(422);
    const u = (await unknown.json()) as { detail: Array<{ loc: string[]; msg: string; type: string }> };
    expect(u.detail[0]).toMatchObject({ type: "value_error", loc: ["body", "voice"] });
    expect(u.detail[0]?.msg).toContain("no-such-voice");
    const mismatch = await synthesize({ text: "Hola", language: "Spanish", voice: "flite:slt" });
    expect(mismatch.status).toBe(422);
    const kanji = await synthesize({ text: "日本語の文章です。", language: "Japanese" });
    expect(kanji.status).toBe(422);
    const k = (await kanji.json()) as { detail: Array<{ loc: string[] }> };
    expect(k.detail[0]?.loc).toEqual(["body", "text"]);
  });
});
