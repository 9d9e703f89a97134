/**
 * A local stand-in for a Kokoro-style OpenAI-compatible speech server (Kokoro-FastAPI), speaking its
 * documented API: `GET /v1/audio/voices` answers `{ "voices": [{ "id", "name" }] }` (with `?legacy=true`,
 * or `legacyList`, the older `{ "voices": ["af_bella", …] }`), `GET /v1/models` the model list, and
 * `POST /v1/audio/speech` with `{ model, input, voice, response_format, stream }` answers audio; an
 * unknown model or voice is a 400 `{ "detail": { "error", "message", "type" } }`. Kokoro voice names
 * carry their language and gender in the first two letters (`af_` American English female, `em_`
 * Spanish male, …). Streamed WAV (the default, `stream: true`) carries placeholder sizes in its header.
 *
 * Each voice "speaks" a tone at its own pitch, so a test tells by the audio which voice spoke.
 */
import { pcm16Wav, standInSpeech } from "./clone-services.ts";
import { sendJson, startEngineStandIn, type EngineStandIn } from "./stand-in-server.ts";

export type KokoroRoute = "voices" | "models" | "speech";

export interface KokoroStandInOptions {
  /** Voice names with their pitch (Hz). */
  voices: Readonly<Record<string, number>>;
  /** Answer the voice list as plain strings (Kokoro-FastAPI before 0.3). */
  legacyList?: boolean;
  /** No voice list at all (`GET /v1/audio/voices` is a 404, as on servers that do not offer one). */
  noVoiceList?: boolean;
}

export interface KokoroSpeech {
  voice: string;
  model: string;
  text: string;
  pitchHz: number;
}

export interface KokoroStandIn extends EngineStandIn<KokoroRoute> {
  speeches: KokoroSpeech[];
}

const MODELS = ["tts-1", "tts-1-hd", "kokoro", "gpt-4o-mini-tts"];
const FORMATS: Record<string, string> = { mp3: "audio/mpeg", opus: "audio/opus", aac: "audio/aac", flac: "audio/flac", wav: "audio/wav", pcm: "audio/pcm" };
const RATE = 24_000;

function refusal(error: string, message: string, type = "invalid_request_error"): unknown {
  return { detail: { error, message, type } };
}

export async function startKokoroStandIn(options: KokoroStandInOptions): Promise<KokoroStandIn> {
  const speeches: KokoroSpeech[] = [];
  const names = Object.keys(options.voices);
  const stand = await startEngineStandIn<KokoroRoute>(
    (req) => {
      if (req.method === "GET" && req.path === "/v1/audio/voices" && !options.noVoiceList) return "voices";
      if (req.method === "GET" && req.path === "/v1/models") return "models";
      if (req.method === "POST" && req.path === "/v1/audio/speech") return "speech";
      return undefined;
    },
    (req, res) => {
      if (req.method === "GET" && req.path === "/v1/audio/voices" && !options.noVoiceList) {
        const legacy = options.legacyList === true || req.query.get("legacy") === "true";
        return sendJson(res, 200, { voices: legacy ? names : names.map((id) => ({ id, name: id })) });
      }
      if (req.method === "GET" && req.path === "/v1/models") {
        return sendJson(res, 200, { object: "list", data: MODELS.map((id) => ({ id, object: "model", created: 1686935002, owned_by: "kokoro" })) });
      }
      if (req.method !== "POST" || req.path !== "/v1/audio/speech") return sendJson(res, 404, { detail: "Not Found" });
      const body = req.json;
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return sendJson(res, 422, { detail: [{ type: "model_attributes_type", loc: ["body"], msg: "Input should be a valid dictionary or object to extract fields from", input: body }] });
      }
      const { model, input, voice, response_format: format = "mp3", stream = true } = body as Record<string, unknown>;
      const absent = [...(typeof model === "string" ? [] : ["model"]), ...(typeof input === "string" ? [] : ["input"])];
      if (absent.length > 0) return sendJson(res, 422, { detail: absent.map((f) => ({ type: "missing", loc: ["body", f], msg: "Field required", input: null })) });
      if (!MODELS.includes(model as string)) return sendJson(res, 400, refusal("invalid_model", `Unsupported model: ${String(model)}`));
      const asked = typeof voice === "string" ? voice : "af_heart";
      const pitch = options.voices[asked];
      if (pitch === undefined) {
        return sendJson(res, 400, refusal("validation_error", `Voice '${asked}' not found. Available voices: ${[...names].sort().join(", ")}`));
      }
      const text = (input as string).trim();
      if (text === "") return sendJson(res, 400, refusal("validation_error", "Text is empty after preprocessing"));
      if (format !== "wav") return sendJson(res, 400, refusal("validation_error", `the stand-in speaks WAV only, not ${String(format)}`));
      speeches.push({ voice: asked, model: model as string, text, pitchHz: pitch });
      const wav = pcm16Wav(standInSpeech(text, pitch, RATE), RATE);
      if (stream !== false) {
        wav.writeUInt32LE(0xffffffff, 4);
        wav.writeUInt32LE(0xffffffff, 40);
        res.writeHead(200, { "content-type": FORMATS.wav as string, "transfer-encoding": "chunked" });
        res.end(wav);
        return;
      }
      res.writeHead(200, { "content-type": FORMATS.wav as string, "content-length": String(wav.length) });
      res.end(wav);
    },
  );
  return { ...stand, speeches };
}
