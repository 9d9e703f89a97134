import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { freePort, makeSpeechWav, makeTestVideo, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LANGUAGES } from "../languages.ts";
import { RecognitionNotSupportedError, RecognitionServiceError, SttConfigError } from "./errors.ts";
import { createOpenAiTranscriber, diarizes, parseVerboseTranscription, TRANSCRIPTION_LANGUAGE_CODES, type OpenAiTranscriberOptions } from "./openai.ts";
import { createPocketsphinxEngine } from "./pocketsphinx.ts";
import { createSttRegistry } from "./registry.ts";
import type { SttEngine } from "./types.ts";

const exec = promisify(execFile);
const logger = silentLogger();
const API_KEY = "sk-test-stt-0123456789";
const FORMATS = new Set(["flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "oga", "wav", "webm"]);
const CODES = new Set(Object.values(TRANSCRIPTION_LANGUAGE_CODES));

interface Received {
  authorization: string | undefined;
  fields: Record<string, string>;
  file: { name: string; type: string; size: number; head: Buffer };
}

type Mode = "ok" | "unordered" | "long-segment" | "text-only" | "not-json" | "bad-segments" | "overloaded" | "rate-limited" | "too-large" | "hang";

let server: Server;
let baseUrl: string;
let mode: Mode = "ok";
let received: Received[] = [];
let dir: string;
let cleanup: () => Promise<void>;
let media: MediaToolkit;
let speechWav: string;

function sendError(res: ServerResponse, status: number, message: string, type: string, param: string | null = null): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message, type, param, code: null } }));
}

function verbose(duration: number, segments: { start: number; end: number; text: string }[], language = "english"): string {
  return JSON.stringify({
    task: "transcribe",
    language,
    duration,
    text: segments.map((s) => s.text).join(""),
    segments: segments.map((s, id) => ({ id, seek: 0, ...s, tokens: [50364, 400], temperature: 0, avg_logprob: -0.25, compression_ratio: 1.2, no_speech_prob: 0.01 })),
  });
}

/** A local stand-in for POST /v1/audio/transcriptions following OpenAI's documented contract. */
async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== "POST" || req.url !== "/v1/audio/transcriptions") return sendError(res, 404, `Unknown request URL: ${req.method} ${req.url}`, "invalid_request_error");
  if (req.headers.authorization !== `Bearer ${API_KEY}`) return sendError(res, 401, "Incorrect API key provided.", "invalid_request_error");
  const contentType = String(req.headers["content-type"]);
  if (!contentType.startsWith("multipart/form-data; boundary=")) return sendError(res, 400, "Expected a multipart/form-data body.", "invalid_request_error");
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  let form: FormData;
  try {
    form = await new Response(Buffer.concat(chunks), { headers: { "content-type": contentType } }).formData();
  } catch {
    return sendError(res, 400, "Could not parse multipart form", "invalid_request_error");
  }
  const fields: Record<string, string> = {};
  for (const [key, value] of form.entries()) if (typeof value === "string") fields[key] = value;
  const file = form.get("file");
  if (!(file instanceof Blob) || !("name" in file) || typeof file.name !== "string") return sendError(res, 400, "you must provide a file", "invalid_request_error", "file");
  const head = Buffer.from(await file.slice(0, 16).arrayBuffer());
  received.push({ authorization: req.headers.authorization, fields, file: { name: file.name, type: file.type, size: file.size, head } });
  const extension = file.name.split(".").pop() ?? "";
  if (!FORMATS.has(extension)) return sendError(res, 400, `Invalid file format. Supported formats: ${[...FORMATS].join(", ")}`, "invalid_request_error", "file");
  if (fields.model !== "whisper-1") return sendError(res, 404, `The model '${fields.model}' does not exist`, "invalid_request_error", "model");
  if (fields.language !== undefined && !CODES.has(fields.language)) return sendError(res, 400, "Invalid language", "invalid_request_error", "language");
  if (fields.response_format !== "verbose_json") return sendError(res, 400, "expected verbose_json in this test", "invalid_request_error", "response_format");
  if (fields["timestamp_granularities[]"] !== "segment") return sendError(res, 400, "expected segment granularity", "invalid_request_error", "timestamp_granularities");
  if (mode === "hang") return;
  if (mode === "overloaded") return sendError(res, 503, "The server is overloaded, please try again later.", "server_error");
  if (mode === "rate-limited") return sendError(res, 429, "Rate limit reached for requests.", "requests");
  if (mode === "too-large") return sendError(res, 413, "Maximum content size limit (26214400) exceeded.", "invalid_request_error");
  res.writeHead(200, { "content-type": "application/json" });
  if (mode === "not-json") return void res.end("<html>gateway says hello</html>");
  if (mode === "bad-segments") return void res.end(JSON.stringify({ text: "hi", segments: [{ start: "soon", end: null, text: 3 }, "nonsense"] }));
  if (mode === "text-only") return void res.end(JSON.stringify({ text: " Hello there. ", duration: 4.2 }));
  if (mode === "long-segment") {
    return void res.end(
      verbose(24, [{ start: 1, end: 21, text: " This is the first sentence of a long segment. Here comes a second one, quite long too. And a third one ends it." }]),
    );
  }
  if (mode === "unordered") {
    return void res.end(
      verbose(5, [
        { start: 2.4, end: 6.5, text: " Second." },
        { start: 0, end: 2.6, text: " First." },
        { start: 3, end: 3, text: "   " },
        { start: 7, end: 9, text: " Past the end." },
      ]),
    );
  }
  res.end(
    verbose(4.5, [
      { start: 0, end: 2.1, text: ` Recognised ${fields.language} speech.` },
      { start: 2.5, end: 4.4, text: " The second sentence." },
    ]),
  );
}

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-stt-openai-"));
  media = createMediaToolkit(await resolveFfmpeg({ logger }), logger);
  speechWav = await makeSpeechWav("Please open the window and close the door before you leave the house.", { path: join(dir, "speech.wav") });
  const port = await freePort();
  server = createServer((req, res) => {
    handle(req, res).catch(() => sendError(res, 500, "test server failure", "server_error"));
  });
  await new Promise<void>((done) => server.listen(port, "127.0.0.1", done));
  baseUrl = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((done) => server.close(() => done()));
  await cleanup();
});
beforeEach(() => {
  mode = "ok";
  received = [];
});

