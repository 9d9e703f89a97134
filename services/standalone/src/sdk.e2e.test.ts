/**
 * The SDK and the `voiceloc` CLI against the real service: every service in one child process
 * (main.ts, real engines, ffmpeg), the CLI run as a user runs it (`pnpm voiceloc`'s launcher, a
 * separate process per command), and the SDK README's example extracted and run.
 */
import { execFile, spawn } from "node:child_process";
import { copyFile, mkdir, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { freePort, makeSpeechWav, makeTestVideo, tempDir } from "@voiceloc/testing";
import { createClient, unwrap } from "@voiceloc/sdk";
import { signalAndWait, startService, type ServiceProcess } from "./testing/processes.ts";
import { SDK_DIR, sdkReadmeExample } from "./testing/sdk-readme.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const LAUNCHER = join(ROOT, "scripts", "voiceloc.mjs");
const KEY = "sdk-e2e-alice-key-1";
const BOOK = [
  "The lighthouse keeper climbed the stairs every evening before the sun went down.",
  "He polished the great lens and wrote the weather in a small book.",
].join(" ");
const SPEECH = "Hello and welcome. Today we talk about the sea and the old lighthouse.";

let dir: { path: string; cleanup: () => Promise<void> };
let mediaRoot: string;
let work: string;
let service: ServiceProcess;
let base: string;
let media: MediaToolkit;

beforeAll(async () => {
  dir = await tempDir("voiceloc-sdk-e2e-");
  mediaRoot = join(dir.path, "media");
  work = join(dir.path, "work");
  await mkdir(mediaRoot, { recursive: true });
  await mkdir(work, { recursive: true });
  await writeFile(join(mediaRoot, "book.txt"), BOOK);
  const speech = await makeSpeechWav(SPEECH, { voice: "flite:slt", path: join(mediaRoot, "speech.wav") });
  await makeTestVideo(6, join(mediaRoot, "talk.mp4"), { withSpeechFrom: speech });
  // The user's own files, beside where the CLI runs: uploaded (POST /v1/uploads).
  for (const name of ["book.txt", "speech.wav", "talk.mp4"]) await copyFile(join(mediaRoot, name), join(work, name));
  media = createMediaToolkit(await resolveFfmpeg({ logger: silentLogger() }), silentLogger());
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  service = await startService(
    "gateway,audiobook,voice-stream,subtitle,synthesis",
    { DATA_DIR: join(dir.path, "data"), MEDIA_ROOT: mediaRoot, PUBLIC_BASE_URL: base, VOICELOC_API_KEYS: `alice:${KEY}`, LOG_LEVEL: "warn" },
    port,
  );
});

afterAll(async () => {
  if (service) await signalAndWait(service, "SIGTERM");
  await dir?.cleanup();
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `pnpm voiceloc …` as the launcher runs it: INIT_CWD is the user's directory. */
function voiceloc(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [LAUNCHER, ...args],
      { cwd: ROOT, env: { ...process.env, INIT_CWD: work, VOICELOC_URL: base, VOICELOC_API_KEY: KEY, ...env }, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
        if (error && code === null) return reject(error);
        resolve({ code, stdout, stderr });
      },
    );
  });
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The same command in a pseudo-terminal (`script`): stdout and stderr are a TTY. */
function voicelocInTerminal(args: string[]): Promise<Run> {
  const command = ["env", `INIT_CWD=${work}`, `VOICELOC_URL=${base}`, `VOICELOC_API_KEY=${KEY}`, process.execPath, LAUNCHER, ...args].map(shellQuote).join(" ");
  return new Promise((resolve, reject) => {
    execFile("script", ["-q", "-e", "-c", command, "/dev/null"], { cwd: ROOT, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
      if (error && code === null) return reject(error);
      resolve({ code, stdout, stderr });
    });
  });
}

function explain(run: Run): string {
  return `exit ${run.code}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}\nservice:\n${service.output.join("").slice(-4000)}`;
}

describe("voiceloc CLI against the running service", () => {
  it("audiobook: uploads the local file, creates the book, waits, writes the MP3 it names (no progress bar when piped)", async () => {
    const run = await voiceloc(["audiobook", "book.txt", "--from", "English", "--to", "Spanish", "-o", "out/book.mp3"]);
    expect(run.code, explain(run)).toBe(0);
    const out = join(work, "out", "book.mp3");
    expect(run.stdout.trim()).toBe(out);
    const info = await media.probe(out);
    expect(info.audio?.codec).toBe("mp3");
    expect(info.durationSeconds).toBeGreaterThan(2);
    expect(run.stdout + run.stderr).not.toMatch(/elapsed|ETA|█|░/);
    const client = createClient({ baseUrl: base, apiKey: KEY });
    const [latest] = unwrap(await client.GET("/v1/audio_books/", { params: { query: { limit: 1 } } }));
    expect(latest?.file).toMatch(/^upload:[0-9a-f-]{36}$/);
  });

  it("--no-upload (or a path that is not here) sends the path as it is: the server reads it under MEDIA_ROOT", async () => {
    const run = await voiceloc(["audiobook", "book.txt", "--no-upload", "--from", "English", "--to", "English", "-o", "media-root.mp3", "--json"]);
    expect(run.code, explain(run)).toBe(0);
    const result = JSON.parse(run.stdout) as { record: { file: string } };
    expect(result.record.file).toBe("book.txt");
    expect((await media.probe(join(work, "media-root.mp3"))).audio?.codec).toBe("mp3");
  });

  it("audiobook --json: one JSON document with the completed record and the written file", async () => {
    const run = await voiceloc(["audiobook", "book.txt", "--from", "en", "--to", "english", "--json"]);
    expect(run.code, explain(run)).toBe(0);
    const result = JSON.parse(run.stdout) as { kind: string; record: { task_status: string; task_progress: number; id: string }; files: string[] };
    expect(result.kind).toBe("audio_book");
    expect(result.record).toMatchObject({ task_status: "completed", task_progress: 100 });
    expect(result.files).toEqual([join(work, "book.english.mp3")]);
    expect((await media.probe(result.files[0] as string)).audio?.codec).toBe("mp3");
  });

  it("subtitle side_file: writes the SRT; burn_in with vtt: the WebVTT and the video with the subtitles", async () => {
    const side = await voiceloc(["subtitle", "talk.mp4", "--to", "English", "--mode", "side_file", "-o", "subs"]);
    expect(side.code, explain(side)).toBe(0);
    const srt = join(work, "subs", "talk.english.srt");
    expect(side.stdout.trim()).toBe(srt);
    expect(await readFile(srt, "utf8")).toMatch(/^1\r?\n\d\d:\d\d:\d\d,\d\d\d --> \d\d:\d\d:\d\d,\d\d\d/);

    const burn = await voiceloc(["subtitle", "talk.mp4", "--to", "English", "--from", "English", "--mode", "burn_in", "--format", "vtt", "-o", "burned", "--json"]);
    expect(burn.code, explain(burn)).toBe(0);
    const result = JSON.parse(burn.stdout) as { files: string[] };
    expect(result.files).toHaveLength(2);
    const [vtt, video] = result.files as [string, string];
    expect(vtt).toBe(join(work, "burned", "talk.english.vtt"));
    expect(await readFile(vtt, "utf8")).toMatch(/^WEBVTT/);
    const info = await media.probe(video);
    expect(info.video?.width).toBe(320);
    expect(info.durationSeconds).toBeGreaterThan(5);
    expect((await readdir(join(work, "burned"))).sort()).toEqual(["talk.english.mp4", "talk.english.vtt"]);
  });

  it("voicestream: writes the translated speech as MP3", async () => {
    const run = await voiceloc(["voicestream", "speech.wav", "--to", "Spanish", "-o", "stream.mp3"]);
    expect(run.code, explain(run)).toBe(0);
    const info = await media.probe(join(work, "stream.mp3"));
    expect(info.audio?.codec).toBe("mp3");
    expect(info.durationSeconds).toBeGreaterThan(1);
  });

  it("speak: writes the audio in the format asked for", async () => {
    const mp3 = await voiceloc(["speak", "Hola, bienvenidos al faro.", "--language", "Spanish", "-o", "hola.mp3"]);
    expect(mp3.code, explain(mp3)).toBe(0);
    expect(mp3.stdout).toContain(join(work, "hola.mp3"));
    expect((await media.probe(join(work, "hola.mp3"))).audio?.codec).toBe("mp3");
    const wav = await voiceloc(["speak", "Hello there.", "--language", "en", "--format", "wav", "-o", "hello.wav", "--json"]);
    expect(wav.code, explain(wav)).toBe(0);
    const result = JSON.parse(wav.stdout) as { record: { duration_seconds: number }; files: string[] };
    expect(result.record.duration_seconds).toBeGreaterThan(0.3);
    expect((await media.probe(result.files[0] as string)).format).toBe("wav");
  });

  it("list: a table, and --json an array filtered by --status and --limit", async () => {
    const text = await voiceloc(["list", "audiobooks"]);
    expect(text.code, explain(text)).toBe(0);
    expect(text.stdout.split("\n")[0]).toMatch(/^ID\s+STATUS\s+PROGRESS\s+LANGUAGES\s+CREATED\s+NAME$/);
    expect(text.stdout).toContain("English→Spanish");
    const json = await voiceloc(["list", "audiobooks", "--status", "completed", "--limit", "1", "--json"]);
    expect(json.code, explain(json)).toBe(0);
    const records = JSON.parse(json.stdout) as Array<{ task_status: string }>;
    expect(records).toHaveLength(1);
    expect(records[0]?.task_status).toBe("completed");
    const subs = JSON.parse((await voiceloc(["list", "subtitles", "--json"])).stdout) as unknown[];
    expect(subs.length).toBeGreaterThanOrEqual(2);
  });

  it("a 422 prints its items readably and exits 4; --json puts them in the error document", async () => {
    const run = await voiceloc(["audiobook", "book.txt", "--from", "English", "--to", "Klingon"]);
    expect(run.code).toBe(4);
    expect(run.stderr).toContain("refused (422)");
    expect(run.stderr).toMatch(/- body\.target_language: Input should be .*'Spanish'.* \(got "Klingon"\)/);
    const json = await voiceloc(["speak", "x".repeat(10), "--language", "Klingon", "--json"]);
    expect(json.code).toBe(4);
    const body = JSON.parse(json.stdout) as { error: { code: string; exit_code: number; items: Array<{ loc: string[] }> } };
    expect(body.error).toMatchObject({ code: "validation", exit_code: 4 });
    expect(body.error.items[0]?.loc).toEqual(["body", "language"]);
  });

  it("says what happened through its exit codes: usage 2, auth 3, task failed 6, network 7", async () => {
    const usage = await voiceloc(["audiobook", "book.txt", "--from", "English"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--to");
    const auth = await voiceloc(["list", "audiobooks"], { VOICELOC_API_KEY: "not-a-key-of-anyone" });
    expect(auth.code).toBe(3);
    expect(auth.stderr).toContain("authentication failed");
    const failed = await voiceloc(["audiobook", "no-such-book.txt", "--from", "English", "--to", "English"]);
    expect(failed.code, explain(failed)).toBe(6);
    expect(failed.stderr).toMatch(/failed: .+/);
    const closed = await freePort();
    const network = await voiceloc(["list", "voicestreams", "--url", `http://127.0.0.1:${closed}`]);
    expect(network.code).toBe(7);
    expect(network.stderr).toContain("could not reach");
  });

  it("draws the live progress bar (percent, stage, elapsed, ETA) in a terminal", async () => {
    const run = await voicelocInTerminal(["audiobook", "book.txt", "--from", "English", "--to", "English", "-o", "tty.mp3"]);
    expect(run.code, explain(run)).toBe(0);
    const screen = run.stdout;
    expect(screen).toMatch(/█+░*\s+100% \| done\s+\| elapsed \d+:\d\d \| ETA /);
    expect(screen).toMatch(/\d+% \| (queued|processing|downloading)/);
    expect(screen).toContain(join(work, "tty.mp3"));
    expect((await media.probe(join(work, "tty.mp3"))).audio?.codec).toBe("mp3");
  });
});

describe("@voiceloc/sdk", () => {
  it("runs the README's client example as written, which saves the MP3 it promises", async () => {
    const example = await sdkReadmeExample();
    expect(example).toContain("createClient");
    // A file inside the package, so `@voiceloc/sdk` resolves to itself (self-reference, source condition).
    const script = join(SDK_DIR, `.readme-example-${process.pid}.ts`);
    await writeFile(script, example);
    const cwd = join(dir.path, "readme");
    await mkdir(cwd, { recursive: true });
    await writeFile(join(cwd, "book.txt"), BOOK);
    try {
      const run = await new Promise<Run>((resolve) => {
        execFile(
          process.execPath,
          ["--conditions=@voiceloc/source", "--import", import.meta.resolve("tsx"), script],
          { cwd, env: { ...process.env, VOICELOC_URL: base, VOICELOC_API_KEY: KEY }, timeout: 300_000 },
          (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr }),
        );
      });
      expect(run.code, explain(run)).toBe(0);
      expect(run.stdout).toMatch(/processing \d+%/);
      expect(run.stdout).toContain("completed 100%");
      expect(run.stdout).toMatch(/uploaded book\.txt as upload:[0-9a-f-]{36}/);
      expect(run.stdout).toContain("saved lighthouse.es.mp3");
      const info = await media.probe(join(cwd, "lighthouse.es.mp3"));
      expect(info.audio?.codec).toBe("mp3");
      expect((await stat(join(cwd, "lighthouse.es.mp3"))).size).toBeGreaterThan(10_000);
    } finally {
      await rm(script, { force: true });
    }
  });

  it("waitFor follows the record over the events stream, progress never moving backwards", async () => {
    const client = createClient({ baseUrl: base, apiKey: KEY });
    const book = unwrap(
      await client.POST("/v1/audio_books/", { body: { file: "book.txt", name: "Events", source_language: "English", target_language: "English", use_voice_clone: false } }),
    );
    const seen: Array<{ progress: number; via: string }> = [];
    let via = "";
    const done = await client.waitFor(book, { onProgress: (u) => seen.push({ progress: u.progress, via: u.via }), onFinal: (_r, how) => (via = how), timeoutMs: 240_000 });
    expect(done.task_status).toBe("completed");
    expect(done.localized_file).toMatch(/^http/);
    expect(via).toBe("events");
    expect(seen.at(-1)?.progress).toBe(100);
    for (let i = 1; i < seen.length; i += 1) expect(seen[i]?.progress).toBeGreaterThanOrEqual(seen[i - 1]?.progress ?? 0);
  });

  it("uploads a Blob, bytes and a stream; the stored upload has their size and sniffed type", async () => {
    const client = createClient({ baseUrl: base, apiKey: KEY });
    const text = new Blob([BOOK], { type: "text/plain" });
    const fromBlob = await client.upload(text, { filename: "blob.txt" });
    expect(fromBlob).toMatchObject({ file: `upload:${fromBlob.id}`, filename: "blob.txt", bytes: Buffer.byteLength(BOOK), content_type: "text/plain" });
    const wav = await readFile(join(work, "speech.wav"));
    const fromBytes = await client.upload(new Uint8Array(wav));
    expect(fromBytes.bytes).toBe(wav.length);
    expect(fromBytes.content_type).toMatch(/^audio\//);
    const { createReadStream } = await import("node:fs");
    const fromStream = await client.upload(createReadStream(join(work, "talk.mp4")), { filename: "talk.mp4" });
    expect(fromStream.bytes).toBe((await stat(join(work, "talk.mp4"))).size);
    expect(fromStream.content_type).toMatch(/^video\//);
    const stored = unwrap(await client.GET("/v1/uploads/{upload_id}", { params: { path: { upload_id: fromStream.id } } }));
    expect(stored.filename).toBe("talk.mp4");
  });

  it("lists through the typed client with the key of the account", async () => {
    const client = createClient({ baseUrl: base, apiKey: KEY });
    const books = unwrap(await client.GET("/v1/audio_books/", { params: { query: { limit: 200 } } }));
    expect(books.length).toBeGreaterThanOrEqual(3);
    expect(books.every((b) => typeof b.id === "string" && b.task_progress >= 0)).toBe(true);
  });
});

// Last: these leave books running on the service (the CLI stops waiting, the task goes on).
describe("voiceloc stops waiting", () => {
  it("exits 8 when --timeout passes first", async () => {
    const long = Array.from({ length: 20 }, () => BOOK).join("\n\n");
    await writeFile(join(mediaRoot, "long.txt"), long);
    const timeout = await voiceloc(["audiobook", "long.txt", "--from", "English", "--to", "English", "--timeout", "0.5", "--json"]);
    expect(timeout.code, explain(timeout)).toBe(8);
    expect((JSON.parse(timeout.stdout) as { error: { code: string } }).error.code).toBe("timeout");
  });

  it("exits 130 on Ctrl-C while waiting and names the task that goes on", async () => {
    const long = Array.from({ length: 20 }, () => BOOK).join("\n\n");
    await writeFile(join(mediaRoot, "longer.txt"), long);
    const child = spawn(process.execPath, [LAUNCHER, "audiobook", "longer.txt", "--from", "English", "--to", "English"], {
      cwd: ROOT,
      env: { ...process.env, INIT_CWD: work, VOICELOC_URL: base, VOICELOC_API_KEY: KEY },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const deadline = Date.now() + 120_000;
    while (!stderr.includes("created") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    child.kill("SIGINT");
    expect(await exited).toBe(130);
    expect(stderr).toMatch(/interrupted: audio book [0-9a-f-]{36} goes on on the server/);
  });
});
