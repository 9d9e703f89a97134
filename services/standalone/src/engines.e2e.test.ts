/**
 * Honest engines through the HTTP API: a voice that fails its start-up self-test is not claimed and
 * its language falls to the next engine; an OpenAI-compatible server without a speech endpoint is
 * not claimed for speech, and a voice stream through it completes with the offline voice.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { execFile } from "node:child_process";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { silentLogger } from "@voiceloc/log";
import { probe, resolveFfmpeg } from "@voiceloc/media";
import { freePort, makeSpeechWav, tempDir, checkResponsesOf } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";

const here = dirname(fileURLToPath(import.meta.url));
const run = promisify(execFile);
const KEY = "engines-key-alice-1";
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };

interface VoiceEntry {
  name: string;
  language: string;
  engine: string;
  default: boolean;
}

let dir: { path: string; cleanup: () => Promise<void> };

beforeAll(async () => {
  dir = await tempDir("voiceloc-engines-e2e-");
});

afterAll(async () => {
  await dir?.cleanup();
});

/** Polls a task record until it completes or fails. */
async function follow(base: string, path: string): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 240_000;
  for (;;) {
    const record = (await (await fetch(`${base}${path}`, { headers })).json()) as Record<string, unknown>;
    if (record.task_status === "completed" || record.task_status === "failed") return record;
    if (Date.now() > deadline) throw new Error(`task did not finish: ${JSON.stringify(record)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

describe("a voice failing its start-up self-test", () => {
  let child: ChildProcess;
  let base: string;
  const output: string[] = [];

  beforeAll(async () => {
    // A text2wave that behaves like festival on a machine without festival-hi: the Hindi voice
    // prints festival's error and writes no WAV; every other voice runs the real program.
    const bin = join(dir.path, "bin");
    await mkdir(bin, { recursive: true });
    const { stdout: real } = await run("sh", ["-c", "command -v text2wave"]);
    const fake = join(bin, "text2wave");
    await writeFile(
      fake,
      [
        "#!/bin/sh",
        'case "$*" in',
        '  *voice_hindi_NSK_diphone*) echo "SIOD ERROR: could not open file hindi_phones.scm" >&2; exit 0 ;;',
        "esac",
        `exec ${real.trim()} "$@"`,
        "",
      ].join("\n"),
    );
    await chmod(fake, 0o755);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    checkResponsesOf(base);
    child = spawn(process.execPath, ["--import", "tsx", join(here, "main.ts")], {
      cwd: join(here, ".."),
      env: {
        ...process.env,
        PATH: `${bin}${delimiter}${process.env.PATH ?? ""}`,
        DATA_DIR: join(dir.path, "data-a"),
        PORT: String(port),
        HOST: "127.0.0.1",
        PUBLIC_BASE_URL: base,
        VOICELOC_API_KEYS: `alice:${KEY}`,
        LOG_LEVEL: "info",
        OPENAI_BASE_URL: "",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout?.on("data", (d: Buffer) => output.push(d.toString()));
    child.stderr?.on("data", (d: Buffer) => output.push(d.toString()));
    const deadline = Date.now() + 150_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the process exited early:\n${output.join("")}`);
      const ready = await fetch(`${base}/readyz`).then((r) => r.status === 200, () => false);
      if (ready) break;
      if (Date.now() > deadline) throw new Error(`the process did not become ready:\n${output.join("")}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }, 180_000);

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
  });

  it("is not claimed in GET /v1/capabilities or GET /v1/voices, and Hindi falls to the next engine", async () => {
    const caps = (await (await fetch(`${base}/v1/capabilities`, { headers })).json()) as { synthesis: { languages: string[] } };
    // Hindi is still offered: by the next engine (espeak-ng), as the voices list shows.
    expect(caps.synthesis.languages).toContain("Hindi");
    expect(JSON.stringify(caps)).not.toContain("hindi_NSK");

    const voices = (await (await fetch(`${base}/v1/voices`, { headers })).json()) as VoiceEntry[];
    expect(voices.map((v) => v.name)).not.toContain("festival:hindi_NSK_diphone");
    expect(voices.filter((v) => v.language === "Hindi").map((v) => v.name)).toEqual(["espeak:hi"]);
    // The other festival voices passed and are still offered.
    expect(voices.find((v) => v.language === "Russian" && v.default)?.name).toBe("festival:msu_ru_nsh_clunits");

    const log = output.join("");
    expect(log).toContain("voice failed its self-test and is no longer offered");
    expect(log).toContain("hindi_NSK_diphone");
  });

  it("speaks Hindi with the next engine's voice", async () => {
    const res = await fetch(`${base}/v1/speech/synthesize`, { method: "POST", headers, body: JSON.stringify({ text: "नमस्ते दुनिया, आप सभी का स्वागत है।", language: "Hindi" }) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { duration_seconds: number };
    expect(body.duration_seconds).toBeGreaterThan(1);
  });
});

describe("an OpenAI-compatible server that answers chat and transcriptions but has no speech endpoint", () => {
  let server: Server;
  let runtime: Runtime;
  let base: string;
  const seen: string[] = [];

  function reply(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    seen.push(`${req.method} ${req.url}`);
    if (req.method === "POST" && req.url === "/v1/chat/completions") {
      return reply(res, 200, {
        id: "chatcmpl-1",
        object: "chat.completion",
        model: "stand-in",
        choices: [{ index: 0, message: { role: "assistant", content: "مرحبا بالجميع، الطقس جميل اليوم." }, finish_reason: "stop" }],
      });
    }
    if (req.method === "POST" && req.url === "/v1/audio/transcriptions") {
      return reply(res, 200, {
        task: "transcribe",
        language: "english",
        duration: 2.5,
        text: "Hello everyone, the weather is nice today.",
        segments: [{ id: 0, seek: 0, start: 0.1, end: 2.4, text: "Hello everyone, the weather is nice today.", tokens: [1], temperature: 0, avg_logprob: -0.2, compression_ratio: 1, no_speech_prob: 0.01 }],
      });
    }
    return reply(res, 404, { error: { message: `Unknown request URL: ${req.method} ${req.url}`, type: "invalid_request_error", param: null, code: null } });
  }

  beforeAll(async () => {
    server = createServer((req, res) => void handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const openai = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const media = join(dir.path, "media-b");
    await mkdir(media, { recursive: true });
    await makeSpeechWav("Hello everyone, the weather is nice today.", { voice: "flite:slt", path: join(media, "talk.wav") });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    checkResponsesOf(base);
    runtime = await startRuntime(
      loadConfig({
        DATA_DIR: join(dir.path, "data-b"),
        MEDIA_ROOT: media,
        PORT: String(port),
        HOST: "127.0.0.1",
        PUBLIC_BASE_URL: base,
        VOICELOC_API_KEYS: `alice:${KEY}`,
        LOG_LEVEL: "silent",
        OPENAI_BASE_URL: openai,
        OPENAI_API_KEY: "sk-test",
        OPENAI_MT_MODEL: "stand-in",
      }),
      silentLogger(),
    );
  }, 180_000);

  afterAll(async () => {
    await runtime?.stop();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("tests each capability at start and claims recognition and translation but not speech", async () => {
    expect(seen).toContain("POST /v1/audio/speech");
    expect(seen).toContain("POST /v1/chat/completions");
    expect(seen).toContain("POST /v1/audio/transcriptions");
    const caps = (await (await fetch(`${base}/v1/capabilities`, { headers })).json()) as {
      synthesis: { languages: string[] };
      recognition: { languages: string[] };
      translation: { pairs: { source: string; target: string; quality: string }[] };
    };
    // Arabic recognition exists only through the server (pocketsphinx is English-only).
    expect(caps.recognition.languages).toContain("Arabic");
    expect(caps.translation.pairs).toContainEqual(expect.objectContaining({ source: "English", target: "Arabic", quality: "llm" }));
    expect(caps.synthesis.languages).toContain("Arabic");
    const voices = (await (await fetch(`${base}/v1/voices`, { headers })).json()) as VoiceEntry[];
    expect(voices.filter((v) => v.engine === "openai")).toEqual([]);
    expect(voices.find((v) => v.language === "Arabic" && v.default)?.name).toBe("espeak:ar");
  });

  it("a voice stream English→Arabic completes with the offline voice", async () => {
    const before = seen.length;
    const res = await fetch(`${base}/v1/voices/streams`, {
      method: "POST",
      headers,
      body: JSON.stringify({ file: "talk.wav", source_language: "English", target_language: "Arabic" }),
    });
    expect(res.status).toBe(201);
    const created = (await res.json()) as { id: string };
    const done = await follow(base, `/v1/voices/streams/${created.id}`);
    expect(done.task_status, String(done.task_error)).toBe("completed");
    // Recognition and translation went to the server; speech did not.
    const during = seen.slice(before);
    expect(during).toContain("POST /v1/audio/transcriptions");
    expect(during).toContain("POST /v1/chat/completions");
    expect(during).not.toContain("POST /v1/audio/speech");
    const out = join(dir.path, "stream.mp3");
    await writeFile(out, Buffer.from(await (await fetch(String(done.localized_file))).arrayBuffer()));
    const { ffprobe } = await resolveFfmpeg({ logger: silentLogger() });
    expect((await probe(out, { ffprobePath: ffprobe })).durationSeconds).toBeGreaterThan(1);
  }, 240_000);
});
