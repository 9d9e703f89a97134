/**
 * Local stand-ins for the two outside voice cloning services, speaking their documented protocols over
 * real HTTP (node:http), for tests of the engines, the services and the gateway:
 *
 * - `startElevenLabsStandIn`: ElevenLabs' `POST /v1/voices/add` (multipart `name`, `files`),
 *   `POST /v1/text-to-speech/{voice_id}?output_format=…` (JSON `text`, `model_id`, `language_code`),
 *   `DELETE /v1/voices/{voice_id}`, header `xi-api-key`; errors `{"detail": {type, code, status, message,
 *   param}}`, FastAPI validation `{"detail": [{type, loc, msg, input}]}` (422).
 * - `startVoiceLibraryStandIn`: chatterbox-tts-api's voice library: `POST /v1/voices` (multipart
 *   `voice_name`, `voice_file`, `language`), `GET /v1/voices[/{name}[/download]]`, `DELETE /v1/voices/{name}`,
 *   `POST /v1/audio/speech` (JSON `input`, `voice`, `response_format`; an unknown voice is spoken in the
 *   default voice, as the real server does); errors `{"error": {message, type}}`.
 *
 * Multipart bodies are parsed for real (the WHATWG `Request.formData()` of Node's fetch). A voice speaks
 * a harmonic tone at the voice's pitch, which is the median pitch of its sample (autocorrelation over the
 * voiced frames of a 16-bit WAV sample; other samples get a pitch from a fixed list), with a syllable-like
 * loudness envelope and a length that grows with the text: a test measures the pitch of what it got to
 * tell which voice spoke. Both can be told to fail (`fail(route, fault, times)`): any status and body,
 * `Retry-After`, a delay, an answer that never comes (a timeout), a malformed answer.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

export interface StandInFault {
  /** Answer this status with `body` (an object is sent as JSON) and `headers`. */
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Wait this long before answering (normally, or with `status`). */
  delayMs?: number;
  /** Never answer (the client's time limit must end the call). */
  hang?: boolean;
  /** Answer 200 with a body the client cannot use (broken JSON, or no audio). */
  malformed?: boolean;
}

/** A voice the stand-in keeps. */
export interface StandInVoice {
  /** ElevenLabs' voice_id, or the library's voice name. */
  id: string;
  /** The name given at creation (ElevenLabs' `name`; the library's `voice_name`). */
  name: string;
  /** The pitch its speech has, in Hz. */
  pitchHz: number;
  /** The library voice's language code (ElevenLabs voices have none). */
  language?: string;
  sample: Buffer;
  filename: string;
  contentType: string;
}

/** One request the stand-in received (fields and files of multipart bodies, JSON bodies). */
export interface StandInRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  fields: Record<string, string>;
  files: Array<{ field: string; filename: string; type: string; bytes: number }>;
  json?: unknown;
}

/** What was spoken: the voice asked for, the voice that spoke, and the language it was told. */
export interface StandInSpeech {
  voice: string;
  spokenBy: string;
  pitchHz: number;
  text: string;
  language?: string | undefined;
  model?: string | undefined;
  sampleRate: number;
}

export interface CloneServiceStandIn<Route extends string> {
  /** Root URL, e.g. "http://127.0.0.1:41234". */
  url: string;
  voices: Map<string, StandInVoice>;
  requests: StandInRequest[];
  speeches: StandInSpeech[];
  /** The next `times` requests of `route` ("any" for every route) meet `fault`. */
  fail(route: Route | "any", fault: StandInFault, times?: number): void;
  close(): Promise<void>;
}

export type ElevenLabsRoute = "create" | "speak" | "delete";
export type VoiceLibraryRoute = "create" | "speak" | "delete" | "lookup" | "download" | "list";

/** ElevenLabs' 401 for a used-up quota. */
export const ELEVENLABS_QUOTA_FAULT: StandInFault = {
  status: 401,
  body: { detail: { type: "authentication_error", code: "quota_exceeded", status: "quota_exceeded", message: "You have insufficient quota to complete this request" } },
};

