import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { silentLogger } from "@voiceloc/log";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createApertiumEngine } from "./apertium.ts";
import { MtConfigError, TranslationError, TranslationNotSupportedError, TranslationServiceError } from "./errors.ts";
import { cleanModelTranslation, createOpenAiTranslator, translationSystemPrompt, type OpenAiTranslatorOptions } from "./openai.ts";
import { createMtRegistry } from "./registry.ts";

const logger = silentLogger();
const API_KEY = "sk-test-0123456789";
const MODEL = "translator-test";

interface Received {
  url: string;
  headers: IncomingMessage["headers"];
  body: { model: string; temperature: number; messages: { role: string; content: string }[] };
}

type Mode = "ok" | "fenced" | "quoted" | "think" | "parts" | "overloaded" | "rate-limited" | "bad-request" | "hang" | "malformed" | "not-json" | "cut-off" | "empty";

let server: Server;
let baseUrl: string;
let mode: Mode = "ok";
let received: Received[] = [];

function sendError(res: ServerResponse, status: number, message: string, type: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify({ error: { message, type, param: null, code: null } }));
}

function completion(content: unknown, finishReason = "stop"): string {
  return JSON.stringify({
    id: "chatcmpl-test",
    object: "chat.completion",
    created: 1_700_000_000,
    model: MODEL,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: finishReason }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });
}

/** A local stand-in for POST /v1/chat/completions following the documented contract. The "translation" is the text in capitals. */
async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== "POST" || req.url !== "/v1/chat/completions") return sendError(res, 404, `Unknown request URL: ${req.method} ${req.url}`, "invalid_request_error");
  if (req.headers.authorization !== `Bearer ${API_KEY}`) return sendError(res, 401, "Incorrect API key provided.", "invalid_request_error");
  if (!String(req.headers["content-type"]).startsWith("application/json")) return sendError(res, 400, "Expected a JSON body.", "invalid_request_error");
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return sendError(res, 400, "We could not parse the JSON body of your request.", "invalid_request_error");
  }
  if (typeof body !== "object" || body === null) return sendError(res, 400, "Body must be an object.", "invalid_request_error");
  const { model, messages, temperature } = body as Record<string, unknown>;
  if (typeof model !== "string" || model === "") return sendError(res, 400, "you must provide a model parameter", "invalid_request_error");
  if (model !== MODEL) return sendError(res, 404, `The model '${model}' does not exist`, "invalid_request_error");
  if (temperature !== undefined && (typeof temperature !== "number" || temperature < 0 || temperature > 2)) return sendError(res, 400, "Invalid temperature", "invalid_request_error");
  if (
    !Array.isArray(messages) ||
    messages.length === 0 ||
    !messages.every((m: unknown) => typeof m === "object" && m !== null && typeof (m as { role?: unknown }).role === "string" && typeof (m as { content?: unknown }).content === "string")
  ) {
    return sendError(res, 400, "Invalid 'messages'.", "invalid_request_error");
  }
  received.push({ url: req.url, headers: req.headers, body: body as Received["body"] });
  const user = (messages as { role: string; content: string }[]).findLast((m) => m.role === "user")?.content ?? "";
  const translated = user.toUpperCase();
  const ok = (text: string): void => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(text);
  };
  switch (mode) {
    case "hang":
      return; // never answers
    case "overloaded":
      return sendError(res, 503, "The server is overloaded, please try again later.", "server_error");
    case "rate-limited":
      return sendError(res, 429, "Rate limit reached for requests.", "requests", { "retry-after": "7" });
    case "bad-request":
      return sendError(res, 400, "This model's maximum context length is 8192 tokens.", "invalid_request_error");
    case "malformed":
      return ok(JSON.stringify({ choices: [] }));
    case "not-json":
      return ok("<html><body>Gateway login</body></html>");
    case "cut-off":
      return ok(completion(translated.slice(0, 5), "length"));
    case "empty":
      return ok(completion(""));
    case "fenced":
      return ok(completion(`\`\`\`text\n${translated}\n\`\`\``));
    case "quoted":
      return ok(completion(`“${translated}”`));
    case "think":
      return ok(completion(`<think>The user wants a translation.</think>\n\n${translated}`));
    case "parts":
      return ok(completion([{ type: "text", text: translated.slice(0, 3) }, { type: "text", text: translated.slice(3) }]));
    default:
      return ok(completion(translated));
  }
}

