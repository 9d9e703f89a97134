/**
 * `voiceloc`: the command line over the SDK. `runCli` is the whole program without the process
 * (arguments, environment, streams and an abort signal are passed in), so tests run it too.
 */
import { stat } from "node:fs/promises";
import { basename, extname, join, resolve } from "node:path";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { createClient, unwrap, type VoicelocClient } from "../client.ts";
import {
  ApiError,
  AuthenticationError,
  ConnectionError,
  NotFoundError,
  RateLimitError,
  TaskFailedError,
  ValidationError,
  WaitTimeoutError,
  formatValidationItems,
} from "../errors.ts";
import type { TaskKind, TaskRecord } from "../wait.ts";
import { EXIT, type ExitName } from "./exit-codes.ts";
import { progressView, type ProgressView } from "./progress.ts";

export interface CliIO {
  /** `VOICELOC_URL`, `VOICELOC_API_KEY` (flags override). */
  env: { url?: string | undefined; apiKey?: string | undefined };
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  /** Relative paths resolve here. */
  cwd: string;
  /** Aborted on Ctrl-C: the command stops waiting and exits 130. */
  signal?: AbortSignal;
  /** Used when `--url` and VOICELOC_URL are both absent. */
  defaultUrl?: string;
  fetch?: typeof globalThis.fetch;
}

/** Thrown for command-line and configuration problems (exit 2). */
export class UsageError extends Error {}

/** The abort reason the entry point uses for Ctrl-C / SIGTERM. */
export class InterruptedError extends Error {
  constructor(signal: string) {
    super(`interrupted (${signal})`);
  }
}

const LANGUAGES = [
  ["French", "fr"],
  ["English", "en"],
  ["Amharic", "am"],
  ["Swahili", "sw"],
  ["Chinese", "zh"],
  ["Japanese", "ja"],
  ["Korean", "ko"],
  ["German", "de"],
  ["Russian", "ru"],
  ["Portuguese", "pt"],
  ["Spanish", "es"],
  ["Italian", "it"],
  ["Arabic", "ar"],
  ["Dutch", "nl"],
  ["Hindi", "hi"],
  ["Urdu", "ur"],
] as const;

/** `spanish`, `Spanish`, `es` → `Spanish`; anything else is sent as given (the API answers 422). */
export function languageName(value: string): string {
  const lower = value.trim().toLowerCase();
  for (const [name, code] of LANGUAGES) if (name.toLowerCase() === lower || code === lower) return name;
  return value;
}

const REMOTE = /^(https?|s3|gs):\/\//i;

interface Globals {
  url?: string;
  apiKey?: string;
  json?: boolean;
  timeout?: number;
}

interface Context {
  client: VoicelocClient;
  json: boolean;
  timeoutMs: number | undefined;
  progress: ProgressView;
  io: CliIO;
  /** The record being waited for, named when interrupted. */
  current?: { kind: string; id: string };
}

