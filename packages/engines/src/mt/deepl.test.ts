import { silentLogger } from "@voiceloc/log";
import {
  DEEPL_STAND_IN_MAX_TEXTS,
  deeplStandInText,
  libreTranslateStandInText,
  startDeepLStandIn,
  startLibreTranslateStandIn,
  type DeepLStandIn,
  type EngineStandIn,
  type EngineStandInRequest,
  type LibreTranslateRoute,
} from "@voiceloc/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createDeepLEngine, deeplBaseUrl } from "./deepl.ts";
import { MtEngineUnavailableError, TranslationNotSupportedError, TranslationServiceError } from "./errors.ts";
import { createLibreTranslateEngine } from "./libretranslate.ts";
import { createMtRegistry } from "./registry.ts";
import type { MtEngine } from "./types.ts";

const logger = silentLogger();
const KEY = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0:fx";
let deepl: DeepLStandIn;
let backup: EngineStandIn<LibreTranslateRoute>;

beforeAll(async () => {
  deepl = await startDeepLStandIn({ apiKey: KEY });
  backup = await startLibreTranslateStandIn({ languages: ["en", "es", "fr", "de", "sw"] });
});
afterAll(async () => {
  await deepl.close();
  await backup.close();
});
beforeEach(() => {
  deepl.requests.length = 0;
  backup.requests.length = 0;
});

function engine(overrides: Partial<Parameters<typeof createDeepLEngine>[0]> = {}): Promise<MtEngine> {
  return createDeepLEngine({ baseUrl: deepl.url, apiKey: KEY, logger, ...overrides });
}

const translateCalls = (stand: { requests: EngineStandInRequest[] }, path = "/v2/translate"): EngineStandInRequest[] => stand.requests.filter((r) => r.path === path);

