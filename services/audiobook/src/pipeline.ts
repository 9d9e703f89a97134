/**
 * The audio book pipeline: text file → (translation) → speech, chunk by chunk on every core, each
 * chunk encoded to MP3 and checkpointed as soon as it is spoken, then the chunks joined by copying
 * (no second encode) into `results/audiobook/<task id>.mp3`.
 */
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { BlobStore } from "@voiceloc/blobs";
import { ISO_639_2_CODES, isSandboxOwner, type AudioBookWork } from "@voiceloc/contracts";
import {
  analyzeSample,
  applyLexicons,
  LexiconNotSpeakableError,
  resolveClone,
  UnspeakableTextError,
  type CloneEngine, type ClonedVoice, type MtRegistry, type ResolvedVoice, type TtsRegistry } from "@voiceloc/engines";
import { DEFAULT_MAX_BOOK_CHARACTERS } from "@voiceloc/config";
import { fetchToFile, type MediaRootScope, type ObjectStoreOptions } from "@voiceloc/fetch";
import { DEFAULT_MAX_COVER_BYTES, mp3SampleRateFor, type MediaToolkit } from "@voiceloc/media";
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
import { BookInputError, readBook as readBookFile } from "./book/index.ts";
import { timeChapters, type TimedChapter } from "./chapters.ts";
import { joinMp3Chunks, type CountedChunk } from "./join.ts";
import { ChunkQueue, runLanes, splitByWeight } from "./lanes.ts";
import { coreCount, runPool } from "./pool.ts";
import { BookStream } from "./stream.ts";
import { BookTextError, chunkText, cutTextWithin, hasWords, normaliseText, speakableText } from "./text.ts";

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
  /** Most bytes an EPUB may unpack to (every file read from it); more fails the book in plain words. Default 256 MiB. */
  maxUnpackedBytes?: number;
  /** Most characters of a sandbox task's book (owner `sandbox:<account>`; SANDBOX_MAX_BOOK_CHARACTERS); default: maxBookCharacters. */
  sandboxMaxBookCharacters?: number;
  /**
   * Test seam: called once a chunk's MP3 is stored as a checkpoint. A rejection fails the delivery
   * like an engine failure would (the task is retried and resumes from its checkpoints).
   */
  onChunkDone?: (info: ChunkDoneInfo) => void | Promise<void>;
  /** Test and benchmark seam: called once the book's stream has its first playable part (its playlist lists a segment). */
  onFirstStreamPart?: (info: { taskId: string }) => void;
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
/** The checkpoint of an earlier version: the book's text, one untitled chapter. */
const TEXT_CHECKPOINT = "text.txt";
/** The book read from its file: its chapters (title, text), so a redelivery need not fetch and parse it again. */
const CHAPTERS_CHECKPOINT = "chapters.json";
const DEFAULT_MAX_UNPACKED_BYTES = 256 * 1024 * 1024;
const PLAN_CHECKPOINT = "plan.json";
/**
 * The limits of a long book's first chunks, in characters: small, then doubling up to the plan's
 * size. The first chunk (about 15 s of speech) is spoken and encoded on its own in a second or two and
 * is the stream's first part (stream.ts); each next one is about twice as long, so it is ready before
 * the listener has heard the ones before it, while the later chunks stay as big as the engine takes.
 */
const LEAD_CHARS = [250, 500, 1_000, 2_000, 4_000] as const;
/** A cut gets a lead only from this chunk size on: a smaller first chunk is spoken in about a second anyway. */
const LEAD_FROM_CHARS = 3_000;