function translator(overrides: Partial<OpenAiTranslatorOptions> = {}) {
  return createOpenAiTranslator({ baseUrl, apiKey: API_KEY, model: MODEL, logger, ...overrides });
}

beforeAll(async () => {
  server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  if (server) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
beforeEach(() => {
  mode = "ok";
  received = [];
});

describe("OpenAI-compatible translator", () => {
  it("offers every pair among its languages as llm", () => {
    const all = translator().capabilities().pairs;
    expect(all).toHaveLength(16 * 15);
    expect(all.every((p) => p.quality === "llm" && p.pivot === undefined)).toBe(true);
    const few = translator({ languages: ["English", "German", "Japanese"] }).capabilities().pairs;
    expect(few.map((p) => `${p.source}>${p.target}`).sort()).toEqual(
      ["English>German", "English>Japanese", "German>English", "German>Japanese", "Japanese>English", "Japanese>German"].sort(),
    );
  });

  it("sends the chat-completions request and returns only the translation", async () => {
    const out = await translator().translate({ text: "The house is red.\nSecond line {name}.", source: "English", target: "German" });
    expect(out).toBe("THE HOUSE IS RED.\nSECOND LINE {NAME}.");
    expect(received).toHaveLength(1);
    const [request] = received;
    expect(request?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request?.body.model).toBe(MODEL);
    expect(request?.body.temperature).toBe(0);
    expect(request?.body.messages.map((m) => m.role)).toEqual(["system", "user"]);
    expect(request?.body.messages[0]?.content).toBe(translationSystemPrompt("English", "German"));
    expect(request?.body.messages[0]?.content).toMatch(/ONLY the translated text/);
    expect(request?.body.messages[0]?.content).toMatch(/from English into German/);
    expect(request?.body.messages[1]?.content).toBe("The house is red.\nSecond line {name}.");
  });

  it("asks for a rendering within a dubbed line's length budget when one is given", async () => {
    await translator().translate({ text: "The weather is very nice today.", source: "English", target: "German", maxChars: 27 });
    const prompt = received[0]?.body.messages[0]?.content ?? "";
    expect(prompt).toBe(translationSystemPrompt("English", "German", { maxChars: 27 }));
    expect(prompt).toMatch(/within 27 characters/);
    expect(translationSystemPrompt("English", "German")).not.toMatch(/characters:/);
  });

  it("accepts a base URL that ends in /v1", async () => {
    await expect(translator({ baseUrl: `${baseUrl}/v1/` }).translate({ text: "Hello.", source: "English", target: "French" })).resolves.toBe("HELLO.");
    expect(received[0]?.url).toBe("/v1/chat/completions");
  });

  it("translates long text in several requests, in order, keeping paragraph breaks", async () => {
    const paragraphs = Array.from(
      { length: 30 },
      (_, i) => `Paragraph ${i + 1} begins here. It tells a short story about a red house. The dog sleeps in the garden near the river, all day long.`,
    );
    paragraphs.splice(5, 0, Array.from({ length: 40 }, (_, i) => `Sentence ${i + 1} of the long paragraph goes on and on.`).join(" "));
    const text = `${paragraphs.join("\n\n")}\n`;
    expect(text.length).toBeGreaterThan(5000);
    const out = await translator({ maxChunkChars: 1000 }).translate({ text, source: "English", target: "Spanish" });
    expect(out).toBe(text.toUpperCase());
    expect(received.length).toBeGreaterThanOrEqual(Math.ceil(text.length / 1000));
    const sent = received.map((r) => r.body.messages[1]?.content ?? "");
    for (const s of sent) expect(s.length).toBeLessThanOrEqual(1000);
    // the requests came in text order and together hold the whole text
    expect(sent.join(" ").replace(/\s+/g, " ")).toBe(text.trim().replace(/\s+/g, " "));
    expect(out.split("\n\n")).toHaveLength(paragraphs.length);
  });

  it("strips code fences, quotes and reasoning the model adds", async () => {
    for (const m of ["fenced", "quoted", "think", "parts"] as const) {
      mode = m;
      await expect(translator().translate({ text: "Hello there.", source: "English", target: "French" }), m).resolves.toBe("HELLO THERE.");
    }
    expect(cleanModelTranslation('"Bonjour," dit-elle, "au revoir."', "Hello, she said, goodbye.")).toBe('"Bonjour," dit-elle, "au revoir."');
    expect(cleanModelTranslation("« Bonjour »", "“Hello”")).toBe("« Bonjour »");
    expect(cleanModelTranslation("'Bonjour'", "Hello")).toBe("Bonjour");
  });

  it("maps a refused API key to an authentication error", async () => {
    const error = await translator({ apiKey: "sk-wrong" })
      .translate({ text: "Hello.", source: "English", target: "French" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TranslationServiceError);
    expect(error).toMatchObject({ name: "TranslationServiceError", code: "TRANSLATION_SERVICE_AUTH", status: 401 });
    expect((error as Error).message).toBe(`The translation service at ${new URL(baseUrl).host} refused the API key (HTTP 401): Incorrect API key provided.`);
    expect((error as Error).message).not.toContain("sk-wrong");
  });

  it("maps rate limiting and server errors to their own codes, with the wait the service asked for", async () => {
    mode = "rate-limited";
    const limited = await translator()
      .translate({ text: "Hello.", source: "English", target: "French" })
      .catch((e: unknown) => e);
    expect(limited).toMatchObject({ code: "TRANSLATION_SERVICE_RATE_LIMITED", status: 429, retryAfterMs: 7000 });
    mode = "overloaded";
    const overloaded = await translator()
      .translate({ text: "Hello.", source: "English", target: "French" })
      .catch((e: unknown) => e);
    expect(overloaded).toMatchObject({ code: "TRANSLATION_SERVICE_UNAVAILABLE", status: 503 });
    expect((overloaded as Error).message).toContain("HTTP 503");
    mode = "bad-request";
    const rejected = await translator()
      .translate({ text: "Hello.", source: "English", target: "French" })
      .catch((e: unknown) => e);
    expect(rejected).toMatchObject({ code: "TRANSLATION_SERVICE_REJECTED", status: 400 });
    expect((rejected as Error).message).toContain("maximum context length");
  });

  it("stops the whole text at the first failed chunk", async () => {
    mode = "overloaded";
    const error = await translator({ maxChunkChars: 100 })
      .translate({ text: "A sentence that is long enough to fill a chunk on its own here. ".repeat(5), source: "English", target: "French" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TranslationServiceError);
    expect(received).toHaveLength(1);
  });

  it("reports an unknown model", async () => {
    const error = await translator({ model: "nope" })
      .translate({ text: "Hello.", source: "English", target: "French" })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "TRANSLATION_SERVICE_REJECTED", status: 404 });
    expect((error as Error).message).toContain('model "nope"');
  });

  it("gives up after the time limit with a timeout error", async () => {
    mode = "hang";
    const error = await translator({ timeoutMs: 300 })
      .translate({ text: "Hello.", source: "English", target: "French" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TranslationServiceError);
    expect(error).toMatchObject({ code: "TRANSLATION_SERVICE_TIMEOUT" });
    expect((error as Error).message).toMatch(/did not answer within/);
  });

  it("reports cancellation, not a timeout, when the caller aborts", async () => {
    mode = "hang";
    const controller = new AbortController();
    const pending = translator()
      .translate({ text: "Hello.", source: "English", target: "French", signal: controller.signal })
      .catch((e: unknown) => e);
    while (received.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    controller.abort();
    const error = await pending;
    expect(error).toBeInstanceOf(TranslationError);
    expect(error).toMatchObject({ code: "TRANSLATION_CANCELLED" });
  });

  it("reports malformed answers", async () => {
    for (const [m, pattern] of [
      ["malformed", /without a chat completion/],
      ["not-json", /not JSON/],
      ["cut-off", /cut off/],
      ["empty", /empty translation/],
    ] as const) {
      mode = m;
      const error = await translator()
        .translate({ text: "Hello.", source: "English", target: "French" })
        .catch((e: unknown) => e);
      expect(error, m).toBeInstanceOf(TranslationServiceError);
      expect(error, m).toMatchObject({ code: "TRANSLATION_SERVICE_BAD_RESPONSE" });
      expect((error as Error).message, m).toMatch(pattern);
    }
  });

  it("reports an unreachable service as unavailable", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await translator({ baseUrl: `http://127.0.0.1:${port}` })
      .translate({ text: "Hello.", source: "English", target: "French" })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "TRANSLATION_SERVICE_UNAVAILABLE" });
  });

  it("refuses pairs outside its languages and bad settings", async () => {
    const error = await translator({ languages: ["English", "French"] })
      .translate({ text: "Hello.", source: "English", target: "German" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TranslationNotSupportedError);
    expect(received).toHaveLength(0);
    expect(() => translator({ baseUrl: "ftp://example.org" })).toThrow(MtConfigError);
    expect(() => translator({ model: " " })).toThrow(MtConfigError);
    expect(() => translator({ languages: ["Klingon" as never] })).toThrow(MtConfigError);
  });

  it("skips blank text without a request", async () => {
    await expect(translator().translate({ text: "  \n", source: "English", target: "French" })).resolves.toBe("  \n");
    expect(received).toHaveLength(0);
  });
});

describe("MT registry with a language model and Apertium", () => {
  it("prefers the language model and falls back to Apertium for other pairs", async () => {
    const apertium = await createApertiumEngine({ logger });
    const llm = translator({ languages: ["English", "Spanish", "German"] });
    const registry = createMtRegistry([apertium, llm]);
    const pairs = registry.capabilities().pairs;
    expect(pairs).toContainEqual(expect.objectContaining({ source: "English", target: "Spanish", quality: "llm", engine: "openai" }));
    expect(pairs).toContainEqual(expect.objectContaining({ source: "English", target: "German", quality: "llm", engine: "openai" }));
    expect(pairs).toContainEqual(expect.objectContaining({ source: "English", target: "French", pivot: "Spanish", quality: "rule-based", engine: "apertium" }));
    expect(pairs).toContainEqual(expect.objectContaining({ source: "Hindi", target: "Urdu", quality: "rule-based", engine: "apertium" }));
    expect(registry.supports("German", "Spanish")).toBe(true);
    expect(registry.supports("German", "French")).toBe(false);

    await expect(registry.translate({ text: "The house is red.", source: "English", target: "Spanish" })).resolves.toBe("THE HOUSE IS RED.");
    const french = await registry.translate({ text: "The house is red.", source: "English", target: "French" });
    expect(french.toLowerCase()).toContain("maison");
    expect(received).toHaveLength(1);
    await expect(registry.translate({ text: "Hallo.", source: "German", target: "German" })).resolves.toBe("Hallo.");
    expect(received).toHaveLength(1);
    await expect(registry.translate({ text: "Hallo.", source: "German", target: "French" })).rejects.toThrow("Translation from German to French is not available");
  });
});