export async function runCli(argv: readonly string[], io: CliIO): Promise<number> {
  let json = argv.includes("--json");
  let exitCode: number = EXIT.ok;
  let context: Context | undefined;
  const program = new Command("voiceloc")
    .description("Voice Localization Service from the command line: audio books, subtitles, voice streams, speech.")
    .option("--url <url>", "service base URL (env VOICELOC_URL; default http://localhost:8080)")
    .option("--api-key <key>", "API key (env VOICELOC_API_KEY)")
    .option("--json", "print one JSON document on stdout instead of text (no progress bar)")
    .option("--timeout <seconds>", "stop waiting for a task after this many seconds (exit 8)", positiveNumber)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .showHelpAfterError("(run `voiceloc --help` for usage)")
    .addHelpText(
      "after",
      `
A local <file> is uploaded (POST /v1/uploads). A URL (http(s)://, s3://, gs://), an upload:<id>, or
a path that does not exist locally is sent as it is (a path is then read under the server's MEDIA_ROOT).

Exit codes: 0 ok, 1 other error, 2 usage, 3 authentication, 4 validation (422), 5 not found,
6 task failed, 7 network, 8 timeout, 130 interrupted.`,
    );

  const makeContext = (): Context => {
    const globals = program.opts<Globals>();
    json = globals.json === true;
    const apiKey = globals.apiKey ?? io.env.apiKey;
    if (!apiKey) throw new AuthenticationError(401, { detail: "no API key: set VOICELOC_API_KEY or pass --api-key" }, { method: "-", url: "-" }, "no API key: set VOICELOC_API_KEY or pass --api-key");
    const baseUrl = globals.url ?? io.env.url ?? io.defaultUrl ?? "http://localhost:8080";
    if (!/^https?:\/\//i.test(baseUrl)) throw new UsageError(`--url / VOICELOC_URL must be an http(s) URL, got ${JSON.stringify(baseUrl)}`);
    const client = createClient({ baseUrl, apiKey, ...(io.fetch ? { fetch: io.fetch } : {}) });
    const showBar = !json && io.stdout.isTTY === true;
    context = {
      client,
      json,
      timeoutMs: globals.timeout !== undefined ? globals.timeout * 1000 : undefined,
      progress: progressView(showBar, io.stderr),
      io,
    };
    return context;
  };

  program
    .command("audiobook")
    .description("text file → audio book MP3 (translated when --from and --to differ)")
    .argument("<file>", "text file: local path (uploaded), URL, upload:<id> or MEDIA_ROOT path")
    .requiredOption("--from <language>", "language of the text")
    .requiredOption("--to <language>", "language of the audio")
    .option("-o, --output <file>", "where to write the MP3 (default <name>.<language>.mp3)")
    .option("--voice <name>", "preset voice (see GET /v1/voices)")
    .option("--name <title>", "title of the audio book (default: the file name)")
    .option("--no-upload", "never upload: send <file> to the server as it is")
    .action(async (file: string, opts: { from: string; to: string; output?: string; voice?: string; name?: string; upload: boolean }) => {
      const ctx = makeContext();
      const reference = await inputReference(ctx, file, opts.upload);
      const data = unwrap(await ctx.client.POST("/v1/audio_books/", {
        body: {
          file: reference,
          name: opts.name ?? stem(file),
          source_language: languageName(opts.from) as never,
          target_language: languageName(opts.to) as never,
          use_voice_clone: false,
          ...(opts.voice ? { preset_voice_name: opts.voice } : {}),
        },
      }));
      const record = await follow(ctx, "audio_book", data);
      const output = resolve(io.cwd, opts.output ?? `${stem(file)}.${languageName(opts.to).toLowerCase()}.mp3`);
      const files = [await save(ctx, record.localized_file, output)];
      finish(ctx, "audio_book", record, files);
    });

  program
    .command("subtitle")
    .description("video → subtitles (side file, or burned into the video)")
    .argument("<video>", "video file: local path (uploaded), URL, upload:<id> or MEDIA_ROOT path")
    .requiredOption("--to <language>", "language of the subtitles")
    .option("--from <language>", "language spoken in the video", "English")
    .addOption(new Option("--mode <mode>", "burn_in: a video with the subtitles drawn in; side_file: only the subtitle file").choices(["burn_in", "side_file"]).default("burn_in"))
    .addOption(new Option("--format <format>", "subtitle file format").choices(["srt", "vtt"]).default("srt"))
    .requiredOption("-o, --output <dir>", "directory for the subtitle file (and the video with burn_in)")
    .option("--no-upload", "never upload: send <video> to the server as it is")
    .action(async (video: string, opts: { to: string; from: string; mode: "burn_in" | "side_file"; format: "srt" | "vtt"; output: string; upload: boolean }) => {
      const ctx = makeContext();
      const reference = await inputReference(ctx, video, opts.upload);
      const data = unwrap(await ctx.client.POST("/v1/videos/subtitle", {
        body: {
          file: reference,
          source_language: languageName(opts.from) as never,
          target_language: languageName(opts.to) as never,
          mode: opts.mode,
          subtitle_format: opts.format,
        },
      }));
      const record = await follow(ctx, "subtitle", data);
      const dir = resolve(io.cwd, opts.output);
      const base = `${stem(video)}.${languageName(opts.to).toLowerCase()}`;
      const files = [await save(ctx, record.subtitle_file, join(dir, `${base}.${opts.format}`))];
      if (opts.mode === "burn_in") files.push(await save(ctx, record.localized_file, join(dir, `${base}${urlExtension(record.localized_file, ".mp4")}`)));
      finish(ctx, "subtitle", record, files);
    });

  program
    .command("voicestream")
    .description("speech audio → the same speech in another language (MP3)")
    .argument("<audio>", "audio file: local path (uploaded), URL, upload:<id> or MEDIA_ROOT path")
    .requiredOption("--to <language>", "language of the new speech")
    .option("--from <language>", "language spoken in the audio", "English")
    .option("-o, --output <file>", "where to write the MP3 (default <name>.<language>.mp3)")
    .option("--voice <name>", "preset voice for the new speech")
    .option("--no-upload", "never upload: send <audio> to the server as it is")
    .action(async (audio: string, opts: { to: string; from: string; output?: string; voice?: string; upload: boolean }) => {
      const ctx = makeContext();
      const reference = await inputReference(ctx, audio, opts.upload);
      const data = unwrap(await ctx.client.POST("/v1/voices/streams", {
        body: {
          file: reference,
          source_language: languageName(opts.from) as never,
          target_language: languageName(opts.to) as never,
          ...(opts.voice ? { voice: opts.voice } : {}),
        },
      }));
      const record = await follow(ctx, "voice_stream", data);
      const output = resolve(io.cwd, opts.output ?? `${stem(audio)}.${languageName(opts.to).toLowerCase()}.mp3`);
      const files = [await save(ctx, record.localized_file, output)];
      finish(ctx, "voice_stream", record, files);
    });

  program
    .command("speak")
    .description("text → speech audio file")
    .argument("<text>", "the text to speak (1–5000 characters)")
    .requiredOption("--language <language>", "language of the text (name or ISO code)")
    .option("--voice <name>", "voice (see GET /v1/voices)")
    .addOption(new Option("--format <format>", "audio format").choices(["mp3", "wav", "ogg", "flac"]).default("mp3"))
    .option("-o, --output <file>", "where to write the audio (default speech.<format>)")
    .action(async (text: string, opts: { language: string; voice?: string; format: "mp3" | "wav" | "ogg" | "flac"; output?: string }) => {
      const ctx = makeContext();
      ctx.progress.stage("synthesising");
      const data = unwrap(await ctx.client.POST("/v1/speech/synthesize", {
        body: { text, language: languageName(opts.language) as never, format: opts.format, ...(opts.voice ? { voice: opts.voice } : {}) },
      }));
      const output = resolve(io.cwd, opts.output ?? `speech.${opts.format}`);
      const files = [await save(ctx, data.audio_url, output)];
      ctx.progress.stop();
      if (ctx.json) writeJson(io, { kind: "speech", record: data, files });
      else io.stdout.write(`${files[0]} (${data.duration_seconds.toFixed(2)} s)\n`);
    });

  program
    .command("list")
    .description("list your audio books, voice streams or subtitle jobs, newest first")
    .addArgument(new Command().createArgument("<what>", "audiobooks | voicestreams | subtitles").choices(["audiobooks", "voicestreams", "subtitles"]))
    .addOption(new Option("--status <status>", "only records with this task_status").choices(["queued", "processing", "completed", "failed"]))
    .option("--limit <n>", "how many (1–200, default 20)", positiveInteger, 20)
    .action(async (what: "audiobooks" | "voicestreams" | "subtitles", opts: { status?: "queued" | "processing" | "completed" | "failed"; limit: number }) => {
      const ctx = makeContext();
      const query = { limit: opts.limit, ...(opts.status ? { task_status: opts.status } : {}) };
      const records: Array<TaskRecord & { file: string; name?: string; date_created: string; source_language: string; target_language: string }> =
        what === "audiobooks"
          ? unwrap(await ctx.client.GET("/v1/audio_books/", { params: { query } }))
          : what === "voicestreams"
            ? unwrap(await ctx.client.GET("/v1/voices/streams", { params: { query } }))
            : unwrap(await ctx.client.GET("/v1/videos/subtitle", { params: { query } }));
      if (ctx.json) {
        writeJson(io, records);
        return;
      }
      if (records.length === 0) {
        io.stdout.write(`no ${what}${opts.status ? ` with status ${opts.status}` : ""}\n`);
        return;
      }
      const rows = records.map((r) => [r.id, r.task_status, `${Math.round(r.task_progress)}%`, `${r.source_language}→${r.target_language}`, r.date_created, r.name ?? r.file]);
      io.stdout.write(table(["ID", "STATUS", "PROGRESS", "LANGUAGES", "CREATED", what === "audiobooks" ? "NAME" : "FILE"], rows));
    });

  try {
    await program.parseAsync([...argv], { from: "user" });
  } catch (error) {
    context?.progress.stop();
    exitCode = report(io, json, error, context);
  }
  return exitCode;
}

/** Uploads a local file; other references go as they are. */
async function inputReference(ctx: Context, ref: string, allowUpload: boolean): Promise<string> {
  if (!allowUpload || REMOTE.test(ref) || ref.startsWith("upload:")) return ref;
  const local = resolve(ctx.io.cwd, ref);
  const info = await stat(local).catch(() => undefined);
  if (!info?.isFile()) return ref; // not here: a path under the server's MEDIA_ROOT
  ctx.progress.stage("uploading");
  try {
    const uploaded = await ctx.client.upload(local, { filename: basename(local), ...(ctx.io.signal ? { signal: ctx.io.signal } : {}) });
    return uploaded.file;
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 405)) {
      throw new UsageError(
        `this server does not take uploads (POST /v1/uploads answered ${error.status}): pass ${ref} as a URL, an upload:<id>, or a path under the server's MEDIA_ROOT (with --no-upload)`,
      );
    }
    throw error;
  }
}

