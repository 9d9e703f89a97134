import { randomBytes } from "node:crypto";
import { rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { Logger } from "@voiceloc/log";
import { FfmpegFailedError, FfmpegNotFoundError, MediaCancelledError, type MediaErrorCode } from "./errors.ts";
import { outOfMemoryReason, ranOutOfMemory, runProcess, type ProcessResult, type RunProcessOptions } from "./process.ts";

export interface FfmpegProgress {
  /** Media time written so far, in seconds. */
  outTimeSeconds: number;
  /** outTimeSeconds / expectedDurationSeconds, clamped to 0..1, when a duration was given. */
  fraction?: number;
  /** Processing speed as a multiple of real time, when ffmpeg reports it. */
  speed?: number;
  /** True on the final report. */
  done: boolean;
}

export interface RunFfmpegOptions {
  /** The ffmpeg binary (from `resolveFfmpeg`). */
  ffmpegPath: string;
  signal?: AbortSignal | undefined;
  onProgress?: ((progress: FfmpegProgress) => void) | undefined;
  /** Expected duration of the output, used to compute `fraction`. */
  expectedDurationSeconds?: number | undefined;
  /** Kill ffmpeg after this many milliseconds. */
  timeoutMs?: number | undefined;
  logger?: Logger | undefined;
  /** What the run does, in plain words, for error messages ("Encoding the speech"). */
  what?: string | undefined;
  /** ffmpeg's standard input (`-i pipe:0`), streamed with backpressure; its failure is the run's error. */
  stdin?: RunProcessOptions["stdin"];
  /** ffmpeg's standard output as it arrives (`pipe:1` outputs; not with onProgress). */
  onStdout?: ((chunk: Buffer) => void) | undefined;
}

export interface FfmpegRunResult {
  /** ffmpeg's last diagnostic lines (filters such as volumedetect report here). */
  stderrTail: string[];
}

/** What a decoder says of a picture over `-max_pixels` (it refuses it before allocating it). */
const PICTURE_OVER_LIMIT = /Picture size (\d+)x(\d+) exceeds specified max pixel count (\d+)/;

/** The picture a decoder refused for being over `-max_pixels`, and that limit, from its diagnostics. */
export function pictureOverLimit(stderrTail: readonly string[]): { width: number; height: number; limit: number } | undefined {
  const found = PICTURE_OVER_LIMIT.exec(stderrTail.join("\n"));
  return found ? { width: Number(found[1]), height: Number(found[2]), limit: Number(found[3]) } : undefined;
}

/** "its picture is 8000×8000 pixels (64 megapixels), more than the 35.4 megapixels this service takes" (`whose`: "its"). */
export function pictureOverLimitReason(picture: { width: number; height: number; limit: number }, whose = "its"): string {
  const { width, height, limit } = picture;
  return `${whose} picture is ${width}×${height} pixels (${megapixels(width * height)} megapixels), more than the ${megapixels(limit)} megapixels this service takes`;
}

/** Megapixels in plain figures: "64", "35.4", "0.3". */
export function megapixels(pixels: number): string {
  const value = pixels / 1_000_000;
  return value >= 10 ? String(Math.round(value * 10) / 10) : String(Math.round(value * 100) / 100);
}

/**
 * Turns ffmpeg's last stderr lines into an error code and a sentence a user can read. The sentence
 * never quotes stderr (it holds paths and heap addresses); the lines stay on the error for logs.
 */
export function describeFfmpegFailure(
  stderrTail: readonly string[],
  inputs: readonly string[] = [],
  exitCode: number | null = null,
): { code: MediaErrorCode; reason: string } {
  const text = stderrTail.join("\n");
  const picture = pictureOverLimit(stderrTail);
  if (picture) return { code: "MEDIA_TOO_LARGE", reason: pictureOverLimitReason(picture) };
  const inputFailed = stderrTail.some((line) => inputs.some((input) => line.startsWith(`${input}: `)));
  if (/not on whitelist/i.test(text)) {
    return { code: "MEDIA_FORMAT_NOT_ALLOWED", reason: "the file is not in a supported audio or video format" };
  }
  if (/matches no streams|does not contain any stream|Output file #0 does not contain any stream/i.test(text)) {
    return { code: "MEDIA_NO_AUDIO", reason: "the file has no audio track that could be used" };
  }
  if (
    /Invalid data found when processing input|could not find codec parameters|moov atom not found|EBML header parsing failed|Error while opening decoder for input stream|Decoder requires|unspecified number of channels|Invalid (?:sample rate|channel count|number of channels)/i.test(text) ||
    inputFailed
  ) {
    return { code: "MEDIA_UNREADABLE", reason: "the file is damaged or is not a media file" };
  }
  if (/No such file or directory/i.test(text)) {
    return { code: "MEDIA_UNREADABLE", reason: "a file it needed does not exist" };
  }
  if (/No space left on device/i.test(text)) return { code: "FFMPEG_FAILED", reason: "the disk is full" };
  return { code: "FFMPEG_FAILED", reason: exitCode === null ? "it stopped without saying why" : `it stopped with exit code ${exitCode}` };
}

/** Maps a finished process to an error, or undefined when it succeeded. */
export function ffmpegResultError(
  program: string,
  binary: string,
  result: ProcessResult,
  what: string,
  args: readonly string[] = [],
): Error | undefined {
  if (result.spawnError) {
    return new FfmpegNotFoundError(`${what} failed: ${program} could not be started from "${binary}" (${result.spawnError.code ?? result.spawnError.message}).`, {
      cause: result.spawnError,
    });
  }
  if (result.aborted) return new MediaCancelledError(what);
  const details = { exitCode: result.exitCode, exitSignal: result.exitSignal, stderrTail: result.stderrTail };
  if (result.timedOut) return new FfmpegFailedError("FFMPEG_FAILED", `${what} took too long and was stopped.`, details);
  if (result.exitCode === 0) return undefined;
  // A picture over the limit is refused by the decoder; a program out of memory (its limit, or the kernel's OOM killer) is
  // the file's size, not a passing fault: both are the input's, never worth retrying.
  if (pictureOverLimit(result.stderrTail) === undefined && ranOutOfMemory(result)) {
    return new FfmpegFailedError("MEDIA_TOO_LARGE", `${what} failed: ${outOfMemoryReason(result.memoryLimitBytes)}.`, details);
  }
  const inputs = args.flatMap((arg, i) => (arg === "-i" && args[i + 1] !== undefined ? [args[i + 1] as string] : []));
  const described = describeFfmpegFailure(result.stderrTail, inputs, result.exitCode);
  // ffprobe reads exactly one file and writes none: when it exits with an error, that file cannot be read.
  const { code, reason } =
    program === "ffprobe" && described.code === "FFMPEG_FAILED" && result.exitCode !== null
      ? { code: "MEDIA_UNREADABLE" as const, reason: "the file is damaged or is not a media file" }
      : described;
  return new FfmpegFailedError(code, `${what} failed: ${reason}.`, details);
}

function parseSeconds(value: string): number | undefined {
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? n / 1_000_000 : undefined;
}

/** Runs ffmpeg with a built argument array; rejects with a readable error carrying ffmpeg's last stderr lines. */
export async function runFfmpeg(args: readonly string[], options: RunFfmpegOptions): Promise<FfmpegRunResult> {
  const what = options.what ?? "Processing the media";
  const { onProgress, expectedDurationSeconds } = options;
  let lastOutTime = 0;
  let lastSpeed: number | undefined;
  const report = (done: boolean): void => {
    if (!onProgress) return;
    const progress: FfmpegProgress = { outTimeSeconds: lastOutTime, done };
    if (expectedDurationSeconds !== undefined && expectedDurationSeconds > 0) {
      progress.fraction = done ? 1 : Math.min(1, Math.max(0, lastOutTime / expectedDurationSeconds));
    }
    if (lastSpeed !== undefined) progress.speed = lastSpeed;
    try {
      onProgress(progress);
    } catch (error) {
      options.logger?.warn({ err: error }, "progress callback threw");
    }
  };
  const fullArgs = onProgress ? ["-progress", "pipe:1", ...args] : [...args];
  options.logger?.debug({ args: fullArgs }, "running ffmpeg");
  if (onProgress && options.onStdout) throw new Error("runFfmpeg: onProgress and onStdout both use standard output.");
  const result = await runProcess(options.ffmpegPath, fullArgs, {
    signal: options.signal,
    stdin: options.stdin,
    onStdout: options.onStdout,
    timeoutMs: options.timeoutMs,
    stderrLines: 40,
    onStdoutLine: onProgress
      ? (line) => {
          const eq = line.indexOf("=");
          if (eq < 0) return;
          const key = line.slice(0, eq);
          const value = line.slice(eq + 1).trim();
          if (key === "out_time_us" || key === "out_time_ms") {
            const seconds = parseSeconds(value);
            if (seconds !== undefined) lastOutTime = seconds;
          } else if (key === "speed") {
            const speed = Number.parseFloat(value);
            lastSpeed = Number.isFinite(speed) ? speed : undefined;
          } else if (key === "progress") {
            report(value === "end");
          }
        }
      : undefined,
  });
  // A failing input feeder (or output consumer) stopped ffmpeg: its own error is the cause.
  if (result.stdinError !== undefined && !result.aborted) throw result.stdinError;
  const error = ffmpegResultError("ffmpeg", options.ffmpegPath, result, what, fullArgs);
  if (error) {
    options.logger?.debug({ stderr: result.stderrTail, code: result.exitCode }, "ffmpeg failed");
    throw error;
  }
  return { stderrTail: result.stderrTail };
}

/** A temporary path beside `finalPath` (same file system, so the rename is atomic). */
export function tempSiblingPath(finalPath: string): string {
  return join(dirname(finalPath), `.${basename(finalPath)}.${randomBytes(6).toString("hex")}.tmp`);
}

/**
 * Runs `produce` with a temporary path beside `finalPath`, then renames it into place; on failure the
 * temporary file is removed and `finalPath` is left untouched.
 */
export async function withTempOutput<T>(finalPath: string, produce: (tempPath: string) => Promise<T>): Promise<T> {
  const temp = tempSiblingPath(finalPath);
  try {
    const value = await produce(temp);
    await rename(temp, finalPath);
    return value;
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