// ---------------------------------------------------------------------------------------------------
// Audio: the speech a voice gives, and the pitch of a sample.

const FALLBACK_PITCHES = [120, 210, 160, 250, 95];

/** Mono 16-bit samples of a PCM WAV, or undefined for anything else. */
function decodeWav(bytes: Buffer): { rate: number; samples: Float64Array } | undefined {
  if (bytes.length < 44 || bytes.toString("ascii", 0, 4) !== "RIFF" || bytes.toString("ascii", 8, 12) !== "WAVE") return undefined;
  let offset = 12;
  let channels = 0;
  let rate = 0;
  let bits = 0;
  while (offset + 8 <= bytes.length) {
    const id = bytes.toString("ascii", offset, offset + 4);
    const size = bytes.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === "fmt " && body + 16 <= bytes.length) {
      channels = bytes.readUInt16LE(body + 2);
      rate = bytes.readUInt32LE(body + 4);
      bits = bytes.readUInt16LE(body + 14);
    } else if (id === "data") {
      if (bits !== 16 || channels < 1 || rate === 0) return undefined;
      const end = Math.min(bytes.length, size > 0 && size < 0xffffffff ? body + size : bytes.length);
      const frames = Math.floor((end - body) / (2 * channels));
      const samples = new Float64Array(frames);
      for (let f = 0; f < frames; f++) {
        let sum = 0;
        for (let c = 0; c < channels; c++) sum += bytes.readInt16LE(body + (f * channels + c) * 2);
        samples[f] = sum / channels / 32768;
      }
      return { rate, samples };
    }
    offset = body + size + (size % 2);
  }
  return undefined;
}

/**
 * Median pitch (Hz) of the voiced frames of a 16-bit WAV by normalised autocorrelation (60–500 Hz; the
 * shortest lag within 10 % of the best, against octave errors); undefined when nothing is voiced.
 */
export function standInPitch(wav: Buffer): number | undefined {
  const audio = decodeWav(wav);
  if (!audio) return undefined;
  const { rate, samples } = audio;
  const frame = Math.round(rate * 0.04);
  // Frames every 20 ms, or spread over a long sample so that at most about 300 are measured.
  const hop = Math.max(Math.round(rate * 0.02), Math.floor(samples.length / 300));
  const minLag = Math.floor(rate / 500);
  const maxLag = Math.ceil(rate / 60);
  let peak = 0;
  for (const s of samples) peak = Math.max(peak, Math.abs(s));
  const pitches: number[] = [];
  for (let start = 0; start + frame + maxLag < samples.length; start += hop) {
    let energy = 0;
    for (let i = start; i < start + frame; i++) energy += (samples[i] ?? 0) ** 2;
    if (Math.sqrt(energy / frame) < peak * 0.1) continue;
    const scores: number[] = [];
    let best = 0;
    for (let lag = minLag; lag <= maxLag; lag++) {
      let cross = 0;
      let lagged = 0;
      for (let i = start; i < start + frame; i++) {
        cross += (samples[i] ?? 0) * (samples[i + lag] ?? 0);
        lagged += (samples[i + lag] ?? 0) ** 2;
      }
      const score = cross / Math.sqrt(energy * lagged || 1);
      scores.push(score);
      best = Math.max(best, score);
    }
    if (best < 0.6) continue;
    // The first local maximum within 10 % of the best.
    for (let k = 1; k < scores.length - 1; k++) {
      const s = scores[k] ?? 0;
      if (s >= best * 0.9 && s >= (scores[k - 1] ?? 0) && s >= (scores[k + 1] ?? 0)) {
        pitches.push(rate / (minLag + k));
        break;
      }
    }
  }
  if (pitches.length < 3) return undefined;
  pitches.sort((a, b) => a - b);
  return pitches[Math.floor(pitches.length / 2)];
}

