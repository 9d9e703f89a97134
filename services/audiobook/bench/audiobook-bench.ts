/**
 * Audio book throughput: a ~100,000-character English text through the whole service beside the same
 * engine run by hand on the same text, then ffmpeg by hand, in one run, for each voice asked for
 * (default: the default English voice, flite:slt, and espeak:en-us):
 *   - raw:     `flite -voice slt -f book.txt -o book.wav` (or `espeak-ng -v en-us -f book.txt -w book.wav`),
 *              then `ffmpeg -i book.wav -c:a libmp3lame -b:a 64k -compression_level 7 -ar <its rate> -ac 1 book.mp3`:
 *              the same output format as the service's (AUDIO_BOOK_MP3), one after the other, as by hand;
 *   - service: the audio book service on an in-process bus with a file-system blob store in temp dirs,
 *              timed from publishing the work message to the `completed` event (fetch, chunking, speech
 *              and MP3 encoding on every core, checkpoints, join, result blob), and the time to the first
 *              playable part: from publishing to the moment the book's HLS playlist, read from the blob
 *              store the gateway serves it from every 20 ms as a player would, first lists a part.
 * Both legs' programs run at the same niceness (ENGINE_NICE, default 10), as the service runs them.
 * Each voice is measured REPEAT times (raw, then service); it prints every pair with the load, the
 * ratio of the best times (target ≤ 0.55: two cores make 0.5 the floor) and this process's peak RSS.
 * With BIG=1 a 1 MB text also goes through the service afterwards, for the memory figure (target < 400 MB).
 *
 * Usage: pnpm --filter @voiceloc/audiobook bench   (CHARS=100000, REPEAT=2, VOICES=default,espeak:en-us, BIG=1)
 */
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { audioBookStreamKey, createFsBlobStore, isBlobNotFoundError, type BlobStore } from "@voiceloc/blobs";
import { createCatalogBus, createInProcessBus } from "@voiceloc/bus";
import { BUS_CATALOG, type AudioBookWork, type TaskEvent } from "@voiceloc/contracts";
import { createApertiumEngine, createMtRegistry, createTtsRegistry, detectOfflineEngines } from "@voiceloc/engines";
import { createLogger, silentLogger } from "@voiceloc/log";
import { DEFAULT_MAX_BOOK_CHARACTERS, loadConfig } from "@voiceloc/config";
import { readWavInfo } from "@voiceloc/engines";
import { createMediaToolkit, mp3SampleRateFor, resolveFfmpeg, runProcess, setChildNiceness } from "@voiceloc/media";
import { AUDIO_BOOK_MP3, coreCount, createAudioBookService } from "../src/index.ts";

const CHARS = Number(process.env.CHARS ?? 100_000);
const BIG = process.env.BIG === "1";
const REPEAT = Math.max(1, Number(process.env.REPEAT ?? 2));
const VOICES = (process.env.VOICES ?? "default,espeak:en-us").split(",").map((v) => v.trim()).filter(Boolean);
/** Just under the largest book the service takes by default (the text is built a paragraph at a time, so it runs over its target). */
const BIG_CHARS = DEFAULT_MAX_BOOK_CHARACTERS - 2_000;
const TARGET_RATIO = 0.55;
/** Time from submitting the book to the first playable part of its HLS stream, in seconds. */
const TARGET_FIRST_PART_S = 5;
const TARGET_RSS_MB = 400;
/** What the service encodes MP3 with (AUDIO_BOOK_MP3), as ffmpeg arguments; the sample rate is the engine's own. */
const RAW_ENCODE = [
  "-c:a", "libmp3lame", "-b:a", `${AUDIO_BOOK_MP3.bitrateKbps}k`, "-compression_level", String(AUDIO_BOOK_MP3.quality), "-ac", String(AUDIO_BOOK_MP3.channels),
];

/** Runs a program by hand (at the children's niceness, like the service's); throws when it fails. */
async function byHand(command: string, args: readonly string[]): Promise<void> {
  const result = await runProcess(command, args, { stderrLines: 5 });
  if (result.spawnError || result.exitCode !== 0) throw new Error(`${command} failed: ${result.spawnError?.message ?? result.stderrTail.join(" | ")}`);
}

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

/** How often the bench looks at a rendering book's playlist, as a player would (players wait longer). */
const PLAYLIST_POLL_MS = 20;

/**
 * The moment (performance.now()) the book's HLS playlist first lists a part, observed as a listener
 * would: its playlist read from the blob store the gateway serves it from, again and again, until it
 * names a segment; undefined if `done` settles first.
 */
