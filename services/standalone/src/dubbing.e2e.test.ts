/**
 * Dubbing over HTTP (issue 25), measured on the downloaded `localized_file`: the gateway and the voice
 * stream worker as separate processes over a real nats-server, real ffmpeg and speech engines. Inputs
 * are generated dialogues under MEDIA_ROOT: flite `slt` (about 170 Hz) and `rms` (about 100 Hz) as two
 * speakers, a brown-noise bed, a `testsrc` picture. An OpenAI-compatible stand-in recognises the known
 * lines (so the test is about timing and voices, not recognition) and translates with a length budget.
 *
 * Three runs, each checked for several things at once (a run is slow on a loaded machine):
 * 1. video in, `duck`, English → Spanish by a language model: one video stream copied (codec, size,
 *    frame count), two audio streams tagged target then source language, duration, the bed kept in a
 *    gap, each prompt's budget following its slot and kept, so no line sped up;
 * 2. audio in, `drop`, `speakers: auto`, a dense pair (0.7 s gap): silence between lines, every line on
 *    time, none heard after the next line's start, two speakers in two distinct voices, each speaker's
 *    lines in one voice;
 * 3. `use_voice_clone`: each speaker's lines in a clone of their own voice (median pitch).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readPcm16Wav, trackPitch } from "@voiceloc/engines";
import { silentLogger } from "@voiceloc/log";
import { GLOBAL_ARGS, resolveFfmpeg, runProcess } from "@voiceloc/media";
import { freePort, makeDialogue, startNatsServer, startOpenAiDubbingStandIn, tempDir, type Dialogue, type DialogueLine, type OpenAiDubbingStandIn } from "@voiceloc/testing";
import { signalAndWait, startService, type ServiceProcess } from "./testing/processes.ts";

const KEY = "dubbing-key-alice-1";
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
/** Time limit of a test that waits for a voice stream on a loaded machine. */
const LONG = 300_000;
/** Brown-noise bed of the inputs, dBFS RMS. */
const BED_DB = -40;

type Json = Record<string, unknown>;

let dir: { path: string; cleanup: () => Promise<void> };
let nats: Awaited<ReturnType<typeof startNatsServer>>;
let openai: OpenAiDubbingStandIn;
let gateway: ServiceProcess;
let workers: ServiceProcess;
let base: string;
let mediaRoot: string;
let tools: { ffmpeg: string; ffprobe: string };

beforeAll(async () => {
  dir = await tempDir("voiceloc-dubbing-e2e-");
  mediaRoot = join(dir.path, "media");
  await mkdir(mediaRoot, { recursive: true });
  tools = await resolveFfmpeg({ logger: silentLogger() });
  openai = await startOpenAiDubbingStandIn();
  nats = await startNatsServer();
  const env = {
    NATS_URL: nats.url,
    DATA_DIR: dir.path,
    MEDIA_ROOT: mediaRoot,
    VOICELOC_API_KEYS: `alice:${KEY}`,
    LOG_LEVEL: "warn",
    OPENAI_API_KEY: "sk-test",
    OPENAI_STT_BASE_URL: openai.url,
    OPENAI_MT_BASE_URL: openai.url,
    OPENAI_MT_MODEL: "stand-in",
    OPENAI_TTS_BASE_URL: "off",
    ENGINE_ORDER_STT: "openai-stt",
    ENGINE_ORDER_MT: "openai",
  };
  const [gatewayPort, workersPort] = await Promise.all([freePort(), freePort()]);
  base = `http://127.0.0.1:${gatewayPort}`;
  [gateway, workers] = await Promise.all([
    startService("gateway", { ...env, PUBLIC_BASE_URL: base }, gatewayPort),
    startService("voice-stream", env, workersPort, 180_000),
  ]);
}, 240_000);

afterAll(async () => {
  await Promise.all([gateway, workers].filter(Boolean).map((p) => signalAndWait(p, "SIGTERM")));
  await nats?.stop();
  await openai?.close();
  await dir?.cleanup();
});

async function dialogue(name: string, lines: DialogueLine[]): Promise<Dialogue> {
  return makeDialogue({ dir: mediaRoot, name, lines, bedDb: BED_DB, ffmpeg: tools.ffmpeg });
}