/** "Speech": a tone at `pitchHz` with two harmonics and a 4 Hz syllable envelope, 65 ms per character (0.5–60 s). */
export function standInSpeech(text: string, pitchHz: number, rate: number): Int16Array {
  const seconds = Math.min(60, Math.max(0.5, [...text].length * 0.065));
  const out = new Int16Array(Math.round(seconds * rate));
  for (let i = 0; i < out.length; i++) {
    const t = i / rate;
    const envelope = 0.35 + 0.65 * Math.abs(Math.sin(Math.PI * 4 * t));
    const wave = Math.sin(2 * Math.PI * pitchHz * t) + 0.5 * Math.sin(4 * Math.PI * pitchHz * t) + 0.25 * Math.sin(6 * Math.PI * pitchHz * t);
    out[i] = Math.round(envelope * wave * 0.45 * 32767 / 1.75);
  }
  return out;
}

/** A PCM 16-bit mono WAV of `samples`. */
export function pcm16Wav(samples: Int16Array, rate: number): Buffer {
  const data = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "ascii");
  header.writeUInt32LE(36 + data.length, 4);
  header.write("WAVE", 8, "ascii");
  header.write("fmt ", 12, "ascii");
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36, "ascii");
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

/** Audio by its first bytes: WAV, MP3 (ID3 or a frame), Ogg, FLAC, MP4/M4A. */
function looksLikeAudio(bytes: Buffer): boolean {
  const ascii = bytes.toString("latin1", 0, 12);
  return (
    (ascii.startsWith("RIFF") && ascii.slice(8, 12) === "WAVE") ||
    ascii.startsWith("ID3") ||
    (bytes.length > 1 && bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0) ||
    ascii.startsWith("OggS") ||
    ascii.startsWith("fLaC") ||
    ascii.slice(4, 8) === "ftyp"
  );
}

// ---------------------------------------------------------------------------------------------------
// The HTTP machinery both stand-ins share.

interface Parsed extends StandInRequest {
  raw: Buffer;
  formFiles: Map<string, File>;
  /** The entry of `requests` for this request (JSON bodies are added to it once parsed). */
  record?: StandInRequest;
}

async function readRequest(req: IncomingMessage): Promise<Parsed> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  const url = new URL(req.url ?? "/", "http://stand-in");
  const parsed: Parsed = { method: req.method ?? "GET", path: url.pathname, query: url.searchParams, headers: req.headers, fields: {}, files: [], raw, formFiles: new Map() };
  const type = String(req.headers["content-type"] ?? "");
  if (type.startsWith("multipart/form-data")) {
    try {
      const form = await new Request("http://stand-in/", { method: "POST", headers: { "content-type": type }, body: raw }).formData();
      for (const [field, value] of form.entries()) {
        if (typeof value === "string") parsed.fields[field] = value;
        else {
          parsed.files.push({ field, filename: value.name, type: value.type, bytes: value.size });
          if (!parsed.formFiles.has(field)) parsed.formFiles.set(field, value);
        }
      }
    } catch {
      // an unreadable multipart body: the routes answer their missing-field error
    }
  }
  return parsed;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.writableEnded) return;
  if (Buffer.isBuffer(body)) {
    res.writeHead(status, { "content-type": "application/octet-stream", "content-length": String(body.length), ...headers });
    res.end(body);
    return;
  }
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": typeof body === "string" ? "text/plain" : "application/json", ...headers });
  res.end(text);
}

/** FastAPI's 422 for missing form fields or body parts. */
function missing(fields: readonly string[]): unknown {
  return { detail: fields.map((field) => ({ type: "missing", loc: ["body", field], msg: "Field required", input: null })) };
}

interface Machinery<Route extends string> {
  server: Server;
  url: string;
  voices: Map<string, StandInVoice>;
  requests: StandInRequest[];
  speeches: StandInSpeech[];
  fail(route: Route | "any", fault: StandInFault, times?: number): void;
  close(): Promise<void>;
}