/** The lead of a new plan whose chunks are cut to `planChars` (none for a short book: see LEAD_CHARS). */
export function leadLimits(planChars: number): number[] {
  if (planChars < LEAD_FROM_CHARS) return [];
  return LEAD_CHARS.filter((limit) => 2 * limit <= planChars);
}

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
  /**
   * The limits of the first chunks of the first chapter (LEAD_CHARS: a small first chunk the stream
   * plays within seconds, then growing ones), the rest of it cut to chunkChars (`cutTextWithin` over
   * both). Absent: no lead (a short book, or a plan of the version without it, replayed as it was).
   */
  leadChars: z.array(z.number().int().min(20)).min(1).optional(),
  /** How chunks are encoded (codec, bitrate, quality); chunks of another encoding are spoken again. */
  encoding: z.string().min(1),
  /** The MP3 sample rate of the book, fixed by the first chunk spoken. */
  sampleRate: z.number().int().positive().optional(),
  /** The chunks of each chapter, in order (no chunk crosses a chapter); absent in plans of the version without chapters. */
  chapterChunks: z.array(z.number().int().min(1)).optional(),
});

const ChaptersSchema = z.object({
  chapters: z.array(z.object({ title: z.string().nullable(), text: z.string() })).min(1),
});
/** A chapter of the book: its title (null: none; titled "Part N" when spoken) and its plain text. */
type BookChapter = z.infer<typeof ChaptersSchema>["chapters"][number];

/** The parts a chapter is translated in: its title (when it has one), then its text cut to `chunkChars`. */
const translationParts = (chapter: BookChapter, chunkChars: number): string[] => [
  ...(chapter.title === null ? [] : [chapter.title]),
  ...chunkText(chapter.text, chunkChars),
];
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
  if (!names.includes(CHAPTERS_CHECKPOINT) && !names.includes(TEXT_CHECKPOINT)) return 0;
  const plan = names.includes(PLAN_CHECKPOINT) ? await ctx.checkpoints.readJson(PLAN_CHECKPOINT, PlanSchema) : undefined;
  if (plan !== undefined) return speakingProgress(Math.min(plan.chunks, names.filter(isChunk).length), plan.chunks);
  const translated = names.filter(isTranslation).length;
  if (task.source_language === task.target_language || translated === 0) return P_TEXT;
  const chapters = names.includes(CHAPTERS_CHECKPOINT)
    ? ((await ctx.checkpoints.readJson(CHAPTERS_CHECKPOINT, ChaptersSchema))?.chapters ?? [])
    : [{ title: null, text: await readFile(await ctx.checkpoints.get(TEXT_CHECKPOINT), "utf8") }];
  const parts = chapters.reduce((n, c) => n + translationParts(c, chunkChars).length, 0);
  return translatingProgress(Math.min(parts, translated), parts);
}


/** The limit of a translated part (and of counting parts for resumed progress) for the `chunkChars` option. */
export function translationChunkChars(chunkChars: number | undefined): number {
  return Math.max(200, Math.floor(chunkChars ?? DEFAULT_CHUNK_CHARS));
}

