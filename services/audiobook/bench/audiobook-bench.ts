/**
 * Audio book throughput: a ~100,000-character English text through the whole service beside the raw
 * engine run by hand on the same text with the same default voice, in one run:
 *   - raw:     `flite -voice slt -f book.txt -o book.wav` (or `espeak-ng -v en-us -f book.txt -w book.wav`
 *              when espeak-ng is the default English voice), then
 *              `ffmpeg -i book.wav -c:a libmp3lame -b:a 128k -ac 1 book.mp3` (execFile);
 *   - service: the audio book service on an in-process bus with a file-system blob store in temp dirs,
 *              timed from publishing the work message to the `completed` event (fetch, chunking, speech
 *              and MP3 encoding on every core, checkpoints, copy-join, read-back, result blob).
 * Prints both times, their ratio (target ≤ 1.0) and this process's peak RSS. With BIG=1 a 1 MB text
 * also goes through the service afterwards, for the memory figure (target < 400 MB peak RSS).
 *
 * Usage: pnpm --filter @voiceloc/audiobook bench      (CHARS=100000, BIG=1 for the 1 MB variant)
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createFsBlobStore } from "@voiceloc/blobs";
import { createCatalogBus, createInProcessBus } from "@voiceloc/bus";
import { BUS_CATALOG, type AudioBookWork, type TaskEvent } from "@voiceloc/contracts";
import { createApertiumEngine, createMtRegistry, createTtsRegistry, detectOfflineEngines } from "@voiceloc/engines";
import { createLogger, silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg } from "@voiceloc/media";
import { coreCount, createAudioBookService } from "../src/index.ts";

const exec = promisify(execFile);
const CHARS = Number(process.env.CHARS ?? 100_000);
const BIG = process.env.BIG === "1";
const BIG_CHARS = 1_000_000;
const TARGET_RATIO = 1.0;
const TARGET_RSS_MB = 400;
/** What the service encodes MP3 with (128 kbit/s, mono). */
const RAW_ENCODE = ["-c:a", "libmp3lame", "-b:a", "128k", "-ac", "1"];

/** Deterministic pseudo-random numbers (mulberry32), so every run speaks the same text. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SUBJECTS_ = ["The old fisherman", "A young teacher", "The tired doctor", "Her younger brother", "The village baker", "A quiet stranger", "The ship's captain", "My grandmother", "The station master", "A curious child"];
const VERBS = ["walked slowly towards", "looked for a long time at", "carefully repaired", "quietly described", "remembered", "painted a picture of", "wrote a letter about", "argued with the mayor about", "dreamed once more of", "sold the last of"];
const OBJECTS = ["the harbour at dawn", "the broken lantern", "the house on the hill", "the winter market", "the narrow bridge", "the empty schoolroom", "the orchard behind the church", "the lighthouse in the fog", "the red boat", "the road to the city"];
const TAILS = ["before the rain began", "while the bells were ringing", "as the tide came in", "without saying a word", "on the first day of spring", "long after midnight", "because nobody else would", "with great patience", "although it was late", "for the third time that week"];

/** Prose of about `chars` characters: varied sentences in paragraphs of four to seven. */
function buildText(chars: number, seed: number): string {
  const next = random(seed);
  const pick = (list: readonly string[]) => list[Math.floor(next() * list.length)] ?? list[0];
  const paragraphs: string[] = [];
  let length = 0;
  while (length < chars) {
    const sentences: string[] = [];
    const count = 4 + Math.floor(next() * 4);
    for (let i = 0; i < count; i++) {
      const end = next() < 0.1 ? "?" : ".";
      sentences.push(`${pick(SUBJECTS_)} ${pick(VERBS)} ${pick(OBJECTS)} ${pick(TAILS)}${end}`);
    }
    const paragraph = sentences.join(" ");
    paragraphs.push(paragraph);
    length += paragraph.length + 2;
  }
  return paragraphs.join("\n\n");
}

const mb = (kb: number) => Math.round(kb / 1024);
const seconds = (ms: number) => (ms / 1000).toFixed(1);

