/**
 * Dubbing timing and speakers, measured on the output: generated two-speaker inputs (flite `slt`,
 * about 170 Hz, and `rms`, about 100 Hz, alternating with pauses; a dense pair 0.7 s apart), recognised
 * by a local stand-in of the OpenAI transcription endpoint (over HTTP) that answers the known lines, so
 * the test is about timing and voices, not recognition.
 */
import { createServer, type Server } from "node:http";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMatchCloneEngine, createOpenAiTranscriber, createSttRegistry, readPcm16Wav, trackPitch } from "@voiceloc/engines";
import { GLOBAL_ARGS, inputArgs, AUDIO_CLIP_DEMUXERS, WAV_DEMUXERS } from "@voiceloc/media";
import { createLogger } from "@voiceloc/log";
import { freePort, makeSpeechWav, tempDir } from "@voiceloc/testing";
import { createStack, startService, type ServiceHarness, type Stack } from "./testing/harness.ts";

interface Line {
  voice: "flite:slt" | "flite:rms";
  text: string;
  /** What the recogniser stand-in says was said (default `text`). */
  heard?: string;
  /** Silence after the line, seconds. */
  pause: number;
}

interface Input {
  path: string;
  /** Where each line's part starts and ends in the input (seconds), and what is heard. */
  lines: { start: number; end: number; text: string; voice: string }[];
  duration: number;
}

let stack: Stack;
let root: { path: string; cleanup: () => Promise<void> };
let server: Server;
let h: ServiceHarness;
/** The same service with the offline `match` cloning engine. */
let cloning: ServiceHarness;
let answer: { duration: number; segments: { start: number; end: number; text: string; speaker?: string }[] } = { duration: 0, segments: [] };
/** The `response_format` of every transcription request, in order. */
const formats: string[] = [];
/** The service whose recogniser is a diarizing model, and the lines it logged. */
let diarizing: ServiceHarness;
const diarizingLog: Array<Record<string, unknown>> = [];

async function makeInput(name: string, lines: Line[]): Promise<Input> {
  const scratch = join(root.path, ".scratch");
  await mkdir(scratch, { recursive: true });
  const parts: string[] = [];
  const placed: Input["lines"] = [];
  let at = 0;
  const filters: string[] = [];
  for (const [i, line] of lines.entries()) {
    const wav = await makeSpeechWav(line.text, { voice: line.voice, path: join(scratch, `${name}-${i}.wav`) });
    const seconds = (await stack.media.probe(wav, { demuxers: WAV_DEMUXERS })).durationSeconds;
    parts.push(wav);
    placed.push({ start: at, end: at + seconds, text: line.heard ?? line.text, voice: line.voice });
    filters.push(`[${i}:a:0]aresample=16000,aformat=sample_fmts=s16:channel_layouts=mono,apad=pad_dur=${line.pause}[p${i}]`);
    at += seconds + line.pause;
  }
  const path = join(root.path, name);
  await stack.media.run([
    ...GLOBAL_ARGS,
    ...parts.flatMap((p) => inputArgs(p, WAV_DEMUXERS)),
    "-filter_complex",
    `${filters.join(";")};${parts.map((_, i) => `[p${i}]`).join("")}concat=n=${parts.length}:v=0:a=1[out]`,
    "-map", "[out]", "-c:a", "pcm_s16le", "-f", "wav", "-y", path,
  ]);
  return { path, lines: placed, duration: at };
}

/** The output decoded to 16 kHz mono samples. */
async function decode(path: string): Promise<{ samples: Int16Array; rate: number }> {
  const wav = `${path}.16k.wav`;
  await stack.media.run([...GLOBAL_ARGS, ...inputArgs(path, AUDIO_CLIP_DEMUXERS), "-map", "0:a:0", "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", "-f", "wav", "-y", wav]);
  const audio = await readPcm16Wav(wav);
  if (!audio) throw new Error("not a WAV");
  return { samples: audio.samples, rate: audio.sampleRate };
}

/** Where speech starts (first 10 ms frame louder than -35 dBFS) at or after `from` seconds, before `to`. */
function onset(samples: Int16Array, rate: number, from: number, to: number): number | undefined {
  const hop = Math.round(rate * 0.01);
  for (let i = Math.max(0, Math.floor(from * rate)); i + hop < Math.min(samples.length, to * rate); i += hop) {
    let sum = 0;
    for (let k = i; k < i + hop; k++) sum += ((samples[k] ?? 0) / 32768) ** 2;
    if (10 * Math.log10(sum / hop + 1e-20) > -35) return i / rate;
  }
  return undefined;
}