async function firstListedPart(blobs: BlobStore, taskId: string, done: Promise<unknown>): Promise<number | undefined> {
  let over = false;
  void done.finally(() => (over = true));
  const key = audioBookStreamKey(taskId);
  while (!over) {
    try {
      const chunks: Buffer[] = [];
      for await (const piece of await blobs.createReadStream(key)) chunks.push(piece as Buffer);
      if (/^#EXTINF:/m.test(Buffer.concat(chunks).toString("utf8"))) return performance.now();
    } catch (error) {
      if (!isBlobNotFoundError(error)) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, PLAYLIST_POLL_MS));
  }
  return undefined;
}

/**
 * CPU seconds used so far by this process and its finished children (user + system, /proc/self/stat
 * utime, stime, cutime, cstime): the work a leg did, whatever else the machine was doing meanwhile.
 */
async function cpuSeconds(): Promise<{ self: number; children: number }> {
  const stat = await readFile("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number);
  const tick = 100; // USER_HZ on Linux
  return { self: ((fields[11] ?? 0) + (fields[12] ?? 0)) / tick, children: ((fields[13] ?? 0) + (fields[14] ?? 0)) / tick };
}

async function measured<T extends { ms: number }>(leg: () => Promise<T>): Promise<T & { cpu: number; childCpu: number }> {
  const before = await cpuSeconds();
  const result = await leg();
  const after = await cpuSeconds();
  const childCpu = after.children - before.children;
  return { ...result, childCpu, cpu: childCpu + after.self - before.self };
}
const seconds = (ms: number) => (ms / 1000).toFixed(1);

async function main(): Promise<void> {
  const logger = process.env.LOG_LEVEL ? createLogger({ level: process.env.LOG_LEVEL as "info" }) : silentLogger();
  const dir = await mkdtemp(join(tmpdir(), "voiceloc-audiobook-bench-"));
  const mediaRoot = join(dir, "media");
  await mkdir(mediaRoot, { recursive: true });
  const say = (line: string) => void process.stdout.write(`${line}\n`);
  const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");
  const nice = loadConfig(process.env).engineNice;
  setChildNiceness(nice);
  try {
    const [engines, apertium, binaries] = await Promise.all([detectOfflineEngines({ logger }), createApertiumEngine({ logger }), resolveFfmpeg({ logger })]);
    const tts = createTtsRegistry(engines);
    const media = createMediaToolkit(binaries, logger);
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
    // Each book's end, resolved by its terminal event as it arrives (no polling: the time is the event's).
    const ends = new Map<string, (event: TaskEvent) => void>();
    const typed = createCatalogBus(bus, BUS_CATALOG);
    await typed.subscribeEvents("task", (e) => {
      if (e.data.status === "completed" || e.data.status === "failed") ends.get(e.data.task_id)?.(e.data);
    });

    const viaService = async (file: string, voice: string | null): Promise<{ ms: number; seconds: number; firstPartMs: number }> => {
      const task: AudioBookWork = {
        kind: "audiobook",
        task_id: randomUUID(),
        account_id: "bench",
        file,
        source_language: "English",
        target_language: "English",
        name: "bench",
        preset_voice_name: voice,
        use_voice_clone: false,
        voice_clone_sample: null,
      };
      let ms = 0;
      const ended = new Promise<TaskEvent>((resolve) =>
        ends.set(task.task_id, (event) => {
          ms = performance.now() - started;
          resolve(event);
        }),
      );
      const started = performance.now();
      await typed.publishWork("audiobook", task);
      // Time to the first playable part: from submitting the book to its playlist first listing a part.
      const listed = firstListedPart(blobs, task.task_id, ended);
      const end = await ended;
      const firstAt = await listed;
      const firstPartMs = firstAt === undefined ? Number.NaN : firstAt - started;
      ends.delete(task.task_id);
      if (end.status !== "completed" || !end.result_key) throw new Error(`the service failed the book: ${end.error ?? "no result"}`);
      const path = await blobs.toLocalFile(end.result_key, join(dir, "copies"));
      return { ms, firstPartMs, seconds: await media.encodedAudioDuration(path, "mp3") };
    };

    const viaRaw = async (textFile: string, voice: string): Promise<{ ms: number; seconds: number }> => {
      const wav = join(dir, "raw.wav");
      const mp3 = join(dir, "raw.mp3");
      const started = performance.now();
      if (voice.startsWith("flite:")) await byHand("flite", ["-voice", voice.slice("flite:".length), "-f", textFile, "-o", wav]);
      else if (voice.startsWith("espeak:")) await byHand("espeak-ng", ["-v", voice.slice("espeak:".length), "-f", textFile, "-w", wav]);
      else throw new Error(`no raw command for the voice ${voice}`);
      const rate = (await readWavInfo(wav))?.sampleRate ?? 0;
      await byHand(binaries.ffmpeg, ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", wav, ...RAW_ENCODE, "-ar", String(mp3SampleRateFor(rate)), mp3]);
      const ms = performance.now() - started;
      const result = { ms, seconds: await media.encodedAudioDuration(mp3, "mp3") };
      await rm(wav, { force: true });
      return result;
    };

    const text = buildText(CHARS, 1);
    await writeFile(join(mediaRoot, "book.txt"), text, "utf8");
    say(`audio book bench: ${text.length} characters, ${coreCount()} cores (${cpus()[0]?.model ?? "?"}), children at niceness ${nice}, load ${load()}`);
    say(`output: MP3 ${AUDIO_BOOK_MP3.bitrateKbps} kbit/s CBR, mono, the voice's own sample rate, LAME quality ${AUDIO_BOOK_MP3.quality} (both legs)`);
    const summary: string[] = [];
    for (const asked of VOICES) {
      const voice = asked === "default" ? tts.resolve("English").voice.name : tts.resolve("English", asked).voice.name;
      const preset = asked === "default" ? null : voice;
      const raws: number[] = [];
      const services: number[] = [];
      const firstParts: number[] = [];
      for (let run = 1; run <= REPEAT; run++) {
        const before = load();
        const raw = await measured(() => viaRaw(join(mediaRoot, "book.txt"), voice));
        const svc = await measured(() => viaService("book.txt", preset));
        raws.push(raw.ms);
        services.push(svc.ms);
        firstParts.push(svc.firstPartMs);
        say(
          `${voice} run ${run}: raw engine → WAV, ffmpeg → MP3 ${seconds(raw.ms)} s (${(raw.seconds / 60).toFixed(1)} min of audio); ` +
            `service: total ${seconds(svc.ms)} s (${(svc.seconds / 60).toFixed(1)} min), time to first playable part ${seconds(svc.firstPartMs)} s (target < ${TARGET_FIRST_PART_S} s) ${svc.firstPartMs < TARGET_FIRST_PART_S * 1000 ? "OK" : "ABOVE TARGET"}; ratio ${(svc.ms / raw.ms).toFixed(2)}; ` +
            `CPU s raw ${raw.cpu.toFixed(1)}, service ${svc.cpu.toFixed(1)} (programs ${svc.childCpu.toFixed(1)}); load before ${before}, after ${load()}`,
        );
      }
      const ratio = Math.min(...services) / Math.min(...raws);
      const firstPart = Math.max(...firstParts);
      const line =
        `${voice}: best service ${seconds(Math.min(...services))} s vs best raw ${seconds(Math.min(...raws))} s, ratio ${ratio.toFixed(2)} (target ≤ ${TARGET_RATIO}) ${ratio <= TARGET_RATIO ? "OK" : "ABOVE TARGET"}; ` +
        `time to first playable part, slowest run ${seconds(firstPart)} s (target < ${TARGET_FIRST_PART_S} s) ${firstPart < TARGET_FIRST_PART_S * 1000 ? "OK" : "ABOVE TARGET"}`;
      summary.push(line);
      say(line);
    }
    for (const line of summary) say(`summary: ${line}`);
    say(`peak RSS of this process after ${VOICES.length * REPEAT} books of ${text.length} characters: ${mb(process.resourceUsage().maxRSS)} MB`);

    if (BIG) {
      const big = buildText(BIG_CHARS, 2);
      await writeFile(join(mediaRoot, "big.txt"), big, "utf8");
      const result = await viaService("big.txt", null);
      const rss = mb(process.resourceUsage().maxRSS);
      say(`service, ${big.length} characters: ${seconds(result.ms)} s (${(result.seconds / 3600).toFixed(1)} h of audio)`);
      say(`peak RSS of this process: ${rss} MB (target < ${TARGET_RSS_MB} MB) ${rss < TARGET_RSS_MB ? "OK" : "ABOVE TARGET"}`);
    }
    say(`load after: ${load()}`);
    await service.stop();
    await bus.close();
    await blobs.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  // The service and its bus may still hold the event loop: a failed bench ends here.
  process.exit(1);
});
