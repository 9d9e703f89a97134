import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { BlobStore } from "@voiceloc/blobs";
import type { Bus, StopOptions } from "@voiceloc/bus";
import { BUS_CATALOG, isSandboxOwner, type AudioBookWork } from "@voiceloc/contracts";
import type { MtRegistry, ResolvedVoice, TtsRegistry } from "@voiceloc/engines";
import { DEFAULT_MAX_BOOK_CHARACTERS } from "@voiceloc/config";
import { fetchToFile, type MediaRootScope, type ObjectStoreOptions } from "@voiceloc/fetch";
import type { Logger } from "@voiceloc/log";
import { mp3SampleRateFor, type MediaToolkit } from "@voiceloc/media";
import {
  checkpointKey,
  createTaskWorker,
  TaskInputError,
  taskFailure,
  WorkerStoppedError,
  type ResumeContext,
  type TaskContext,
  type TaskResult,
  type TaskWorker,
} from "@voiceloc/worker";
import { z } from "zod";
import { joinMp3Chunks, type CountedChunk } from "./join.ts";
import { ChunkQueue, runLanes, splitByWeight } from "./lanes.ts";
import { coreCount, runPool } from "./pool.ts";
import { BookTextError, chunkText, cutTextWithin, decodeText, hasWords, normaliseText, speakableText } from "./text.ts";

/** Where the book's text may come from: fetchToFile's settings (MEDIA_ROOT paths, http(s), s3://, gs://). */
export interface AudioBookFetchOptions {
  mediaRoot: string;
  /** `account`: paths resolve under the task account's folder of the media root (MEDIA_ROOT_SCOPE). */
  mediaRootScope?: MediaRootScope;
  allowPrivateHosts?: readonly string[];
  /** Largest text file accepted, in bytes. Default 32 MiB (far more than any book). */
  maxBytes?: number;
  timeoutMs?: number;
  s3?: ObjectStoreOptions;
  gs?: ObjectStoreOptions;
}

/** Reported after a chunk was synthesised, encoded and stored as a checkpoint (not for chunks resumed). */
export interface ChunkDoneInfo {
  taskId: string;
  /** 0-based index of the chunk. */
  index: number;
  /** Chunks in the book. */
  total: number;
}

export interface AudioBookServiceOptions {
  bus: Bus;
  blobs: BlobStore;
  tts: TtsRegistry;
  mt: MtRegistry;
  media: MediaToolkit;
  fetch: AudioBookFetchOptions;
  logger: Logger;
  /** Books handled at once by this worker. Default 1 (one book already uses every core). */
  concurrency?: number;
  /** Chunks synthesised and encoded (or translated) at once for one book. Default: the number of cores. */
  parallelism?: number;
  /**
   * Largest chunk of text per engine call and per translation, in characters (speech chunks are capped
   * by the voice engine's own limit). Default: 1500 for translation; for speech, the engine's limit
   * (espeak-ng 10,000, flite 3,000): each chunk is one engine start, and the cores' shares of the book
   * are balanced by weight and by taking over work at the end (lanes.ts), not by small chunks.
   */
  chunkChars?: number;
  /** MP3 bitrate. Default 64 kbit/s (mono, at the voice's own sample rate; see AUDIO_BOOK_MP3). */
  bitrateKbps?: number;
  /** Minimum time between two progress events. Default 250 ms (the worker runtime's default). */
  progressIntervalMs?: number;
  /** Parent of the per-delivery work dirs. Default the OS temp dir. */
  workRoot?: string;
  /**
   * Most characters of text (after normalising) one book may have (MAX_BOOK_CHARACTERS); a longer
   * book fails with a reason naming the limit. Default DEFAULT_MAX_BOOK_CHARACTERS (config).
   */
  maxBookCharacters?: number;
  /** Most characters of a sandbox task's book (owner `sandbox:<account>`; SANDBOX_MAX_BOOK_CHARACTERS); default: maxBookCharacters. */
  sandboxMaxBookCharacters?: number;
  /**
   * Test seam: called once a chunk's MP3 is stored as a checkpoint. A rejection fails the delivery
   * like an engine failure would (the task is retried and resumes from its checkpoints).
   */
  onChunkDone?: (info: ChunkDoneInfo) => void | Promise<void>;
}

