import { randomUUID } from "node:crypto";
import { FILE_NOT_AVAILABLE } from "@voiceloc/fetch";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SEQ_DELIVERY_SPAN } from "@voiceloc/worker";
import { makeSpeechWav, tempDir } from "@voiceloc/testing";
import { checkpointKey } from "@voiceloc/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mergeSegments } from "./timing.ts";
import {
  createStack,
  makeLyingM4a,
  makeTwoSentenceWav,
  makeZeroChannelWav,
  silenceEnds,
  startService,
  type ServiceHarness,
  type Stack,
  type TwoSentences,
} from "./testing/harness.ts";

let stack: Stack;
let root: { path: string; cleanup: () => Promise<void> };
let speech: TwoSentences;
let h: ServiceHarness;

beforeAll(async () => {
  stack = await createStack();
  root = await tempDir("voiceloc-voice-stream-media-");
  speech = await makeTwoSentenceWav(stack.media, root.path, "two-sentences.wav");
  await writeFile(join(root.path, "notes.txt"), "These are notes, not a recording.\n".repeat(20), "utf8");
  await makeSilence(join(root.path, "silence.wav"));
  await makeLyingM4a(stack.media, speech.path, join(root.path, "claims-600s.m4a"), 600);
  await makeLyingM4a(stack.media, speech.path, join(root.path, "claims-1s.m4a"), 1);
  await makeZeroChannelWav(speech.path, join(root.path, "zero-channels.wav"));
  h = await startService(stack, { mediaRoot: root.path });
});

afterAll(async () => {
  await h?.cleanup();
  await root?.cleanup();
});

async function makeSilence(path: string): Promise<void> {
  await stack.media.run(["-nostdin", "-hide_banner", "-nostats", "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", "3", "-c:a", "pcm_s16le", "-f", "wav", "-y", path]);
}

async function resultOf(taskId: string) {
  const end = await h.finished(taskId);
  expect(end.error ?? null, "task error").toBeNull();
  expect(end.status).toBe("completed");
  expect(end.result_key).toBe(`results/voice-stream/${taskId}.mp3`);
  const path = await h.download(end.result_key as string);
  const info = await stack.media.probe(path);
  expect(info.audio?.codec).toBe("mp3");
  return { path, durationSeconds: info.durationSeconds, events: h.events.filter((e) => e.task_id === taskId) };
}

