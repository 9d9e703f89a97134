/**
 * Audio books and voice streams through the HTTP API in single-machine mode: create the task,
 * follow task_progress to completed, download localized_file and check the audio.
 */
import { execFile } from "node:child_process";
import { FILE_NOT_AVAILABLE } from "@voiceloc/fetch";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { silentLogger } from "@voiceloc/log";
import { probe, resolveFfmpeg } from "@voiceloc/media";
import { freePort, makeSpeechWav, tempDir, checkResponsesOf } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";

const run = promisify(execFile);
const KEY = "tasks-key-alice-1";
let runtime: Runtime;
let base: string;
let dir: { path: string; cleanup: () => Promise<void> };
let media: string;
let ffmpeg: { ffmpeg: string; ffprobe: string };
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };

const ENGLISH = [
  "The lighthouse keeper climbed the stairs every evening before the sun went down.",
  "He polished the great lens, trimmed the wick, and wrote the weather in a small book.",
  "Ships passed far out at sea, and none of them knew his name, yet all of them trusted his light.",
  "In winter the wind pushed against the door so hard that he had to lean on it with his shoulder.",
  "In summer children came from the village to ask him about storms, and he told them the truth: that most storms pass.",
].join(" ");

beforeAll(async () => {
  dir = await tempDir("voiceloc-tasks-");
  media = join(dir.path, "media");
  await mkdir(media, { recursive: true });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  checkResponsesOf(base);
  runtime = await startRuntime(
    loadConfig({ DATA_DIR: dir.path, MEDIA_ROOT: media, PORT: String(port), HOST: "127.0.0.1", PUBLIC_BASE_URL: base, VOICELOC_API_KEYS: `alice:${KEY}`, LOG_LEVEL: "silent" }),
    silentLogger(),
  );
  const found = await resolveFfmpeg({ logger: silentLogger() });
  ffmpeg = { ffmpeg: found.ffmpeg, ffprobe: found.ffprobe };
});

afterAll(async () => {
  await runtime?.stop();
  await dir?.cleanup();
});

async function follow(path: string): Promise<Record<string, unknown>> {
  const progress: number[] = [];
  const deadline = Date.now() + 240_000;
  for (;;) {
    const record = (await (await fetch(`${base}${path}`, { headers })).json()) as Record<string, unknown>;
    progress.push(Number(record.task_progress));
    if (record.task_status === "completed" || record.task_status === "failed") {
      for (let i = 1; i < progress.length; i += 1) expect(progress[i]).toBeGreaterThanOrEqual(progress[i - 1] ?? 0);
      return record;
    }
    if (Date.now() > deadline) throw new Error(`task did not finish: ${JSON.stringify(record)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

async function downloadDuration(url: string, name: string): Promise<number> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("audio/mpeg");
  const path = join(dir.path, name);
  await writeFile(path, Buffer.from(await res.arrayBuffer()));
  return (await probe(path, { ffprobePath: ffmpeg.ffprobe })).durationSeconds;
}

describe("audio books end to end", () => {
  it("turns an English text of several thousand characters into one MP3 whose duration fits its length", async () => {
    const text = Array.from({ length: 6 }, () => ENGLISH).join("\n\n");
    expect(text.length).toBeGreaterThan(2500);
    await writeFile(join(media, "lighthouse.txt"), text);
    const res = await fetch(`${base}/v1/audio_books/`, {
      method: "POST",
      headers,
      body: JSON.stringify({ file: "lighthouse.txt", name: "Lighthouse", source_language: "English", target_language: "English" }),
    });
    expect(res.status).toBe(201);
    const created = (await res.json()) as { id: string };
    const done = await follow(`/v1/audio_books/${created.id}`);
    expect(done.task_status, String(done.task_error)).toBe("completed");
    expect(done.task_progress).toBe(100);
    const seconds = await downloadDuration(String(done.localized_file), "lighthouse.mp3");
    // spoken English runs at roughly 12–20 characters a second
    expect(seconds).toBeGreaterThan(text.length / 30);
    expect(seconds).toBeLessThan(text.length / 8);
  });

  it("translates English→Spanish and Spanish→English books", async () => {
    await writeFile(join(media, "en.txt"), ENGLISH);
    await writeFile(join(media, "es.txt"), "La casa es roja. El perro duerme en el jardín. Mañana vamos a la playa con nuestros amigos.");
    for (const [file, source, target] of [
      ["en.txt", "English", "Spanish"],
      ["es.txt", "Spanish", "English"],
    ] as const) {
      const created = (await (
        await fetch(`${base}/v1/audio_books/`, { method: "POST", headers, body: JSON.stringify({ file, name: file, source_language: source, target_language: target }) })
      ).json()) as { id: string };
      const done = await follow(`/v1/audio_books/${created.id}`);
      expect(done.task_status, `${source}→${target}: ${String(done.task_error)}`).toBe("completed");
      expect(await downloadDuration(String(done.localized_file), `${file}.mp3`)).toBeGreaterThan(2);
    }
  });

  it("a missing file fails with the reason in plain words", async () => {
    const created = (await (
      await fetch(`${base}/v1/audio_books/`, { method: "POST", headers, body: JSON.stringify({ file: "nope.txt", name: "x", source_language: "English", target_language: "English" }) })
    ).json()) as { id: string };
    const done = await follow(`/v1/audio_books/${created.id}`);
    expect(done.task_status).toBe("failed");
    expect(done.task_error).toBe(FILE_NOT_AVAILABLE);
  });
});

describe("voice streams end to end", () => {
  it("English→English and English→Spanish produce audio that follows the original's timing", async () => {
    const first = join(dir.path, "a.wav");
    const second = join(dir.path, "b.wav");
    await makeSpeechWav("The weather today is sunny and warm.", { voice: "flite:slt", path: first });
    await makeSpeechWav("Tomorrow it will rain in the morning.", { voice: "flite:slt", path: second });
    const input = join(media, "talk.wav");
    await run(ffmpeg.ffmpeg, [
      "-nostdin", "-y", "-i", first, "-f", "lavfi", "-t", "1.5", "-i", "anullsrc=r=16000:cl=mono", "-i", second,
      "-filter_complex", "[0:a]aresample=16000,aformat=channel_layouts=mono[a];[2:a]aresample=16000,aformat=channel_layouts=mono[b];[a][1:a][b]concat=n=3:v=0:a=1[out]",
      "-map", "[out]", input,
    ]);
    const inputSeconds = (await probe(input, { ffprobePath: ffmpeg.ffprobe })).durationSeconds;
    for (const target of ["English", "Spanish"]) {
      const res = await fetch(`${base}/v1/voices/streams`, {
        method: "POST",
        headers,
        body: JSON.stringify({ file: "talk.wav", source_language: "English", target_language: target }),
      });
      expect(res.status).toBe(201);
      const created = (await res.json()) as { id: string };
      const done = await follow(`/v1/voices/streams/${created.id}`);
      expect(done.task_status, `${target}: ${String(done.task_error)}`).toBe("completed");
      const seconds = await downloadDuration(String(done.localized_file), `talk-${target}.mp3`);
      expect(seconds).toBeGreaterThan(inputSeconds * 0.8);
    }
  });
});
