/**
 * Cloned voices end to end, as the service ships with no outside engine (CLONE_ENGINE's default,
 * `match`): the gateway and the workers as separate processes over a real nats-server. A low male sample
 * (flite `kal`, about 90 Hz) makes a clone; synthesis in `clone:<id>` and an audio book made with
 * `use_voice_clone` and the sample are measured (median pitch by the engines' YIN estimator) against the
 * sample; a voice stream in a clone of its own input's speech completes; a deleted clone is refused.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { measureSpeech } from "@voiceloc/engines";
import { silentLogger } from "@voiceloc/log";
import { GLOBAL_ARGS, resolveFfmpeg, runProcess } from "@voiceloc/media";
import { freePort, makeSpeechWav, startNatsServer, tempDir } from "@voiceloc/testing";
import { signalAndWait, startService, type ServiceProcess } from "./testing/processes.ts";

const KEY = "clones-key-alice-1";
const BOB_KEY = "clones-key-bob-1";
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
const SAMPLE_TEXT =
  "The old lighthouse stood at the edge of the cliff for more than a hundred years. Every night its keeper climbed the stairs, " +
  "lit the lamp and watched the ships pass safely through the narrow channel below.";
const BOOK_TEXT =
  "Morning came slowly over the harbour. The fishermen pulled their boats onto the sand and sorted the catch. " +
  "A small dog ran along the water, barking at the gulls that circled above the nets.";

let dir: { path: string; cleanup: () => Promise<void> };
let nats: Awaited<ReturnType<typeof startNatsServer>>;
let gateway: ServiceProcess;
let workers: ServiceProcess;
let base: string;
let mediaRoot: string;
let ffmpeg: string;
let samplePitch: number;

beforeAll(async () => {
  dir = await tempDir("voiceloc-clones-e2e-");
  mediaRoot = join(dir.path, "media");
  await mkdir(mediaRoot, { recursive: true });
  ffmpeg = (await resolveFfmpeg({ logger: silentLogger() })).ffmpeg;
  const sample = await makeSpeechWav(SAMPLE_TEXT, { voice: "flite:kal", path: join(mediaRoot, "kal.wav") });
  const measured = (await measureSpeech(sample)).profile.medianPitchHz;
  if (measured === null) throw new Error("the generated sample has no measurable pitch");
  samplePitch = measured;
  // a sample too short to clone (1.5 s of speech)
  await makeSpeechWav("Hello there.", { voice: "flite:kal", path: join(mediaRoot, "short.wav") });
  await writeFile(join(mediaRoot, "book.txt"), BOOK_TEXT);

  nats = await startNatsServer();
  const env = {
    NATS_URL: nats.url,
    DATA_DIR: dir.path,
    MEDIA_ROOT: mediaRoot,
    VOICELOC_API_KEYS: `alice:${KEY},bob:${BOB_KEY}`,
    LOG_LEVEL: "warn",
  };
  const [gatewayPort, workersPort] = await Promise.all([freePort(), freePort()]);
  base = `http://127.0.0.1:${gatewayPort}`;
  [gateway, workers] = await Promise.all([
    startService("gateway", { ...env, PUBLIC_BASE_URL: base }, gatewayPort),
    startService("synthesis,audiobook,voice-stream", env, workersPort, 180_000),
  ]);
}, 240_000);

afterAll(async () => {
  await Promise.all([gateway, workers].filter(Boolean).map((p) => signalAndWait(p, "SIGTERM")));
  await nats?.stop();
  await dir?.cleanup();
});

type Json = Record<string, unknown>;
/** Time limit of a test that waits for speech or a task on a loaded machine. */
const LONG = 300_000;

async function post(path: string, body: Json, key = KEY): Promise<Response> {
  return fetch(`${base}${path}`, { method: "POST", headers: { ...headers, "API-KEY": key }, body: JSON.stringify(body), signal: AbortSignal.timeout(150_000) });
}

