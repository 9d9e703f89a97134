import { silentLogger } from "@voiceloc/log";
import { libreTranslateStandInText, startLibreTranslateStandIn, type EngineStandIn, type LibreTranslateRoute } from "@voiceloc/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { MtEngineUnavailableError, TranslationNotSupportedError, TranslationServiceError } from "./errors.ts";
import { createLibreTranslateEngine } from "./libretranslate.ts";
import { createMtRegistry } from "./registry.ts";
import type { MtEngine } from "./types.ts";

const logger = silentLogger();
const KEY = "lt-key-123";
let server: EngineStandIn<LibreTranslateRoute>;
let backup: EngineStandIn<LibreTranslateRoute>;

beforeAll(async () => {
  server = await startLibreTranslateStandIn({ languages: ["en", "es", "fr"], apiKey: KEY, batchLimit: 4 });
  backup = await startLibreTranslateStandIn({ languages: ["en", "es", "fr", "de"] });
});
afterAll(async () => {
  await server.close();
  await backup.close();
});
beforeEach(() => {
  server.requests.length = 0;
  backup.requests.length = 0;
});

function engine(overrides: Partial<Parameters<typeof createLibreTranslateEngine>[0]> = {}): Promise<MtEngine> {
  return createLibreTranslateEngine({ baseUrl: server.url, apiKey: KEY, logger, maxBatch: 4, ...overrides });
}

describe("LibreTranslate adapter against a stand-in", () => {
  it("offers the pairs GET /languages lists among our languages, as neural translation", async () => {
    const mt = await engine();
    const pairs = mt.capabilities().pairs.map((p) => `${p.source}>${p.target}:${p.quality}`);
    expect(pairs).toContain("English>Spanish:neural");
    expect(pairs).toContain("French>English:neural");
    expect(pairs.some((p) => p.includes("German"))).toBe(false);
    expect(server.requests[0]?.path).toBe("/languages");
  });

  it("translates text with format text and the API key, keeping paragraph breaks", async () => {
    const mt = await engine();
    const out = await mt.translate({ text: "Good morning.\n\nThe sea is calm.", source: "English", target: "Spanish" });
    expect(out).toBe(libreTranslateStandInText("Good morning.\n\nThe sea is calm.", "es"));
    expect(out.split("\n\n")).toHaveLength(2);
    const call = server.requests.find((r) => r.path === "/translate");
    expect(call?.json).toMatchObject({ source: "en", target: "es", format: "text", api_key: KEY });
    expect(Array.isArray((call?.json as { q: unknown }).q)).toBe(true);
  });

  it("sends long text as q arrays no longer than the batch limit", async () => {
    const mt = await engine({ maxChunkChars: 100 });
    const paragraphs = Array.from({ length: 10 }, (_, i) => `Paragraph number ${i} tells a short story about the ocean and its waves.`);
    const out = await mt.translate({ text: paragraphs.join("\n\n"), source: "English", target: "French" });
    expect(out.split("\n\n")).toEqual(paragraphs.map((p) => libreTranslateStandInText(p, "fr")));
    const batches = server.requests.filter((r) => r.path === "/translate").map((r) => (r.json as { q: string[] }).q.length);
    expect(batches.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...batches)).toBeLessThanOrEqual(4);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(10);
  });

  it("refuses a pair the server does not have before asking it", async () => {
    const mt = await engine();
    await expect(mt.translate({ text: "Hello.", source: "English", target: "German" })).rejects.toBeInstanceOf(TranslationNotSupportedError);
    expect(server.requests.filter((r) => r.path === "/translate")).toHaveLength(0);
  });

  it("names each failure in plain words: wrong key, 429 with Retry-After, 5xx, malformed JSON, timeout", async () => {
    const wrongKey = await engine({ apiKey: "nope" });
    await expect(wrongKey.translate({ text: "Hello.", source: "English", target: "Spanish" })).rejects.toMatchObject({
      code: "TRANSLATION_SERVICE_AUTH",
      message: expect.stringContaining("Invalid API key") as unknown,
    });
    const mt = await engine();
    server.fail("translate", { status: 429, body: { error: "Slowdown: 30 per 1 minute" }, headers: { "retry-after": "12" } });
    const limited = await mt.translate({ text: "Hello.", source: "English", target: "Spanish" }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(TranslationServiceError);
    expect(limited).toMatchObject({ code: "TRANSLATION_SERVICE_RATE_LIMITED", retryAfterMs: 12_000, status: 429 });
    server.fail("translate", { status: 500, body: { error: "Cannot translate text: out of memory" } });
    await expect(mt.translate({ text: "Hello.", source: "English", target: "Spanish" })).rejects.toMatchObject({ code: "TRANSLATION_SERVICE_UNAVAILABLE" });
    server.fail("translate", { malformed: true });
    await expect(mt.translate({ text: "Hello.", source: "English", target: "Spanish" })).rejects.toMatchObject({ code: "TRANSLATION_SERVICE_BAD_RESPONSE" });
    server.fail("translate", { status: 400, body: { error: "es is not supported" } });
    await expect(mt.translate({ text: "Hello.", source: "English", target: "Spanish" })).rejects.toMatchObject({
      code: "TRANSLATION_SERVICE_REJECTED",
      message: expect.stringContaining("es is not supported") as unknown,
    });
    const quick = await engine({ timeoutMs: 300 });
    server.fail("translate", { hang: true });
    await expect(quick.translate({ text: "Hello.", source: "English", target: "Spanish" })).rejects.toMatchObject({ code: "TRANSLATION_SERVICE_TIMEOUT" });
  });

  it("is unavailable at start when /languages fails or is not a list", async () => {
    server.fail("languages", { status: 502, body: "Bad Gateway" });
    await expect(engine()).rejects.toBeInstanceOf(MtEngineUnavailableError);
    server.fail("languages", { malformed: true });
    await expect(engine()).rejects.toBeInstanceOf(MtEngineUnavailableError);
    await expect(engine({ baseUrl: "ftp://example.test" })).rejects.toMatchObject({ code: "MT_CONFIG_INVALID" });
  });

  it("falls back to the next engine when the first fails at run time", async () => {
    const first = await engine();
    const second = await createLibreTranslateEngine({ baseUrl: backup.url, logger, id: "libretranslate-backup" });
    const registry = createMtRegistry([first, second], { logger });
    server.fail("translate", { status: 503, body: { error: "busy" } });
    const out = await registry.translate({ text: "Hello there.", source: "English", target: "Spanish" });
    expect(out).toBe(libreTranslateStandInText("Hello there.", "es"));
    expect(backup.requests.filter((r) => r.path === "/translate")).toHaveLength(1);
    // German only the second has.
    expect(registry.resolve("English", "German").engine.id).toBe("libretranslate-backup");
  });
});