/** How this delivery speaks the book: its voice, its chunks, the plan stored for redeliveries, the chunks left to speak. */
interface BookCut extends ResolvedVoice {
  chunks: string[];
  /** The chunks of each chapter, in order. */
  chapterChunks: number[];
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
  const maxUnpackedBytes = options.maxUnpackedBytes ?? DEFAULT_MAX_UNPACKED_BYTES;

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
  function checkLength(chapters: readonly BookChapter[], task: AudioBookWork): void {
    const chars = chapters.reduce((n, c) => n + [...c.text].length, 0);
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
      throw taskFailure(error, { scope: "input", ...(name === "input" ? {} : { context: name === "cover" ? "The cover cannot be fetched" : "The voice sample cannot be fetched" }) });
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

  /** The most characters this task's book may have (the sandbox's own bound for a sandbox key). */
  function characterLimit(task: AudioBookWork): number {
    const sandboxMax = options.sandboxMaxBookCharacters;
    return sandboxMax !== undefined && isSandboxOwner(task.account_id) ? Math.min(sandboxMax, maxBookCharacters) : maxBookCharacters;
  }

  /**
   * Step 1: the book's chapters, from their checkpoint (or an earlier version's text checkpoint: one
   * untitled chapter), or fetched and read by `readBook` (text, Markdown, HTML, EPUB, sniffed from the
   * bytes; bounded by the character limit and, for an EPUB, the bytes it unpacks to).
   */
  async function loadChapters(task: AudioBookWork, ctx: TaskContext): Promise<BookChapter[]> {
    const saved = await ctx.checkpoints.readJson(CHAPTERS_CHECKPOINT, ChaptersSchema);
    if (saved !== undefined) {
      checkLength(saved.chapters, task);
      return saved.chapters;
    }
    if (await ctx.checkpoints.has(TEXT_CHECKPOINT)) {
      const chapters = [{ title: null, text: await readFile(await ctx.checkpoints.get(TEXT_CHECKPOINT), "utf8") }];
      checkLength(chapters, task);
      return chapters;
    }
    const path = await fetchFile(task, task.file, "input", fetchOptions.maxBytes ?? DEFAULT_TEXT_MAX_BYTES, ctx);
    let chapters: BookChapter[];
    try {
      const book = await readBookFile(path, { maxCharacters: characterLimit(task), maxUnpackedBytes, signal: ctx.signal });
      chapters = book.chapters.map((c) => ({ title: c.title, text: c.text }));
    } catch (error) {
      if (error instanceof BookInputError && error.reason === "too_long") {
        // The same words as a book counted after reading: name the limit the server applies.
        const limit = characterLimit(task);
        const sandboxMax = options.sandboxMaxBookCharacters;
        const sandbox = sandboxMax !== undefined && isSandboxOwner(task.account_id) && sandboxMax <= maxBookCharacters;
        throw new TaskInputError(
          sandbox
            ? `The book has more than the ${limit} characters a sandbox key may have read (SANDBOX_MAX_BOOK_CHARACTERS): send a shorter text or use a live key.`
            : `The book has more than the ${limit} characters this server accepts for one audio book (MAX_BOOK_CHARACTERS).`,
          { cause: error },
        );
      }
      if (error instanceof BookInputError && error.reason === "empty") throw new TaskInputError("The file contains no text.", { cause: error });
      if (error instanceof BookTextError) throw new TaskInputError(error.message, { cause: error });
      throw error;
    } finally {
      await rm(path, { force: true });
    }
    if (chapters.length === 0) throw new TaskInputError("The file contains no text.");
    if (!chapters.some((c) => hasWords(c.text))) throw new TaskInputError("The file contains no words to read aloud: it has no letters or digits.");
    checkLength(chapters, task);
    await ctx.checkpoints.putJson(CHAPTERS_CHECKPOINT, { chapters });
    return chapters;
  }

  /**
   * Step 2: the chapters in the target language, title and text, part by part (each translated part
   * checkpointed, numbered across the book). Chapters the translation leaves without words are dropped.
   */
  async function translate(task: AudioBookWork, chapters: readonly BookChapter[], ctx: TaskContext): Promise<BookChapter[]> {
    const { source_language: source, target_language: target } = task;
    if (source === target) return chapters.filter((c) => hasWords(c.text));
    const perChapter = chapters.map((c) => translationParts(c, chunkChars));
    const parts = perChapter.flat();
    const translated: string[] = new Array<string>(parts.length).fill("");
    const stored = new Set(await ctx.checkpoints.list());
    let done = 0;
    const report = () => ctx.progress(translatingProgress(done, parts.length), "translating");
    await runPool(
      parts.map((_, i) => i),
      parallelism,
      async (i, signal) => {
        const name = translationCheckpoint(i);
        if (stored.has(name)) {
          translated[i] = await readFile(await ctx.checkpoints.get(name), "utf8");
        } else {
          let out: string;
          try {
            out = await mt.translate({ text: parts[i] ?? "", source, target, signal });
          } catch (error) {
            if (signal.aborted) throw error;
            throw taskFailure(error, { context: `Translating part ${i + 1} of ${parts.length} of the text failed` });
          }
          await ctx.checkpoints.put(name, Buffer.from(out, "utf8"));
          translated[i] = out;
        }
        done++;
        report();
      },
      ctx.signal,
    );
    const out: BookChapter[] = [];
    let at = 0;
    for (const [c, chapter] of chapters.entries()) {
      const count = perChapter[c]?.length ?? 0;
      const mine = translated.slice(at, at + count);
      at += count;
      const title = chapter.title === null ? null : (normaliseText(mine.shift() ?? "").replace(/\s+/gu, " ").trim() || chapter.title);
      const text = normaliseText(mine.join("\n\n"));
      if (hasWords(text)) out.push({ title, text });
    }
    return out;
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
  async function planBook(task: AudioBookWork, spoken: readonly BookChapter[], chosen: ResolvedVoice, ctx: TaskContext): Promise<BookCut> {
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
    // A plan of the version without chapters is kept only for a book of one chapter: its chunks could cross chapters.
    const keep =
      earlier !== undefined &&
      earlier.voice === voice.name &&
      earlier.encoding === encoding &&
      earlier.chunkChars <= engineMax &&
      (earlier.chapterChunks !== undefined || spoken.length === 1);
    const spokenChars = spoken.reduce((n, c) => n + c.text.length, 0);
    // The cut: the earlier plan's (by its limits, when it has them), or chunks as large as the engine
    // takes, yet one per core at least for a shorter book (each core's share at least what starting
    // its encoder costs).
    const planChars = keep ? earlier.chunkChars : Math.min(maxChars, Math.max(ENCODER_START_CHARS, Math.ceil(spokenChars / parallelism)));
    // Each chapter is cut on its own: a chunk never crosses a chapter, so chapters start and end between chunks.
    const chunkLimits = keep && spoken.length === 1 ? earlier.chunkLimits : undefined;
    // A long book's first chapter opens with small chunks, growing (the stream's first part comes early);
    // a kept plan replays its own lead (none in plans of the version without it), so a retry cuts alike.
    const leadChars = chunkLimits !== undefined ? [] : keep ? (earlier.leadChars ?? []) : leadLimits(planChars);
    const cuts = spoken.map((c, i) =>
      chunkLimits !== undefined
        ? cutTextWithin(c.text, chunkLimits)
        : i === 0 && leadChars.length > 0
          ? cutTextWithin(c.text, [...leadChars, planChars])
          : chunkText(c.text, planChars),
    );
    const chunks = cuts.flat();
    const chapterChunks = cuts.map((c) => c.length);
    let plan: Plan = {
      voice: voice.name,
      chunkChars: planChars,
      chunks: chunks.length,
      ...(chunkLimits === undefined ? {} : { chunkLimits }),
      ...(leadChars.length === 0 ? {} : { leadChars }),
      encoding,
      chapterChunks,
    };
    let stored = new Set(await ctx.checkpoints.list());
    // A kept cut that no longer gives the planned number of chunks is not trusted either.
    const changed =
      earlier !== undefined && (!keep || earlier.chunks !== plan.chunks || (earlier.chapterChunks !== undefined && earlier.chapterChunks.join(",") !== chapterChunks.join(",")));
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
    return { engine, voice, chunks, chapterChunks, plan, missing, lexicons: task.lexicons };
  }

  /**
   * Step 4: speaks every missing chunk and encodes it, one encoder per run of chunks on every core,
   * checkpointing each chunk's MP3 frames as soon as the encoder is past it (lanes.ts). Resolves to the
   * chunks this delivery spoke, as the lanes counted their frames (the join need not read them twice).
   */
  async function speakBook(cut: BookCut, ctx: TaskContext, stream: BookStream): Promise<Map<number, CountedChunk>> {
    const { engine, voice, chunks, missing } = cut;
    let plan = cut.plan;
    let done = chunks.length - missing.length;
    const report = () => ctx.progress(speakingProgress(done, chunks.length), "speaking");
    report();
    const counted = new Map<number, CountedChunk>();
    let rateFixed: Promise<number> | undefined = plan.sampleRate === undefined ? undefined : Promise.resolve(plan.sampleRate);
    const weight = (i: number) => chunks[i]?.length ?? 1;
    // With a lead, the book's first chunk is a run of its own: its encoder ends with it, so its frames
    // are stored (and its stream part encoded) as soon as it is spoken, not once the next chunk pushes
    // them out of the encoder's buffers. The lane that holds it starts with it.
    const alone = (plan.leadChars?.length ?? 0) > 0 && missing.includes(0) ? [0] : [];
    const queue = new ChunkQueue(splitByWeight(missing, weight, parallelism), parallelism, weight, ENCODER_START_CHARS, alone);
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
        // The listener's part of this chunk, encoded from the stored MP3 beside the lanes (stream.ts).
        stream.add(i, await ctx.checkpoints.get(chunkCheckpoint(i)));
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
   * process) into one file of the work dir. Resolves to its path and each chunk's measured seconds.
   */
  async function joinChunks(chunks: number, counted: Map<number, CountedChunk>, ctx: TaskContext): Promise<{ path: string; seconds: number; chunkSeconds: number[] }> {
    const inputs: string[] = [];
    for (let i = 0; i < chunks; i++) inputs.push(await ctx.checkpoints.get(chunkCheckpoint(i)));
    const path = join(ctx.workDir, "joined.mp3");
    await rm(path, { force: true });
    try {
      const joined = await joinMp3Chunks(inputs, path, (i) => counted.get(i));
      return { path, seconds: joined.seconds, chunkSeconds: joined.chunkSeconds };
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      throw taskFailure(error, { context: "The parts of the audio book could not be joined" });
    }
  }

  /**
   * The book's cover, fetched like its file (SSRF-guarded) and checked (`checkCover`: JPEG or PNG,
   * bounded in bytes and pixels). One that cannot be fetched or is refused is left out, with a warning.
   */
  async function fetchCover(task: AudioBookWork, ctx: TaskContext, warnings: string[]): Promise<string | undefined> {
    const reference = task.audio_book_cover;
    if (reference === undefined || reference === null || reference === "") return undefined;
    let path: string | undefined;
    try {
      path = await fetchFile(task, reference, "cover", DEFAULT_MAX_COVER_BYTES, ctx);
      await media.checkCover(path, { signal: ctx.signal });
      return path;
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      ctx.logger.info({ reason }, "the cover is left out of the book");
      warnings.push(`The cover was not embedded: ${reason.replace(/\s+$/u, "")}`);
      if (path !== undefined) await rm(path, { force: true });
      return undefined;
    }
  }

  /**
   * Step 6: the book file: the joined MP3 wrapped with its chapters, tags and cover (`wrapAudioBook`:
   * MP3 frames copied behind ID3v2.3 CHAP/CTOC/APIC, or AAC in an M4B), stored as the result.
   */
  async function writeBook(
    task: AudioBookWork,
    joined: { path: string; seconds: number },
    chapters: TimedChapter[],
    narrator: string,
    cover: string | undefined,
    ctx: TaskContext,
  ): Promise<string> {
    const format = task.output_format ?? "mp3";
    const bookPath = join(ctx.workDir, `book.${format}`);
    await rm(bookPath, { force: true });
    try {
      await media.wrapAudioBook({
        input: joined.path,
        outPath: bookPath,
        format,
        chapters: chapters.map((c) => ({ title: c.title, startSeconds: c.start_seconds, endSeconds: c.end_seconds })),
        tags: { title: task.name, album: task.name, narrator, artist: narrator, language: ISO_639_2_CODES[task.target_language], genre: "Audiobook" },
        cover,
        signal: ctx.signal,
      });
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      throw taskFailure(error, { context: "The audio book file could not be written" });
    } finally {
      await rm(joined.path, { force: true });
    }
    const resultKey = ctx.resultKey(format);
    await blobs.put(resultKey, { path: bookPath, move: true }, { contentType: format === "mp3" ? "audio/mpeg" : "audio/mp4" });
    return resultKey;
  }

  async function narrate(task: AudioBookWork, ctx: TaskContext, resolved: ResolvedVoice, started: number): Promise<TaskResult> {
    const log = ctx.logger;
    ctx.progress(0, "fetching the text");
    const chapters = await loadChapters(task, ctx);
    ctx.progress(P_TEXT, "text ready");
    const spoken = await translate(task, chapters, ctx);
    if (spoken.length === 0) throw new TaskInputError(`The translation into ${task.target_language} left no words to read aloud.`);
    ctx.progress(P_TRANSLATED, "translated");

    const cut = await planBook(task, spoken, resolved, ctx);
    const { chunks, missing, voice } = cut;
    const resumed = chunks.length - missing.length;
    log.info(
      { chapters: spoken.length, spokenChars: spoken.reduce((n, c) => n + c.text.length, 0), chunks: chunks.length, resumed, voice: voice.name, parallelism },
      resumed > 0 ? "resuming the audio book" : "speaking the audio book",
    );
    // The HLS stream of the book (stream.ts): parts of chunks earlier deliveries spoke are kept or encoded first.
    const stream = new BookStream({ blobs, media, taskId: ctx.taskId, workDir: ctx.workDir, logger: log, signal: ctx.signal,
      onFirstPart: () => options.onFirstStreamPart?.({ taskId: ctx.taskId }),
    });
    let counted: Map<number, CountedChunk>;
    try {
      await stream.restore(new Set(missing));
      const respoken = new Set(missing);
      for (let i = 0; i < chunks.length; i++) if (!respoken.has(i) && !stream.has(i)) stream.add(i, await ctx.checkpoints.get(chunkCheckpoint(i)));
      counted = await speakBook(cut, ctx, stream);
      await stream.finish(chunks.length);
    } catch (error) {
      await stream.stop();
      throw error;
    }
    ctx.progress(P_SPOKEN, "joining");

    const joined = await joinChunks(chunks.length, counted, ctx);
    const timed = timeChapters(
      spoken.map((c, i) => ({ title: c.title, chunks: cut.chapterChunks[i] ?? 0 })),
      joined.chunkSeconds,
      task.target_language,
    );
    const warnings: string[] = [];
    const cover = await fetchCover(task, ctx, warnings);
    const resultKey = await writeBook(task, joined, timed, voice.name, cover, ctx);
    if (cover !== undefined) await rm(cover, { force: true });
    log.info(
      { resultKey, seconds: Math.round(joined.seconds * 10) / 10, chapters: timed.length, chunks: chunks.length, spoken: missing.length, resumed, ms: Math.round(performance.now() - started) },
      "audio book ready",
    );
    return { resultKey, chapters: timed, warnings };
  }

  return async function handle(task: AudioBookWork, ctx: TaskContext): Promise<TaskResult> {
    const log = ctx.logger;
    const started = performance.now();
    // The checks that need no file first: a book that cannot be read in its voice fails before any work.
    if (!task.clone && !task.use_voice_clone) resolveVoice(task, undefined);
    checkTranslation(task);
    const cloned = await bookClone(task, ctx);
    try {
      return await narrate(task, ctx, resolveVoice(task, cloned?.clone), started);
    } finally {
      // The book's own clone is removed at the engine however the book ends (a redelivery makes it again).
      if (cloned?.own === true && options.clones !== undefined) await removeTaskClone(options.clones, cloned.clone, log);
    }
  };
}