async function follow<R extends TaskRecord>(ctx: Context, kind: TaskKind, record: R): Promise<R> {
  ctx.current = { kind, id: record.id };
  if (!ctx.json && ctx.io.stdout.isTTY !== true) ctx.io.stderr.write(`${kind.replace("_", " ")} ${record.id} created, waiting for it to finish\n`);
  const final = await ctx.client.waitFor(record, {
    kind,
    onProgress: (update) => ctx.progress.stage(update.status, update.progress),
    ...(ctx.io.signal ? { signal: ctx.io.signal } : {}),
    ...(ctx.timeoutMs !== undefined ? { timeoutMs: ctx.timeoutMs } : {}),
  });
  ctx.current = undefined;
  return final;
}

async function save(ctx: Context, url: string | null, path: string): Promise<string> {
  if (!url) throw new Error(`the finished record has no file to download for ${basename(path)}`);
  ctx.progress.stage("downloading");
  await ctx.client.download(url, path, ctx.io.signal ? { signal: ctx.io.signal } : {});
  return path;
}

function finish(ctx: Context, kind: TaskKind, record: TaskRecord, files: string[]): void {
  ctx.progress.stage("done", 100);
  ctx.progress.stop();
  if (ctx.json) writeJson(ctx.io, { kind, record, files });
  else ctx.io.stdout.write(`${files.join("\n")}\n`);
}

