/**
 * Dubbed output measured on the files: a `testsrc` video (MP4 and Matroska) whose sound is two flite
 * speakers over a brown-noise bed goes through the whole voice stream pipeline (real recognition,
 * speech, ffmpeg) and comes out as the same kind of video with the picture copied and two audio
 * tracks; `duck` keeps the bed between lines and lowers it under them, `drop` leaves silence.
 */
import { randomUUID } from "node:crypto";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { createCatalogBus } from "@voiceloc/bus";
import { BUS_CATALOG, type Language, type OriginalAudioMode, type VoiceStreamWork } from "@voiceloc/contracts";
import { GLOBAL_ARGS, inputArgs, runProcess, UNTRUSTED_MEDIA_DEMUXERS, WAV_DEMUXERS } from "@voiceloc/media";
import { makeSpeechWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStack, startService, type ServiceHarness, type Stack } from "./testing/harness.ts";

let stack: Stack;
let root: { path: string; cleanup: () => Promise<void> };
let h: ServiceHarness;

/** Where the input's speech is (seconds), from how it was made. */
interface Layout {
  lines: { start: number; end: number }[];
  durationSeconds: number;
}
let layout: Layout;

const LEAD = 1.0;
const GAP = 3.0;
const TAIL = 1.5;
const RATE = 16_000;
/** RMS window, seconds. */
const WINDOW = 0.1;

beforeAll(async () => {
  stack = await createStack();
  root = await tempDir("voiceloc-voice-stream-dub-");
  layout = await makeInputs(root.path);
  h = await startService(stack, { mediaRoot: root.path });
}, 120_000);

afterAll(async () => {
  await h?.cleanup();
  await root?.cleanup();
});

async function wavSeconds(path: string): Promise<number> {
  return (await stack.media.probe(path, { demuxers: WAV_DEMUXERS })).durationSeconds;
}

/**
 * The sound: 1 s of bed, a sentence by flite `slt`, 3 s of bed, a sentence by flite `rms`, 1.5 s of bed;
 * the bed is brown noise throughout. Written as MP4 (H.264 + AAC), Matroska (H.264 + Opus) and WAV.
 */
