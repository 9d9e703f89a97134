import { constants } from "node:fs";
import { access, mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Logger } from "@voiceloc/log";
import { outOfMemoryReason, ranOutOfMemory, runProcess, type MediaToolkit } from "@voiceloc/media";
import { endSentence } from "../errors.ts";
import type { Language } from "../languages.ts";
import { readWavInfo } from "../wav.ts";
import { mediaFailure, RecognitionError, RecognitionNotSupportedError, SttConfigError, SttEngineUnavailableError } from "./errors.ts";
import { buildTranscript, DEFAULT_SEGMENT_LIMITS, segmentsFromUtterances, type SegmentLimits } from "./segments.ts";
import type { SttCapabilities, SttEngine, TranscribeRequest, Transcript, TranscriptWord } from "./types.ts";

/** Where Debian's `pocketsphinx-en-us` package installs the US English model. */
/** How many times its CPU budget a recognition may take on the wall clock before it is taken for hung. */
const HUNG_FACTOR = 10;

export const POCKETSPHINX_DEFAULT_MODEL_DIR = "/usr/share/pocketsphinx/model/en-us";

export interface PocketsphinxModel {
  /** Acoustic model directory (`-hmm`). */
  hmm: string;
  /** Language model (`-lm`). */
  lm: string;
  /** Pronunciation dictionary (`-dict`). */
  dict: string;
}

export interface PocketsphinxOptions {
  logger: Logger;
  /** Converts any input to the 16 kHz mono WAV pocketsphinx reads. */
  media: MediaToolkit;
  /** Default "pocketsphinx_continuous" from PATH. */
  binary?: string;
  /** Model directory in the Debian layout: `en-us/` (acoustic model), `en-us.lm.bin`, `cmudict-en-us.dict`. */
  modelDir?: string;
  /** Engine id, default "pocketsphinx". */
  id?: string;
  /**
   * CPU time limit of one recognition run (a run starved of the cores is not stopped for waiting; ten
   * times this on the wall clock stops a hung one). Default: 2 minutes plus twice the audio duration.
   */
  timeoutMs?: number;
  /** Longest cue made from one utterance (default 7 s, 80 characters); longer ones are split at pauses. */
  segmentLimits?: Partial<SegmentLimits>;
}

/** Tokens pocketsphinx prints that are not words: `<s>`, `</s>`, `<sil>`, `[NOISE]`, `[SPEECH]`, `++GARBAGE++`. */
export function isPocketsphinxFiller(token: string): boolean {
  return /^<.*>$/.test(token) || /^\[.*\]$/.test(token) || /^\+\+.*\+\+$/.test(token);
}

const WORD_LINE = /^(\S+)\s+(-?\d+(?:\.\d+)?)\s+(-?\d+(?:\.\d+)?)\s+(\S+)$/;

/**
 * Reads `pocketsphinx_continuous -time yes` output line by line. Each utterance is printed as its
 * hypothesis line followed by one `word start end confidence` line per token, from `<s>` to `</s>`.
 * Filler tokens are dropped and pronunciation variants (`and(2)`) lose their suffix; utterances
 * without words are skipped.
 */
export class PocketsphinxOutputParser {
  private readonly utterances: TranscriptWord[][] = [];
  private current: TranscriptWord[] = [];

  line(raw: string): void {
    const text = raw.trim();
    const match = WORD_LINE.exec(text);
    if (!match) {
      // A hypothesis line (possibly empty) starts the next utterance.
      this.flush();
      return;
    }
    const [, token = "", startText = "", endText = "", confidenceText = ""] = match;
    if (token === "<s>") this.flush();
    if (token === "</s>") {
      this.flush();
      return;
    }
    if (isPocketsphinxFiller(token)) return;
    const word = token.replace(/\(\d+\)$/, "");
    const start = Number(startText);
    const end = Number(endText);
    if (word === "" || !Number.isFinite(start) || !Number.isFinite(end)) return;
    const entry: TranscriptWord = { word, start, end: Math.max(start, end) };
    const confidence = Number(confidenceText);
    if (Number.isFinite(confidence)) entry.confidence = Math.min(1, Math.max(0, Math.round(confidence * 1000) / 1000));
    this.current.push(entry);
  }

