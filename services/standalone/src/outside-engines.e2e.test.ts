/**
 * Outside engines through the HTTP API: the service started with a whisper.cpp server
 * (WHISPER_CPP_URL) and a LibreTranslate server (LIBRETRANSLATE_URL), both local stand-ins that
 * speak the servers' documented protocols. `GET /v1/capabilities` names them first for their
 * languages (ahead of pocketsphinx and Apertium); a voice stream and a subtitle job complete with
 * recognition from the one and translation from the other, as measured on their output files.
 *
 * The stand-in "hears" lines other than those spoken (short ones, at the times they were spoken),
 * so what comes out can only have come from it: an offline recogniser would hear the long sentences.
 */
import { randomUUID } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, GLOBAL_ARGS, inputArgs, resolveFfmpeg, UNTRUSTED_MEDIA_DEMUXERS, WAV_DEMUXERS, type MediaToolkit } from "@voiceloc/media";
import {
  freePort,
  libreTranslateStandInText,
  makeSpeechWav,
  startLibreTranslateStandIn,
  startWhisperCppStandIn,
  tempDir,
  type EngineStandIn,
  type EngineStandInRequest,
  type LibreTranslateRoute,
  type WhisperCppRoute,
} from "@voiceloc/testing";
import { signalAndWait, startService, type ServiceProcess } from "./testing/processes.ts";

const KEY = "outside-engines-key-alice-1";
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
const RATE = 16_000;
/** RMS window of the loudness measurements, seconds. */
const WINDOW = 0.05;
/** A window louder than this (dBFS) has speech in it (`drop` leaves digital silence between lines). */
const VOICED_DB = -45;
const LEAD = 1.0;
const GAP = 3.0;
const TAIL = 2.0;
/** What is spoken (long) and what the whisper.cpp stand-in says it heard there (short). */
const SPOKEN = ["The weather is very nice today, and the sun is shining over the green hills.", "I would like a large cup of hot coffee with milk and sugar, please."];
const HEARD = ["Good morning.", "See you tomorrow."];

type Json = Record<string, unknown>;

let dir: { path: string; cleanup: () => Promise<void> };
let media: MediaToolkit;
let whisper: EngineStandIn<WhisperCppRoute>;
let libre: EngineStandIn<LibreTranslateRoute>;
let service: ServiceProcess;
let base: string;
/** Where the input's two sentences are (seconds). */
let lines: { start: number; end: number }[];
let inputSeconds: number;

/** The input: LEAD s of silence, a sentence by flite `slt`, GAP s, a sentence by flite `rms`, TAIL s; as WAV and as a testsrc MP4. */
async function makeInputs(mediaRoot: string): Promise<void> {
  const first = await makeSpeechWav(SPOKEN[0]!, { voice: "flite:slt", path: join(dir.path, "first.wav") });
  const second = await makeSpeechWav(SPOKEN[1]!, { voice: "flite:rms", path: join(dir.path, "second.wav") });
  const d1 = (await media.probe(first, { demuxers: WAV_DEMUXERS })).durationSeconds;
  const d2 = (await media.probe(second, { demuxers: WAV_DEMUXERS })).durationSeconds;
  lines = [
    { start: LEAD, end: LEAD + d1 },
    { start: LEAD + d1 + GAP, end: LEAD + d1 + GAP + d2 },
  ];
  inputSeconds = LEAD + d1 + GAP + d2 + TAIL;
  const wav = join(mediaRoot, "talk.wav");
  const silence = (seconds: number, label: string) => `anullsrc=r=${RATE}:cl=mono,atrim=duration=${seconds}[${label}]`;
  await media.run([
    ...GLOBAL_ARGS,
    ...inputArgs(first, WAV_DEMUXERS),
    ...inputArgs(second, WAV_DEMUXERS),
    "-filter_complex",
    `${silence(LEAD, "a")};${silence(GAP, "b")};${silence(TAIL, "c")};[0:a:0]aresample=${RATE}[s1];[1:a:0]aresample=${RATE}[s2];` +
      `[a][s1][b][s2][c]concat=n=5:v=0:a=1,aformat=sample_rates=${RATE}:channel_layouts=mono[out]`,
    "-map", "[out]", "-c:a", "pcm_s16le", "-f", "wav", "-y", wav,
  ]);
  await media.run([
    ...GLOBAL_ARGS,
    "-f", "lavfi", "-i", `testsrc=duration=${inputSeconds}:size=320x240:rate=25`,
    ...inputArgs(wav, WAV_DEMUXERS),
    "-map", "0:v:0", "-map", "1:a:0",
    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k",
    "-t", String(inputSeconds), "-f", "mp4", "-y", join(mediaRoot, "talk.mp4"),
  ]);
}