/** Voiced frames' pitch (Hz) between two times. */
function pitches(audio: { samples: Int16Array; rate: number }, from: number, to: number): number[] {
  const slice = audio.samples.subarray(Math.floor(from * audio.rate), Math.floor(to * audio.rate));
  return Array.from(trackPitch(slice, audio.rate).hz).filter((hz) => hz > 0);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? Number.NaN;

async function dub(input: Input, options: { speakers?: "auto" | "one"; useVoiceClone?: boolean } = {}) {
  answer = { duration: input.duration, segments: input.lines.map((l) => ({ start: l.start, end: l.end, text: l.text })) };
  const service = options.useVoiceClone ? cloning : h;
  const id = await service.submit({ file: input.path.slice(root.path.length + 1), source: "English", target: "English", ...options });
  const end = await service.finished(id, 240_000);
  expect(end.status, end.error ?? "").toBe("completed");
  const out = await service.download(end.result_key ?? "");
  return { end, audio: await decode(out) };
}

beforeAll(async () => {
  stack = await createStack();
  root = await tempDir("voiceloc-voice-stream-dub-");
  const port = await freePort();
  server = createServer((req, res) => {
    const body: Buffer[] = [];
    req.on("data", (chunk: Buffer) => body.push(chunk));
    req.on("end", () => {
      const format = /name="response_format"\r\n\r\n([a-z_]+)/.exec(Buffer.concat(body).toString("latin1"))?.[1] ?? "";
      formats.push(format);
      res.writeHead(200, { "content-type": "application/json" });
      if (format === "diarized_json") {
        // OpenAI's diarized transcription: segments with a speaker label, no word times.
        res.end(JSON.stringify({
          task: "transcribe",
          duration: answer.duration,
          text: answer.segments.map((s) => s.text).join(" "),
          segments: answer.segments.map((s, id) => ({ type: "transcript.text.segment", id: `seg_${id}`, start: s.start, end: s.end, text: s.text, speaker: s.speaker ?? "A" })),
          usage: { type: "duration", seconds: Math.ceil(answer.duration) },
        }));
        return;
      }
      res.end(JSON.stringify({
        task: "transcribe",
        language: "english",
        duration: answer.duration,
        text: answer.segments.map((s) => s.text).join(" "),
        segments: answer.segments.map(({ speaker: _, ...s }, id) => ({ id, seek: 0, ...s, tokens: [], temperature: 0, avg_logprob: -0.2, compression_ratio: 1.2, no_speech_prob: 0.01 })),
      }));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const stt = createSttRegistry([createOpenAiTranscriber({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "sk-test", logger: stack.logger, media: stack.media })]);
  stack = { ...stack, stt };
  h = await startService(stack, { mediaRoot: root.path });
  cloning = await startService(stack, { mediaRoot: root.path, clones: createMatchCloneEngine({ registry: stack.tts, media: stack.media, logger: stack.logger }) });
  const logger = createLogger({ level: "info", destination: { write: (line: string) => void diarizingLog.push(JSON.parse(line) as Record<string, unknown>) } });
  const diarizingStt = createSttRegistry([createOpenAiTranscriber({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "sk-test", model: "gpt-4o-transcribe-diarize", logger, media: stack.media })]);
  diarizing = await startService({ ...stack, logger, stt: diarizingStt }, { mediaRoot: root.path });
}, 120_000);

afterAll(async () => {
  await h?.cleanup();
  await cloning?.cleanup();
  await diarizing?.cleanup();
  await new Promise((resolve) => server?.close(resolve));
  await root?.cleanup();
});

describe("dubbing timing and a voice per speaker", () => {
  it("two alternating speakers: every line on time, each speaker in a distinct voice near their pitch, the same voice for all their lines", async () => {
    const input = await makeInput("alternating.wav", [
      { voice: "flite:slt", text: "The weather is very nice today.", pause: 1.2 },
      { voice: "flite:rms", text: "The train leaves at nine in the morning.", pause: 1.2 },
      { voice: "flite:slt", text: "I would like a cup of hot coffee please.", pause: 1.2 },
      { voice: "flite:rms", text: "Please close the door when you go out.", pause: 1.0 },
    ]);
    const original = await decode(input.path);
    const { end, audio } = await dub(input);
    const lineMedians: number[] = [];
    for (const [i, line] of input.lines.entries()) {
      const next = input.lines[i + 1]?.start ?? input.duration;
      const wanted = onset(original.samples, original.rate, line.start, line.end) ?? Number.NaN;
      const got = onset(audio.samples, audio.rate, Math.max(0, line.start - 0.3), next) ?? Number.NaN;
      expect(Math.abs(got - wanted), `line ${i} starts at ${got} s, its original at ${wanted} s`).toBeLessThanOrEqual(0.25);
      lineMedians.push(median(pitches(audio, line.start, next)));
    }
    const [a1, b1, a2, b2] = lineMedians as [number, number, number, number];
    expect(Math.abs(a1 - a2) / Math.max(a1, a2), `speaker A lines: ${a1} and ${a2} Hz`).toBeLessThanOrEqual(0.12);
    expect(Math.abs(b1 - b2) / Math.max(b1, b2), `speaker B lines: ${b1} and ${b2} Hz`).toBeLessThanOrEqual(0.12);
    expect(median([a1, a2]) / median([b1, b2]), `speakers: ${median([a1, a2])} and ${median([b1, b2])} Hz`).toBeGreaterThanOrEqual(1.25);
    expect(end.timing).toEqual({ lines_sped_up: 0, largest_factor: 1 });
  }, 300_000);

  it("a recogniser that tells speakers apart is followed: one voice's lines it labels A and B are spoken by two voices, each the same for its lines", async () => {
    // One voice throughout: grouped by voice features it is one speaker; the diarizing model says two.
    const input = await makeInput("diarized.wav", [
      { voice: "flite:slt", text: "The weather is very nice today.", pause: 1.2 },
      { voice: "flite:slt", text: "The train leaves at nine in the morning.", pause: 1.2 },
      { voice: "flite:slt", text: "I would like a cup of hot coffee please.", pause: 1.2 },
      { voice: "flite:slt", text: "Please close the door when you go out.", pause: 1.0 },
    ]);
    const labels = ["A", "B", "A", "B"];
    answer = { duration: input.duration, segments: input.lines.map((l, i) => ({ start: l.start, end: l.end, text: l.text, speaker: labels[i] })) };
    formats.length = 0;
    const id = await diarizing.submit({ file: input.path.slice(root.path.length + 1), source: "English", target: "English" });
    const end = await diarizing.finished(id, 240_000);
    expect(end.status, end.error ?? "").toBe("completed");
    expect(formats).toEqual(["diarized_json"]);
    const audio = await decode(await diarizing.download(end.result_key ?? ""));
    const [a1, b1, a2, b2] = input.lines.map((line, i) => median(pitches(audio, line.start, input.lines[i + 1]?.start ?? input.duration))) as [number, number, number, number];
    expect(Math.abs(a1 - a2) / Math.max(a1, a2), `A lines: ${a1} and ${a2} Hz`).toBeLessThanOrEqual(0.12);
    expect(Math.abs(b1 - b2) / Math.max(b1, b2), `B lines: ${b1} and ${b2} Hz`).toBeLessThanOrEqual(0.12);
    // Two voices, heard apart: more than the 12 % one voice's lines may differ.
    const [a, b] = [median([a1, a2]), median([b1, b2])];
    expect(Math.max(a, b) / Math.min(a, b), `A ${a} Hz, B ${b} Hz`).toBeGreaterThan(1.12);
    const grouped = diarizingLog.find((l) => l.taskId === id && l.msg === "lines grouped by speaker");
    expect(grouped).toMatchObject({ speakers: 2, by: "recogniser" });
    const chosen = diarizingLog.find((l) => l.taskId === id && l.msg === "a voice per speaker")?.voices as string[] | undefined;
    expect(new Set(chosen).size, String(chosen)).toBe(2);

    // The same recording from a recogniser without speakers: grouped by voice, one speaker, one voice.
    answer = { duration: input.duration, segments: input.lines.map((l) => ({ start: l.start, end: l.end, text: l.text })) };
    const { audio: single } = await dub(input);
    const all = input.lines.map((line, i) => median(pitches(single, line.start, input.lines[i + 1]?.start ?? input.duration)));
    expect(Math.max(...all) / Math.min(...all), `${all.join(", ")} Hz`).toBeLessThanOrEqual(1.12);
  }, 420_000);

  it("speakers: one speaks every line in one voice", async () => {
    const input = await makeInput("one-voice.wav", [
      { voice: "flite:slt", text: "The weather is very nice today.", pause: 1.2 },
      { voice: "flite:rms", text: "The train leaves at nine in the morning.", pause: 1.0 },
    ]);
    const { audio } = await dub(input, { speakers: "one" });
    const [a, b] = input.lines.map((line, i) => median(pitches(audio, line.start, input.lines[i + 1]?.start ?? input.duration))) as [number, number];
    expect(Math.abs(a - b) / Math.max(a, b), `${a} and ${b} Hz`).toBeLessThanOrEqual(0.12);
  }, 300_000);

  it("a dense pair (0.7 s gap): the long first line is sped up and ends at the second's start, which stays on time", async () => {
    const input = await makeInput("dense.wav", [
      {
        voice: "flite:slt",
        text: "The weather is very nice today.",
        heard: "The weather is very nice today, and tomorrow it will be even nicer up in the mountains by the lake.",
        pause: 0.7,
      },
      { voice: "flite:rms", text: "Please close the door when you go out.", pause: 1.0 },
    ]);
    const original = await decode(input.path);
    const { end, audio } = await dub(input);
    const second = input.lines[1];
    if (!second) throw new Error("no second line");
    expect(end.timing?.lines_sped_up).toBe(1);
    expect(end.timing?.largest_factor).toBeGreaterThan(1.3);
    expect(end.timing?.largest_factor).toBeLessThanOrEqual(1.4);
    // After the second line's start only the second (low) voice is heard: the high first voice is cut there.
    const after = pitches(audio, second.start + 0.03, second.end);
    expect(after.length).toBeGreaterThan(20);
    const high = after.filter((hz) => hz > 140).length / after.length;
    expect(high, `share of high-voice frames after the second line's start`).toBeLessThan(0.1);
    // The second line starts on time: its low voice appears within 0.25 s of the original's onset.
    const wanted = onset(original.samples, original.rate, second.start, second.end) ?? Number.NaN;
    const track = trackPitch(audio.samples.subarray(Math.floor((second.start - 0.3) * audio.rate)), audio.rate);
    const firstLow = Array.from(track.hz).findIndex((hz) => hz > 0 && hz < 140);
    const got = second.start - 0.3 + firstLow * track.hopSeconds;
    expect(Math.abs(got - wanted), `second line at ${got} s, its original at ${wanted} s`).toBeLessThanOrEqual(0.25);
    // The first line is heard right up to the second's start (it was fitted, not dropped).
    expect(pitches(audio, second.start - 0.8, second.start - 0.1).filter((hz) => hz > 140).length).toBeGreaterThan(10);
  }, 300_000);

  it("use_voice_clone without a sample: each speaker speaks in a clone of their own lines (median pitch within 20 % of theirs)", async () => {
    const input = await makeInput("clones.wav", [
      { voice: "flite:slt", text: "The weather is very nice today, and the sun is shining on the hills.", pause: 1.2 },
      { voice: "flite:rms", text: "The train leaves at nine in the morning from the old station.", pause: 1.2 },
      { voice: "flite:slt", text: "I would like a cup of hot coffee please, with a little milk.", pause: 1.2 },
      { voice: "flite:rms", text: "Please close the door when you go out into the garden.", pause: 1.0 },
    ]);
    const original = await decode(input.path);
    const { audio } = await dub(input, { useVoiceClone: true });
    for (const speaker of ["flite:slt", "flite:rms"]) {
      const spans = input.lines.flatMap((line, i) => (line.voice === speaker ? [{ from: line.start, to: input.lines[i + 1]?.start ?? input.duration, end: line.end }] : []));
      const theirs = median(spans.flatMap((s) => pitches(original, s.from, s.end)));
      const clone = median(spans.flatMap((s) => pitches(audio, s.from, s.to)));
      expect(Math.abs(clone - theirs) / theirs, `${speaker}: clone ${clone} Hz, input ${theirs} Hz`).toBeLessThanOrEqual(0.2);
    }
  }, 300_000);
});