export interface AudioBookService {
  readonly name: "audiobook";
  /** Provisions the work and event streams and the audiobook queue (idempotent), then consumes it. */
  start(): Promise<void>;
  /** Stops taking books and waits for the running ones (with graceMs, aborts them after it: they are redelivered). */
  stop(options?: StopOptions): Promise<void>;
}

const DEFAULT_CHUNK_CHARS = 1_500;
/**
 * Starting an MP3 encoder costs about as much CPU as encoding a minute of speech, about 1,000
 * characters of text: a lane with nothing left starts a new encoder for chunks of another lane only
 * when they weigh more than this (in a traced espeak-ng run, a lone 950-character chunk taken over
 * ended the book about 70 ms later than its own lane would have).
 */
const ENCODER_START_CHARS = 1_000;

/**
 * What the book is encoded as: MP3, mono, at the voice's own sample rate (16 kHz for flite, 22.05 kHz
 * for espeak-ng: no resampling), constant 64 kbit/s, LAME algorithm quality 7. Speech from these
 * engines carries nothing above 8–11 kHz; 64 kbit/s for one such channel is above LAME's own voice
 * preset (56 kbit/s), and quality 7 costs about half the CPU of LAME's default 3 (no noise-shaping
 * search), which the bitrate leaves no room to hear.
 */
export const AUDIO_BOOK_MP3 = { bitrateKbps: 64, quality: 7, channels: 1 } as const;
const DEFAULT_TEXT_MAX_BYTES = 32 * 1024 * 1024;
const TEXT_CHECKPOINT = "text.txt";
const PLAN_CHECKPOINT = "plan.json";

/** Progress bands: fetch + decode, translation, synthesis + encoding, join. */
const P_TEXT = 5;
const P_TRANSLATED = 20;
const P_SPOKEN = 95;

const pad = (i: number) => String(i).padStart(5, "0");
/** The checkpoint holding the MP3 of chunk `index` (0-based) of a book. */
export const chunkCheckpoint = (index: number) => `chunk-${pad(index)}.mp3`;
const translationCheckpoint = (i: number) => `translation-${pad(i)}.txt`;

/** `plan.json`: how the spoken text was cut and voiced, so a redelivery's chunks join the earlier ones. */
const PlanSchema = z.object({
  voice: z.string().min(1),
  /** The largest chunk limit. */
  chunkChars: z.number().int().positive(),
  chunks: z.number().int().positive(),
  /**
   * The limit each chunk was cut to, in plans of the version that tapered each core's share (replayed
   * by `cutTextWithin`, whatever the core count of the worker that reads the plan). Absent otherwise:
   * every chunk was cut to chunkChars (`chunkText`).
   */
  chunkLimits: z.array(z.number().int().min(20)).min(1).optional(),
  /** How chunks are encoded (codec, bitrate, quality); chunks of another encoding are spoken again. */
  encoding: z.string().min(1),
  /** The MP3 sample rate of the book, fixed by the first chunk spoken. */
  sampleRate: z.number().int().positive().optional(),
});
type Plan = z.infer<typeof PlanSchema>;

const isChunk = (name: string) => /^chunk-\d+\.mp3$/.test(name);
const isTranslation = (name: string) => /^translation-\d+\.txt$/.test(name);

/** Progress (percent) of translating `done` of `total` parts. */
const translatingProgress = (done: number, total: number) => P_TEXT + ((P_TRANSLATED - P_TEXT) * done) / Math.max(1, total);
/** Progress (percent) of speaking `done` of `total` chunks. */
const speakingProgress = (done: number, total: number) => P_TRANSLATED + ((P_SPOKEN - P_TRANSLATED) * done) / Math.max(1, total);

/**
 * Progress already done by earlier deliveries, from the checkpoints: the text (5), the translated parts
 * (5–20), the spoken chunks of the stored plan (20–95). The handler reports the same values as it goes.
 */
