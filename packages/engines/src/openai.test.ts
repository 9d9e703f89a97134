import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { join } from "node:path";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { freePort, makeSpeechWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SpeechServiceError } from "./errors.ts";
import { createOpenAiTtsEngine, type OpenAiTtsOptions } from "./openai.ts";
import { createTtsRegistry } from "./registry.ts";
import { synthesizeToFile } from "./synthesize.ts";
import { parseWavHeader } from "./wav.ts";

const logger = silentLogger();
const API_KEY = "sk-test-0123456789";
const VOICES = ["alloy", "nova"];
const FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"];

interface Received {
  headers: IncomingMessage["headers"];
  body: Record<string, unknown>;
}

type Mode = "ok" | "streamed-wav" | "json-200" | "overloaded" | "rate-limited" | "hang";

let server: Server;
let baseUrl: string;
let mode: Mode = "ok";
let received: Received[] = [];
let speechWav: Buffer;
let dataOffset: number;
let media: MediaToolkit;
let dir: string;
let cleanup: () => Promise<void>;

function sendError(res: ServerResponse, status: number, message: string, type: string, param: string | null = null): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message, type, param, code: null } }));
}

/** A local stand-in for POST /v1/audio/speech following OpenAI's documented contract. */
async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== "POST" || req.url !== "/v1/audio/speech") return sendError(res, 404, `Unknown request URL: ${req.method} ${req.url}`, "invalid_request_error");
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
  const { model, input, voice, response_format: format } = body as Record<string, unknown>;
  received.push({ headers: req.headers, body: body as Record<string, unknown> });
  if (typeof model !== "string" || model === "") return sendError(res, 400, "you must provide a model parameter", "invalid_request_error", "model");
  if (model !== "tts-1") return sendError(res, 404, `The model '${model}' does not exist`, "invalid_request_error", "model");
  if (typeof input !== "string" || input === "") return sendError(res, 400, "input is required", "invalid_request_error", "input");
  if (input.length > 4096) return sendError(res, 400, "input is too long (max 4096 characters)", "invalid_request_error", "input");
  if (typeof voice !== "string" || !VOICES.includes(voice)) {
    return sendError(res, 400, `Invalid value for 'voice': '${String(voice)}'.`, "invalid_request_error", "voice");
  }
  if (format !== undefined && (typeof format !== "string" || !FORMATS.includes(format))) {
    return sendError(res, 400, "Invalid response_format", "invalid_request_error", "response_format");
  }
  if (mode === "hang") return; // never answers
  if (mode === "overloaded") return sendError(res, 503, "The server is overloaded, please try again later.", "server_error");
  if (mode === "rate-limited") return sendError(res, 429, "Rate limit reached for requests.", "requests");
  if (mode === "json-200") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end("{}");
    return;
  }
  const wav = Buffer.from(speechWav);
  if (mode === "streamed-wav") {
    wav.writeUInt32LE(0xffffffff, 4);
    wav.writeUInt32LE(0xffffffff, dataOffset - 4);
  }
  res.writeHead(200, { "content-type": "audio/wav", "transfer-encoding": "chunked" });
  // sent in pieces, as a streaming server would
  for (let i = 0; i < wav.length; i += 4096) res.write(wav.subarray(i, i + 4096));
  res.end();
}

function engine(overrides: Partial<OpenAiTtsOptions> = {}) {
  return createOpenAiTtsEngine({ baseUrl, apiKey: API_KEY, model: "tts-1", voices: ["alloy", { id: "nova", gender: "female" }], logger, ...overrides });
}

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir());
  media = createMediaToolkit(await resolveFfmpeg({ logger }), logger);
  // a real 16 kHz speech WAV (ffmpeg writes a LIST chunk before the data chunk)
  const flite = await makeSpeechWav("This audio came from the speech service.", { path: join(dir, "flite.wav") });
  const plain = await media.convertAudio({ input: flite, outPath: join(dir, "speech.wav"), format: "wav" });
  speechWav = await readFile(plain);
  dataOffset = parseWavHeader(speechWav, speechWav.length)?.dataOffset ?? 0;
  expect(dataOffset).toBeGreaterThan(40);
  const port = await freePort();
  server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  if (server) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await cleanup();
});
beforeEach(() => {
  mode = "ok";
  received = [];
});