function transcriber(overrides: Partial<OpenAiTranscriberOptions> = {}): SttEngine {
  return createOpenAiTranscriber({ baseUrl, apiKey: API_KEY, logger, media, ...overrides });
}

describe("OpenAI-compatible transcription", () => {
  it("uploads the file with the documented fields and reads verbose_json segments", async () => {
    const engine = transcriber();
    expect(engine.id).toBe("openai-stt");
    expect(engine.capabilities()).toEqual({ languages: [...LANGUAGES], kind: "service" });
    const transcript = await engine.transcribe({ path: speechWav, language: "English" });
    expect(received).toHaveLength(1);
    const [request] = received;
    expect(request?.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request?.fields).toEqual({ model: "whisper-1", language: "en", response_format: "verbose_json", "timestamp_granularities[]": "segment" });
    expect(request?.file.name).toBe("audio.wav");
    expect(request?.file.type).toBe("audio/wav");
    expect(request?.file.size).toBe((await stat(speechWav)).size);
    expect(request?.file.head.subarray(0, 4).toString("ascii")).toBe("RIFF");
    const duration = (await media.probe(speechWav)).durationSeconds;
    expect(transcript.durationSeconds).toBeCloseTo(duration, 2);
    expect(transcript.language).toBe("English");
    expect(transcript.segments).toEqual([
      { start: 0, end: 2.1, text: "Recognised en speech." },
      { start: 2.5, end: Math.min(4.4, transcript.durationSeconds), text: "The second sentence." },
    ]);
    expect(transcript.text).toBe("Recognised en speech. The second sentence.");
  });

  it("accepts a base URL ending in /v1 and sends the ISO 639-1 code", async () => {
    const engine = transcriber({ baseUrl: `${baseUrl}/v1/` });
    const transcript = await engine.transcribe({ path: speechWav, language: "Swahili" });
    expect(received[0]?.fields.language).toBe("sw");
    expect(transcript.segments[0]?.text).toBe("Recognised sw speech.");
  });

  it("sorts segments, removes overlaps and empty text, and keeps times within the audio", async () => {
    mode = "unordered";
    const transcript = await transcriber({ media: undefined }).transcribe({ path: speechWav, language: "English" });
    expect(transcript.durationSeconds).toBe(5);
    expect(transcript.segments).toEqual([
      { start: 0, end: 2.4, text: "First." },
      { start: 2.4, end: 5, text: "Second." },
      { start: 5, end: 5, text: "Past the end." },
    ]);
  });

  it("splits a long segment at sentence ends", async () => {
    mode = "long-segment";
    const transcript = await transcriber({ media: undefined }).transcribe({ path: speechWav, language: "English" });
    expect(transcript.segments.length).toBeGreaterThanOrEqual(3);
    expect(transcript.segments[0]).toMatchObject({ start: 1, text: "This is the first sentence of a long segment." });
    expect(transcript.segments.at(-1)?.end).toBe(21);
  });

  it("uses the text as one segment when the service sends no segments", async () => {
    mode = "text-only";
    const transcript = await transcriber({ media: undefined }).transcribe({ path: speechWav, language: "English" });
    expect(transcript.segments).toEqual([{ start: 0, end: 4.2, text: "Hello there." }]);
  });

  it("compresses a file over the upload limit to 16 kHz mono MP3", async () => {
    const big = join(dir, "big.wav");
    await exec(media.binaries.ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-i", speechWav, "-af", "apad=pad_dur=20", "-ar", "48000", "-ac", "2", big]);
    const limit = 256 * 1024;
    expect((await stat(big)).size).toBeGreaterThan(limit);
    const transcript = await transcriber({ maxUploadBytes: limit }).transcribe({ path: big, language: "English" });
    const file = received[0]?.file;
    expect(file?.name).toBe("audio.mp3");
    expect(file?.type).toBe("audio/mpeg");
    expect(file?.size).toBeLessThanOrEqual(limit);
    expect(transcript.segments).toHaveLength(2);
    expect(transcript.durationSeconds).toBeGreaterThan(20);
  });

  it("converts containers the endpoint does not take (MKV) and sends MP4 video as it is", async () => {
    const mkv = join(dir, "speech.mkv");
    await exec(media.binaries.ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-i", speechWav, "-c:a", "flac", mkv]);
    await transcriber().transcribe({ path: mkv, language: "English" });
    expect(received[0]?.file.name).toBe("audio.mp3");
    const video = await makeTestVideo(5, join(dir, "clip.mp4"), { withSpeechFrom: speechWav });
    const transcript = await transcriber().transcribe({ path: video, language: "English" });
    expect(received[1]?.file.name).toBe("audio.mp4");
    expect(transcript.durationSeconds).toBeGreaterThan(4.5);
  });

  it("refuses a file over the limit when it has no media toolkit to compress it", async () => {
    await expect(transcriber({ media: undefined, maxUploadBytes: 64 * 1024 }).transcribe({ path: speechWav, language: "English" })).rejects.toMatchObject({
      code: "RECOGNITION_AUDIO_TOO_LARGE",
    });
    expect(received).toHaveLength(0);
  });

  it("maps refusals and failures to typed errors", async () => {
    await expect(transcriber({ apiKey: "wrong" }).transcribe({ path: speechWav, language: "English" })).rejects.toMatchObject({
      name: "RecognitionServiceError",
      code: "RECOGNITION_SERVICE_AUTH",
      status: 401,
      message: expect.stringContaining("Incorrect API key provided."),
    });
    await expect(transcriber({ model: "no-such-model" }).transcribe({ path: speechWav, language: "English" })).rejects.toMatchObject({
      code: "RECOGNITION_SERVICE_REJECTED",
      status: 404,
    });
    const cases: [Mode, string][] = [
      ["overloaded", "RECOGNITION_SERVICE_UNAVAILABLE"],
      ["rate-limited", "RECOGNITION_SERVICE_RATE_LIMITED"],
      ["too-large", "RECOGNITION_AUDIO_TOO_LARGE"],
      ["not-json", "RECOGNITION_SERVICE_BAD_RESPONSE"],
      ["bad-segments", "RECOGNITION_SERVICE_BAD_RESPONSE"],
    ];
    for (const [which, code] of cases) {
      mode = which;
      const error: unknown = await transcriber().transcribe({ path: speechWav, language: "English" }).catch((e: unknown) => e);
      expect(error, which).toBeInstanceOf(RecognitionServiceError);
      expect(error, which).toMatchObject({ code });
    }
  });

  it("times out, and reports an unreachable service as unavailable", async () => {
    mode = "hang";
    await expect(transcriber({ timeoutMs: 1_000 }).transcribe({ path: speechWav, language: "English" })).rejects.toMatchObject({
      code: "RECOGNITION_SERVICE_TIMEOUT",
    });
    const closedPort = await freePort();
    await expect(transcriber({ baseUrl: `http://127.0.0.1:${closedPort}` }).transcribe({ path: speechWav, language: "English" })).rejects.toMatchObject({
      code: "RECOGNITION_SERVICE_UNAVAILABLE",
    });
  });

  it("is cancelled through the signal", async () => {
    mode = "hang";
    const controller = new AbortController();
    const running = transcriber().transcribe({ path: speechWav, language: "English", signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    await expect(running).rejects.toMatchObject({ code: "RECOGNITION_CANCELLED" });
  });

  it("refuses languages it was not set up for, and bad settings", async () => {
    const engine = transcriber({ languages: ["English", "French"] });
    await expect(engine.transcribe({ path: speechWav, language: "German" })).rejects.toThrow(RecognitionNotSupportedError);
    await expect(engine.transcribe({ path: speechWav, language: "German" })).rejects.toThrow(/German/);
    expect(() => transcriber({ baseUrl: "ftp://example.com" })).toThrow(SttConfigError);
    expect(() => transcriber({ baseUrl: "not a url" })).toThrow(SttConfigError);
    expect(() => transcriber({ model: " " })).toThrow(SttConfigError);
  });

  it("reads verbose_json defensively", () => {
    expect(parseVerboseTranscription(null)).toBeUndefined();
    expect(parseVerboseTranscription([])).toBeUndefined();
    expect(parseVerboseTranscription({ segments: "no" })).toBeUndefined();
    expect(parseVerboseTranscription({ text: "no timings" })).toBeUndefined();
    expect(parseVerboseTranscription({ text: "", segments: [] })).toEqual({ segments: [], durationSeconds: undefined, skipped: 0 });
    expect(parseVerboseTranscription({ duration: "3.5", segments: [{ start: 0, end: 1, text: " ok " }, { start: 2, end: 1, text: "backwards" }] })).toEqual({
      segments: [{ start: 0, end: 1, text: "ok" }],
      durationSeconds: 3.5,
      skipped: 1,
    });
  });

  it("reads a diarizing model's speakers (diarized_json), and asks that format only of such a model", () => {
    const diarized = {
      task: "transcribe",
      duration: 4,
      text: "Hello. Hi there.",
      segments: [
        { type: "transcript.text.segment", id: "seg_0", start: 0, end: 1.5, text: "Hello.", speaker: "A" },
        { type: "transcript.text.segment", id: "seg_1", start: 2, end: 3.5, text: "Hi there.", speaker: "B" },
        { type: "transcript.text.segment", id: "seg_2", start: 3.5, end: 4, text: "Mm.", speaker: "  " },
      ],
    };
    expect(parseVerboseTranscription(diarized)?.segments).toEqual([
      { start: 0, end: 1.5, text: "Hello.", speaker: "A" },
      { start: 2, end: 3.5, text: "Hi there.", speaker: "B" },
      { start: 3.5, end: 4, text: "Mm." },
    ]);
    expect(diarizes("gpt-4o-transcribe-diarize")).toBe(true);
    expect(diarizes("whisper-1")).toBe(false);
  });
});

describe("registry with a service and the offline engine", () => {
  it("prefers the configured service and covers its languages", async () => {
    const offline = await createPocketsphinxEngine({ logger, media });
    const service = transcriber({ languages: ["English", "French"] });
    const registry = createSttRegistry([offline, service]);
    const table = registry.capabilities();
    expect(table.languages).toEqual(["French", "English"]);
    expect(table.engines).toEqual({ French: { id: "openai-stt", kind: "service" }, English: { id: "openai-stt", kind: "service" } });
    const transcript = await registry.transcribe({ path: speechWav, language: "French" });
    expect(transcript.segments[0]?.text).toBe("Recognised fr speech.");
    await expect(registry.transcribe({ path: speechWav, language: "Korean" })).rejects.toMatchObject({ name: "RecognitionNotSupportedError", language: "Korean" });
    expect(() => createSttRegistry([offline, offline])).toThrow(SttConfigError);
  });
});