describe("DeepL adapter against a stand-in", () => {
  it("picks the API by key: free keys (…:fx) go to api-free.deepl.com, others to api.deepl.com", () => {
    expect(deeplBaseUrl("abc:fx")).toBe("https://api-free.deepl.com");
    expect(deeplBaseUrl("abc")).toBe("https://api.deepl.com");
  });

  it("reads source and target languages with the key, and offers every pair among ours as neural translation", async () => {
    const mt = await engine();
    const pairs = mt.capabilities().pairs.map((p) => `${p.source}>${p.target}:${p.quality}`);
    expect(pairs).toContain("English>German:neural");
    expect(pairs).toContain("Japanese>Portuguese:neural");
    expect(pairs).toContain("Chinese>English:neural");
    expect(pairs.some((p) => p.includes("Swahili") || p.includes("Hindi"))).toBe(false);
    expect(mt.capabilities().remote).toBe(true);
    const lists = deepl.requests.filter((r) => r.path === "/v2/languages");
    expect(lists.map((r) => r.query.get("type")).sort()).toEqual(["source", "target"]);
    expect(lists.every((r) => r.headers.authorization === `DeepL-Auth-Key ${KEY}`)).toBe(true);
  });

  it("translates with JSON text arrays, bare source codes and the documented target variants, keeping paragraph breaks", async () => {
    const mt = await engine();
    const text = "Good morning.\n\nThe sea is calm.";
    const german = await mt.translate({ text, source: "English", target: "German" });
    expect(german).toBe(deeplStandInText(text, "DE"));
    expect(german.split("\n\n")).toHaveLength(2);
    const call = translateCalls(deepl)[0];
    expect(call?.json).toMatchObject({ source_lang: "EN", target_lang: "DE" });
    expect((call?.json as { text: unknown }).text).toEqual([text]);

    // English is asked for as American English and Portuguese as Brazilian (the default voices' variants), Chinese as Simplified.
    expect(await mt.translate({ text: "Guten Tag.", source: "German", target: "English" })).toBe(deeplStandInText("Guten Tag.", "EN-US"));
    expect(await mt.translate({ text: "Hello.", source: "English", target: "Portuguese" })).toBe(deeplStandInText("Hello.", "PT-BR"));
    expect(await mt.translate({ text: "Hello.", source: "English", target: "Chinese" })).toBe(deeplStandInText("Hello.", "ZH-HANS"));
    expect(translateCalls(deepl).map((r) => (r.json as { source_lang: string }).source_lang)).toEqual(["EN", "DE", "EN", "EN"]);
    const british = await engine({ targetVariants: { English: "EN-GB" } });
    expect(await british.translate({ text: "Guten Tag.", source: "German", target: "English" })).toBe(deeplStandInText("Guten Tag.", "EN-GB"));
  });

  it("sends long text in requests of at most 50 texts and under 128 KiB, which the stand-in would refuse otherwise", async () => {
    // The stand-in holds DeepL's limits: 51 texts or a body over 128 KiB are refused.
    const tooMany = await fetch(`${deepl.url}/v2/translate`, {
      method: "POST",
      headers: { authorization: `DeepL-Auth-Key ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ text: Array.from({ length: DEEPL_STAND_IN_MAX_TEXTS + 1 }, () => "x"), target_lang: "DE" }),
    });
    expect(tooMany.status).toBe(400);
    const tooLarge = await fetch(`${deepl.url}/v2/translate`, {
      method: "POST",
      headers: { authorization: `DeepL-Auth-Key ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ text: ["x".repeat(130 * 1024)], target_lang: "DE" }),
    });
    expect(tooLarge.status).toBe(413);
    deepl.requests.length = 0;

    const mt = await engine({ maxChunkChars: 100 });
    const paragraphs = Array.from({ length: 120 }, (_, i) => `Paragraph number ${i} tells a short story about the ocean and its waves.`);
    const out = await mt.translate({ text: paragraphs.join("\n\n"), source: "English", target: "French" });
    expect(out.split("\n\n")).toEqual(paragraphs.map((p) => deeplStandInText(p, "FR")));
    const sizes = translateCalls(deepl).map((r) => (r.json as { text: string[] }).text.length);
    expect(sizes).toEqual([50, 50, 20]);

    // Large paragraphs: the body stays under the byte limit however few texts that allows.
    const big = Array.from({ length: 30 }, (_, i) => `${i} ${"Ünïcödé wörds in a very long paragraph. ".repeat(110)}`.trim());
    deepl.requests.length = 0;
    const wide = await engine();
    const bigOut = await wide.translate({ text: big.join("\n\n"), source: "English", target: "German" });
    expect(bigOut.split("\n\n")).toEqual(big.map((p) => deeplStandInText(p, "DE")));
    const calls = translateCalls(deepl);
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(Math.max(...calls.map((r) => r.bodyBytes))).toBeLessThanOrEqual(128 * 1024);
  });

  it("refuses a pair DeepL does not have before asking it", async () => {
    const mt = await engine();
    await expect(mt.translate({ text: "Hello.", source: "English", target: "Swahili" })).rejects.toBeInstanceOf(TranslationNotSupportedError);
    expect(translateCalls(deepl)).toHaveLength(0);
  });

  it("names each failure in plain words: 5xx, malformed JSON, a language dropped since start, a timeout", async () => {
    const mt = await engine();
    const hello = { text: "Hello.", source: "English" as const, target: "German" as const };
    deepl.fail("translate", { status: 500, body: { message: "Internal error" }, headers: { "retry-after": "3" } });
    await expect(mt.translate(hello)).rejects.toMatchObject({ code: "TRANSLATION_SERVICE_UNAVAILABLE", retryAfterMs: 3000, message: expect.stringContaining("Internal error") as unknown });
    deepl.fail("translate", { status: 504, body: "" });
    await expect(mt.translate(hello)).rejects.toMatchObject({ code: "TRANSLATION_SERVICE_TIMEOUT" });
    deepl.fail("translate", { malformed: true });
    await expect(mt.translate(hello)).rejects.toMatchObject({ code: "TRANSLATION_SERVICE_BAD_RESPONSE" });
    deepl.fail("translate", { status: 200, body: { translations: [] } });
    await expect(mt.translate(hello)).rejects.toMatchObject({ code: "TRANSLATION_SERVICE_BAD_RESPONSE" });
    deepl.fail("translate", { status: 400, body: { message: "Value for 'target_lang' not supported." } });
    await expect(mt.translate(hello)).rejects.toMatchObject({
      code: "TRANSLATION_SERVICE_REJECTED",
      message: expect.stringContaining("does not translate from English to German now") as unknown,
    });
    const quick = await engine({ timeoutMs: 2000 });
    deepl.fail("translate", { hang: true });
    await expect(quick.translate(hello)).rejects.toMatchObject({ code: "TRANSLATION_SERVICE_TIMEOUT", message: expect.stringContaining("did not answer") as unknown });
    // None of these holds DeepL back: the next call is sent and works.
    expect(await mt.translate(hello)).toBe(deeplStandInText("Hello.", "DE"));
  });

  it("a refused key (403) and a used-up quota (456) fail at once, and later calls are not sent to DeepL for a while", async () => {
    const hello = { text: "Hello.", source: "English" as const, target: "German" as const };
    const mt = await engine();
    deepl.fail("translate", { status: 403, body: { message: "Authorization failure, check auth_key" } });
    const refused = await mt.translate(hello).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TranslationServiceError);
    expect(refused).toMatchObject({ code: "TRANSLATION_SERVICE_AUTH", status: 403, message: expect.stringMatching(/DeepL refused the API key.*Authorization failure/) as unknown });
    const sent = translateCalls(deepl).length;
    await expect(mt.translate(hello)).rejects.toMatchObject({ code: "TRANSLATION_SERVICE_AUTH" });
    expect(translateCalls(deepl)).toHaveLength(sent);

    const quota = await startDeepLStandIn({ apiKey: KEY, characterLimit: 40 });
    try {
      const metered = await createDeepLEngine({ baseUrl: quota.url, apiKey: KEY, logger });
      expect(await metered.translate({ text: "The sea is calm.", source: "English", target: "German" })).toBe(deeplStandInText("The sea is calm.", "DE"));
      await expect(metered.translate({ text: "The ship sails out at dawn, the sails full of wind.", source: "English", target: "German" })).rejects.toMatchObject({
        code: "TRANSLATION_SERVICE_AUTH",
        status: 456,
        message: expect.stringContaining("quota is used up") as unknown,
      });
      const before = translateCalls(quota).length;
      await expect(metered.translate({ text: "Hi.", source: "English", target: "German" })).rejects.toMatchObject({ status: 456 });
      expect(translateCalls(quota)).toHaveLength(before);
      // With no hold, the next call asks DeepL again (and a small text still fits the quota).
      const eager = await createDeepLEngine({ baseUrl: quota.url, apiKey: KEY, logger, refusalHoldMs: 0 });
      expect(await eager.translate({ text: "Hi.", source: "English", target: "German" })).toBe(deeplStandInText("Hi.", "DE"));
    } finally {
      await quota.close();
    }
  });

  it("429 says busy with DeepL's Retry-After, and calls within it are not sent", async () => {
    const mt = await engine();
    deepl.fail("translate", { status: 429, body: "", headers: { "retry-after": "120" } });
    const limited = await mt.translate({ text: "Hello.", source: "English", target: "German" }).catch((e: unknown) => e);
    expect(limited).toMatchObject({ code: "TRANSLATION_SERVICE_RATE_LIMITED", retryAfterMs: 120_000, status: 429 });
    const sent = translateCalls(deepl).length;
    const again = await mt.translate({ text: "Hello.", source: "English", target: "German" }).catch((e: unknown) => e);
    expect(again).toMatchObject({ code: "TRANSLATION_SERVICE_RATE_LIMITED" });
    expect((again as TranslationServiceError).retryAfterMs).toBeGreaterThan(100_000);
    expect(translateCalls(deepl)).toHaveLength(sent);
  });

  it("is unavailable at start when the key is refused or the language lists fail", async () => {
    const wrong = await engine({ apiKey: "wrong-key:fx" }).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(MtEngineUnavailableError);
    expect((wrong as Error).message).toMatch(/DeepL did not list its source languages: DeepL refused the API key \(HTTP 403\)/);
    deepl.fail("languages", { status: 503, body: { message: "Service unavailable" } });
    await expect(engine()).rejects.toBeInstanceOf(MtEngineUnavailableError);
    deepl.fail("languages", { malformed: true });
    await expect(engine()).rejects.toBeInstanceOf(MtEngineUnavailableError);
    deepl.fail("languages", { status: 200, body: { languages: [] } });
    await expect(engine()).rejects.toBeInstanceOf(MtEngineUnavailableError);
    await expect(engine({ baseUrl: "ftp://example.test" })).rejects.toMatchObject({ code: "MT_CONFIG_INVALID" });
    await expect(engine({ maxBatch: 51 })).rejects.toMatchObject({ code: "MT_CONFIG_INVALID" });
    await expect(engine({ apiKey: " " })).rejects.toMatchObject({ code: "MT_CONFIG_INVALID" });
  });
});

