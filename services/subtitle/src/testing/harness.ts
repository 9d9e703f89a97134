/** Test harness: real engines and ffmpeg, an fs blob store, a real bus, generated videos under a temp media root. */
import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createFsBlobStore, type BlobStore } from "@voiceloc/blobs";
import { createInProcessBus, type Bus } from "@voiceloc/bus";
import { SUBJECTS, TaskEventSchema, WORK_QUEUES, type Language, type SubtitleWork, type TaskEvent } from "@voiceloc/contracts";
import { createApertiumEngine, createMtRegistry, createPocketsphinxEngine, createSttRegistry, type MtRegistry, type SttRegistry } from "@voiceloc/engines";
import { silentLogger, type Logger } from "@voiceloc/log";
import {
  buildBurnInArgs,
  createMediaToolkit,
  GLOBAL_ARGS,
  inputArgs,
  resolveFfmpeg,
  runProcess,
  UNTRUSTED_MEDIA_DEMUXERS,
  uprightFrameSize,
  WAV_DEMUXERS,
  type MediaToolkit,
} from "@voiceloc/media";
import { makeSpeechWav, makeTestVideo, tempDir } from "@voiceloc/testing";
import { writeSrt } from "../formats.ts";
import { createSubtitleService, type SubtitleService, type SubtitleServiceOptions } from "../service.ts";

export interface Stack {
  logger: Logger;
  media: MediaToolkit;
  mt: MtRegistry;
  stt: SttRegistry;
}

/** The offline engines installed on this machine (Apertium, pocketsphinx) and ffmpeg. */
export async function createStack(logger: Logger = silentLogger()): Promise<Stack> {
  const media = createMediaToolkit(await resolveFfmpeg({ logger }), logger);
  const mt = createMtRegistry([await createApertiumEngine({ logger })]);
  const stt = createSttRegistry([await createPocketsphinxEngine({ logger, media })]);
  return { logger, media, mt, stt };
}

export const SENTENCES = ["The weather is very nice today.", "I would like a cup of hot coffee please."] as const;
export const PAUSE_SECONDS = 1.5;

export interface SpokenVideo {
  path: string;
  /** The speech track alone (16 kHz WAV). */
  speechPath: string;
  durationSeconds: number;
}

/**
 * A small test-pattern video (320x240, 25 fps, H.264 + AAC) whose sound is English sentences spoken by
 * flite:slt with a pause between them, padded to `seconds`.
 */
export async function makeSpokenVideo(
  media: MediaToolkit,
  dir: string,
  name: string,
  options: { sentences?: readonly string[]; seconds?: number; size?: string } = {},
): Promise<SpokenVideo> {
  const sentences = options.sentences ?? SENTENCES;
  const scratch = join(dir, ".scratch");
  await mkdir(scratch, { recursive: true });
  const clips: string[] = [];
  for (const [i, sentence] of sentences.entries()) {
    clips.push(await makeSpeechWav(sentence, { voice: "flite:slt", path: join(scratch, `${name}-${i}.wav`) }));
  }
  const speechPath = join(scratch, `${name}-speech.wav`);
  const n = clips.length;
  const gaps = clips.slice(1).map((_, i) => `anullsrc=r=16000:cl=mono,atrim=duration=${PAUSE_SECONDS}[g${i}]`);
  const order = clips.flatMap((_, i) => (i === 0 ? [`[s${i}]`] : [`[g${i - 1}]`, `[s${i}]`]));
  await media.run([
    ...GLOBAL_ARGS,
    // Half a second of silence first, so the speech does not start at 0.
    "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono",
    ...clips.flatMap((clip) => inputArgs(clip, WAV_DEMUXERS)),
    "-filter_complex",
    [
      "[0:a:0]atrim=duration=0.5[lead]",
      ...clips.map((_, i) => `[${i + 1}:a:0]aformat=sample_rates=16000:channel_layouts=mono[s${i}]`),
      ...gaps,
      `[lead]${order.join("")}concat=n=${2 * n}:v=0:a=1[out]`,
    ].join(";"),
    "-map", "[out]",
    "-c:a", "pcm_s16le", "-f", "wav", "-y", speechPath,
  ]);
  const speechSeconds = (await media.probe(speechPath, { demuxers: WAV_DEMUXERS })).durationSeconds;
  const seconds = options.seconds ?? Math.ceil(speechSeconds + 1);
  const path = join(dir, name);
  await makeTestVideo(seconds, path, { withSpeechFrom: speechPath, size: options.size ?? "320x240" });
  return { path, speechPath, durationSeconds: seconds };
}

