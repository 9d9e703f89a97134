/**
 * The audio book pipeline: text file → (translation) → speech, chunk by chunk on every core, each
 * chunk encoded to MP3 and checkpointed as soon as it is spoken, then the chunks joined by copying
 * (no second encode) into `results/audiobook/<task id>.mp3`.
 */
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { BlobStore } from "@voiceloc/blobs";
import { isSandboxOwner, type AudioBookWork } from "@voiceloc/contracts";
import {
  analyzeSample,
  applyLexicons,
  LexiconNotSpeakableError,
  resolveClone,
  UnspeakableTextError,
  type CloneEngine, type ClonedVoice, type MtRegistry, type ResolvedVoice, type TtsRegistry } from "@voiceloc/engines";
import { DEFAULT_MAX_BOOK_CHARACTERS } from "@voiceloc/config";
import { fetchToFile, type MediaRootScope, type ObjectStoreOptions } from "@voiceloc/fetch";
import { mp3SampleRateFor, type MediaToolkit } from "@voiceloc/media";
import {
  checkpointKey,
  clonedVoiceFromWire,
  createTaskClone,
  removeTaskClone,
  TaskInputError,
  taskFailure,
  type ResumeContext,
  type TaskContext,
  type TaskHandler,
  type TaskResult,
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

/** What the pipeline works with, and how it cuts and encodes a book. */
export interface AudioBookPipelineOptions {
  blobs: BlobStore;
  tts: TtsRegistry;
  mt: MtRegistry;
  media: MediaToolkit;
  fetch: AudioBookFetchOptions;
  /**
   * The engine of cloned voices (CLONE_ENGINE): speaks books whose voice is `clone:<id>`, and makes a
   * book's own clone from its `voice_clone_sample` (removed at the engine when the book ends). None: off.
   */
  clones?: CloneEngine | undefined;
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
/** Largest voice sample file accepted (five minutes of 48 kHz stereo WAV is 55 MB). */
const SAMPLE_MAX_BYTES = 200 * 1024 * 1024;
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


/** The limit of a translated part (and of counting parts for resumed progress) for the `chunkChars` option. */
export function translationChunkChars(chunkChars: number | undefined): number {
  return Math.max(200, Math.floor(chunkChars ?? DEFAULT_CHUNK_CHARS));
}

/** How this delivery speaks the book: its voice, its chunks, the plan stored for redeliveries, the chunks left to speak. */
interface BookCut extends ResolvedVoice {
  chunks: string[];
  plan: Plan;
  missing: number[];
  /** The book's pronunciation lexicons (resolved by the gateway), applied to every chunk before speech. */
  lexicons?: AudioBookWork["lexicons"];
}

/**
 * A chunk with the book's pronunciation lexicons applied (aliases as text, IPA phonemes for espeak-ng
 * voices); an entry the voice cannot say is a TEXT_NOT_SPEAKABLE failure naming it.
 */
function withLexicons(text: string, cut: BookCut): string {
  if (!cut.lexicons || cut.lexicons.length === 0) return text;
  const phonemes = cut.voice.engine === "espeak" ? "espeak" : "none";
  try {
    return applyLexicons(text, cut.lexicons, { language: cut.voice.language, phonemes });
  } catch (error) {
    if (error instanceof LexiconNotSpeakableError) throw new UnspeakableTextError("TEXT_NOT_SPEAKABLE", `${error.message}.`);
    throw error;
  }
}

/** The task handler of the audio book worker (steps: text, translation, plan, speech, join). */
export function createAudioBookHandler(options: AudioBookPipelineOptions): TaskHandler<AudioBookWork> {
  const { blobs, tts, mt, media, fetch: fetchOptions } = options;
  const parallelism = Math.max(1, Math.floor(options.parallelism ?? coreCount()));
  const chunkChars = translationChunkChars(options.chunkChars);
  const bitrateKbps = options.bitrateKbps ?? AUDIO_BOOK_MP3.bitrateKbps;
  const encoding = `mp3 ${bitrateKbps}k q${AUDIO_BOOK_MP3.quality} mono`;
  const maxBookCharacters = options.maxBookCharacters ?? DEFAULT_MAX_BOOK_CHARACTERS;

  function resolveVoice(task: AudioBookWork, clone: ClonedVoice | undefined): ResolvedVoice {
    try {
      // A clone made by an engine this server no longer runs, or one that cannot speak the language, fails in plain words.
      if (clone !== undefined) return resolveClone(options.clones, clone, task.target_language);
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

  /** A file the task names, fetched under its account's rights into the work dir; a refusal fails the task in its plain words. */
  async function fetchFile(task: AudioBookWork, reference: string, name: string, maxBytes: number, ctx: TaskContext): Promise<string> {
    try {
      const fetched = await fetchToFile(reference, join(ctx.workDir, name), {
        mediaRoot: fetchOptions.mediaRoot,
        ...(fetchOptions.mediaRootScope === undefined ? {} : { mediaRootScope: fetchOptions.mediaRootScope }),
        owner: task.account_id,
        blobs,
        maxBytes,
        ...(fetchOptions.allowPrivateHosts === undefined ? {} : { allowPrivateHosts: fetchOptions.allowPrivateHosts }),
        ...(fetchOptions.timeoutMs === undefined ? {} : { timeoutMs: fetchOptions.timeoutMs }),
        ...(fetchOptions.s3 === undefined ? {} : { s3: fetchOptions.s3 }),
        ...(fetchOptions.gs === undefined ? {} : { gs: fetchOptions.gs }),
        signal: ctx.signal,
        logger: ctx.logger,
      });
      return fetched.path;
    } catch (error) {
      throw taskFailure(error, { scope: "input", ...(name === "input" ? {} : { context: "The voice sample cannot be fetched" }) });
    }
  }

  /**
   * The cloned voice the book is read in: the caller's clone (`preset_voice_name: "clone:<id>"`, resolved
   * by the gateway), or one made for this book from `voice_clone_sample` (`own`: removed when the book
   * ends; its id is derived from the task's, so a redelivery makes the same voice again). None otherwise.
   */
  async function bookClone(task: AudioBookWork, ctx: TaskContext): Promise<{ clone: ClonedVoice; own: boolean } | undefined> {
    const clones = options.clones;
    if (task.clone) {
      const clone = clonedVoiceFromWire(task.clone);
      resolveVoice(task, clone);
      return { clone, own: false };
    }
    if (!task.use_voice_clone) return undefined;
    if (clones === undefined) {
      throw new TaskInputError("Voice cloning is not available on this server (CLONE_ENGINE=off): submit the book with a preset voice (or none, for the default voice).");
    }
    if (task.voice_clone_sample === null || task.voice_clone_sample === "") {
      throw new TaskInputError("use_voice_clone needs voice_clone_sample: the recording of the voice to read the book in.");
    }
    checkCloneLanguage(clones, task);
    ctx.progress(0, "cloning the voice");
    const sample = await fetchFile(task, task.voice_clone_sample, "clone-input", Math.min(fetchOptions.maxBytes ?? SAMPLE_MAX_BYTES, SAMPLE_MAX_BYTES), ctx);
    try {
      const clone = await createTaskClone({
        clones,
        taskId: task.task_id,
        name: `audio book ${task.task_id}`,
        analyze: () => analyzeSample({ inputPath: sample, workDir: ctx.workDir, media, signal: ctx.signal }),
        signal: ctx.signal,
        logger: ctx.logger,
      });
      return { clone, own: true };
    } finally {
      await rm(sample, { force: true });
    }
  }

  function checkCloneLanguage(clones: CloneEngine, task: AudioBookWork): void {
    if (!clones.languages().includes(task.target_language)) {
      throw new TaskInputError(`Cloned voices of this server (${clones.id}) cannot speak ${task.target_language}.`);
    }
  }

  /** Step 1: the normalised text, from its checkpoint or fetched, decoded and normalised. */
  async function loadText(task: AudioBookWork, ctx: TaskContext): Promise<string> {
    if (await ctx.checkpoints.has(TEXT_CHECKPOINT)) {
      const saved = await readFile(await ctx.checkpoints.get(TEXT_CHECKPOINT), "utf8");
      checkLength(saved, task);
      return saved;
    }
    const path = await fetchFile(task, task.file, "input", fetchOptions.maxBytes ?? DEFAULT_TEXT_MAX_BYTES, ctx);
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

  /**
   * Step 3: the cut and voice of the spoken text. A redelivery keeps the voice an earlier delivery chose
   * by default (another worker's engines may differ) and its cut (a worker with another core count
   * would choose another one); chunks of a changed plan are deleted and spoken again.
   */
  async function planBook(task: AudioBookWork, spoken: string, chosen: ResolvedVoice, ctx: TaskContext): Promise<BookCut> {
    const log = ctx.logger;
    let resolved = chosen;
    const earlier = await readPlan(ctx);
    if (earlier && earlier.voice !== resolved.voice.name && task.preset_voice_name === null && !task.use_voice_clone) {
      try {
        resolved = tts.resolve(task.target_language, earlier.voice);
      } catch {
        log.info({ voice: earlier.voice }, "the voice of the earlier delivery is not installed here; using the default voice");
      }
    }
    const { engine, voice } = resolved;
    const engineMax = engine.capabilities().maxInputChars;
    const maxChars = Math.max(20, Math.min(options.chunkChars ?? engineMax, engineMax));
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
    return { engine, voice, chunks, plan, missing, lexicons: task.lexicons };
  }

  /**
   * Step 4: speaks every missing chunk and encodes it, one encoder per run of chunks on every core,
   * checkpointing each chunk's MP3 frames as soon as the encoder is past it (lanes.ts). Resolves to the
   * chunks this delivery spoke, as the lanes counted their frames (the join need not read them twice).
   */
  async function speakBook(cut: BookCut, ctx: TaskContext): Promise<Map<number, CountedChunk>> {
    const { engine, voice, chunks, missing } = cut;
    let plan = cut.plan;
    let done = chunks.length - missing.length;
    const report = () => ctx.progress(speakingProgress(done, chunks.length), "speaking");
    report();
    const counted = new Map<number, CountedChunk>();
    let rateFixed: Promise<number> | undefined = plan.sampleRate === undefined ? undefined : Promise.resolve(plan.sampleRate);
    const weight = (i: number) => chunks[i]?.length ?? 1;
    const queue = new ChunkQueue(splitByWeight(missing, weight, parallelism), parallelism, weight, ENCODER_START_CHARS);
    await runLanes(queue, parallelism, {
      media,
      signal: ctx.signal,
      encode: { bitrateKbps, quality: AUDIO_BOOK_MP3.quality },
      encoderStartWeight: ENCODER_START_CHARS,
      wavPath: (i) => join(ctx.workDir, `chunk-${pad(i)}.wav`),
      speak: async (i, outPath, signal) => {
        try {
          await engine.synthesize({ text: speakableText(withLexicons(chunks[i] ?? "", cut)), language: voice.language, voice: voice.name, signal, outPath });
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
    return counted;
  }

  /**
   * Step 5: joins the chunks by copying their MP3 frames behind one Info frame (no second encode, no
   * process) into one file of the work dir, handed over to the store as the result (renamed into place
   * by a file system store on the same file system), then checks what was stored.
   */
  async function joinBook(chunks: number, counted: Map<number, CountedChunk>, ctx: TaskContext): Promise<{ resultKey: string; seconds: number }> {
    const inputs: string[] = [];
    for (let i = 0; i < chunks; i++) inputs.push(await ctx.checkpoints.get(chunkCheckpoint(i)));
    const bookPath = join(ctx.workDir, "book.mp3");
    await rm(bookPath, { force: true });
    let joined: Awaited<ReturnType<typeof joinMp3Chunks>>;
    try {
      joined = await joinMp3Chunks(inputs, bookPath, (i) => counted.get(i));
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      throw taskFailure(error, { context: "The parts of the audio book could not be joined" });
    }
    const resultKey = ctx.resultKey("mp3");
    const put = await blobs.put(resultKey, { path: bookPath, move: true }, { contentType: "audio/mpeg" });
    if (put.size !== joined.bytes) throw new Error(`The joined audio book has ${put.size} bytes instead of ${joined.bytes}.`);
    return { resultKey, seconds: joined.seconds };
  }

  async function readBook(task: AudioBookWork, ctx: TaskContext, resolved: ResolvedVoice, started: number): Promise<TaskResult> {
    const log = ctx.logger;
    ctx.progress(0, "fetching the text");
    const text = await loadText(task, ctx);
    ctx.progress(P_TEXT, "text ready");
    const spoken = await translate(task, text, ctx);
    if (!hasWords(spoken)) throw new TaskInputError(`The translation into ${task.target_language} left no words to read aloud.`);
    ctx.progress(P_TRANSLATED, "translated");

    const cut = await planBook(task, spoken, resolved, ctx);
    const { chunks, missing, voice } = cut;
    const resumed = chunks.length - missing.length;
    log.info(
      { chars: text.length, spokenChars: spoken.length, chunks: chunks.length, resumed, voice: voice.name, parallelism },
      resumed > 0 ? "resuming the audio book" : "speaking the audio book",
    );
    const counted = await speakBook(cut, ctx);
    ctx.progress(P_SPOKEN, "joining");

    const { resultKey, seconds } = await joinBook(chunks.length, counted, ctx);
    log.info(
      { resultKey, seconds: Math.round(seconds * 10) / 10, chunks: chunks.length, spoken: missing.length, resumed, ms: Math.round(performance.now() - started) },
      "audio book ready",
    );
    return { resultKey };
  }

  return async function handle(task: AudioBookWork, ctx: TaskContext): Promise<TaskResult> {
    const log = ctx.logger;
    const started = performance.now();
    // The checks that need no file first: a book that cannot be read in its voice fails before any work.
    if (!task.clone && !task.use_voice_clone) resolveVoice(task, undefined);
    checkTranslation(task);
    const cloned = await bookClone(task, ctx);
    try {
      return await readBook(task, ctx, resolveVoice(task, cloned?.clone), started);
    } finally {
      // The book's own clone is removed at the engine however the book ends (a redelivery makes it again).
      if (cloned?.own === true && options.clones !== undefined) await removeTaskClone(options.clones, cloned.clone, log);
    }
  };
}