async function main(): Promise<void> {
  const logger = process.env.LOG_LEVEL ? createLogger({ level: process.env.LOG_LEVEL as "info" }) : silentLogger();
  const dir = await mkdtemp(join(tmpdir(), "voiceloc-audiobook-bench-"));
  const mediaRoot = join(dir, "media");
  await mkdir(mediaRoot, { recursive: true });
  const say = (line: string) => void process.stdout.write(`${line}\n`);
  const loadBefore = loadavg();
  try {
    const [engines, apertium, binaries] = await Promise.all([detectOfflineEngines({ logger }), createApertiumEngine({ logger }), resolveFfmpeg({ logger })]);
    const tts = createTtsRegistry(engines);
    const media = createMediaToolkit(binaries, logger);
    const voice = tts.resolve("English").voice.name;
    const bus = createInProcessBus({ logger });
    const blobs = createFsBlobStore({ root: join(dir, "blobs"), fsync: false });
    const service = createAudioBookService({
      bus,
      blobs,
      tts,
      mt: createMtRegistry([apertium]),
      media,
      fetch: { mediaRoot },
      logger,
      workRoot: dir,
    });
    await service.start();
    const events = new Map<string, TaskEvent>();
    const typed = createCatalogBus(bus, BUS_CATALOG);
    await typed.subscribeEvents("task", (e) => {
      if (e.data.status === "completed" || e.data.status === "failed") events.set(e.data.task_id, e.data);
    });

    const viaService = async (file: string): Promise<{ ms: number; seconds: number }> => {
      const task: AudioBookWork = {
        kind: "audiobook",
        task_id: randomUUID(),
        account_id: "bench",
        file,
        source_language: "English",
        target_language: "English",
        name: "bench",
        preset_voice_name: null,
        use_voice_clone: false,
        voice_clone_sample: null,
      };
      const started = performance.now();
      await typed.publishWork("audiobook", task);
      let end: TaskEvent | undefined;
      while ((end = events.get(task.task_id)) === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
      const ms = performance.now() - started;
      if (end.status !== "completed" || !end.result_key) throw new Error(`the service failed the book: ${end.error ?? "no result"}`);
      const path = await blobs.toLocalFile(end.result_key, join(dir, "copies"));
      return { ms, seconds: await media.encodedAudioDuration(path, "mp3") };
    };

    const viaRaw = async (textFile: string): Promise<{ ms: number; seconds: number }> => {
      const wav = join(dir, "raw.wav");
      const mp3 = join(dir, "raw.mp3");
      const started = performance.now();
      if (voice.startsWith("flite:")) await exec("flite", ["-voice", voice.slice("flite:".length), "-f", textFile, "-o", wav]);
      else if (voice.startsWith("espeak:")) await exec("espeak-ng", ["-v", voice.slice("espeak:".length), "-f", textFile, "-w", wav]);
      else throw new Error(`no raw command for the default English voice ${voice}`);
      await exec(binaries.ffmpeg, ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", wav, ...RAW_ENCODE, mp3]);
      const ms = performance.now() - started;
      const result = { ms, seconds: await media.encodedAudioDuration(mp3, "mp3") };
      await rm(wav, { force: true });
      return result;
    };

    const text = buildText(CHARS, 1);
    await writeFile(join(mediaRoot, "book.txt"), text, "utf8");
    say(`audio book bench: ${text.length} characters, voice ${voice}, ${coreCount()} cores (${cpus()[0]?.model ?? "?"}), load ${loadBefore.map((l) => l.toFixed(2)).join(" ")}`);
    const raw = await viaRaw(join(mediaRoot, "book.txt"));
    say(`raw engine CLI → WAV, ffmpeg → MP3:   ${seconds(raw.ms)} s  (${(raw.seconds / 60).toFixed(1)} min of audio)`);
    const svc = await viaService("book.txt");
    say(`service publish → completed event:    ${seconds(svc.ms)} s  (${(svc.seconds / 60).toFixed(1)} min of audio)`);
    const ratio = svc.ms / raw.ms;
    say(`ratio service/raw: ${ratio.toFixed(2)} (target ≤ ${TARGET_RATIO.toFixed(1)}) ${ratio <= TARGET_RATIO ? "OK" : "ABOVE TARGET"}`);
    say(`peak RSS of this process after ${text.length} characters: ${mb(process.resourceUsage().maxRSS)} MB`);

    if (BIG) {
      const big = buildText(BIG_CHARS, 2);
      await writeFile(join(mediaRoot, "big.txt"), big, "utf8");
      const result = await viaService("big.txt");
      const rss = mb(process.resourceUsage().maxRSS);
      say(`service, ${big.length} characters: ${seconds(result.ms)} s (${(result.seconds / 3600).toFixed(1)} h of audio)`);
      say(`peak RSS of this process: ${rss} MB (target < ${TARGET_RSS_MB} MB) ${rss < TARGET_RSS_MB ? "OK" : "ABOVE TARGET"}`);
    }
    say(`load after: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
    await service.stop();
    await bus.close();
    await blobs.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