describe("OpenAI-compatible speech adapter", () => {
  it("offers each configured voice for every language but Amharic by default", () => {
    const caps = engine().capabilities();
    expect(caps.languages).toHaveLength(15);
    expect(caps.languages).not.toContain("Amharic");
    expect(caps.voices.filter((v) => v.language === "French").map((v) => v.name)).toEqual(["openai:alloy", "openai:nova"]);
    expect(caps.voices.find((v) => v.name === "openai:nova")?.gender).toBe("female");
    expect(caps.maxInputChars).toBeLessThanOrEqual(4096);
  });

  it("sends the documented request and writes the WAV it gets back", async () => {
    const result = await engine().synthesize({ text: "Bonjour tout le monde", language: "French", voice: "openai:nova", outPath: join(dir, "fr.wav") });
    expect(result).toEqual({ wavPath: join(dir, "fr.wav"), sampleRate: 16000, voice: "openai:nova" });
    expect(received).toHaveLength(1);
    expect(received[0]?.body).toEqual({ model: "tts-1", input: "Bonjour tout le monde", voice: "nova", response_format: "wav" });
    expect(received[0]?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(await readFile(result.wavPath)).toEqual(speechWav);
  });

  it("works through the registry and synthesizeToFile, and accepts a base URL ending in /v1", async () => {
    const registry = createTtsRegistry([engine({ baseUrl: `${baseUrl}/v1/` })]);
    expect(registry.defaultVoice("Chinese")?.name).toBe("openai:alloy");
    const out = join(dir, "zh.mp3");
    const result = await synthesizeToFile({ registry, media }, { text: "你好，世界", language: "Chinese", format: "mp3", outPath: out });
    expect(result.voice).toBe("openai:alloy");
    expect((await media.probe(out)).audio?.codec).toBe("mp3");
    expect((await media.measureVolume(out)).meanVolumeDb).toBeGreaterThan(-45);
    expect(() => registry.resolve("Amharic")).toThrow("Speech in Amharic is not available: no installed voice speaks Amharic.");
  });

  it("repairs streamed WAV headers so joined chunks have the right length", async () => {
    mode = "streamed-wav";
    const registry = createTtsRegistry([engine()]);
    const single = (await media.probe(join(dir, "speech.wav"))).durationSeconds;
    const text = "First sentence here. Second sentence here. Third sentence here.";
    const result = await synthesizeToFile({ registry, media }, { text, language: "English", format: "flac", outPath: join(dir, "joined.flac"), maxChunkChars: 25 });
    expect(result.chunks).toBe(3);
    expect(result.durationSeconds).toBeGreaterThan(3 * single - 0.1);
    expect(result.durationSeconds).toBeLessThan(3 * single + 0.1);
  });

  it("maps a wrong API key to a clear error that does not reveal the key", async () => {
    const error = await engine({ apiKey: "sk-wrong-key" }).synthesize({ text: "Hi", language: "English" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpeechServiceError);
    expect(error).toMatchObject({ code: "SPEECH_SERVICE_AUTH", status: 401 });
    expect((error as Error).message).toBe(`The speech service at ${new URL(baseUrl).host} refused the API key (HTTP 401): Incorrect API key provided.`);
    expect((error as Error).message).not.toContain("sk-wrong-key");
  });

  it("passes on the service's reason when it refuses a request", async () => {
    await expect(engine({ voices: ["shimmer"] }).synthesize({ text: "Hi", language: "English" })).rejects.toMatchObject({
      code: "SPEECH_SERVICE_REJECTED",
      status: 400,
      message: expect.stringContaining("Invalid value for 'voice': 'shimmer'"),
    });
    await expect(engine({ model: "tts-9" }).synthesize({ text: "Hi", language: "English" })).rejects.toMatchObject({
      code: "SPEECH_SERVICE_REJECTED",
      status: 404,
      message: expect.stringContaining('does not know model "tts-9"'),
    });
  });

  it("says overload and rate limits under their own codes", async () => {
    mode = "overloaded";
    await expect(engine().synthesize({ text: "Hi", language: "English" })).rejects.toMatchObject({ code: "SPEECH_SERVICE_UNAVAILABLE", status: 503 });
    mode = "rate-limited";
    await expect(engine().synthesize({ text: "Hi", language: "English" })).rejects.toMatchObject({ code: "SPEECH_SERVICE_RATE_LIMITED" });
  });

  it("refuses an answer that is not WAV audio", async () => {
    mode = "json-200";
    await expect(engine().synthesize({ text: "Hi", language: "English", outPath: join(dir, "bad.wav") })).rejects.toMatchObject({
      code: "SPEECH_SERVICE_BAD_RESPONSE",
    });
    await expect(readFile(join(dir, "bad.wav"))).rejects.toThrow();
  });

  it("gives up after the timeout, and on cancellation", async () => {
    mode = "hang";
    await expect(engine({ timeoutMs: 300 }).synthesize({ text: "Hi", language: "English" })).rejects.toMatchObject({
      code: "SPEECH_SERVICE_TIMEOUT",
      message: expect.stringContaining("did not answer within"),
    });
    const controller = new AbortController();
    const pending = engine().synthesize({ text: "Hi", language: "English", signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toMatchObject({ code: "SYNTHESIS_CANCELLED" });
  });

  it("reports an unreachable service as unavailable", async () => {
    const port = await freePort();
    await expect(engine({ baseUrl: `http://127.0.0.1:${port}` }).synthesize({ text: "Hi", language: "English" })).rejects.toMatchObject({
      code: "SPEECH_SERVICE_UNAVAILABLE",
      message: `The speech service at 127.0.0.1:${port} could not be reached.`,
    });
  });

  it("validates its configuration", () => {
    expect(() => engine({ baseUrl: "ftp://x" })).toThrow(/http/);
    expect(() => engine({ baseUrl: "not a url" })).toThrow(/not a valid URL/);
    expect(() => engine({ voices: [] })).toThrow(/at least one voice/);
    expect(() => engine({ voices: ["bad voice"] })).toThrow(/not valid/);
  });
});