/** Polls a record until its task finished (within the test's own time limit, LONG). */
async function follow(path: string, timeoutMs = 270_000): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const record = (await (await fetch(`${base}${path}`, { headers })).json()) as Json;
    if (record.task_status === "completed" || record.task_status === "failed") return record;
    if (Date.now() > deadline) throw new Error(`not finished within ${timeoutMs / 1000} s: ${JSON.stringify(record)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** The median pitch of a downloaded audio file (decoded to 16 kHz mono WAV, measured by YIN). */
async function medianPitchOf(url: string, name: string): Promise<{ hz: number; seconds: number }> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  const encoded = join(dir.path, name);
  await writeFile(encoded, Buffer.from(await res.arrayBuffer()));
  const wav = `${encoded}.wav`;
  const decoded = await runProcess(ffmpeg, [...GLOBAL_ARGS, "-i", encoded, "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", "-y", wav]);
  if (decoded.exitCode !== 0) throw new Error(`${name}: ffmpeg could not decode it: ${decoded.stderrTail.join(" ")}`);
  const measured = await measureSpeech(wav);
  if (measured.profile.medianPitchHz === null) throw new Error(`${name}: no measurable pitch`);
  return { hz: measured.profile.medianPitchHz, seconds: measured.speechSeconds };
}

/** DELETE /v1/voices/clones/{id}, answering the status (checked against the document like every answer). */
async function deleteClone(id: string): Promise<number> {
  const res = await fetch(`${base}/v1/voices/clones/${id}`, { method: "DELETE", headers: { "API-KEY": KEY } });
  await res.arrayBuffer();
  return res.status;
}

/** How far `value` is from `target`, as a share of `target`. */
const within = (value: number, target: number) => Math.abs(value - target) / target;

describe("cloned voices with the offline match engine (gateway and workers over NATS)", () => {
  let clone: { id: string; voice: string; engine: string; sample_seconds: number; languages: string[] };

  it("makes a clone of a low male sample: 201 with its voice name, engine and the sample's decoded length", async () => {
    expect(samplePitch).toBeGreaterThan(75);
    expect(samplePitch).toBeLessThan(110);
    const res = await post("/v1/voices/clones", { name: "Kal", sample: "kal.wav", language: "English" });
    expect(res.status, await res.clone().text()).toBe(201);
    clone = (await res.json()) as typeof clone;
    expect(res.headers.get("location")).toBe(`/v1/voices/clones/${clone.id}`);
    expect(clone.voice).toBe(`clone:${clone.id}`);
    expect(clone.engine).toBe("match");
    expect(clone.sample_seconds).toBeGreaterThan(8);
    expect(clone.languages).toEqual(expect.arrayContaining(["English", "Spanish"]));
  });

  it("lists the clone among the caller's voices, for each language it speaks, saying it is an approximation", async () => {
    const res = await fetch(`${base}/v1/voices?language=Spanish`, { headers });
    expect(res.status).toBe(200);
    const voices = (await res.json()) as Array<{ name: string; language: string; engine: string; description: string }>;
    const listed = voices.find((v) => v.name === clone.voice);
    expect(listed).toMatchObject({ language: "Spanish", engine: "match" });
    expect(listed?.description).toMatch(/approximation/);
    const bobs = (await (await fetch(`${base}/v1/voices`, { headers: { ...headers, "API-KEY": BOB_KEY } })).json()) as Array<{ name: string }>;
    expect(bobs.some((v) => v.name === clone.voice)).toBe(false);
  });

  it("refuses a sample too short to clone with a 422 at body.sample in plain words", async () => {
    const res = await post("/v1/voices/clones", { name: "Short", sample: "short.wav" });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: Array<{ loc: string[]; msg: string }> };
    expect(body.detail[0]?.loc).toEqual(["body", "sample"]);
    expect(body.detail[0]?.msg).toMatch(/shorter than the 3 seconds/);
  });

  it("speaks in the clone: synthesis in English and Spanish has a median pitch within 10 % of the sample's", async () => {
    for (const [language, text] of [
      ["English", "The weather is lovely today, and we are going for a long walk along the river before dinner."],
      ["Spanish", "Hoy hace muy buen tiempo y vamos a dar un largo paseo por el río antes de la cena."],
    ] as const) {
      const res = await post("/v1/speech/synthesize", { text, language, voice: clone.voice });
      expect(res.status, `${language}: ${await res.clone().text()}`).toBe(200);
      const body = (await res.json()) as { audio_url: string };
      const { hz } = await medianPitchOf(body.audio_url, `synthesis-${language}.mp3`);
      expect(within(hz, samplePitch), `${language}: ${hz.toFixed(1)} Hz against the sample's ${samplePitch.toFixed(1)} Hz`).toBeLessThanOrEqual(0.1);
    }
  }, LONG);

  it("another account cannot use the clone: the same 422 at the field as an unknown voice", async () => {
    const res = await post("/v1/speech/synthesize", { text: "Hello.", language: "English", voice: clone.voice }, BOB_KEY);
    expect(res.status).toBe(422);
  });

  it("reads an audio book with use_voice_clone in a clone of its sample (median pitch within 10 %)", async () => {
    const res = await post("/v1/audio_books/", {
      file: "book.txt",
      name: "Harbour",
      source_language: "English",
      target_language: "English",
      use_voice_clone: true,
      voice_clone_sample: "kal.wav",
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const done = await follow(`/v1/audio_books/${id}`);
    expect(done.task_status, String(done.task_error)).toBe("completed");
    const { hz, seconds } = await medianPitchOf(String(done.localized_file), "book.mp3");
    expect(seconds).toBeGreaterThan(BOOK_TEXT.length / 30);
    expect(within(hz, samplePitch), `book: ${hz.toFixed(1)} Hz against the sample's ${samplePitch.toFixed(1)} Hz`).toBeLessThanOrEqual(0.1);
  }, LONG);

  it("an audio book with use_voice_clone and no sample is a 422 at voice_clone_sample", async () => {
    const res = await post("/v1/audio_books/", { file: "book.txt", name: "x", source_language: "English", target_language: "English", use_voice_clone: true });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: Array<{ loc: string[] }> };
    expect(body.detail[0]?.loc).toEqual(["body", "voice_clone_sample"]);
  });

  it("reads an audio book in the clone named as its preset voice", async () => {
    const res = await post("/v1/audio_books/", { file: "book.txt", name: "Harbour 2", source_language: "English", target_language: "English", preset_voice_name: clone.voice });
    expect(res.status, await res.clone().text()).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const done = await follow(`/v1/audio_books/${id}`);
    expect(done.task_status, String(done.task_error)).toBe("completed");
    const { hz } = await medianPitchOf(String(done.localized_file), "book-preset.mp3");
    expect(within(hz, samplePitch), `book: ${hz.toFixed(1)} Hz against the sample's ${samplePitch.toFixed(1)} Hz`).toBeLessThanOrEqual(0.1);
  }, LONG);

  it("a voice stream with use_voice_clone and no sample speaks in a clone of its input's own speech", async () => {
    const res = await post("/v1/voices/streams", { file: "kal.wav", source_language: "English", target_language: "English", use_voice_clone: true });
    expect(res.status, await res.clone().text()).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const done = await follow(`/v1/voices/streams/${id}`);
    expect(done.task_status, String(done.task_error)).toBe("completed");
    const { hz } = await medianPitchOf(String(done.localized_file), "stream.mp3");
    expect(within(hz, samplePitch), `stream: ${hz.toFixed(1)} Hz against the input's ${samplePitch.toFixed(1)} Hz`).toBeLessThanOrEqual(0.1);
  }, LONG);

  it("a book read in a match clone that is deleted meanwhile still finishes (the voice is its profile, nothing at an engine)", async () => {
    const made = await post("/v1/voices/clones", { name: "Kal again", sample: "kal.wav" });
    expect(made.status).toBe(201);
    const other = (await made.json()) as { id: string; voice: string };
    const res = await post("/v1/audio_books/", { file: "book.txt", name: "Harbour 3", source_language: "English", target_language: "English", preset_voice_name: other.voice });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    expect(await deleteClone(other.id)).toBe(204);
    const done = await follow(`/v1/audio_books/${id}`);
    expect(done.task_status, String(done.task_error)).toBe("completed");
  }, LONG);

  it("deletes the clone (204); synthesis in it is then a 422", async () => {
    expect(await deleteClone(clone.id)).toBe(204);
    expect((await fetch(`${base}/v1/voices/clones/${clone.id}`, { headers })).status).toBe(404);
    const again = await post("/v1/speech/synthesize", { text: "Hello.", language: "English", voice: clone.voice });
    expect(again.status).toBe(422);
  });
});