/** A file's sound decoded to mono float PCM at RATE. */
async function pcm(path: string): Promise<Float32Array> {
  const out = join(dir.path, `${randomUUID()}.f32`);
  await media.run([...GLOBAL_ARGS, ...inputArgs(path, UNTRUSTED_MEDIA_DEMUXERS), "-map", "0:a:0", "-ac", "1", "-ar", String(RATE), "-c:a", "pcm_f32le", "-f", "f32le", "-y", out]);
  const bytes = await readFile(out);
  await rm(out, { force: true });
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

/** Seconds of speech (windows louder than VOICED_DB) in [from, to). */
function voicedSeconds(samples: Float32Array, from = 0, to = samples.length / RATE): number {
  let voiced = 0;
  for (let t = Math.max(0, from); t + WINDOW <= to; t += WINDOW) {
    const a = Math.floor(t * RATE);
    const b = Math.min(samples.length, Math.floor((t + WINDOW) * RATE));
    let sum = 0;
    for (let i = a; i < b; i++) sum += (samples[i] ?? 0) ** 2;
    if (10 * Math.log10(sum / Math.max(1, b - a) + 1e-20) > VOICED_DB) voiced += WINDOW;
  }
  return voiced;
}

/** The first time at or after `from` with speech in its window. */
function speechOnset(samples: Float32Array, from: number): number | undefined {
  for (let t = from; t + WINDOW <= samples.length / RATE; t += WINDOW) if (voicedSeconds(samples, t, t + WINDOW) > 0) return t;
  return undefined;
}

async function download(url: unknown, name: string): Promise<string> {
  const res = await fetch(String(url));
  expect(res.status).toBe(200);
  const path = join(dir.path, name);
  await writeFile(path, Buffer.from(await res.arrayBuffer()));
  return path;
}

/** Polls a record until it completes or fails (generous: the machine may be loaded). */
async function follow(path: string): Promise<Json> {
  const deadline = Date.now() + 240_000;
  for (;;) {
    const record = (await (await fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(30_000) })).json()) as Json;
    if (record.task_status === "completed" || record.task_status === "failed") return record;
    if (Date.now() > deadline) throw new Error(`not finished: ${JSON.stringify(record)}\n${service.output.join("").slice(-4_000)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

const inferences = (requests: readonly EngineStandInRequest[]) => requests.filter((r) => r.method === "POST" && r.path === "/inference");
const translations = (requests: readonly EngineStandInRequest[]) => requests.filter((r) => r.method === "POST" && r.path === "/translate");
/** Every text LibreTranslate was asked to translate, with its language pair. */
const textsSent = (requests: readonly EngineStandInRequest[]) =>
  translations(requests).flatMap((r) => {
    const body = r.json as { q: string | string[]; source: string; target: string };
    return ([] as string[]).concat(body.q).map((q) => ({ q, source: body.source, target: body.target }));
  });
/** Texts are sent a paragraph per line (several in one text, blank lines between): the lines, one by one. */
const paragraphs = (text: string) => text.split(/\n\s*\n/).map((p) => p.trim()).filter(Boolean);
/** The lines as LibreTranslate (the stand-in) answered them: each text sent translated whole, then split into its lines again. */
const answeredLines = (sent: ReturnType<typeof textsSent>) => sent.flatMap((s) => paragraphs(libreTranslateStandInText(s.q, s.target)));

beforeAll(async () => {
  dir = await tempDir("voiceloc-outside-engines-");
  media = createMediaToolkit(await resolveFfmpeg({ logger: silentLogger() }), silentLogger());
  const mediaRoot = join(dir.path, "media");
  await mkdir(mediaRoot, { recursive: true });
  await makeInputs(mediaRoot);
  whisper = await startWhisperCppStandIn({ sentences: [], segments: HEARD.map((text, i) => ({ text, ...lines[i]! })) });
  libre = await startLibreTranslateStandIn();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  service = await startService(
    "gateway,synthesis,voice-stream,subtitle",
    {
      DATA_DIR: join(dir.path, "data"),
      MEDIA_ROOT: mediaRoot,
      PUBLIC_BASE_URL: base,
      VOICELOC_API_KEYS: `alice:${KEY}`,
      WHISPER_CPP_URL: whisper.url,
      LIBRETRANSLATE_URL: libre.url,
      // nothing else from the environment: these two are the only outside engines
      OPENAI_BASE_URL: "",
      ENGINE_ORDER_STT: "",
      ENGINE_ORDER_MT: "",
    },
    port,
    240_000,
  );
}, 300_000);

afterAll(async () => {
  if (service) await signalAndWait(service, "SIGTERM");
  await whisper?.close();
  await libre?.close();
  await dir?.cleanup();
});

describe("a whisper.cpp server and a LibreTranslate server", () => {
  it("are tested at start and named first in GET /v1/capabilities for their languages and pairs", async () => {
    // The start-up self-tests reached both servers.
    expect(inferences(whisper.requests).length).toBeGreaterThanOrEqual(1);
    expect(libre.requests.some((r) => r.method === "GET" && r.path === "/languages")).toBe(true);
    expect(translations(libre.requests).length).toBeGreaterThanOrEqual(1);

    const res = await fetch(`${base}/v1/capabilities`, { headers });
    expect(res.status).toBe(200);
    const caps = (await res.json()) as {
      recognition: { languages: string[]; engines: { language: string; engines: string[] }[] };
      translation: { pairs: { source: string; target: string; pivot: string | null; quality: string; engines: string[] }[] };
    };
    const english = caps.recognition.engines.find((e) => e.language === "English");
    // whisper.cpp first, the offline recogniser after it (the fallback)
    expect(english?.engines).toEqual(["whisper-cpp", "pocketsphinx"]);
    // German is recognised only through the server (pocketsphinx here is English-only)
    expect(caps.recognition.languages).toContain("German");
    expect(caps.recognition.engines.find((e) => e.language === "German")?.engines).toEqual(["whisper-cpp"]);

    const pair = (source: string, target: string) => caps.translation.pairs.find((p) => p.source === source && p.target === target);
    // English→Spanish: LibreTranslate first, Apertium after it
    expect(pair("English", "Spanish")).toMatchObject({ pivot: null, quality: "neural" });
    expect(pair("English", "Spanish")?.engines[0]).toBe("libretranslate");
    expect(pair("English", "Spanish")?.engines).toContain("apertium");
    // a pair only the server translates: offered, directly
    expect(pair("English", "German")).toMatchObject({ pivot: null, quality: "neural", engines: ["libretranslate"] });
  });

  it("a voice stream English→Spanish speaks LibreTranslate's translation of what whisper.cpp heard, at the times it heard it", async () => {
    const voices = (await (await fetch(`${base}/v1/voices`, { headers })).json()) as { name: string; language: string; default: boolean }[];
    const voice = voices.find((v) => v.language === "Spanish" && v.default)?.name;
    expect(voice).toBeDefined();
    const whisperBefore = whisper.requests.length;
    const libreBefore = libre.requests.length;

    const res = await fetch(`${base}/v1/voices/streams`, {
      method: "POST",
      headers,
      body: JSON.stringify({ file: "talk.wav", source_language: "English", target_language: "Spanish", voice, speakers: "one" }),
    });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const done = await follow(`/v1/voices/streams/${id}`);
    expect(done.task_status, String(done.task_error)).toBe("completed");

    // whisper.cpp was asked, in English; LibreTranslate was sent exactly what it heard, English to Spanish.
    const asked = inferences(whisper.requests.slice(whisperBefore));
    expect(asked.length).toBeGreaterThanOrEqual(1);
    expect(asked.every((r) => r.fields.language === "en" && r.fields.response_format === "verbose_json")).toBe(true);
    const sent = textsSent(libre.requests.slice(libreBefore));
    expect(sent.flatMap((s) => paragraphs(s.q))).toEqual(HEARD);
    expect(sent.every((s) => s.source === "en" && s.target === "es")).toBe(true);
    expect(sent.map((s) => s.q).join(" ")).not.toMatch(/weather|coffee/i);

    // The dubbed track: in each line's place, speech as long as the voice takes to say LibreTranslate's
    // translation of the heard line (a short one; the spoken sentence is far longer), silence between.
    const translated = answeredLines(sent);
    expect(translated).toHaveLength(lines.length);
    const out = await pcm(await download(done.localized_file, "stream.mp3"));
    expect(out.length / RATE).toBeGreaterThan(inputSeconds - 0.5);
    const original = await pcm(join(dir.path, "media", "talk.wav"));
    for (const [i, line] of lines.entries()) {
      const until = lines[i + 1]?.start ?? out.length / RATE;
      const said = await fetch(`${base}/v1/speech/synthesize`, {
        method: "POST",
        headers,
        body: JSON.stringify({ text: translated[i], language: "Spanish", voice, format: "wav" }),
      });
      expect(said.status).toBe(200);
      const alone = voicedSeconds(await pcm(await download(((await said.json()) as { audio_url: string }).audio_url, `line-${i}.wav`)));
      const dubbed = voicedSeconds(out, line.start - 0.5, until);
      const spoken = voicedSeconds(original, line.start - 0.5, until);
      expect(Math.abs(dubbed - alone), `line ${i}: ${dubbed.toFixed(2)} s dubbed, ${alone.toFixed(2)} s alone, ${spoken.toFixed(2)} s spoken`).toBeLessThan(0.5);
      expect(dubbed, `line ${i}: ${dubbed.toFixed(2)} s dubbed, ${spoken.toFixed(2)} s spoken`).toBeLessThan(spoken * 0.7);
      const onset = speechOnset(out, line.start - 0.5);
      expect(onset, `line ${i}`).toBeDefined();
      expect(Math.abs(onset! - line.start), `line ${i}: speech at ${onset} s, heard at ${line.start} s`).toBeLessThan(0.5);
    }
    expect(voicedSeconds(out, 0, lines[0]!.start - 0.5)).toBe(0);
  }, 300_000);

  it("a subtitle job English→Spanish has LibreTranslate's translation of what whisper.cpp heard, one cue per line at its time", async () => {
    const whisperBefore = whisper.requests.length;
    const libreBefore = libre.requests.length;
    const res = await fetch(`${base}/v1/videos/subtitle`, {
      method: "POST",
      headers,
      body: JSON.stringify({ file: "talk.mp4", source_language: "English", target_language: "Spanish", mode: "side_file" }),
    });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    const done = await follow(`/v1/videos/subtitle/${id}`);
    expect(done.task_status, String(done.task_error)).toBe("completed");
    expect(inferences(whisper.requests.slice(whisperBefore)).length).toBeGreaterThanOrEqual(1);
    const sent = textsSent(libre.requests.slice(libreBefore));
    expect(sent.flatMap((s) => paragraphs(s.q))).toEqual(HEARD);
    expect(sent.every((s) => s.source === "en" && s.target === "es")).toBe(true);

    const srt = (await readFile(await download(done.subtitle_file, "talk.srt"), "utf8")).replace(/\r\n/g, "\n");
    const cues = srt
      .trim()
      .split(/\n\n+/)
      .map((block) => {
        const [, timing = "", ...text] = block.split("\n");
        const [from = "", to = ""] = timing.split(" --> ");
        const seconds = (t: string) => {
          const [h = 0, m = 0, s = 0] = t.replace(",", ".").split(":").map(Number);
          return h * 3600 + m * 60 + s;
        };
        return { start: seconds(from), end: seconds(to), text: text.join(" ") };
      });
    // (a cue starts with a capital letter: "[es]" is shown "[Es]")
    const capitalised = (text: string) => text.replace(/^(\P{L}*)(\p{Ll})/u, (_m, pre: string, letter: string) => `${pre}${letter.toLocaleUpperCase()}`);
    expect(cues.map((c) => c.text)).toEqual(answeredLines(sent).map(capitalised));
    expect(cues[0]?.text).toBe(`[Es] ${HEARD[0]!.toUpperCase()}`);
    for (const [i, cue] of cues.entries()) {
      expect(Math.abs(cue.start - lines[i]!.start), `cue ${i} starts at ${cue.start} s, line at ${lines[i]!.start} s`).toBeLessThan(0.6);
      expect(cue.end).toBeGreaterThan(cue.start);
      expect(cue.end).toBeLessThanOrEqual(inputSeconds);
    }
  }, 300_000);
});