describe("DeepL in the translation registry", () => {
  async function libre(): Promise<MtEngine> {
    return createLibreTranslateEngine({ baseUrl: backup.url, logger });
  }

  it("falls back to the next engine when DeepL fails at run time (5xx, quota) and names both in each pair's chain", async () => {
    const registry = createMtRegistry([await engine(), await libre()], { logger });
    const chain = registry.capabilities().pairs.find((p) => p.source === "English" && p.target === "German");
    expect(chain?.engines).toEqual(["deepl", "libretranslate"]);
    // Swahili only LibreTranslate has; Japanese only DeepL.
    expect(registry.resolve("English", "Swahili").engine.id).toBe("libretranslate");
    expect(registry.resolve("English", "Japanese").engine.id).toBe("deepl");

    deepl.fail("translate", { status: 503, body: { message: "Temporary Error" } });
    expect(await registry.translate({ text: "Hello there.", source: "English", target: "German" })).toBe(libreTranslateStandInText("Hello there.", "de"));
    deepl.fail("translate", { status: 456, body: { message: "Quota Exceeded" } });
    expect(await registry.translate({ text: "Good night.", source: "English", target: "German" })).toBe(libreTranslateStandInText("Good night.", "de"));
    expect(translateCalls(backup, "/translate")).toHaveLength(2);
    // DeepL is held after the quota refusal: the next text goes straight to LibreTranslate.
    const sent = translateCalls(deepl).length;
    expect(await registry.translate({ text: "Good morning.", source: "English", target: "German" })).toBe(libreTranslateStandInText("Good morning.", "de"));
    expect(translateCalls(deepl)).toHaveLength(sent);
  });

  it("follows ENGINE_ORDER_MT: libretranslate first when named first, DeepL second in the chain", async () => {
    const registry = createMtRegistry([await engine(), await libre()], { logger, order: ["libretranslate", "deepl"] });
    const chain = registry.capabilities().pairs.find((p) => p.source === "English" && p.target === "French");
    expect(chain).toMatchObject({ engine: "libretranslate", engines: ["libretranslate", "deepl"] });
    expect(await registry.translate({ text: "Hello.", source: "English", target: "French" })).toBe(libreTranslateStandInText("Hello.", "fr"));
    expect(translateCalls(deepl)).toHaveLength(0);
  });

  it("drops DeepL at the start-up self-test when its quota is used up, and no longer claims it", async () => {
    const quota = await startDeepLStandIn({ apiKey: KEY, characterLimit: 0 });
    try {
      const registry = createMtRegistry([await createDeepLEngine({ baseUrl: quota.url, apiKey: KEY, logger }), await libre()], { logger });
      const report = await registry.selfTest();
      expect(report.dropped).toEqual([{ engine: "deepl", reason: expect.stringContaining("quota is used up") as unknown }]);
      expect(report.passed).toEqual(["libretranslate"]);
      expect(registry.capabilities().pairs.find((p) => p.source === "English" && p.target === "German")?.engines).toEqual(["libretranslate"]);
      expect(registry.supports("English", "Japanese")).toBe(false);
    } finally {
      await quota.close();
    }
  });
});