async function startMachinery<Route extends string>(
  route: (req: Parsed) => Route | undefined,
  handle: (req: Parsed, res: ServerResponse, routeName: Route | undefined) => Promise<void>,
  malformed: (routeName: Route, res: ServerResponse) => void,
): Promise<Machinery<Route>> {
  const faults: Array<{ route: Route | "any"; fault: StandInFault; left: number }> = [];
  const requests: StandInRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    void (async () => {
      const parsed = await readRequest(req);
      const { raw: _raw, formFiles: _files, ...record } = parsed;
      parsed.record = record;
      requests.push(record);
      const name = route(parsed);
      const slot = name === undefined ? undefined : faults.find((f) => f.left > 0 && (f.route === "any" || f.route === name));
      if (slot && name !== undefined) {
        slot.left -= 1;
        const { fault } = slot;
        if (fault.hang) {
          hanging.add(res);
          return;
        }
        if (fault.delayMs) await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
        if (fault.malformed) return malformed(name, res);
        if (fault.status !== undefined) return send(res, fault.status, fault.body ?? "", fault.headers);
      }
      await handle(parsed, res, name);
    })().catch((error: unknown) => send(res, 500, { error: { message: `stand-in failure: ${String(error)}`, type: "internal_error" } }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the stand-in has no port");
  return {
    server,
    url: `http://127.0.0.1:${address.port}`,
    voices: new Map(),
    requests,
    speeches: [],
    fail(routeName, fault, times = 1) {
      faults.push({ route: routeName, fault, left: times });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function voicePitch(sample: Buffer, voices: Map<string, StandInVoice>): number {
  return standInPitch(sample) ?? FALLBACK_PITCHES[voices.size % FALLBACK_PITCHES.length] ?? 150;
}

// ---------------------------------------------------------------------------------------------------
// ElevenLabs

export interface ElevenLabsStandInOptions {
  /** The key `xi-api-key` must carry. */
  apiKey: string;
  /** Models that refuse `language_code` (400 invalid_parameters, param language_code). */
  refuseLanguageCodeFor?: readonly string[];
  /** The account's voice slots: one more voice is a 400 `voice_limit_reached`. */
  maxVoices?: number;
}

const ELEVEN_FORMATS = /^(pcm|wav)_(8000|16000|22050|24000|32000|44100|48000)$/;
const ELEVEN_KNOWN_FORMATS = /^(mp3_\d+_\d+|opus_48000_\d+|pcm_\d+|wav_\d+|ulaw_8000|alaw_8000)$/;
const ELEVEN_MODELS = new Set(["eleven_multilingual_v2", "eleven_turbo_v2_5", "eleven_flash_v2_5", "eleven_v3", "eleven_turbo_v2", "eleven_flash_v2", "eleven_monolingual_v1"]);

function elevenError(type: string, code: string, message: string, param?: string): unknown {
  return { detail: { type, code, status: code, message, request_id: randomBytes(16).toString("hex"), ...(param ? { param } : {}) } };
}

export async function startElevenLabsStandIn(options: ElevenLabsStandInOptions): Promise<CloneServiceStandIn<ElevenLabsRoute>> {
  const refuse = new Set(options.refuseLanguageCodeFor ?? []);
  const route = (req: Parsed): ElevenLabsRoute | undefined => {
    if (req.method === "POST" && req.path === "/v1/voices/add") return "create";
    if (req.method === "POST" && /^\/v1\/text-to-speech\/[^/]+$/.test(req.path)) return "speak";
    if (req.method === "DELETE" && /^\/v1\/voices\/[^/]+$/.test(req.path)) return "delete";
    return undefined;
  };
  const m: Machinery<ElevenLabsRoute> = await startMachinery<ElevenLabsRoute>(
    route,
    async (req, res, name) => {
      if (name === undefined) return send(res, 404, { detail: "Not Found" });
      if (req.headers["xi-api-key"] !== options.apiKey) return send(res, 401, elevenError("authentication_error", "invalid_api_key", "Invalid API key"));
      if (name === "create") {
        const voiceName = req.fields.name;
        const file = req.formFiles.get("files");
        const absent = [...(voiceName === undefined || voiceName.trim() === "" ? ["name"] : []), ...(file === undefined ? ["files"] : [])];
        if (absent.length > 0) return send(res, 422, missing(absent));
        if (options.maxVoices !== undefined && m.voices.size >= options.maxVoices) {
          const slots = `${m.voices.size} / ${options.maxVoices}`;
          return send(res, 400, elevenError("validation_error", "voice_limit_reached", `You have reached your maximum amount of custom voices (${slots}). You can upgrade your subscription to increase your custom voice limit.`));
        }
        const bytes = Buffer.from(await (file as File).arrayBuffer());
        if (bytes.length === 0 || !looksLikeAudio(bytes)) {
          return send(res, 400, elevenError("validation_error", "invalid_audio", "The uploaded file could not be decoded as audio.", "files"));
        }
        const id = randomBytes(15).toString("base64url").replace(/[-_]/g, "x").slice(0, 20);
        m.voices.set(id, { id, name: voiceName as string, pitchHz: voicePitch(bytes, m.voices), sample: bytes, filename: (file as File).name, contentType: (file as File).type });
        return send(res, 200, { voice_id: id, requires_verification: false });
      }
      const id = decodeURIComponent(req.path.split("/").pop() ?? "");
      if (name === "delete") {
        if (!m.voices.delete(id)) return send(res, 404, elevenError("not_found", "voice_not_found", `A voice with the voice_id ${id} was not found.`, "voice_id"));
        return send(res, 200, { status: "ok" });
      }
      // speak
      const format = req.query.get("output_format") ?? "mp3_44100_128";
      if (!ELEVEN_KNOWN_FORMATS.test(format)) return send(res, 422, { detail: [{ type: "enum", loc: ["query", "output_format"], msg: "Input should be a valid output format", input: format }] });
      if (!ELEVEN_FORMATS.test(format)) return send(res, 400, elevenError("validation_error", "unsupported_output_format", `This stand-in answers pcm_* and wav_* formats only, not ${format}.`, "output_format"));
      if (!String(req.headers["content-type"] ?? "").startsWith("application/json")) return send(res, 422, missing(["text"]));
      let body: unknown;
      try {
        body = JSON.parse(req.raw.toString("utf8"));
      } catch {
        return send(res, 422, { detail: [{ type: "json_invalid", loc: ["body", 0], msg: "JSON decode error", input: {} }] });
      }
      if (req.record) req.record.json = body;
      const { text, model_id: model = "eleven_multilingual_v2", language_code: language } = (body ?? {}) as Record<string, unknown>;
      if (typeof text !== "string") return send(res, 422, missing(["text"]));
      if (typeof model !== "string" || !ELEVEN_MODELS.has(model)) return send(res, 400, elevenError("validation_error", "model_not_found", `A model with model ID ${String(model)} does not exist.`, "model_id"));
      if (language !== undefined && language !== null && refuse.has(model)) {
        return send(res, 400, elevenError("validation_error", "invalid_parameters", `Model '${model}' does not support the language_code parameter.`, "language_code"));
      }
      if (text.length > 10_000) return send(res, 400, elevenError("validation_error", "text_too_long", "Text is too long. Maximum text length is 10000 characters.", "text"));
      const voice = m.voices.get(id);
      if (!voice) return send(res, 404, elevenError("not_found", "voice_not_found", `A voice with the voice_id ${id} was not found.`, "voice_id"));
      const [codec, rateText] = format.split("_") as [string, string];
      const rate = Number(rateText);
      const samples = standInSpeech(text, voice.pitchHz, rate);
      m.speeches.push({ voice: id, spokenBy: id, pitchHz: voice.pitchHz, text, language: typeof language === "string" ? language : undefined, model, sampleRate: rate });
      if (codec === "wav") return send(res, 200, pcm16Wav(samples, rate), { "content-type": "audio/wav" });
      return send(res, 200, Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength), { "content-type": "audio/pcm" });
    },
    (name, res) => {
      if (name === "speak") return send(res, 200, '{"detail": "queued"}', { "content-type": "application/json" });
      return send(res, 200, '{"voice_id": ', { "content-type": "application/json" });
    },
  );
  return { url: m.url, voices: m.voices, requests: m.requests, speeches: m.speeches, fail: m.fail, close: m.close };
}

// ---------------------------------------------------------------------------------------------------
// Voice library (chatterbox-tts-api)

export interface VoiceLibraryStandInOptions {
  /** When set, `Authorization: Bearer <apiKey>` is required (a server behind an authenticating proxy). */
  apiKey?: string;
  /** Language codes voices may have; default the multilingual model's. */
  languages?: readonly string[];
  /** Pitch of the server's default voice (spoken for unknown voice names), Hz. Default 300. */
  defaultPitchHz?: number;
}

const CHATTERBOX_LANGUAGES = ["ar", "da", "de", "el", "en", "es", "fi", "fr", "he", "hi", "it", "ja", "ko", "ms", "nl", "no", "pl", "pt", "ru", "sv", "sw", "tr"];
const VOICE_FORMATS = new Set([".mp3", ".wav", ".flac", ".m4a", ".ogg"]);
const LIBRARY_RATE = 24_000;

function libraryError(message: string, type: string): unknown {
  return { error: { message, type } };
}

export async function startVoiceLibraryStandIn(options: VoiceLibraryStandInOptions = {}): Promise<CloneServiceStandIn<VoiceLibraryRoute>> {
  const languages = new Set(options.languages ?? CHATTERBOX_LANGUAGES);
  const defaultPitch = options.defaultPitchHz ?? 300;
  const strip = (path: string): string => path.replace(/^\/v1(?=\/)/, "");
  const route = (req: Parsed): VoiceLibraryRoute | undefined => {
    const path = strip(req.path);
    if (req.method === "POST" && path === "/voices") return "create";
    if (req.method === "GET" && path === "/voices") return "list";
    if (req.method === "POST" && path === "/audio/speech") return "speak";
    if (req.method === "GET" && /^\/voices\/[^/]+\/download$/.test(path)) return "download";
    if (req.method === "GET" && /^\/voices\/[^/]+$/.test(path)) return "lookup";
    if (req.method === "DELETE" && /^\/voices\/[^/]+$/.test(path)) return "delete";
    return undefined;
  };
  const info = (voice: StandInVoice): Record<string, unknown> => ({
    name: voice.id,
    filename: `${voice.id}${voice.filename.slice(voice.filename.lastIndexOf("."))}`,
    original_filename: voice.filename,
    file_size: voice.sample.length,
    upload_date: "2026-01-01T00:00:00",
    language: voice.language ?? "en",
    aliases: [],
  });
  const m: Machinery<VoiceLibraryRoute> = await startMachinery<VoiceLibraryRoute>(
    route,
    async (req, res, name) => {
      if (name === undefined) return send(res, 404, { detail: "Not Found" });
      if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
        return send(res, 401, libraryError("Invalid API key", "authentication_error"));
      }
      const voiceName = decodeURIComponent(strip(req.path).split("/")[2] ?? "");
      switch (name) {
        case "create": {
          const given = req.fields.voice_name;
          const file = req.formFiles.get("voice_file");
          const absent = [...(given === undefined || given === "" ? ["voice_name"] : []), ...(file === undefined ? ["voice_file"] : [])];
          if (absent.length > 0) return send(res, 422, missing(absent));
          const language = (req.fields.language ?? "en").trim().toLowerCase();
          const filename = (file as File).name;
          if (!filename) return send(res, 400, libraryError("No filename provided", "invalid_request_error"));
          const ext = filename.includes(".") ? filename.slice(filename.lastIndexOf(".")).toLowerCase() : "";
          if (!VOICE_FORMATS.has(ext)) {
            return send(res, 400, libraryError(`Unsupported audio format: ${ext}. Supported formats: ${[...VOICE_FORMATS].join(", ")}`, "invalid_request_error"));
          }
          if ((file as File).size > 10 * 1024 * 1024) return send(res, 400, libraryError("File too large. Maximum size: 10MB", "invalid_request_error"));
          if (!languages.has(language)) {
            return send(res, 400, libraryError(`Unsupported language: ${language}. Supported languages: ${[...languages].join(", ")}`, "invalid_request_error"));
          }
          const voiceId = (given as string).trim();
          if (/[/\\:*?"<>|]/.test(voiceId)) return send(res, 400, libraryError("Voice name contains invalid characters: ['/', '\\\\', ':', '*', '?', '\"', '<', '>', '|']", "validation_error"));
          if (m.voices.has(voiceId)) return send(res, 409, libraryError(`Voice '${voiceId}' already exists`, "voice_exists_error"));
          const bytes = Buffer.from(await (file as File).arrayBuffer());
          const voice: StandInVoice = { id: voiceId, name: voiceId, pitchHz: voicePitch(bytes, m.voices), language, sample: bytes, filename, contentType: (file as File).type };
          m.voices.set(voiceId, voice);
          const { name: n, filename: f, file_size: size, upload_date: date, language: l } = info(voice);
          return send(res, 201, { message: "Voice uploaded successfully", voice: { name: n, filename: f, file_size: size, upload_date: date, language: l } });
        }
        case "list": {
          const voices = [...m.voices.values()].map((v) => ({ ...info(v), exists: true }));
          return send(res, 200, { voices, count: voices.length });
        }
        case "lookup": {
          const voice = m.voices.get(voiceName);
          if (!voice) return send(res, 404, libraryError(`Voice '${voiceName}' not found`, "voice_not_found_error"));
          return send(res, 200, { voice: info(voice) });
        }
        case "download": {
          const voice = m.voices.get(voiceName);
          if (!voice) return send(res, 404, libraryError(`Voice '${voiceName}' not found`, "voice_not_found_error"));
          return send(res, 200, voice.sample, { "content-type": "audio/wav", "content-disposition": `attachment; filename="${voice.filename}"` });
        }
        case "delete": {
          if (!m.voices.delete(voiceName)) return send(res, 404, libraryError(`Voice '${voiceName}' not found`, "voice_not_found_error"));
          return send(res, 200, { message: "Voice deleted successfully", deleted_voice: voiceName });
        }
        case "speak": {
          let body: unknown;
          try {
            body = JSON.parse(req.raw.toString("utf8"));
          } catch {
            return send(res, 422, { detail: [{ type: "json_invalid", loc: ["body", 0], msg: "JSON decode error", input: {} }] });
          }
          if (req.record) req.record.json = body;
          const { input, voice: asked } = (body ?? {}) as Record<string, unknown>;
          if (typeof input !== "string") return send(res, 422, missing(["input"]));
          if (input.trim() === "" || input.length > 3000) {
            return send(res, 422, { detail: [{ type: "value_error", loc: ["body", "input"], msg: input.trim() === "" ? "Value error, Input text cannot be empty" : "String should have at most 3000 characters", input }] });
          }
          const voice = typeof asked === "string" ? m.voices.get(asked) : undefined;
          // The real server speaks an unknown voice in its default voice, without an error.
          const pitch = voice?.pitchHz ?? defaultPitch;
          m.speeches.push({ voice: typeof asked === "string" ? asked : "", spokenBy: voice?.id ?? "default", pitchHz: pitch, text: input, language: voice?.language ?? "en", sampleRate: LIBRARY_RATE });
          return send(res, 200, pcm16Wav(standInSpeech(input.trim(), pitch, LIBRARY_RATE), LIBRARY_RATE), { "content-type": "audio/wav" });
        }
      }
    },
    (name, res) => {
      if (name === "speak" || name === "download") return send(res, 200, "<html>not audio</html>", { "content-type": "audio/wav" });
      return send(res, 200, '{"voice": ', { "content-type": "application/json" });
    },
  );
  return { url: m.url, voices: m.voices, requests: m.requests, speeches: m.speeches, fail: m.fail, close: m.close };
}