  /** The utterances read so far, each a non-empty list of words in time order. */
  finish(): TranscriptWord[][] {
    this.flush();
    return this.utterances.map((u) => [...u]);
  }

  private flush(): void {
    if (this.current.length > 0) this.utterances.push(this.current.sort((a, b) => a.start - b.start));
    this.current = [];
  }
}

/** Utterances (lists of timed words) from the whole standard output of `pocketsphinx_continuous -time yes`. */
export function parsePocketsphinxOutput(output: string): TranscriptWord[][] {
  const parser = new PocketsphinxOutputParser();
  for (const line of output.split(/\r?\n/)) parser.line(line);
  return parser.finish();
}

async function readable(path: string): Promise<boolean> {
  try {
    await access(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/** Checks that a model directory holds the acoustic model, language model and dictionary. */
export async function findPocketsphinxModel(modelDir: string = POCKETSPHINX_DEFAULT_MODEL_DIR): Promise<PocketsphinxModel> {
  const dir = resolve(modelDir);
  const model: PocketsphinxModel = { hmm: join(dir, "en-us"), lm: join(dir, "en-us.lm.bin"), dict: join(dir, "cmudict-en-us.dict") };
  const required = [join(model.hmm, "mdef"), join(model.hmm, "means"), model.lm, model.dict];
  const missing: string[] = [];
  for (const file of required) if (!(await readable(file))) missing.push(file);
  if (missing.length > 0) {
    throw new SttEngineUnavailableError(
      `The English speech recognition model is not installed in ${dir} (missing ${missing.join(", ")}); install the "pocketsphinx-en-us" package or set the model directory.`,
    );
  }
  return model;
}

/** The ERROR/FATAL lines at the end of a pocketsphinx log, without source locations. */
async function logErrors(logFile: string): Promise<string[]> {
  try {
    const handle = await open(logFile, "r");
    try {
      const { size } = await handle.stat();
      const length = Math.min(size, 32 * 1024);
      const buffer = Buffer.alloc(length);
      await handle.read(buffer, 0, length, size - length);
      return buffer
        .toString("utf8")
        .split(/\r?\n/)
        .filter((line) => /^(ERROR|FATAL)/.test(line))
        .map((line) => line.replace(/^(ERROR|FATAL(?:_ERROR)?):\s*("[^"]*", line \d+:\s*|\S+\.c\(\d+\):\s*)?/, "").trim())
        .filter((line) => line !== "")
        .slice(-3);
    } finally {
      await handle.close();
    }
  } catch {
    return [];
  }
}

/**
 * Offline English recognition with pocketsphinx 0.8 (`pocketsphinx_continuous`). Checks the
 * program and model when created; throws SttEngineUnavailableError when either is missing.
 * Each pocketsphinx utterance becomes a segment; utterances over the segment limits are split at
 * the longest pauses. Silence, tones and music give an empty transcript.
 */
export async function createPocketsphinxEngine(options: PocketsphinxOptions): Promise<SttEngine> {
  const id = options.id ?? "pocketsphinx";
  const binary = options.binary ?? "pocketsphinx_continuous";
  const limits: SegmentLimits = { ...DEFAULT_SEGMENT_LIMITS, ...options.segmentLimits };
  if (!(limits.maxSeconds > 0 && limits.maxChars > 0)) throw new SttConfigError("The longest subtitle cue must be positive in seconds and characters.");
  if (options.timeoutMs !== undefined && !(options.timeoutMs > 0)) throw new SttConfigError("The speech recognition time limit must be positive.");
  const log = options.logger.child({ component: "stt", engine: id });

  const check = await runProcess(binary, [], { timeoutMs: 15_000, stderrLines: 10 });
  if (check.spawnError || check.timedOut || !check.stderrTail.some((line) => /infile|pocketsphinx/i.test(line))) {
    log.debug({ binary, err: check.spawnError, stderr: check.stderrTail }, "pocketsphinx_continuous not usable");
    throw new SttEngineUnavailableError(
      `The pocketsphinx speech recognition program is not installed ("${binary}" could not be run); install the "pocketsphinx" package.`,
      { cause: check.spawnError },
    );
  }
  const model = await findPocketsphinxModel(options.modelDir);
  log.debug({ binary, model }, "pocketsphinx ready");
  const capabilities: SttCapabilities = { languages: ["English"], kind: "offline" };

  async function transcribe(request: TranscribeRequest): Promise<Transcript> {
    const language: Language = request.language;
    if (language !== "English") {
      throw new RecognitionNotSupportedError(language, `The ${id} speech recognition engine only understands English, not ${language}.`);
    }
    const { signal } = request;
    const cancelled = (): RecognitionError => new RecognitionError("RECOGNITION_CANCELLED", "Speech recognition was cancelled.");
    if (signal?.aborted) throw cancelled();
    const dir = await mkdtemp(join(tmpdir(), "voiceloc-stt-"));
    try {
      const wav = join(dir, "speech.wav");
      try {
        await options.media.extractSpeechWav({ input: request.path, outPath: wav, sampleRate: 16000, signal });
      } catch (error) {
        throw mediaFailure(error);
      }
      const info = await readWavInfo(wav);
      if (!info || info.sampleRate !== 16000 || info.channels !== 1 || info.bitsPerSample !== 16) {
        throw new RecognitionError("RECOGNITION_FAILED", "The audio could not be prepared for speech recognition.");
      }
      const durationSeconds = info.dataBytes / (16000 * 2);
      if (durationSeconds < 0.1) return buildTranscript(language, durationSeconds, []);

      const logFile = join(dir, "pocketsphinx.log");
      const parser = new PocketsphinxOutputParser();
      // The limit is CPU time: niced under busier programs, pocketsphinx may wait far longer than it works, and a
      // wall-clock limit would stop it (and its retry, from zero) for waiting. The wall clock only stops a hung one.
      const cpuBudgetMs = options.timeoutMs ?? 120_000 + Math.ceil(durationSeconds * 2_000);
      const timeoutMs = cpuBudgetMs * HUNG_FACTOR;
      const args = ["-infile", wav, "-hmm", model.hmm, "-lm", model.lm, "-dict", model.dict, "-logfn", logFile, "-time", "yes"];
      log.debug({ args, seconds: durationSeconds }, "running pocketsphinx");
      const result = await runProcess(binary, args, {
        signal,
        timeoutMs,
        cpuTimeoutSeconds: cpuBudgetMs / 1000,
        onStdoutLine: (line) => parser.line(line),
        stderrLines: 20,
      });
      if (result.spawnError) {
        throw new SttEngineUnavailableError(`The pocketsphinx speech recognition program could not be started (${result.spawnError.code ?? result.spawnError.message}).`, {
          cause: result.spawnError,
        });
      }
      if (result.aborted) throw cancelled();
      if (result.timedOut) {
        throw new RecognitionError("RECOGNITION_FAILED", "Speech recognition took too long and was stopped.", { details: await logErrors(logFile) });
      }
      if (ranOutOfMemory(result)) {
        log.warn({ exitCode: result.exitCode, signal: result.exitSignal, stderr: result.stderrTail.slice(-3) }, "pocketsphinx ran out of memory");
        throw new RecognitionError("RECOGNITION_OUT_OF_MEMORY", `Speech recognition stopped: ${outOfMemoryReason(result.memoryLimitBytes)}.`);
      }
      if (result.exitCode !== 0) {
        const details = [...(await logErrors(logFile)), ...result.stderrTail.slice(-3)];
        log.warn({ exitCode: result.exitCode, signal: result.exitSignal, details }, "pocketsphinx failed");
        const reason = details[0];
        throw new RecognitionError("RECOGNITION_FAILED", endSentence(`Speech recognition failed${reason === undefined ? "" : `: ${reason}`}`), { details });
      }
      const utterances = parser.finish();
      const transcript = buildTranscript(language, durationSeconds, segmentsFromUtterances(utterances, limits));
      log.debug({ seconds: durationSeconds, utterances: utterances.length, segments: transcript.segments.length }, "transcribed");
      return transcript;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  return { id, capabilities: () => ({ languages: [...capabilities.languages], kind: capabilities.kind }), transcribe };
}
