/**
 * A local stand-in for whisper.cpp's server (`whisper-server`), speaking its documented API:
 * `POST /inference` with a multipart `file` (WAV: the server reads 16-bit PCM WAV unless started
 * with --convert), `response_format` (json, text, verbose_json…), `language`, `temperature`.
 * `verbose_json` answers `{ task, language, duration, text, segments: [{ id, text, start, end,
 * words? }] }`. It "recognises" the sentences it was given, spread evenly over the WAV's length
 * (read from the file's header), so the times follow the audio that was sent; or, given `segments`,
 * answers those timed lines (cut at the WAV's end), as a recogniser that heard them where they were said.
 */
import { sendJson, startEngineStandIn, type EngineStandIn } from "./stand-in-server.ts";

export type WhisperCppRoute = "inference";

export interface WhisperCppStandInTimedLine {
  text: string;
  /** Seconds from the start of the WAV. */
  start: number;
  end: number;
}

export interface WhisperCppStandInOptions {
  /** What it hears, one sentence per segment, spread evenly over the WAV. */
  sentences: readonly string[];
  /** What it hears at which times instead of `sentences` (lines past the WAV's end are left out, the last one cut there). */
  segments?: readonly WhisperCppStandInTimedLine[];
  /** Language codes it recognises; another `language` is a 400. Default any. */
  languages?: readonly string[];
}

/** Seconds of sound in a PCM WAV, from its header; undefined when it is not one. */
export function wavSeconds(wav: Buffer): number | undefined {
  if (wav.length < 44 || wav.toString("ascii", 0, 4) !== "RIFF" || wav.toString("ascii", 8, 12) !== "WAVE") return undefined;
  let offset = 12;
  let byteRate = 0;
  while (offset + 8 <= wav.length) {
    const id = wav.toString("ascii", offset, offset + 4);
    const size = wav.readUInt32LE(offset + 4);
    if (id === "fmt ") byteRate = wav.readUInt32LE(offset + 16);
    if (id === "data") return byteRate > 0 ? Math.min(size, wav.length - offset - 8) / byteRate : undefined;
    offset += 8 + size + (size % 2);
  }
  return undefined;
}

export async function startWhisperCppStandIn(options: WhisperCppStandInOptions): Promise<EngineStandIn<WhisperCppRoute>> {
  return startEngineStandIn<WhisperCppRoute>(
    (req) => (req.path === "/inference" ? "inference" : undefined),
    (req, res) => {
      if (req.path !== "/inference" || req.method !== "POST") return sendJson(res, 404, "File Not Found");
      const file = req.files.find((f) => f.field === "file");
      if (!file) return sendJson(res, 400, { error: "no 'file' field in the request" });
      const seconds = wavSeconds(file.bytes);
      if (seconds === undefined) return sendJson(res, 400, { error: "failed to read WAV file" });
      const language = req.fields.language ?? "en";
      if (options.languages && language !== "auto" && !options.languages.includes(language)) {
        return sendJson(res, 400, { error: `unknown language '${language}'` });
      }
      const n = options.sentences.length;
      const step = n === 0 ? 0 : seconds / n;
      const timed = options.segments
        ? options.segments.filter((s) => s.start < seconds).map((s) => ({ text: s.text, start: s.start, end: Math.min(s.end, seconds) }))
        : options.sentences.map((text, id) => ({ text, start: id * step, end: (id + 1) * step }));
      const segments = timed.map((s, id) => ({ id, text: ` ${s.text}`, start: +s.start.toFixed(2), end: +s.end.toFixed(2) }));
      const text = timed.map((s) => ` ${s.text}`).join("");
      const format = req.fields.response_format ?? "json";
      if (format === "text") return sendJson(res, 200, text);
      if (format === "verbose_json") return sendJson(res, 200, { task: "transcribe", language, duration: seconds, text, segments });
      return sendJson(res, 200, { text });
    },
  );
}
