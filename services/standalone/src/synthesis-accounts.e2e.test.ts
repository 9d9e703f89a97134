import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountKeySegment } from "@voiceloc/blobs";
import { loadConfig } from "@voiceloc/config";
import { silentLogger } from "@voiceloc/log";
import { freePort, tempDir, checkResponsesOf } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";

const CAROL_KEY = "e2e-key-carol-1";
const SECRET = "e2e-secret-that-is-long-enough-for-hs256!";
let runtime: Runtime;
let base: string;
let dir: { path: string; cleanup: () => Promise<void> };

/** An HS256 access token for `sub`, expiring in 5 minutes. */
function accessToken(sub: string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const unsigned = `${part({ alg: "HS256", typ: "JWT" })}.${part({ sub, exp: Math.floor(Date.now() / 1000) + 300 })}`;
  return `${unsigned}.${createHmac("sha256", SECRET).update(unsigned).digest("base64url")}`;
}

beforeAll(async () => {
  dir = await tempDir("voiceloc-accounts-");
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  checkResponsesOf(base);
  const config = loadConfig({
    DATA_DIR: dir.path,
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_BASE_URL: base,
    VOICELOC_API_KEYS: `carol@example.com:${CAROL_KEY}`,
    JWT_SECRET: SECRET,
    SERVICES: "gateway,synthesis",
    SYNTHESIS_MAX_CHARACTERS: "200",
    LOG_LEVEL: "silent",
  });
  runtime = await startRuntime(config, silentLogger());
});

afterAll(async () => {
  await runtime?.stop();
  await dir?.cleanup();
});

async function synthesize(credential: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${base}/v1/speech/synthesize`, {
    method: "POST",
    headers: { Authorization: `Bearer ${credential}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** The account segment of a signed download link: `/v1/files/speech/<segment>/<file>`. */
function segmentOf(url: string): string | undefined {
  return /\/v1\/files\/speech\/([^/]+)\//.exec(url)?.[1];
}

describe("every allowed account id or JWT subject can synthesise, each in its own blob folder", () => {
  it("an API key account with @ (carol@example.com) synthesises and downloads its audio", async () => {
    const res = await synthesize(CAROL_KEY, { text: "Good morning, Carol.", language: "en" });
    expect(res.status).toBe(200);
    const { audio_url } = (await res.json()) as { audio_url: string };
    expect(segmentOf(audio_url)).toBe(accountKeySegment("carol@example.com"));
    const file = await fetch(audio_url);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("audio/mpeg");
    expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(1_000);
  });

  it("JWT subjects '..', 'a/b' and 'a' synthesise, and 'a/b' never lands in 'a''s folder", async () => {
    const segments: Record<string, string | undefined> = {};
    for (const sub of ["..", "a/b", "a"]) {
      const res = await synthesize(accessToken(sub), { text: "Hello there.", language: "English", format: "wav" });
      expect(res.status, sub).toBe(200);
      const { audio_url } = (await res.json()) as { audio_url: string };
      segments[sub] = segmentOf(audio_url);
      expect(segments[sub]).toBe(accountKeySegment(sub));
      expect((await fetch(audio_url)).status).toBe(200);
    }
    expect(segments["a/b"]).not.toBe(segments.a);
    expect(segments[".."]).not.toBe(segments.a);
  });
});

describe("text the service cannot or will not speak is the client's mistake (422), not a 502", () => {
  it.each(["   ", "...", "\n\t ?!"])("answers %j with a 422 on body.text", async (text) => {
    const res = await synthesize(CAROL_KEY, { text, language: "en" });
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({
      detail: [{ type: "value_error", loc: ["body", "text"], msg: "Value error, There is no text to speak.", input: text, ctx: { error: {} } }],
    });
  });

  it("answers text over SYNTHESIS_MAX_CHARACTERS with a 422 naming the limit", async () => {
    const text = "word ".repeat(41); // 205 characters: the echoed input is cut at 200 and marked with …
    const res = await synthesize(CAROL_KEY, { text, language: "en" });
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({
      detail: [{ type: "string_too_long", loc: ["body", "text"], msg: "String should have at most 200 characters", input: `${text.slice(0, 200)}…`, ctx: { max_length: 200 } }],
    });
  });
});