function writeJson(io: CliIO, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Prints the error (text on stderr; with --json also one JSON document on stdout) and picks the exit code. */
function report(io: CliIO, json: boolean, error: unknown, ctx: Context | undefined): number {
  if (error instanceof CommanderError) {
    // help and --version exit 0; every other parse error is a usage error (commander printed it)
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  const interrupted = error instanceof InterruptedError || io.signal?.aborted === true;
  let name: ExitName;
  let message: string;
  let extra: Record<string, unknown> = {};
  if (interrupted) {
    name = "interrupted";
    message = `interrupted${ctx?.current ? `: ${ctx.current.kind.replace("_", " ")} ${ctx.current.id} goes on on the server` : ""}`;
  } else if (error instanceof UsageError) {
    name = "usage";
    message = error.message;
  } else if (error instanceof ValidationError) {
    name = "validation";
    message = `the request was refused (422):\n${formatValidationItems(error.items)}`;
    extra = { status: 422, items: error.items };
  } else if (error instanceof AuthenticationError) {
    name = "auth";
    message = `authentication failed: ${error.detail ?? error.message}`;
    extra = { status: error.status };
  } else if (error instanceof NotFoundError) {
    name = "notFound";
    message = `not found: ${error.detail ?? error.message}`;
    extra = { status: 404 };
  } else if (error instanceof TaskFailedError) {
    name = "taskFailed";
    message = error.message;
    extra = { record: error.record };
  } else if (error instanceof WaitTimeoutError) {
    name = "timeout";
    message = error.message;
    extra = { id: error.recordId };
  } else if (error instanceof ConnectionError) {
    name = "network";
    message = error.message;
  } else if (error instanceof RateLimitError) {
    name = "error";
    message = `rate limited${error.retryAfterSeconds !== undefined ? `: retry in ${error.retryAfterSeconds} s` : ""}`;
    extra = { status: 429 };
  } else if (error instanceof ApiError) {
    name = "error";
    message = error.message;
    extra = { status: error.status };
  } else {
    name = "error";
    message = error instanceof Error ? error.message : String(error);
  }
  io.stderr.write(`voiceloc: ${message}\n`);
  if (json) writeJson(io, { error: { code: name, exit_code: EXIT[name], message, ...extra } });
  return EXIT[name];
}

function stem(ref: string): string {
  const last = ref.split(/[/\\]/).pop() ?? ref;
  const clean = last.split("?")[0] ?? last;
  const name = basename(clean, extname(clean)).replace(/^upload:/, "");
  return name || "output";
}

function urlExtension(url: string | null, fallback: string): string {
  if (!url) return fallback;
  try {
    const ext = extname(new URL(url).pathname);
    return ext || fallback;
  } catch {
    return fallback;
  }
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return `${[header, ...rows].map(line).join("\n")}\n`;
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("must be a positive number");
  return n;
}

function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError("must be a positive whole number");
  return n;
}