/** Creates a voice stream of `input` over HTTP, follows it to its end, downloads `localized_file`. */
async function dub(input: Dialogue, body: Json): Promise<{ record: Json; file: string }> {
  openai.script = { duration: input.duration, segments: input.lines.map(({ start, end, text }) => ({ start, end, text })) };
  openai.prompts.length = 0;
  const name = input.path.slice(mediaRoot.length + 1);
  const res = await fetch(`${base}/v1/voices/streams`, { method: "POST", headers, body: JSON.stringify({ file: name, ...body }) });
  expect(res.status, await res.clone().text()).toBe(201);
  const { id } = (await res.json()) as { id: string };
  const deadline = Date.now() + LONG - 30_000;
  let record: Json;
  for (;;) {
    record = (await (await fetch(`${base}/v1/voices/streams/${id}`, { headers })).json()) as Json;
    if (record.task_status === "completed" || record.task_status === "failed") break;
    if (Date.now() > deadline) throw new Error(`not finished in time: ${JSON.stringify(record)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
  expect(record.task_status, String(record.task_error)).toBe("completed");
  const download = await fetch(String(record.localized_file));
  expect(download.status).toBe(200);
  const extension = name.endsWith(".mp4") ? "mp4" : "mp3";
  const file = join(dir.path, `${name}.dubbed.${extension}`);
  await writeFile(file, Buffer.from(await download.arrayBuffer()));
  return { record, file };
}

interface Stream {
  codec_type: string;
  codec_name: string;
  width?: number;
  height?: number;
  nb_read_packets?: string;
  tags?: Record<string, string>;
}

/** ffprobe's streams (with packets counted) and the container's duration. */
async function streamsOf(path: string): Promise<{ streams: Stream[]; duration: number }> {
  const result = await runProcess(tools.ffprobe, ["-v", "error", "-count_packets", "-print_format", "json", "-show_format", "-show_streams", path], { collectStdout: true });
  expect(result.exitCode, result.stderrTail.join("\n")).toBe(0);
  const parsed = JSON.parse(result.stdout.toString("utf8")) as { streams: Stream[]; format: { duration: string } };
  return { streams: parsed.streams, duration: Number(parsed.format.duration) };
}

interface Audio {
  samples: Int16Array;
  rate: number;
}

/** One audio stream of a file decoded to 16 kHz mono samples. */
async function decode(path: string, stream = 0): Promise<Audio> {
  const wav = `${path}.${stream}.16k.wav`;
  const result = await runProcess(tools.ffmpeg, [...GLOBAL_ARGS, "-i", path, "-map", `0:a:${stream}`, "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", "-f", "wav", "-y", wav]);
  expect(result.exitCode, result.stderrTail.join("\n")).toBe(0);
  const audio = await readPcm16Wav(wav);
  if (!audio) throw new Error(`${wav} is not a WAV`);
  return { samples: audio.samples, rate: audio.sampleRate };
}

/** RMS level (dBFS) between two times. */
function levelDb(audio: Audio, from: number, to: number): number {
  const slice = audio.samples.subarray(Math.floor(from * audio.rate), Math.floor(to * audio.rate));
  let sum = 0;
  for (const s of slice) sum += (s / 32768) ** 2;
  return 10 * Math.log10(sum / Math.max(1, slice.length) + 1e-20);
}

/** Each voiced frame's pitch (Hz) and time between two times. */
function voiced(audio: Audio, from: number, to: number): Array<{ t: number; hz: number }> {
  const start = Math.max(0, Math.floor(from * audio.rate));
  const track = trackPitch(audio.samples.subarray(start, Math.floor(to * audio.rate)), audio.rate);
  return Array.from(track.hz).flatMap((hz, i) => (hz > 0 ? [{ t: start / audio.rate + i * track.hopSeconds, hz }] : []));
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? Number.NaN;
/** `slt` is a high voice and `rms` a low one: 140 Hz parts them. */
const high = (voice: string) => voice === "flite:slt";
const inClass = (hz: number, voice: string) => (high(voice) ? hz > 140 : hz < 140);

/** Where a voice of `voice`'s class starts being heard (5 voiced frames of it within 0.1 s) between two times. */
function voiceOnset(audio: Audio, voice: string, from: number, to: number): number {
  const frames = voiced(audio, from, to).filter((f) => inClass(f.hz, voice));
  for (let i = 0; i + 4 < frames.length; i++) {
    const first = frames[i];
    const fifth = frames[i + 4];
    if (first && fifth && fifth.t - first.t <= 0.1) return first.t;
  }
  return Number.NaN;
}

describe("dubbing over HTTP", () => {
  it("video in, duck, English → Spanish by a language model: picture copied, two tagged tracks, the bed kept between lines, lines within their budgets", async () => {
    const input = await makeDialogue({
      dir: mediaRoot,
      name: "talk.mp4",
      bedDb: BED_DB,
      ffmpeg: tools.ffmpeg,
      lines: [
        { voice: "flite:slt", text: "The weather is very nice today, and the sun is out.", pause: 1.0 },
        { voice: "flite:rms", text: "Close the door.", pause: 4.0 },
        { voice: "flite:slt", text: "I would like a cup of hot coffee please.", pause: 1.0 },
      ],
    });
    const { record, file } = await dub(input, { source_language: "English", target_language: "Spanish", original_audio: "duck" });
    expect(record).toMatchObject({ original_audio: "duck", speakers: "auto", timing: { lines_sped_up: 0, largest_factor: 1 } });

    // Streams: the picture as it was, the dubbed track first (Spanish), the original second (English).
    const before = await streamsOf(input.path);
    const after = await streamsOf(file);
    const [video, ...others] = after.streams.filter((s) => s.codec_type === "video");
    const source = before.streams.find((s) => s.codec_type === "video");
    expect(others).toEqual([]);
    expect(video).toMatchObject({ codec_name: source?.codec_name, width: source?.width, height: source?.height });
    expect(Math.abs(Number(video?.nb_read_packets) - Number(source?.nb_read_packets)), `frames ${video?.nb_read_packets} of ${source?.nb_read_packets}`).toBeLessThanOrEqual(2);
    expect(after.streams.filter((s) => s.codec_type === "audio").map((s) => s.tags?.language)).toEqual(["spa", "eng"]);
    expect(Math.abs(after.duration - before.duration), `${after.duration} s, the input ${before.duration} s`).toBeLessThanOrEqual(0.3);

    // duck: in the long gap after the short second line, the dubbed track carries the input's bed.
    const [, second, third] = input.lines;
    if (!second || !third) throw new Error("lines missing");
    const gap = { from: second.end + 2.2, to: third.start - 0.4 };
    const bed = levelDb(await decode(input.path), gap.from, gap.to);
    const dubbed = levelDb(await decode(file, 0), gap.from, gap.to);
    expect(bed).toBeGreaterThan(BED_DB - 6);
    expect(Math.abs(dubbed - bed), `dubbed track ${dubbed.toFixed(1)} dB, input bed ${bed.toFixed(1)} dB in ${gap.from.toFixed(2)}–${gap.to.toFixed(2)} s`).toBeLessThanOrEqual(6);

    // The length budget: asked of every line, larger for a longer slot, and kept.
    const prompts = input.lines.map((l) => openai.prompts.find((p) => p.text === l.text));
    const slots = input.lines.map((l, i) => (input.lines[i + 1]?.start ?? input.duration) - l.start);
    const budgets = prompts.map((p) => p?.maxChars ?? Number.NaN);
    expect(budgets.every(Number.isFinite), `budgets ${budgets.join(", ")}`).toBe(true);
    expect(budgets[1]).toBeGreaterThan(budgets[0] ?? Number.NaN);
    expect(budgets[1]).toBeGreaterThan(budgets[2] ?? Number.NaN);
    expect(slots[1]).toBeGreaterThan(Math.max(slots[0] ?? 0, slots[2] ?? 0));
    for (const [i, p] of prompts.entries()) expect(p?.answer.length).toBeLessThanOrEqual(budgets[i] ?? 0);
  }, LONG);

  it("audio in, drop, two speakers and a dense pair: silence between lines, every line on time and alone, a voice per speaker", async () => {
    const input = await dialogue("dense.wav", [
      {
        voice: "flite:slt",
        text: "The weather is very nice today.",
        heard: "The weather is very nice today, and tomorrow it will be even nicer up in the mountains by the lake.",
        pause: 0.7,
      },
      { voice: "flite:rms", text: "The train leaves at nine in the morning.", pause: 2.2 },
      { voice: "flite:slt", text: "I would like a cup of hot coffee please.", pause: 1.2 },
      { voice: "flite:rms", text: "Please close the door when you go out.", pause: 1.0 },
    ]);
    const { record, file } = await dub(input, { source_language: "English", target_language: "English", original_audio: "drop", speakers: "auto" });
    expect(record).toMatchObject({ original_audio: "drop", speakers: "auto" });
    const timing = record.timing as { lines_sped_up: number; largest_factor: number };
    // Only the dense first line is too long for its slot: sped up as far as allowed, then cut.
    expect(timing.lines_sped_up).toBe(1);
    expect(timing.largest_factor).toBeGreaterThan(1.3);
    expect(timing.largest_factor).toBeLessThanOrEqual(1.4);

    const original = await decode(input.path);
    const audio = await decode(file);
    expect(Math.abs(audio.samples.length / audio.rate - input.duration)).toBeLessThanOrEqual(0.3);
    // drop: silence in the gap after the second line (where the input has only its bed).
    const [first, second, third] = input.lines;
    if (!first || !second || !third) throw new Error("lines missing");
    const gap = { from: second.end + 1.0, to: third.start - 0.2 };
    expect(levelDb(original, gap.from, gap.to)).toBeGreaterThan(BED_DB - 6);
    expect(levelDb(audio, gap.from, gap.to), "dubbed track in the gap").toBeLessThan(-60);

    const medians: number[] = [];
    for (const [i, line] of input.lines.entries()) {
      const next = input.lines[i + 1];
      const end = next?.start ?? input.duration;
      // Every line starts within 0.25 s of its original (its voice measured the same way in both).
      const wanted = voiceOnset(original, line.voice, Math.max(0, line.start - 0.3), line.end);
      const got = voiceOnset(audio, line.voice, Math.max(0, line.start - 0.3), end);
      expect(Math.abs(got - wanted), `line ${i} starts at ${got} s, its original at ${wanted} s`).toBeLessThanOrEqual(0.25);
      // No line is heard after the next one's start: the next speaker's voice class only.
      if (next) {
        const after = voiced(audio, next.start + 0.03, next.start + 1.5);
        expect(after.length).toBeGreaterThan(20);
        const previous = after.filter((f) => inClass(f.hz, line.voice)).length / after.length;
        expect(previous, `share of line ${i}'s voice after line ${i + 1} starts`).toBeLessThan(0.1);
      }
      medians.push(median(voiced(audio, line.start, end).map((f) => f.hz)));
    }
    const [a1, b1, a2, b2] = medians as [number, number, number, number];
    expect(Math.abs(a1 - a2) / Math.max(a1, a2), `speaker A's lines: ${a1} and ${a2} Hz`).toBeLessThanOrEqual(0.12);
    expect(Math.abs(b1 - b2) / Math.max(b1, b2), `speaker B's lines: ${b1} and ${b2} Hz`).toBeLessThanOrEqual(0.12);
    expect(median([a1, a2]) / median([b1, b2]), `speakers: ${median([a1, a2])} and ${median([b1, b2])} Hz`).toBeGreaterThanOrEqual(1.25);
  }, LONG);

  it("use_voice_clone: each speaker speaks in a clone of their own lines (median pitch within 20 % of theirs)", async () => {
    const input = await dialogue("clones.wav", [
      { voice: "flite:slt", text: "The weather is very nice today, and the sun is shining on the hills.", pause: 1.2 },
      { voice: "flite:rms", text: "The train leaves at nine in the morning from the old station.", pause: 1.2 },
      { voice: "flite:slt", text: "I would like a cup of hot coffee please, with a little milk.", pause: 1.2 },
      { voice: "flite:rms", text: "Please close the door when you go out into the garden.", pause: 1.0 },
    ]);
    const { file } = await dub(input, { source_language: "English", target_language: "English", use_voice_clone: true });
    const original = await decode(input.path);
    const audio = await decode(file);
    for (const speaker of ["flite:slt", "flite:rms"]) {
      const spans = input.lines.flatMap((line, i) => (line.voice === speaker ? [{ from: line.start, end: line.end, to: input.lines[i + 1]?.start ?? input.duration }] : []));
      const theirs = median(spans.flatMap((s) => voiced(original, s.from, s.end).map((f) => f.hz)));
      const clone = median(spans.flatMap((s) => voiced(audio, s.from, s.to).map((f) => f.hz)));
      expect(Math.abs(clone - theirs) / theirs, `${speaker}: clone ${clone} Hz, input ${theirs} Hz`).toBeLessThanOrEqual(0.2);
    }
  }, LONG);
});
