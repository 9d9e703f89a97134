/**
 * A local stand-in for Piper's HTTP server (piper1-gpl `python3 -m piper.http_server`), speaking its
 * documented API: `POST /synthesize` (or `POST /` with `legacy`, the releases before mid-2026) with
 * JSON `{ text, voice?, speaker?, speaker_id?, length_scale?, … }` answers a WAV (Flask sends the bytes
 * as `text/html`); `GET /voices` answers `{ "<voice id>": <voice config> }` with the config's
 * `language`, `audio`, `num_speakers` and `speaker_id_map`. Like the real server it speaks an unknown
 * voice with its default voice (no error) and fails empty text with an HTML 500 page.
 *
 * Each voice "speaks" a tone at its own pitch (a speaker of a multi-speaker voice a little higher per
 * speaker), so a test tells by the audio's pitch which voice spoke.
 */
import { pcm16Wav, standInSpeech } from "./clone-services.ts";
import { sendJson, startEngineStandIn, type EngineStandIn } from "./stand-in-server.ts";

export type PiperRoute = "synthesize" | "voices";

export interface PiperStandInVoice {
  /** Voice id (model name), e.g. "en_US-lessac-medium"; its language code is read from the prefix. */
  id: string;
  pitchHz: number;
  /** Speaker names of a multi-speaker voice. */
  speakers?: readonly string[];
}

export interface PiperStandInOptions {
  /** The voices in its data directory; the first is the one it was started with (`-m`). */
  voices: readonly PiperStandInVoice[];
  /** Speech at `POST /` instead of `POST /synthesize` (releases before mid-2026). */
  legacy?: boolean;
  /** Output sample rate. Default 22,050 Hz (a "medium" voice). */
  sampleRate?: number;
}

export interface PiperSpeech {
  /** The voice asked for ("" when none). */
  voice: string;
  /** The voice that spoke (the default one for an unknown name). */
  spokenBy: string;
  speaker?: string | undefined;
  pitchHz: number;
  text: string;
}

export interface PiperStandIn extends EngineStandIn<PiperRoute> {
  speeches: PiperSpeech[];
}

const HTML_500 = '<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n<h1>Internal Server Error</h1>\n<p>The server encountered an internal error and was unable to complete your request. Either the server is overloaded or there is an error in the application.</p>\n';
const HTML_404 = '<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n<p>The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.</p>\n';
const HTML_405 = '<!doctype html>\n<html lang=en>\n<title>405 Method Not Allowed</title>\n<h1>Method Not Allowed</h1>\n<p>The method is not allowed for the requested URL.</p>\n';

/** The `.onnx.json` config the server lists for a voice (the parts a client reads, and a phoneme map). */
function voiceConfig(voice: PiperStandInVoice, rate: number): Record<string, unknown> {
  const [code = "en_US", dataset = voice.id, quality = "medium"] = voice.id.split("-");
  const [family = "en", region = ""] = code.split("_");
  const speakers = voice.speakers ?? [];
  return {
    dataset,
    audio: { sample_rate: rate, quality },
    espeak: { voice: region ? `${family}-${region.toLowerCase()}` : family },
    language: { code, family, region, name_native: family, name_english: family, country_english: region },
    inference: { noise_scale: 0.667, length_scale: 1, noise_w: 0.8 },
    phoneme_type: "espeak",
    phoneme_map: {},
    phoneme_id_map: { _: [0], "^": [1], $: [2], " ": [3], a: [14] },
    num_symbols: 256,
    num_speakers: Math.max(1, speakers.length),
    speaker_id_map: Object.fromEntries(speakers.map((s, i) => [s, i])),
    piper_version: "1.0.0",
  };
}

export async function startPiperStandIn(options: PiperStandInOptions): Promise<PiperStandIn> {
  const rate = options.sampleRate ?? 22_050;
  const [fallback] = options.voices;
  if (!fallback) throw new Error("the Piper stand-in needs a voice");
  const speechPath = options.legacy ? "/" : "/synthesize";
  const speeches: PiperSpeech[] = [];
  const html = (status: number, page: string) => ({ status, page });
  const stand = await startEngineStandIn<PiperRoute>(
    (req) => (req.method === "POST" && req.path === speechPath ? "synthesize" : req.method === "GET" && req.path === "/voices" ? "voices" : undefined),
    (req, res) => {
      const reply = (answer: { status: number; page: string }) => {
        res.writeHead(answer.status, { "content-type": "text/html; charset=utf-8" });
        res.end(answer.page);
      };
      if (req.path === "/voices") {
        if (req.method !== "GET") return reply(html(405, HTML_405));
        return sendJson(res, 200, Object.fromEntries(options.voices.map((v) => [v.id, voiceConfig(v, rate)])));
      }
      if (req.path === "/" && req.method === "GET") return reply(html(200, "<!doctype html><title>Piper</title>"));
      if (req.path !== speechPath) return reply(html(404, HTML_404));
      if (req.method !== "POST") return reply(html(405, HTML_405));
      // json.loads(request.data): anything but a JSON object with text is an exception, so a 500 page.
      const body = req.json;
      if (typeof body !== "object" || body === null || Array.isArray(body)) return reply(html(500, HTML_500));
      const { text, voice, speaker } = body as Record<string, unknown>;
      const said = typeof text === "string" ? text.trim() : "";
      if (said === "") return reply(html(500, HTML_500));
      const asked = typeof voice === "string" ? voice : "";
      const chosen = options.voices.find((v) => v.id === asked) ?? fallback;
      const speakers = chosen.speakers ?? [];
      const index = typeof speaker === "string" ? speakers.indexOf(speaker) : -1;
      const pitch = chosen.pitchHz * (1 + 0.15 * Math.max(0, index));
      speeches.push({ voice: asked, spokenBy: chosen.id, speaker: index >= 0 ? speakers[index] : undefined, pitchHz: pitch, text: said });
      const wav = pcm16Wav(standInSpeech(said, pitch, rate), rate);
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-length": String(wav.length) });
      res.end(wav);
    },
  );
  return { ...stand, speeches };
}
