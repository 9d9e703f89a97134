/**
 * The ElevenLabs cloning engine over real HTTP against a local stand-in that speaks ElevenLabs'
 * documented protocol (multipart voices/add, text-to-speech with output_format, DELETE, xi-api-key,
 * `{"detail": {...}}` errors). What a user would notice is measured on the WAV the engine writes:
 * its format, its length, and the pitch of the voice that spoke.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createLogger } from "@voiceloc/log";
import {
  ELEVENLABS_QUOTA_FAULT,
  makeSpeechWav,
  standInPitch,
  startElevenLabsStandIn,
  type CloneServiceStandIn,
  type ElevenLabsRoute,
} from "@voiceloc/testing";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readWavInfo, wavSeconds } from "../wav.ts";
import { createElevenLabsCloneEngine, type ElevenLabsCloneOptions } from "./elevenlabs.ts";
import type { CloneEngine, ClonedVoice, SampleAnalysis } from "./types.ts";
import { clonedVoice, failure, sample, secretFreeLogger, startRemoteCloneFixture, type RemoteCloneFixture } from "./testing/remote-fixture.ts";

const API_KEY = "xi-test-key-0123456789abcdef";
const logger = secretFreeLogger(API_KEY);
let fixture: RemoteCloneFixture<CloneServiceStandIn<ElevenLabsRoute>>;
let standIn: typeof fixture.standIn;
let dir: string;
let lowSample: SampleAnalysis;
let highSample: SampleAnalysis;
const voice = (id: string, ref: string): ClonedVoice => clonedVoice("elevenlabs", id, ref);

function engine(options: Partial<ElevenLabsCloneOptions> = {}): CloneEngine {
  return createElevenLabsCloneEngine({
    apiKey: API_KEY,
    baseUrl: standIn.url,
    model: "eleven_multilingual_v2",
    logger,
    ...options,
  });
}

/** Waits for `condition`, checking every 20 ms, failing after a generous deadline. */
async function until(condition: () => boolean, deadlineMs = 20_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error("the condition was not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeAll(async () => {
  fixture = await startRemoteCloneFixture("voiceloc-elevenlabs-", () => startElevenLabsStandIn({ apiKey: API_KEY, refuseLanguageCodeFor: ["eleven_turbo_v2"] }), { lowHz: 110, highHz: 230 });
  ({ standIn, dir, lowSample, highSample } = fixture);
});

afterAll(async () => {
  await fixture?.close();
});

