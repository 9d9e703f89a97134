import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "@voiceloc/log";
import { probe, resolveFfmpeg } from "@voiceloc/media";
import { freePort, startNatsServer, tempDir } from "@voiceloc/testing";

const here = dirname(fileURLToPath(import.meta.url));
const KEY = "mesh-key-alice-1";

interface Proc {
  child: ChildProcess;
  port: number;
  output: string[];
}

let nats: Awaited<ReturnType<typeof startNatsServer>>;
let dir: { path: string; cleanup: () => Promise<void> };
const procs: Proc[] = [];

async function startProcess(services: string, env: Record<string, string>, port: number): Promise<Proc> {
  const child = spawn(process.execPath, ["--import", "tsx", join(here, "main.ts")], {
    cwd: join(here, ".."),
    env: { ...process.env, ...env, SERVICES: services, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const proc: Proc = { child, port, output: [] };
  child.stdout?.on("data", (d: Buffer) => proc.output.push(d.toString()));
  child.stderr?.on("data", (d: Buffer) => proc.output.push(d.toString()));
  procs.push(proc);
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${services} exited early:\n${proc.output.join("")}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (res.status === 200) return proc;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${services} did not become ready:\n${proc.output.join("")}`);
}

beforeAll(async () => {
  nats = await startNatsServer();
  dir = await tempDir("voiceloc-mesh-");
});

afterAll(async () => {
  for (const p of procs) {
    if (p.child.exitCode === null) {
      const exited = new Promise((r) => p.child.once("exit", r));
      p.child.kill("SIGTERM");
      await exited;
    }
  }
  await nats?.stop();
  await dir?.cleanup();
});

describe("gateway and synthesis as two processes over nats-server", () => {
  it("synthesises through the bus and serves the audio from the shared blob store", async () => {
    const gatewayPort = await freePort();
    const common = {
      NATS_URL: nats.url,
      DATA_DIR: dir.path,
      VOICELOC_API_KEYS: `alice:${KEY}`,
      SIGNING_SECRET: "mesh-signing-secret-0123456789-abcdef",
    };
    const synthesis = await startProcess("synthesis", common, await freePort());
    const health = await fetch(`http://127.0.0.1:${synthesis.port}/healthz`);
    expect(await health.json()).toEqual({ status: "ok", services: ["synthesis"] });

    const base = `http://127.0.0.1:${gatewayPort}`;
    await startProcess("gateway", { ...common, PUBLIC_BASE_URL: base }, gatewayPort);
    const res = await fetch(`${base}/v1/speech/synthesize`, {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ text: "The bus carried this sentence between two processes.", language: "English" }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { audio_url: string; duration_seconds: number };
    const audio = await fetch(body.audio_url);
    expect(audio.status).toBe(200);
    const path = join(dir.path, "mesh.mp3");
    await writeFile(path, Buffer.from(await audio.arrayBuffer()));
    const { ffprobe } = await resolveFfmpeg({ logger: silentLogger() });
    const info = await probe(path, { ffprobePath: ffprobe });
    expect(Math.abs(info.durationSeconds - body.duration_seconds)).toBeLessThan(0.15);
    expect(body.duration_seconds).toBeGreaterThan(1.5);

    const voices = await fetch(`${base}/v1/voices?language=English`, { headers: { "API-KEY": KEY } });
    expect(voices.status).toBe(200);
    expect(((await voices.json()) as unknown[]).length).toBeGreaterThan(0);

    // stop the synthesis process: the gateway answers 503, not 500
    const exited = new Promise((r) => synthesis.child.once("exit", r));
    synthesis.child.kill("SIGTERM");
    await exited;
    const down = await fetch(`${base}/v1/speech/synthesize`, {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ text: "Anyone there?", language: "English" }),
    });
    expect(down.status).toBe(503);
  });
});

describe("gateway and the task workers as separate processes over nats-server", () => {
  it("completes an audio book and a voice stream created through the gateway", async () => {
    const media = join(dir.path, "media");
    await mkdir(media, { recursive: true });
    const sentences = "The river runs past the old mill. Children play on the bridge after school. ";
    await writeFile(join(media, "river.txt"), sentences.repeat(12));
    const { makeSpeechWav } = await import("@voiceloc/testing");
    await makeSpeechWav("The weather today is sunny and warm.", { voice: "flite:slt", path: join(media, "talk.wav") });

    const gatewayPort = await freePort();
    const base = `http://127.0.0.1:${gatewayPort}`;
    const common = {
      NATS_URL: nats.url,
      DATA_DIR: join(dir.path, "tasks"),
      MEDIA_ROOT: media,
      VOICELOC_API_KEYS: `alice:${KEY}`,
      SIGNING_SECRET: "mesh-signing-secret-0123456789-abcdef",
      PUBLIC_BASE_URL: base,
    };
    await startProcess("audiobook,voice-stream", common, await freePort());
    await startProcess("gateway", common, gatewayPort);
    const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
    const follow = async (path: string) => {
      const deadline = Date.now() + 180_000;
      for (;;) {
        const record = (await (await fetch(`${base}${path}`, { headers })).json()) as Record<string, unknown>;
        if (record.task_status === "completed" || record.task_status === "failed") return record;
        if (Date.now() > deadline) throw new Error(`not finished: ${JSON.stringify(record)}`);
        await new Promise((r) => setTimeout(r, 300));
      }
    };
    const book = (await (
      await fetch(`${base}/v1/audio_books/`, {
        method: "POST",
        headers,
        body: JSON.stringify({ file: "river.txt", name: "River", source_language: "English", target_language: "Spanish" }),
      })
    ).json()) as { id: string };
    const stream = (await (
      await fetch(`${base}/v1/voices/streams`, {
        method: "POST",
        headers,
        body: JSON.stringify({ file: "talk.wav", source_language: "English", target_language: "English" }),
      })
    ).json()) as { id: string };
    for (const path of [`/v1/audio_books/${book.id}`, `/v1/voices/streams/${stream.id}`]) {
      const done = await follow(path);
      expect(done.task_status, String(done.task_error)).toBe("completed");
      expect(done.task_progress).toBe(100);
      const audio = await fetch(String(done.localized_file));
      expect(audio.status).toBe(200);
      expect(Number(audio.headers.get("content-length"))).toBeGreaterThan(10_000);
    }
  });
});