async function makeInputs(dir: string): Promise<Layout> {
  const first = await makeSpeechWav("The weather is very nice today.", { voice: "flite:slt", path: join(dir, "first.wav") });
  const second = await makeSpeechWav("I would like a cup of hot coffee please.", { voice: "flite:rms", path: join(dir, "second.wav") });
  const d1 = await wavSeconds(first);
  const d2 = await wavSeconds(second);
  const lines = [
    { start: LEAD, end: LEAD + d1 },
    { start: LEAD + d1 + GAP, end: LEAD + d1 + GAP + d2 },
  ];
  const durationSeconds = LEAD + d1 + GAP + d2 + TAIL;
  const sound = join(dir, "bed-and-speech.wav");
  await stack.media.run([
    ...GLOBAL_ARGS,
    ...inputArgs(first, WAV_DEMUXERS),
    ...inputArgs(second, WAV_DEMUXERS),
    "-filter_complex",
    `anullsrc=r=${RATE}:cl=mono,atrim=duration=${LEAD}[a];anullsrc=r=${RATE}:cl=mono,atrim=duration=${GAP}[b];anullsrc=r=${RATE}:cl=mono,atrim=duration=${TAIL}[c];` +
      `[0:a:0]aresample=${RATE}[s1];[1:a:0]aresample=${RATE}[s2];[a][s1][b][s2][c]concat=n=5:v=0:a=1[speech];` +
      `anoisesrc=color=brown:amplitude=0.25:r=${RATE}:seed=7,atrim=duration=${durationSeconds}[bed];` +
      `[speech][bed]amix=inputs=2:duration=first:normalize=0,aformat=sample_rates=${RATE}:channel_layouts=mono[out]`,
    "-map", "[out]", "-c:a", "pcm_s16le", "-f", "wav", "-y", sound,
  ]);
  const picture = ["-f", "lavfi", "-i", `testsrc=duration=${durationSeconds}:size=320x240:rate=25`];
  const video = ["-map", "0:v:0", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-t", String(durationSeconds)];
  await stack.media.run([...GLOBAL_ARGS, ...picture, ...inputArgs(sound, WAV_DEMUXERS), ...video, "-map", "1:a:0", "-c:a", "aac", "-b:a", "128k", "-f", "mp4", "-y", join(dir, "talk.mp4")]);
  await stack.media.run([...GLOBAL_ARGS, ...picture, ...inputArgs(sound, WAV_DEMUXERS), ...video, "-map", "1:a:0", "-c:a", "libopus", "-b:a", "96k", "-f", "matroska", "-y", join(dir, "talk.mkv")]);
  return { lines, durationSeconds };
}

async function submit(file: string, originalAudio: OriginalAudioMode | undefined, languages: { source: Language; target: Language } = { source: "English", target: "English" }): Promise<string> {
  const id = randomUUID();
  const work: VoiceStreamWork = {
    kind: "voice-stream",
    task_id: id,
    account_id: "alice",
    file,
    source_language: languages.source,
    target_language: languages.target,
    voice: null,
    ...(originalAudio === undefined ? {} : { original_audio: originalAudio }),
  };
  await createCatalogBus(h.bus, BUS_CATALOG).publishWork("voice-stream", work);
  return id;
}

async function result(id: string, extension: string): Promise<{ path: string; contentType: string | undefined }> {
  const end = await h.finished(id, 400_000);
  expect(end.error ?? null, "task error").toBeNull();
  expect(end.status).toBe("completed");
  expect(end.result_key).toBe(`results/voice-stream/${id}.${extension}`);
  const stat = await h.blobs.stat(end.result_key as string);
  return { path: await h.download(end.result_key as string), contentType: stat.contentType };
}

interface Stream {
  codec_type: string;
  codec_name: string;
  width?: number;
  height?: number;
  nb_read_packets?: string;
  tags?: Record<string, string>;
  disposition?: Record<string, number>;
}

async function streamsOf(path: string): Promise<{ streams: Stream[]; format: { format_name: string; duration: string } }> {
  const run = await runProcess(stack.media.binaries.ffprobe, ["-v", "error", "-count_packets", "-show_streams", "-show_format", "-print_format", "json", path], {
    collectStdout: true,
    maxStdoutBytes: 4 * 1024 * 1024,
  });
  expect(run.exitCode).toBe(0);
  return JSON.parse(run.stdout.toString("utf8")) as { streams: Stream[]; format: { format_name: string; duration: string } };
}

/** One audio stream decoded to mono float PCM at RATE, optionally through a filter. */
async function pcm(path: string, stream: string, filter?: string): Promise<Float32Array> {
  const out = join(root.path, `${randomUUID()}.f32`);
  await stack.media.run([
    ...GLOBAL_ARGS,
    ...inputArgs(path, UNTRUSTED_MEDIA_DEMUXERS),
    "-map", stream,
    ...(filter === undefined ? [] : ["-af", filter]),
    "-ac", "1", "-ar", String(RATE), "-c:a", "pcm_f32le", "-f", "f32le", "-y", out,
  ]);
  const bytes = await readFile(out);
  await rm(out, { force: true });
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

/** RMS level (dBFS) of [from, to) seconds. */
function levelDb(samples: Float32Array, from: number, to: number): number {
  const a = Math.max(0, Math.floor(from * RATE));
  const b = Math.min(samples.length, Math.floor(to * RATE));
  let sum = 0;
  for (let i = a; i < b; i++) sum += (samples[i] ?? 0) ** 2;
  return 10 * Math.log10(sum / Math.max(1, b - a) + 1e-20);
}

/** Start times of the RMS windows of a track of `seconds`. */
function windows(seconds: number): number[] {
  const starts: number[] = [];
  for (let t = 0; t + WINDOW <= seconds; t += WINDOW) starts.push(t);
  return starts;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

/** The bed's band: brown noise is strongest at the lowest frequencies, where the voices have almost nothing. */
const BED_BAND = "lowpass=f=50,lowpass=f=50,lowpass=f=50,lowpass=f=50";

interface Runs {
  mp4Duck: string;
  mp4Drop: string;
  mkvDuck: string;
  wavDuck: string;
  wavDefault: string;
}
let runs: Runs;

describe("voice stream output: video in → video out, original audio dropped or ducked", () => {
  beforeAll(async () => {
    runs = {
      mp4Duck: await submit("talk.mp4", "duck"),
      mp4Drop: await submit("talk.mp4", "drop"),
      mkvDuck: await submit("talk.mkv", "duck"),
      wavDuck: await submit("bed-and-speech.wav", "duck"),
      wavDefault: await submit("bed-and-speech.wav", undefined),
    };
  });

  for (const [name, file, extension, container, originalCodec] of [
    ["MP4", "talk.mp4", "mp4", "mov,mp4", "aac"],
    ["Matroska", "talk.mkv", "mkv", "matroska", "opus"],
  ] as const) {
    it(`${name} in → ${name} out: the picture copied, dubbed audio first and default, the original second`, async () => {
      const id = name === "MP4" ? runs.mp4Duck : runs.mkvDuck;
      const { path, contentType } = await result(id, extension);
      expect(contentType).toBe(name === "MP4" ? "video/mp4" : "video/x-matroska");
      const input = await streamsOf(join(root.path, file));
      const output = await streamsOf(path);
      expect(output.format.format_name).toContain(container);

      const inVideo = input.streams.filter((s) => s.codec_type === "video");
      const outVideo = output.streams.filter((s) => s.codec_type === "video");
      expect(outVideo).toHaveLength(1);
      expect(outVideo[0]?.codec_name).toBe(inVideo[0]?.codec_name);
      expect([outVideo[0]?.width, outVideo[0]?.height]).toEqual([inVideo[0]?.width, inVideo[0]?.height]);
      expect(Math.abs(Number(outVideo[0]?.nb_read_packets) - Number(inVideo[0]?.nb_read_packets))).toBeLessThanOrEqual(2);

      const audio = output.streams.filter((s) => s.codec_type === "audio");
      expect(audio.map((s) => s.tags?.language ?? s.tags?.LANGUAGE)).toEqual(["eng", "eng"]);
      expect(audio.map((s) => s.disposition?.default)).toEqual([1, 0]);
      // The original track is copied as it was (AAC in MP4, Opus in Matroska).
      expect(audio[1]?.codec_name).toBe(originalCodec);
      expect(audio[0]?.codec_name).toBe(name === "MP4" ? "aac" : "opus");
      expect(Math.abs(Number(output.format.duration) - layout.durationSeconds)).toBeLessThanOrEqual(0.3);
    }, 600_000);
  }

  it("duck: the bed stays at its level between lines and drops by at least 12 dB under the new speech; drop: silence between lines", async () => {
    const duck = await result(runs.mp4Duck, "mp4");
    const drop = await result(runs.mp4Drop, "mp4");
    const input = join(root.path, "talk.mp4");
    const seconds = layout.durationSeconds;
    const inputBed = await pcm(input, "0:a:0", BED_BAND);
    const duckAll = await pcm(duck.path, "0:a:0");
    const duckBed = await pcm(duck.path, "0:a:0", BED_BAND);
    const dropAll = await pcm(drop.path, "0:a:0");
    const dropBed = await pcm(drop.path, "0:a:0", BED_BAND);
    // The original track of the result is the input's sound.
    const kept = await pcm(duck.path, "0:a:1");
    expect(Math.abs(levelDb(kept, 0, seconds) - levelDb(await pcm(input, "0:a:0"), 0, seconds))).toBeLessThan(1);

    // Where the new speech is: the drop result's speech windows. Gaps: silent windows of it, away
    // from a line by more than the ramps (0.5 s either side).
    const all = windows(seconds);
    const loud = all.filter((t) => levelDb(dropAll, t, t + WINDOW) > -40);
    const quiet = all.filter(
      (t) => t > 0.5 && t + WINDOW < seconds - 0.5 && loud.every((s) => s + WINDOW + 0.5 <= t || t + WINDOW + 0.5 <= s),
    );
    expect(loud.length, "windows with new speech").toBeGreaterThan(10);
    expect(quiet.length, "windows between lines").toBeGreaterThan(5);

    // drop: silence between lines.
    for (const t of quiet) expect(levelDb(dropAll, t, t + WINDOW), `drop at ${t.toFixed(1)} s`).toBeLessThan(-60);

    // duck, between lines: the whole track within 6 dB of the input's bed there (the input has no speech there).
    const inputAll = await pcm(input, "0:a:0");
    const gapDiffs = quiet.map((t) => levelDb(duckAll, t, t + WINDOW) - levelDb(inputAll, t, t + WINDOW));
    expect(Math.abs(median(gapDiffs)), `duck − input between lines: ${median(gapDiffs).toFixed(1)} dB`).toBeLessThanOrEqual(6);
    for (const d of gapDiffs) expect(Math.abs(d)).toBeLessThanOrEqual(6);

    // duck, under a line: the bed's band at least 12 dB under the input's bed there, and the new
    // speech's own share of that band (the drop result) is far below the bed, so it is the bed we measure.
    const under = loud.map((t) => levelDb(duckBed, t, t + WINDOW) - levelDb(inputBed, t, t + WINDOW));
    const leak = loud.map((t) => levelDb(dropBed, t, t + WINDOW) - levelDb(inputBed, t, t + WINDOW));
    expect(median(leak), `speech in the bed's band: ${median(leak).toFixed(1)} dB`).toBeLessThan(-20);
    expect(median(under), `duck under the lines: ${median(under).toFixed(1)} dB`).toBeLessThanOrEqual(-12);
  }, 600_000);

  it("audio in → audio out: MP3, the bed kept with duck and dropped by default", async () => {
    const duck = await result(runs.wavDuck, "mp3");
    const plain = await result(runs.wavDefault, "mp3");
    expect([duck.contentType, plain.contentType]).toEqual(["audio/mpeg", "audio/mpeg"]);
    for (const path of [duck.path, plain.path]) {
      const probed = await streamsOf(path);
      expect(probed.streams.map((s) => s.codec_type)).toEqual(["audio"]);
      expect(probed.streams[0]?.codec_name).toBe("mp3");
    }
    const input = await pcm(join(root.path, "bed-and-speech.wav"), "0:a:0");
    const duckAll = await pcm(duck.path, "0:a:0");
    const plainAll = await pcm(plain.path, "0:a:0");
    // In the middle of the input's gap, beyond the first line's speech and ramps in both results.
    const gapStart = (layout.lines[0]?.end ?? 0) + 1.6;
    const gapEnd = (layout.lines[1]?.start ?? 0) - 0.6;
    expect(gapEnd - gapStart).toBeGreaterThan(0.5);
    expect(levelDb(plainAll, gapStart, gapEnd)).toBeLessThan(-60);
    expect(Math.abs(levelDb(duckAll, gapStart, gapEnd) - levelDb(input, gapStart, gapEnd))).toBeLessThanOrEqual(6);
  }, 600_000);
});