export async function audioBookResumedProgress(
  task: AudioBookWork,
  ctx: Pick<ResumeContext, "checkpoints">,
  chunkChars: number = DEFAULT_CHUNK_CHARS,
): Promise<number> {
  const names = await ctx.checkpoints.list();
  if (!names.includes(TEXT_CHECKPOINT)) return 0;
  const plan = names.includes(PLAN_CHECKPOINT) ? await ctx.checkpoints.readJson(PLAN_CHECKPOINT, PlanSchema) : undefined;
  if (plan !== undefined) return speakingProgress(Math.min(plan.chunks, names.filter(isChunk).length), plan.chunks);
  const translated = names.filter(isTranslation).length;
  if (task.source_language === task.target_language || translated === 0) return P_TEXT;
  const text = await readFile(await ctx.checkpoints.get(TEXT_CHECKPOINT), "utf8");
  const parts = chunkText(text, chunkChars).length;
  return translatingProgress(Math.min(parts, translated), parts);
}

/**
 * The audio book worker: text file → (translation) → speech, chunk by chunk on every core, each
 * chunk encoded to MP3 and checkpointed as soon as it is spoken, then the chunks joined by copying
 * (no second encode) into `results/audiobook/<task id>.mp3`.
 */
export function createAudioBookService(options: AudioBookServiceOptions): AudioBookService {
  const { bus, blobs, tts, mt, media } = options;
  const logger = options.logger.child({ component: "audiobook" });
  const parallelism = Math.max(1, Math.floor(options.parallelism ?? coreCount()));
  const chunkChars = Math.max(200, Math.floor(options.chunkChars ?? DEFAULT_CHUNK_CHARS));
  const bitrateKbps = options.bitrateKbps ?? AUDIO_BOOK_MP3.bitrateKbps;
  const encoding = `mp3 ${bitrateKbps}k q${AUDIO_BOOK_MP3.quality} mono`;
  const maxBookCharacters = options.maxBookCharacters ?? DEFAULT_MAX_BOOK_CHARACTERS;
  const queue = BUS_CATALOG.work.audiobook.queue;

  function resolveVoice(task: AudioBookWork): ResolvedVoice {
    try {
      return tts.resolve(task.target_language, task.preset_voice_name ?? undefined);
    } catch (error) {
      throw taskFailure(error);
    }
  }

  function checkTranslation(task: AudioBookWork): void {
    if (task.source_language === task.target_language) return;
    try {
      mt.resolve(task.source_language, task.target_language);
    } catch (error) {
      throw taskFailure(error);
    }
  }

  /** A book over MAX_BOOK_CHARACTERS (a sandbox book over SANDBOX_MAX_BOOK_CHARACTERS) fails, naming the limit. */
  function checkLength(text: string, task: AudioBookWork): void {
    const chars = [...text].length;
    const sandboxMax = options.sandboxMaxBookCharacters;
    if (sandboxMax !== undefined && isSandboxOwner(task.account_id) && chars > sandboxMax) {
      throw new TaskInputError(
        `The book has ${chars} characters, more than the ${sandboxMax} a sandbox key may have read (SANDBOX_MAX_BOOK_CHARACTERS): send a shorter text or use a live key.`,
      );
    }
    if (chars > maxBookCharacters) {
      throw new TaskInputError(
        `The book has ${chars} characters, more than the ${maxBookCharacters} this server accepts for one audio book (MAX_BOOK_CHARACTERS).`,
      );
    }
  }

  /** Step 1: the normalised text, from its checkpoint or fetched, decoded and normalised. */
  async function loadText(task: AudioBookWork, ctx: TaskContext): Promise<string> {
    if (await ctx.checkpoints.has(TEXT_CHECKPOINT)) {
      const saved = await readFile(await ctx.checkpoints.get(TEXT_CHECKPOINT), "utf8");
      checkLength(saved, task);
      return saved;
    }
    let path: string;
    try {
      const fetched = await fetchToFile(task.file, join(ctx.workDir, "input"), {
        mediaRoot: options.fetch.mediaRoot,
        ...(options.fetch.mediaRootScope === undefined ? {} : { mediaRootScope: options.fetch.mediaRootScope }),
        owner: task.account_id,
        blobs: options.blobs,
        maxBytes: options.fetch.maxBytes ?? DEFAULT_TEXT_MAX_BYTES,
        ...(options.fetch.allowPrivateHosts === undefined ? {} : { allowPrivateHosts: options.fetch.allowPrivateHosts }),
        ...(options.fetch.timeoutMs === undefined ? {} : { timeoutMs: options.fetch.timeoutMs }),
        ...(options.fetch.s3 === undefined ? {} : { s3: options.fetch.s3 }),
        ...(options.fetch.gs === undefined ? {} : { gs: options.fetch.gs }),
        signal: ctx.signal,
        logger: ctx.logger,
      });
      path = fetched.path;
    } catch (error) {
      throw taskFailure(error, { scope: "input" });
    }
    let text: string;
    try {
      text = normaliseText(decodeText(await readFile(path)));
    } catch (error) {
      if (error instanceof BookTextError) throw new TaskInputError(error.message, { cause: error });
      throw error;
    } finally {
      await rm(path, { force: true });
    }
    if (text === "") throw new TaskInputError("The file contains no text.");
    if (!hasWords(text)) throw new TaskInputError("The file contains no words to read aloud: it has no letters or digits.");
    checkLength(text, task);
    await ctx.checkpoints.put(TEXT_CHECKPOINT, Buffer.from(text, "utf8"));
    return text;
  }

  /** Step 2: the text in the target language, chunk by chunk, each translated chunk checkpointed. */
  async function translate(task: AudioBookWork, text: string, ctx: TaskContext): Promise<string> {
    const { source_language: source, target_language: target } = task;
    if (source === target) return text;
    const chunks = chunkText(text, chunkChars);
    const translated: string[] = new Array<string>(chunks.length).fill("");
    const stored = new Set(await ctx.checkpoints.list());
    let done = 0;
    const report = () => ctx.progress(translatingProgress(done, chunks.length), "translating");
    await runPool(
      chunks.map((_, i) => i),
      parallelism,
      async (i, signal) => {
        const name = translationCheckpoint(i);
        if (stored.has(name)) {
          translated[i] = await readFile(await ctx.checkpoints.get(name), "utf8");
        } else {
          let out: string;
          try {
            out = await mt.translate({ text: chunks[i] ?? "", source, target, signal });
          } catch (error) {
            if (signal.aborted) throw error;
            throw taskFailure(error, { context: `Translating part ${i + 1} of ${chunks.length} of the text failed` });
          }
          await ctx.checkpoints.put(name, Buffer.from(out, "utf8"));
          translated[i] = out;
        }
        done++;
        report();
      },
      ctx.signal,
    );
    return normaliseText(translated.join("\n\n"));
  }

  /** The plan stored by an earlier delivery, if any (one of another shape is planned again). */
  function readPlan(ctx: TaskContext): Promise<Plan | undefined> {
    return ctx.checkpoints.readJson(PLAN_CHECKPOINT, PlanSchema);
  }

  async function handle(task: AudioBookWork, ctx: TaskContext): Promise<TaskResult> {
    const log = ctx.logger;
    const started = performance.now();
    if (task.use_voice_clone) {
      throw new TaskInputError("Voice cloning is not available for audio books on this server: submit the book with a preset voice (or none, for the default voice).");
    }
    let resolved = resolveVoice(task);
    checkTranslation(task);

    ctx.progress(0, "fetching the text");
    const text = await loadText(task, ctx);
    ctx.progress(P_TEXT, "text ready");
    const spoken = await translate(task, text, ctx);
    if (!hasWords(spoken)) throw new TaskInputError(`The translation into ${task.target_language} left no words to read aloud.`);
    ctx.progress(P_TRANSLATED, "translated");

    // A redelivery keeps the voice an earlier delivery chose by default (another worker's engines may differ).
    const earlier = await readPlan(ctx);
    if (earlier && earlier.voice !== resolved.voice.name && task.preset_voice_name === null) {
      try {
        resolved = tts.resolve(task.target_language, earlier.voice);
      } catch {
        log.info({ voice: earlier.voice }, "the voice of the earlier delivery is not installed here; using the default voice");
      }
    }
    const { engine, voice } = resolved;
    const engineMax = engine.capabilities().maxInputChars;
    const maxChars = Math.max(20, Math.min(options.chunkChars ?? engineMax, engineMax));
    // A redelivery keeps the earlier cut (a worker with another core count would choose another one).
    const keep = earlier !== undefined && earlier.voice === voice.name && earlier.encoding === encoding && earlier.chunkChars <= engineMax;
    // The cut: the earlier plan's (by its limits, when it has them), or chunks as large as the engine
    // takes, yet one per core at least for a shorter book (each core's share at least what starting
    // its encoder costs).
    const planChars = keep ? earlier.chunkChars : Math.min(maxChars, Math.max(ENCODER_START_CHARS, Math.ceil(spoken.length / parallelism)));
    const chunkLimits = keep ? earlier.chunkLimits : undefined;
    const chunks = chunkLimits === undefined ? chunkText(spoken, planChars) : cutTextWithin(spoken, chunkLimits);
    let plan: Plan = { voice: voice.name, chunkChars: planChars, chunks: chunks.length, ...(chunkLimits === undefined ? {} : { chunkLimits }), encoding };
    let stored = new Set(await ctx.checkpoints.list());
    // A kept cut that no longer gives the planned number of chunks is not trusted either.
    const changed = earlier !== undefined && (!keep || earlier.chunks !== plan.chunks);
    // Chunks without a plan describing them (an earlier version's) are not trusted either.
    const orphans = earlier === undefined && [...stored].some(isChunk);
    if (changed || orphans) {
      // Chunks of another voice, cut or encoding could not be joined with the new ones.
      const stale = [...stored].filter(isChunk);
      log.info({ earlier, plan, stale: stale.length }, "the plan changed since the last delivery; speaking every chunk again");
      for (const name of stale) await blobs.delete(checkpointKey(ctx.taskId, name));
      stored = new Set([...stored].filter((name) => !isChunk(name)));
    }
    if (earlier !== undefined && !changed && earlier.sampleRate !== undefined) plan = { ...plan, sampleRate: earlier.sampleRate };
    if (earlier === undefined || changed) await ctx.checkpoints.putJson(PLAN_CHECKPOINT, plan);

    const missing = chunks.map((_, i) => i).filter((i) => !stored.has(chunkCheckpoint(i)));
    const resumed = chunks.length - missing.length;
    log.info(
      { chars: text.length, spokenChars: spoken.length, chunks: chunks.length, resumed, voice: voice.name, parallelism },
      resumed > 0 ? "resuming the audio book" : "speaking the audio book",
    );
    let done = resumed;
    const report = () => ctx.progress(speakingProgress(done, chunks.length), "speaking");
    report();

    // Step 3: speak every missing chunk and encode it, one encoder per run of chunks on every core,
    // checkpointing each chunk's MP3 frames as soon as the encoder is past it (lanes.ts).
    /** The chunks this delivery spoke, as the lanes counted their frames (the join need not read them twice). */
    const counted = new Map<number, CountedChunk>();
    let rateFixed: Promise<number> | undefined = plan.sampleRate === undefined ? undefined : Promise.resolve(plan.sampleRate);
    const queue = new ChunkQueue(
      splitByWeight(missing, (i) => chunks[i]?.length ?? 1, parallelism),
      parallelism,
      (i) => chunks[i]?.length ?? 1,
      ENCODER_START_CHARS,
    );
    await runLanes(queue, parallelism, {
      media,
      signal: ctx.signal,
      encode: { bitrateKbps, quality: AUDIO_BOOK_MP3.quality },
      encoderStartWeight: ENCODER_START_CHARS,
      wavPath: (i) => join(ctx.workDir, `chunk-${pad(i)}.wav`),
      speak: async (i, outPath, signal) => {
        try {
          await engine.synthesize({ text: speakableText(chunks[i] ?? ""), language: voice.language, voice: voice.name, signal, outPath });
        } catch (error) {
          if (signal.aborted) throw error;
          throw taskFailure(error, { context: `The voice "${voice.name}" could not speak part ${i + 1} of ${chunks.length} of the text` });
        }
      },
      // The first chunk spoken fixes the book's sample rate (its own, when MP3 has it), kept in the plan for redeliveries.
      sampleRate: (first) =>
        (rateFixed ??= (async () => {
          const sampleRate = mp3SampleRateFor(first.format.sampleRate);
          plan = { ...plan, sampleRate };
          await ctx.checkpoints.putJson(PLAN_CHECKPOINT, plan);
          return sampleRate;
        })()),
      store: async (i, mp3, frames) => {
        await ctx.checkpoints.put(chunkCheckpoint(i), mp3);
        counted.set(i, { frames: frames.count, bytes: mp3.length, header: frames.header });
        done++;
        ctx.working();
        report();
        await options.onChunkDone?.({ taskId: ctx.taskId, index: i, total: chunks.length });
      },
    });
    ctx.progress(P_SPOKEN, "joining");

    // Step 4: join the chunks by copying their MP3 frames behind one Info frame (no second encode, no
    // process) into one file of the work dir, handed over to the store as the result (renamed into
    // place by a file system store on the same file system), then check what was stored.
    const inputs: string[] = [];
    for (const [i] of chunks.entries()) inputs.push(await ctx.checkpoints.get(chunkCheckpoint(i)));
    const bookPath = join(ctx.workDir, "book.mp3");
    await rm(bookPath, { force: true });
    let joined: Awaited<ReturnType<typeof joinMp3Chunks>>;
    try {
      joined = await joinMp3Chunks(inputs, bookPath, (i) => counted.get(i));
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      throw taskFailure(error, { context: "The parts of the audio book could not be joined" });
    }
    const seconds = joined.seconds;
    const resultKey = ctx.resultKey("mp3");
    const put = await blobs.put(resultKey, { path: bookPath, move: true }, { contentType: "audio/mpeg" });
    if (put.size !== joined.bytes) throw new Error(`The joined audio book has ${put.size} bytes instead of ${joined.bytes}.`);
    log.info(
      { resultKey, seconds: Math.round(seconds * 10) / 10, chunks: chunks.length, spoken: missing.length, resumed, ms: Math.round(performance.now() - started) },
      "audio book ready",
    );
    return { resultKey };
  }

  let worker: TaskWorker | undefined;
  let starting: Promise<void> | undefined;
  let stopped = false;

  return {
    name: "audiobook",
    start() {
      if (stopped) return Promise.reject(new WorkerStoppedError());
      if (starting) return starting;
      const attempt = (async () => {
        await bus.provision({ streams: [...BUS_CATALOG.streams], queues: [queue] });
        worker = createTaskWorker({
          bus,
          catalog: BUS_CATALOG,
          blobs,
          kind: "audiobook",
          logger: options.logger,
          concurrency: Math.max(1, Math.floor(options.concurrency ?? 1)),
          handle,
          initialProgress: (task, ctx) => audioBookResumedProgress(task, ctx, chunkChars),
          ...(options.progressIntervalMs === undefined ? {} : { progressIntervalMs: options.progressIntervalMs }),
          ...(options.workRoot === undefined ? {} : { workRoot: options.workRoot }),
        });
        await worker.start();
        logger.info({ parallelism, chunkChars, languages: tts.capabilities().languages }, "audio book service ready");
      })();
      starting = attempt;
      // A failed start (e.g. the bus was unreachable) may be tried again.
      attempt.catch(() => {
        if (starting === attempt && !stopped) starting = undefined;
      });
      return attempt;
    },
    async stop(stopOptions) {
      stopped = true;
      await starting?.catch(() => undefined);
      await worker?.stop(stopOptions);
    },
  };
}