describe("voice-stream service (in-process bus)", () => {
  it("English → English: speech that follows the original's timing, as long as the original", async () => {
    const id = await h.submit({ file: "two-sentences.wav", source: "English", target: "English" });
    const { path, durationSeconds, events } = await resultOf(id);

    expect(events[0]?.status).toBe("processing");
    const progress = events.map((e) => e.progress);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(events.some((e) => e.status === "processing" && e.progress > 0 && e.progress < 100)).toBe(true);

    expect(durationSeconds).toBeGreaterThanOrEqual(speech.durationSeconds - 0.2);
    expect(durationSeconds).toBeLessThanOrEqual(speech.durationSeconds + 1.5);
    const volume = await stack.media.measureVolume(path);
    expect(volume.maxVolumeDb).toBeGreaterThan(-20);
    expect(volume.meanVolumeDb).toBeGreaterThan(-50);

    // Where the recogniser hears the second sentence start, the output's second clip starts too.
    const transcript = await stack.stt.transcribe({ path: speech.path, language: "English" });
    const segments = mergeSegments(transcript.segments);
    const second = segments.find((s) => s.start >= speech.firstSeconds + 0.5);
    expect(second, "a segment after the pause").toBeDefined();
    const secondStart = second?.start ?? Number.NaN;
    expect(durationSeconds).toBeGreaterThan(secondStart);
    const resumes = await silenceEnds(stack.media, path);
    expect(resumes.some((t) => t >= secondStart - 0.35 && t <= secondStart + 1.0), `speech resumes near ${secondStart}s (silence ends: ${resumes.join(", ")})`).toBe(true);
  });

  it("English → Spanish: translated speech with a Spanish voice", async () => {
    const id = await h.submit({ file: "two-sentences.wav", source: "English", target: "Spanish" });
    const { path, durationSeconds } = await resultOf(id);
    expect(durationSeconds).toBeGreaterThanOrEqual(speech.durationSeconds - 0.2);
    expect(durationSeconds).toBeLessThanOrEqual(speech.durationSeconds + 6);
    const volume = await stack.media.measureVolume(path);
    expect(volume.maxVolumeDb).toBeGreaterThan(-20);
    expect(volume.meanVolumeDb).toBeGreaterThan(-50);
  });

  it("fails a text file given as audio with 'not audio'", async () => {
    const id = await h.submit({ file: "notes.txt", source: "English", target: "English" });
    const end = await h.finished(id);
    expect(end.status).toBe("failed");
    expect(end.error).toMatch(/not audio we can read/);
  });

  it("fails a missing file with the one file-not-available reason", async () => {
    const id = await h.submit({ file: "nowhere/missing.wav", source: "English", target: "English" });
    const end = await h.finished(id);
    expect(end.status).toBe("failed");
    expect(end.error).toBe(FILE_NOT_AVAILABLE);
  });

  it("starts again after a stop: a task sent after the restart is taken", async () => {
    await h.service.stop();
    await h.service.start();
    const id = await h.submit({ file: "nowhere/missing.wav", source: "English", target: "English" });
    const end = await h.finished(id, 30_000);
    expect([end.status, end.error]).toEqual(["failed", FILE_NOT_AVAILABLE]);
  });

  it("fails a recording without speech with a clear message", async () => {
    const id = await h.submit({ file: "silence.wav", source: "English", target: "English" });
    const end = await h.finished(id);
    expect(end.status).toBe("failed");
    expect(end.error).toBe("No speech was recognised in the audio.");
  });

  it("fails a Spanish source: no recogniser understands Spanish offline", async () => {
    const id = await h.submit({ file: "two-sentences.wav", source: "Spanish", target: "English" });
    const end = await h.finished(id);
    expect(end.status).toBe("failed");
    expect(end.error).toMatch(/recognition/i);
    expect(end.error).toContain("Spanish");
  });

  it("resumes from a stored transcript without fetching the input again", async () => {
    const id = randomUUID();
    const transcript = {
      version: 2,
      language: "English",
      durationSeconds: 4,
      segments: [
        { start: 0.2, end: 1.4, text: "good morning" },
        { start: 2.5, end: 3.6, text: "thank you" },
      ],
    };
    await h.blobs.put(checkpointKey(id, "transcript.json"), Buffer.from(JSON.stringify(transcript)));
    await h.submit({ id, file: "gone-after-the-first-delivery.wav", source: "English", target: "English" });
    const { durationSeconds } = await resultOf(id);
    expect(durationSeconds).toBeGreaterThanOrEqual(3.8);
    expect(durationSeconds).toBeLessThanOrEqual(5.5);
    expect(await h.blobs.list(`tasks/${id}/`)).toEqual([]);
  });

  it("fails an unknown voice, naming it", async () => {
    const id = await h.submit({ file: "two-sentences.wav", source: "English", target: "English", voice: "flite:nobody" });
    const end = await h.finished(id);
    expect(end.status).toBe("failed");
    expect(end.error).toContain("flite:nobody");
  });

  it("lying header: an m4a whose header claims 600 s gives a track as long as its real speech, not 600 s", async () => {
    const id = await h.submit({ file: "claims-600s.m4a", source: "English", target: "English" });
    const { durationSeconds } = await resultOf(id);
    expect(durationSeconds).toBeGreaterThanOrEqual(speech.durationSeconds - 0.3);
    expect(durationSeconds).toBeLessThanOrEqual(speech.durationSeconds + 1.5);
  });

  it("a WAV declaring 0 channels fails on its first delivery, in plain words", async () => {
    const id = await h.submit({ file: "zero-channels.wav", source: "English", target: "English" });
    const end = await h.finished(id);
    expect(end.status).toBe("failed");
    expect(end.error).toBe("The file is not audio we can read: it is damaged or is not an audio or video file.");
    // Failed by the first delivery (an input failure is acked at once; a retried one fails only on its last).
    expect(Math.floor(end.seq / SEQ_DELIVERY_SPAN)).toBe(1);
    expect(h.events.filter((e) => e.task_id === id).every((e) => Math.floor(e.seq / SEQ_DELIVERY_SPAN) === 1)).toBe(true);
  });

  it("resume progress: a task whose transcript, translation and one clip are stored opens at the speaking stage", async () => {
    const id = randomUUID();
    const transcript = {
      version: 2,
      language: "English",
      durationSeconds: 5,
      segments: [
        { start: 0.2, end: 1.6, text: "good morning" },
        { start: 2.8, end: 4.2, text: "thank you" },
      ],
    };
    const translation = { version: 1, source: "English", target: "Spanish", texts: ["buenos días", "gracias"] };
    const clip = await makeSpeechWav("buenos días", { voice: "espeak:es", path: join(root.path, "clip-0.wav") });
    await h.blobs.put(checkpointKey(id, "transcript.json"), Buffer.from(JSON.stringify(transcript)));
    await h.blobs.put(checkpointKey(id, "translation.json"), Buffer.from(JSON.stringify(translation)));
    await h.blobs.put(checkpointKey(id, "clips/00000.wav"), { path: clip });
    await h.submit({ id, file: "gone-after-the-first-delivery.wav", source: "English", target: "Spanish" });
    const { events } = await resultOf(id);
    // Recognition (40) and translation (55) are done, and one of two clips is spoken: 55 + 35 / 2.
    expect(events[0]).toMatchObject({ status: "processing", progress: 72.5 });
    const progress = events.map((e) => e.progress);
    expect([...progress].sort((a, b) => a - b)).toEqual(progress);
  });
});

describe("voice-stream media limit (MAX_MEDIA_SECONDS)", () => {
  let limited: ServiceHarness;
  beforeAll(async () => {
    limited = await startService(stack, { mediaRoot: root.path, maxMediaSeconds: 3 });
  });
  afterAll(async () => {
    await limited?.cleanup();
  });

  it("refuses a recording longer than the limit, naming it, also when its header claims less", async () => {
    expect(speech.durationSeconds).toBeGreaterThan(4);
    const plain = await limited.submit({ file: "two-sentences.wav", source: "English", target: "English" });
    const lying = await limited.submit({ file: "claims-1s.m4a", source: "English", target: "English" });
    for (const id of [plain, lying]) {
      const end = await limited.finished(id);
      expect(end.status).toBe("failed");
      expect(end.error).toBe("The recording is longer than 3 seconds, the most this server accepts for a voice stream (MAX_MEDIA_SECONDS).");
      expect(Math.floor(end.seq / SEQ_DELIVERY_SPAN)).toBe(1);
    }
  });
});
