/**
 * DeepL through the HTTP API, against a stand-in that speaks DeepL's protocol: tested at start,
 * named first in each pair's engine chain, subtitles translated by it; once DeepL says the quota is
 * used up, English → Spanish falls to the offline engine and English → German (which only DeepL
 * covers) fails at once, saying why.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { silentLogger } from "@voiceloc/log";
import { checkResponsesOf, freePort, makeSpeechWav, makeTestVideo, startDeepLStandIn, tempDir, type DeepLStandIn } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";

const KEY = "deepl-e2e-key-alice-1";
const DEEPL_KEY = "5e1f0c2a-7d3b-4e8f-9a6c-1b2d3e4f5a6b:fx";
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
const SPEECH = "The weather is very nice today. I would like a cup of hot coffee please.";

type Json = Record<string, unknown>;

let dir: { path: string; cleanup: () => Promise<void> };
let deepl: DeepLStandIn;
let runtime: Runtime;
let base: string;

beforeAll(async () => {
  dir = await tempDir("voiceloc-deepl-e2e-");
  const media = join(dir.path, "media");
  await mkdir(media, { recursive: true });
  const speech = await makeSpeechWav(SPEECH, { voice: "flite:slt", path: join(dir.path, "speech.wav") });
  await makeTestVideo(8, join(media, "talk.mp4"), { withSpeechFrom: speech });
  deepl = await startDeepLStandIn({ apiKey: DEEPL_KEY });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  checkResponsesOf(base);
  runtime = await startRuntime(
    loadConfig({
      DATA_DIR: join(dir.path, "data"),
      MEDIA_ROOT: media,
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_BASE_URL: base,
      VOICELOC_API_KEYS: `alice:${KEY}`,
      LOG_LEVEL: "silent",
      DEEPL_API_KEY: DEEPL_KEY,
      DEEPL_BASE_URL: deepl.url,
    }),
    silentLogger(),
  );
}, 300_000);

afterAll(async () => {
  await runtime?.stop();
  await deepl?.close();
  await dir?.cleanup();
});

async function subtitle(target: string): Promise<Json> {
  const res = await fetch(`${base}/v1/videos/subtitle`, {
    method: "POST",
    headers,
    body: JSON.stringify({ file: "talk.mp4", source_language: "English", target_language: target, mode: "side_file" }),
  });
  expect(res.status).toBe(202);
  const { id } = (await res.json()) as { id: string };
  const deadline = Date.now() + 280_000;
  for (;;) {
    const record = (await (await fetch(`${base}/v1/videos/subtitle/${id}`, { headers })).json()) as Json;
    if (record.task_status === "completed" || record.task_status === "failed") return record;
    if (Date.now() > deadline) throw new Error(`task did not finish: ${JSON.stringify(record)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function srtOf(record: Json): Promise<string> {
  const res = await fetch(String(record.subtitle_file));
  expect(res.status).toBe(200);
  return res.text();
}

const translateCalls = () => deepl.requests.filter((r) => r.path === "/v2/translate");

describe("DeepL as a translation engine of the running service", () => {
  it("is tested at start with one word and named first in the engine chains of its pairs", async () => {
    expect(translateCalls()[0]?.json).toMatchObject({ text: ["Hello"], source_lang: "EN", target_lang: "ES" });
    const caps = (await (await fetch(`${base}/v1/capabilities`, { headers })).json()) as {
      translation: { pairs: { source: string; target: string; quality: string; engines: string[] }[] };
    };
    const pair = (source: string, target: string) => caps.translation.pairs.find((p) => p.source === source && p.target === target);
    expect(pair("English", "German")).toMatchObject({ quality: "neural", engines: ["deepl"] });
    expect(pair("English", "Spanish")?.engines).toEqual(["deepl", "apertium"]);
    expect(pair("Japanese", "Korean")?.engines).toEqual(["deepl"]);
    // Neither DeepL (as the stand-in lists it) nor the offline engine has Swahili.
    expect(pair("English", "Swahili")).toBeUndefined();
  });

  it("translates subtitles English → German through DeepL", async () => {
    const before = translateCalls().length;
    const record = await subtitle("German");
    expect(record.task_status, String(record.task_error)).toBe("completed");
    const srt = await srtOf(record);
    expect(srt).toContain("[DE] ");
    expect(srt).toMatch(/WEATHER|COFFEE/);
    const calls = translateCalls().slice(before);
    expect(calls.length).toBeGreaterThanOrEqual(1);
    expect(calls.every((c) => (c.json as { source_lang: string; target_lang: string }).target_lang === "DE")).toBe(true);
    expect(calls.every((c) => c.headers.authorization === `DeepL-Auth-Key ${DEEPL_KEY}`)).toBe(true);
  }, 300_000);

  it("once the quota is used up: English → Spanish falls to the offline engine, English → German fails saying why", async () => {
    deepl.fail("translate", { status: 456, body: { message: "Quota Exceeded" } }, 1000);
    const spanish = await subtitle("Spanish");
    expect(spanish.task_status, String(spanish.task_error)).toBe("completed");
    const srt = await srtOf(spanish);
    expect(srt).not.toContain("[ES]");
    expect(srt.toLowerCase()).toMatch(/tiempo|café/);

    const german = await subtitle("German");
    expect(german.task_status).toBe("failed");
    expect(String(german.task_error)).toMatch(/DeepL says the account's character quota is used up/);
  }, 600_000);
});