export interface ServiceHarness {
  bus: Bus;
  blobs: BlobStore;
  service: SubtitleService;
  /** Every task event seen, in arrival order. */
  events: TaskEvent[];
  /** Publishes a task of `account` (default "alice"; "sandbox:alice" for a sandbox key's). */
  submit(task: { file: string; source: Language; target: Language; mode?: SubtitleWork["mode"]; format?: SubtitleWork["subtitle_format"]; id?: string; account?: string }): Promise<string>;
  /** The task's completed or failed event. */
  finished(taskId: string, timeoutMs?: number): Promise<TaskEvent>;
  /** A local copy of a result blob. */
  download(key: string): Promise<string>;
  cleanup(): Promise<void>;
}

export async function startService(
  stack: Stack,
  options: { mediaRoot: string; bus?: Bus; maxSeconds?: number; service?: Partial<SubtitleServiceOptions> },
): Promise<ServiceHarness> {
  const dir = await tempDir("voiceloc-subtitle-test-");
  const bus = options.bus ?? createInProcessBus({ logger: stack.logger });
  const blobs = createFsBlobStore({ root: join(dir.path, "blobs"), fsync: false });
  const service = createSubtitleService({
    bus,
    blobs,
    mt: stack.mt,
    stt: stack.stt,
    media: stack.media,
    fetch: { mediaRoot: options.mediaRoot },
    logger: stack.logger,
    workRoot: dir.path,
    burnIn: { preset: "ultrafast" },
    ...(options.maxSeconds === undefined ? {} : { maxSeconds: options.maxSeconds }),
    ...options.service,
  });
  await service.start();
  const events: TaskEvent[] = [];
  const waiters = new Map<string, (event: TaskEvent) => void>();
  const subscription = await bus.subscribeEvents(SUBJECTS.allTaskEvents, TaskEventSchema, (e) => {
    events.push(e.data);
    if (e.data.status === "completed" || e.data.status === "failed") waiters.get(e.data.task_id)?.(e.data);
  });
  return {
    bus,
    blobs,
    service,
    events,
    async submit(task) {
      const id = task.id ?? randomUUID();
      const work: SubtitleWork = {
        kind: "subtitle",
        task_id: id,
        account_id: task.account ?? "alice",
        file: task.file,
        source_language: task.source,
        target_language: task.target,
        mode: task.mode ?? "burn_in",
        subtitle_format: task.format ?? "srt",
      };
      await bus.publishWork(WORK_QUEUES.subtitle.subject, work, { msgId: id });
      return id;
    },
    finished(taskId, timeoutMs = 150_000) {
      const done = events.find((e) => e.task_id === taskId && (e.status === "completed" || e.status === "failed"));
      if (done) return Promise.resolve(done);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for task ${taskId} to finish`)), timeoutMs);
        waiters.set(taskId, (event) => {
          clearTimeout(timer);
          waiters.delete(taskId);
          resolve(event);
        });
      });
    },
    download: (key) => blobs.toLocalFile(key, join(dir.path, "downloads")),
    async cleanup() {
      await service.stop();
      await subscription.stop();
      await bus.close({ graceMs: 5_000 });
      await blobs.close();
      await dir.cleanup();
    },
  };
}

/** One frame at `seconds` as 8-bit grey pixels (row by row), with its size. */
export async function grayFrame(media: MediaToolkit, path: string, seconds: number): Promise<{ width: number; height: number; pixels: Buffer }> {
  const info = await media.probe(path);
  // ffmpeg decodes a turned picture upright.
  const { width, height } = info.video === undefined ? { width: 0, height: 0 } : uprightFrameSize(info.video);
  const result = await runProcess(
    media.binaries.ffmpeg,
    [...GLOBAL_ARGS, "-loglevel", "error", "-ss", seconds.toFixed(3), ...inputArgs(path, UNTRUSTED_MEDIA_DEMUXERS), "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"],
    { collectStdout: true, maxStdoutBytes: 64 * 1024 * 1024 },
  );
  if (result.exitCode !== 0 || result.stdout.length !== width * height) {
    throw new Error(`could not read a frame at ${seconds}s: ${result.stderrTail.join(" / ")}`);
  }
  return { width, height, pixels: result.stdout };
}

/** Mean absolute difference of two grey frames over rows [fromRow, toRow). */
export function meanDifference(a: Buffer, b: Buffer, width: number, fromRow: number, toRow: number): number {
  let sum = 0;
  let n = 0;
  for (let y = fromRow; y < toRow; y++) {
    for (let x = 0; x < width; x++) {
      sum += Math.abs((a[y * width + x] ?? 0) - (b[y * width + x] ?? 0));
      n++;
    }
  }
  return n === 0 ? 0 : sum / n;
}

/** Code points libass could not find in the requested font while drawing `text`. */
export async function missingGlyphs(tools: MediaToolkit, workDir: string, videoPath: string, text: string, fontName: string): Promise<string[]> {
  const srt = join(workDir, `line-${fontName.replace(/\W+/g, "-")}.srt`);
  await writeFile(srt, writeSrt([{ start: 0, end: 1, lines: [text] }]), "utf8");
  const args = buildBurnInArgs({ video: videoPath, subtitles: srt, output: join(workDir, "out.mp4"), style: { fontName }, preset: "ultrafast" });
  const result = await tools.run(args);
  return result.stderrTail.flatMap((line) => {
    const match = /Glyph (0x[0-9A-Fa-f]+) not found/.exec(line);
    return match?.[1] === undefined ? [] : [match[1].toUpperCase()];
  });
}

/**
 * A video of one dark grey (H.264, 10 fps) of `size` ("WxH"), with a 330 Hz tone or the given sound.
 * `rotation` stores it as phones store portrait video: the picture as it is, plus a display matrix
 * asking players (and ffmpeg, which turns decoded frames upright) to turn it.
 */
export async function makeDarkVideo(
  media: MediaToolkit,
  path: string,
  options: { size: string; seconds: number; soundFrom?: string; rotation?: 90 | 270 },
): Promise<string> {
  const plain = options.rotation === undefined ? path : `${path}.upright.mp4`;
  const sound = options.soundFrom === undefined ? ["-f", "lavfi", "-i", `sine=frequency=330:sample_rate=48000:duration=${options.seconds}`] : inputArgs(options.soundFrom, WAV_DEMUXERS);
  await media.run([
    ...GLOBAL_ARGS,
    "-f", "lavfi", "-i", `color=c=0x202020:size=${options.size}:rate=10:duration=${options.seconds}`,
    ...sound,
    "-map", "0:v:0", "-map", "1:a:0", "-af", `apad,atrim=end=${options.seconds}`,
    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "64k",
    "-t", String(options.seconds), "-f", "mp4", "-y", plain,
  ]);
  if (options.rotation !== undefined) {
    // ffmpeg 5 writes a display matrix for a `rotate` tag when it copies a stream into MP4.
    await media.run([
      ...GLOBAL_ARGS, ...inputArgs(plain, UNTRUSTED_MEDIA_DEMUXERS),
      "-map", "0", "-c", "copy", "-metadata:s:v:0", `rotate=${options.rotation}`, "-f", "mp4", "-y", path,
    ]);
  }
  return path;
}

/** Rows of a grey frame holding subtitle text (a pixel brighter than `threshold`), as runs [from, to). */
export function textRows(frame: { width: number; height: number; pixels: Buffer }, threshold = 128): { runs: [number, number][]; band: number } {
  const runs: [number, number][] = [];
  let from: number | undefined;
  for (let y = 0; y <= frame.height; y++) {
    let bright = false;
    for (let x = 0; y < frame.height && x < frame.width && !bright; x++) bright = (frame.pixels[y * frame.width + x] ?? 0) > threshold;
    if (bright && from === undefined) from = y;
    if (!bright && from !== undefined) {
      runs.push([from, y]);
      from = undefined;
    }
  }
  const band = runs.length === 0 ? 0 : (runs.at(-1)?.[1] ?? 0) - (runs[0]?.[0] ?? 0);
  return { runs, band };
}