describe("ElevenLabs cloning engine", () => {
  it("makes a voice from the sample with one multipart upload carrying the key, and speaks in it", async () => {
    const clones = engine();
    const before = standIn.requests.length;
    const { ref } = await clones.create({ id: "c1", name: "Grandpa", sample: lowSample, language: "English" });
    const upload = standIn.requests.slice(before);
    expect(upload).toHaveLength(1);
    expect(upload[0]?.path).toBe("/v1/voices/add");
    expect(upload[0]?.headers["xi-api-key"]).toBe(API_KEY);
    expect(upload[0]?.fields.name).toBe("Grandpa");
    const sent = upload[0]?.files ?? [];
    expect(sent).toHaveLength(1);
    expect(sent[0]?.field).toBe("files");
    expect(sent[0]?.bytes).toBe((await readFile(lowSample.wavPath)).length);
    expect(standIn.voices.get(ref)?.sample.equals(await readFile(lowSample.wavPath))).toBe(true);

    const text = "The old lighthouse keeper told the story once more.";
    const result = await clones.synthesize(voice("c1", ref), { text, language: "English", outPath: join(dir, "c1.wav") });
    expect(result.voice).toBe("clone:c1");
    expect(result.sampleRate).toBe(22_050);
    const info = await readWavInfo(result.wavPath);
    expect(info).toMatchObject({ sampleRate: 22_050, channels: 1, bitsPerSample: 16 });
    // The stand-in speaks 65 ms a character: the length says the PCM was read at its own rate.
    expect(wavSeconds(info!)).toBeCloseTo(text.length * 0.065, 1);
    const pitch = standInPitch(await readFile(result.wavPath));
    expect(pitch).toBeGreaterThan(110 * 0.95);
    expect(pitch).toBeLessThan(110 * 1.05);

    const speech = standIn.requests.at(-1);
    expect(speech?.path).toBe(`/v1/text-to-speech/${ref}`);
    expect(speech?.query.get("output_format")).toBe("pcm_22050");
    expect(speech?.json).toEqual({ text, model_id: "eleven_multilingual_v2", language_code: "en" });
  });

  it("speaks each clone in its own voice and tells the model the language", async () => {
    const clones = engine();
    const low = await clones.create({ id: "low", name: "Low", sample: lowSample });
    const high = await clones.create({ id: "high", name: "High", sample: highSample });
    const a = await clones.synthesize(voice("low", low.ref), { text: "Buenos días a todos.", language: "Spanish", outPath: join(dir, "low.es.wav") });
    const b = await clones.synthesize(voice("high", high.ref), { text: "Buenos días a todos.", language: "Spanish", outPath: join(dir, "high.es.wav") });
    const lowPitch = standInPitch(await readFile(a.wavPath)) ?? 0;
    const highPitch = standInPitch(await readFile(b.wavPath)) ?? 0;
    expect(Math.abs(lowPitch - 110) / 110).toBeLessThan(0.05);
    expect(Math.abs(highPitch - 230) / 230).toBeLessThan(0.05);
    expect(standIn.speeches.slice(-2).map((s) => s.language)).toEqual(["es", "es"]);
  });

  it("offers the model's languages among the service's and refuses others before any request", async () => {
    const clones = engine();
    expect(clones.languages()).toEqual(expect.arrayContaining(["English", "Spanish", "French", "German", "Japanese", "Chinese", "Hindi", "Arabic"]));
    expect(clones.languages()).not.toContain("Swahili");
    expect(clones.languages()).not.toContain("Amharic");
    expect(engine({ model: "eleven_flash_v2" }).languages()).toEqual(["English"]);
    const before = standIn.requests.length;
    const error = await failure(clones.synthesize(voice("x", "abc"), { text: "Habari", language: "Swahili" }));
    expect(error.code).toBe("LANGUAGE_NOT_SUPPORTED");
    expect(standIn.requests.length).toBe(before);
  });

  it("deletes the voice; a voice already gone is not an error, and speech in it is CLONE_NOT_FOUND", async () => {
    const clones = engine();
    const { ref } = await clones.create({ id: "gone", name: "Gone", sample: highSample });
    await clones.remove(voice("gone", ref));
    expect(standIn.voices.has(ref)).toBe(false);
    expect(standIn.requests.at(-1)).toMatchObject({ method: "DELETE", path: `/v1/voices/${ref}` });
    await clones.remove(voice("gone", ref));
    const error = await failure(clones.synthesize(voice("gone", ref), { text: "Hello there.", language: "English" }));
    expect(error.code).toBe("CLONE_NOT_FOUND");
    expect(error.message).toBe('The cloned voice "Voice gone" no longer exists at ElevenLabs (it was deleted there).');
  });

  it("says a sample ElevenLabs cannot use is unusable, in their words", async () => {
    const notAudio = join(dir, "notes.wav");
    await writeFile(notAudio, "Dear diary, today I recorded nothing at all.");
    const error = await failure(engine().create({ id: "bad", name: "Bad", sample: sample(notAudio, 4) }));
    expect(error.code).toBe("SAMPLE_UNUSABLE");
    expect(error.message).toBe("ElevenLabs could not make a voice from this sample: The uploaded file could not be decoded as audio.");
  });

  it("does not blame the sample when the account has no voice slot left", async () => {
    const full = await startElevenLabsStandIn({ apiKey: API_KEY, maxVoices: 1 });
    try {
      const clones = createElevenLabsCloneEngine({ apiKey: API_KEY, baseUrl: full.url, model: "eleven_multilingual_v2", logger: createLogger({ level: "silent" }) });
      await clones.create({ id: "s1", name: "First", sample: lowSample });
      const error = await failure(clones.create({ id: "s2", name: "Second", sample: highSample }));
      expect(error.code).toBe("SPEECH_SERVICE_REJECTED");
      expect(error.message).toBe(
        "ElevenLabs refused to make the voice (HTTP 400): You have reached your maximum amount of custom voices (1 / 1). You can upgrade your subscription to increase your custom voice limit.",
      );
    } finally {
      await full.close();
    }
  });

  it("says a refused key and a used-up quota in plain words, never with the key", async () => {
    const wrong = createElevenLabsCloneEngine({ apiKey: "xi-wrong-key", baseUrl: standIn.url, model: "eleven_multilingual_v2", logger: createLogger({ level: "silent" }) });
    const refused = await failure(wrong.create({ id: "k", name: "K", sample: lowSample }));
    expect(refused.code).toBe("SPEECH_SERVICE_AUTH");
    expect(refused.message).toBe("ElevenLabs refused this server's API key (HTTP 401): Invalid API key.");
    expect(refused.message).not.toContain("xi-wrong-key");

    const clones = engine();
    const { ref } = await clones.create({ id: "q", name: "Q", sample: lowSample });
    standIn.fail("speak", ELEVENLABS_QUOTA_FAULT);
    const quota = await failure(clones.synthesize(voice("q", ref), { text: "One more page.", language: "English" }));
    expect(quota.code).toBe("SPEECH_SERVICE_AUTH");
    expect(quota.message).toBe("ElevenLabs says this server's quota is used up (HTTP 401): You have insufficient quota to complete this request.");
  });

  it("maps rate limits (with Retry-After), outages, timeouts and malformed answers", async () => {
    const clones = engine({ timeoutMs: 1_500 });
    const { ref } = await clones.create({ id: "m", name: "M", sample: lowSample });
    const speak = () => clones.synthesize(voice("m", ref), { text: "Chapter two.", language: "English" });

    standIn.fail("speak", { status: 429, headers: { "retry-after": "7" }, body: { detail: { type: "rate_limit_error", code: "too_many_concurrent_requests", message: "Too many concurrent requests." } } });
    const limited = await failure(speak());
    expect(limited.code).toBe("SPEECH_SERVICE_RATE_LIMITED");
    expect(limited.message).toBe("ElevenLabs is limiting requests (HTTP 429): Too many concurrent requests. It asks to wait 7 seconds before trying again.");

    standIn.fail("speak", { status: 503, body: "<html>Service Unavailable</html>" });
    const down = await failure(speak());
    expect(down.code).toBe("SPEECH_SERVICE_UNAVAILABLE");
    expect(down.message).toBe("ElevenLabs failed (HTTP 503).");

    standIn.fail("speak", { hang: true });
    const started = Date.now();
    const slow = await failure(speak());
    expect(slow.code).toBe("SPEECH_SERVICE_TIMEOUT");
    expect(slow.message).toBe("ElevenLabs did not answer within 2 seconds.");
    expect(Date.now() - started).toBeLessThan(30_000);

    standIn.fail("speak", { malformed: true });
    const notAudio = await failure(speak());
    expect(notAudio.code).toBe("SPEECH_SERVICE_BAD_RESPONSE");

    standIn.fail("create", { malformed: true });
    const noId = await failure(clones.create({ id: "m2", name: "M2", sample: lowSample }));
    expect(noId.code).toBe("SPEECH_SERVICE_BAD_RESPONSE");
    expect(noId.message).toBe("ElevenLabs answered the new voice without a usable voice_id.");

    standIn.fail("delete", { status: 500, body: { detail: { type: "internal_error", code: "internal_error", message: "Something broke." } } });
    const undeleted = await failure(clones.remove(voice("m", ref)));
    expect(undeleted.code).toBe("SPEECH_SERVICE_UNAVAILABLE");
    // Still there: a retried removal deletes it.
    await clones.remove(voice("m", ref));
    expect(standIn.voices.has(ref)).toBe(false);

    // A service that cannot be reached at all.
    const unreachable = createElevenLabsCloneEngine({ apiKey: API_KEY, baseUrl: "http://127.0.0.1:1", model: "eleven_multilingual_v2", logger: createLogger({ level: "silent" }) });
    const offline = await failure(unreachable.remove(voice("m", ref)));
    expect(offline.code).toBe("SPEECH_SERVICE_UNAVAILABLE");
    expect(offline.message).toBe("ElevenLabs could not be reached.");
  });

  it("leaves language_code out once the model refuses it, and still speaks", async () => {
    const clones = engine({ model: "eleven_turbo_v2" });
    const { ref } = await clones.create({ id: "t", name: "T", sample: highSample });
    const first = await clones.synthesize(voice("t", ref), { text: "First line.", language: "English" });
    await clones.synthesize(voice("t", ref), { text: "Second line.", language: "English" });
    expect(standIn.speeches.slice(-2).map((s) => s.language)).toEqual([undefined, undefined]);
    const asked = standIn.requests.filter((r) => r.path === `/v1/text-to-speech/${ref}`).map((r) => (r.json as { language_code?: string }).language_code);
    expect(asked).toEqual(["en", undefined, undefined]);
    expect(Math.abs((standInPitch(await readFile(first.wavPath)) ?? 0) - 230) / 230).toBeLessThan(0.05);
  });

  it("stops when the caller cancels", async () => {
    const clones = engine();
    const { ref } = await clones.create({ id: "cx", name: "CX", sample: lowSample });
    standIn.fail("speak", { hang: true });
    const controller = new AbortController();
    const asked = standIn.requests.length;
    const pending = clones.synthesize(voice("cx", ref), { text: "Never mind.", language: "English", signal: controller.signal });
    await until(() => standIn.requests.length > asked);
    controller.abort();
    expect((await failure(pending)).code).toBe("SYNTHESIS_CANCELLED");
  });

  it("clones from real speech", async () => {
    const speech = await makeSpeechWav("This is my voice, recorded for a short sample of speech.", { voice: "espeak:en", path: join(dir, "speech.wav") });
    const clones = engine();
    const { ref } = await clones.create({ id: "sp", name: "Speaker", sample: sample(speech, 4) });
    const measured = standIn.voices.get(ref)?.pitchHz ?? 0;
    const result = await clones.synthesize(voice("sp", ref), { text: "Et voilà.", language: "French" });
    expect(Math.abs((standInPitch(await readFile(result.wavPath)) ?? 0) - measured) / measured).toBeLessThan(0.05);
  });
});
