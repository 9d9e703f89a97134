/**
 * The voice library cloning engine over real HTTP against a local stand-in of chatterbox-tts-api's
 * documented voice library protocol (multipart POST /v1/voices, GET/DELETE /v1/voices/{name}, download,
 * POST /v1/audio/speech that speaks an unknown voice in the default voice). Measured on the WAV written:
 * format, length, and the pitch of the voice that spoke.
 */
import { open, readFile } from "node:fs/promises";
import { join } from "node:path";
import { createLogger } from "@voiceloc/log";
import { standInPitch, startVoiceLibraryStandIn, type CloneServiceStandIn, type VoiceLibraryRoute } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readWavInfo, wavSeconds } from "../wav.ts";
import type { CloneEngine, ClonedVoice, SampleAnalysis } from "./types.ts";
import { clonedVoice, failure, sample, secretFreeLogger, startRemoteCloneFixture, type RemoteCloneFixture } from "./testing/remote-fixture.ts";
import { createVoiceLibraryCloneEngine, voiceLibraryName, type VoiceLibraryCloneOptions } from "./voice-library.ts";

const API_KEY = "library-secret-0123456789";
const logger = secretFreeLogger(API_KEY);
let fixture: RemoteCloneFixture<CloneServiceStandIn<VoiceLibraryRoute>>;
let standIn: typeof fixture.standIn;
let dir: string;
let lowSample: SampleAnalysis;
let highSample: SampleAnalysis;
const voice = (id: string, ref: string): ClonedVoice => clonedVoice("voice-library", id, ref);

function engine(options: Partial<VoiceLibraryCloneOptions> = {}): CloneEngine {
  return createVoiceLibraryCloneEngine({
    baseUrl: `${standIn.url}/v1`,
    apiKey: API_KEY,
    logger,
    ...options,
  });
}

const DEFAULT_PITCH = 300;

async function pitchOf(path: string): Promise<number> {
  return standInPitch(await readFile(path)) ?? 0;
}

function near(measured: number, expected: number): void {
  expect(Math.abs(measured - expected) / expected).toBeLessThan(0.05);
}

beforeAll(async () => {
  fixture = await startRemoteCloneFixture("voiceloc-voice-library-", () => startVoiceLibraryStandIn({ apiKey: API_KEY, defaultPitchHz: DEFAULT_PITCH }), { lowHz: 100, highHz: 220 });
  ({ standIn, dir, lowSample, highSample } = fixture);
});

afterAll(async () => {
  await fixture?.close();
});

describe("voice library cloning engine", () => {
  it("stores the sample as a named voice in the sample's language and speaks in it", async () => {
    const clones = engine();
    const before = standIn.requests.length;
    const { ref } = await clones.create({ id: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", name: "Grandma", sample: highSample, language: "French" });
    expect(ref).toBe("voiceloc-0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
    const upload = standIn.requests.slice(before);
    expect(upload).toHaveLength(1);
    expect(upload[0]).toMatchObject({ method: "POST", path: "/v1/voices", fields: { voice_name: ref, language: "fr" } });
    expect(upload[0]?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(upload[0]?.files).toEqual([{ field: "voice_file", filename: "sample.wav", type: "audio/wav", bytes: (await readFile(highSample.wavPath)).length }]);

    const text = "Il était une fois une petite maison.";
    const result = await clones.synthesize(voice("g", ref), { text, language: "French", outPath: join(dir, "g.wav") });
    expect(result.voice).toBe("clone:g");
    const info = await readWavInfo(result.wavPath);
    expect(info).toMatchObject({ sampleRate: 24_000, channels: 1, bitsPerSample: 16 });
    expect(wavSeconds(info!)).toBeCloseTo(text.length * 0.065, 1);
    near(await pitchOf(result.wavPath), 220);
    expect(standIn.speeches.at(-1)).toMatchObject({ voice: ref, spokenBy: ref, language: "fr" });
    expect(standIn.requests.at(-1)?.json).toEqual({ input: text, voice: ref, response_format: "wav" });
  });

  it("speaks another language through a variant made once from the voice's own file, and deletes it with the voice", async () => {
    const clones = engine();
    const { ref } = await clones.create({ id: "multi", name: "Multi", sample: lowSample, language: "English" });
    const uploads = () => standIn.requests.filter((r) => r.method === "POST" && r.path === "/v1/voices").length;
    const before = uploads();
    const es = await clones.synthesize(voice("multi", ref), { text: "Hola, ¿qué tal?", language: "Spanish" });
    await clones.synthesize(voice("multi", ref), { text: "Otra frase más.", language: "Spanish" });
    expect(uploads()).toBe(before + 1);
    expect(standIn.voices.get(`${ref}-es`)?.language).toBe("es");
    expect(standIn.voices.get(`${ref}-es`)?.sample.equals(await readFile(lowSample.wavPath))).toBe(true);
    expect(standIn.speeches.slice(-2).map((s) => [s.spokenBy, s.language])).toEqual([[`${ref}-es`, "es"], [`${ref}-es`, "es"]]);
    near(await pitchOf(es.wavPath), 100);
    const en = await clones.synthesize(voice("multi", ref), { text: "Hello again.", language: "English" });
    expect(standIn.speeches.at(-1)?.spokenBy).toBe(ref);
    near(await pitchOf(en.wavPath), 100);

    // Parallel lanes asking for a new language make its variant once.
    await Promise.all(["Uno.", "Dos.", "Tres.", "Cuatro."].map((text) => clones.synthesize(voice("multi", ref), { text, language: "German" })));
    expect(uploads()).toBe(before + 2);
    expect(standIn.voices.get(`${ref}-de`)?.language).toBe("de");

    // Another process (a fresh engine) finds the variant and does not upload it again.
    await engine().synthesize(voice("multi", ref), { text: "Hasta luego.", language: "Spanish" });
    expect(uploads()).toBe(before + 2);

    await clones.remove(voice("multi", ref));
    expect(standIn.voices.has(ref)).toBe(false);
    expect(standIn.voices.has(`${ref}-es`)).toBe(false);
    expect(standIn.voices.has(`${ref}-de`)).toBe(false);
    await clones.remove(voice("multi", ref));
  });

  it("says CLONE_NOT_FOUND for a deleted voice instead of speaking in the server's default voice", async () => {
    const clones = engine();
    const { ref } = await clones.create({ id: "del", name: "Deleted", sample: lowSample });
    await clones.remove(voice("del", ref));
    const spoken = standIn.speeches.length;
    const error = await failure(clones.synthesize(voice("del", ref), { text: "Anyone there?", language: "English" }));
    expect(error.code).toBe("CLONE_NOT_FOUND");
    expect(error.message).toMatch(/^The cloned voice "Voice del" no longer exists in the voice library at 127\.0\.0\.1:\d+ \(it was deleted there\)\.$/);
    expect(standIn.speeches.length).toBe(spoken);
  });

  it("says a sample the library refuses is unusable, in its words", async () => {
    const big = join(dir, "big.wav");
    const handle = await open(big, "w");
    await handle.write(await readFile(lowSample.wavPath));
    await handle.truncate(11 * 1024 * 1024);
    await handle.close();
    const error = await failure(engine().create({ id: "big", name: "Big", sample: sample(big, 300) }));
    expect(error.code).toBe("SAMPLE_UNUSABLE");
    expect(error.message).toMatch(/^The voice library at 127\.0\.0\.1:\d+ could not make a voice from this sample: File too large\. Maximum size: 10MB\.$/);
  });

  it("takes a voice already stored by an earlier attempt as made", async () => {
    const clones = engine();
    const first = await clones.create({ id: "again", name: "Again", sample: highSample });
    const second = await clones.create({ id: "again", name: "Again", sample: highSample });
    expect(second.ref).toBe(first.ref);
  });

  it("offers its languages and refuses others before any request", async () => {
    expect(engine().languages()).toEqual(expect.arrayContaining(["English", "Spanish", "Swahili", "Arabic"]));
    expect(engine().languages()).not.toContain("Chinese");
    const english = engine({ languages: ["English"] });
    const before = standIn.requests.length;
    const error = await failure(english.synthesize(voice("x", "voiceloc-x"), { text: "Hola", language: "Spanish" }));
    expect(error.code).toBe("LANGUAGE_NOT_SUPPORTED");
    expect(standIn.requests.length).toBe(before);
    expect(voiceLibraryName("a/b")).toMatch(/^voiceloc-[0-9a-f]{32}$/);
  });

  it("maps a refused key, rate limits, outages, timeouts and malformed answers", async () => {
    const wrong = await failure(engine({ apiKey: "nope" }).create({ id: "k", name: "K", sample: lowSample }));
    expect(wrong.code).toBe("SPEECH_SERVICE_AUTH");
    expect(wrong.message).toMatch(/refused this server's API key \(HTTP 401\): Invalid API key\.$/);

    const clones = engine({ timeoutMs: 1_500 });
    const { ref } = await clones.create({ id: "f", name: "F", sample: lowSample });
    const speak = () => clones.synthesize(voice("f", ref), { text: "Page one.", language: "English" });

    standIn.fail("speak", { status: 429, headers: { "retry-after": "3" }, body: { error: { message: "Busy generating.", type: "rate_limit" } } });
    const limited = await failure(speak());
    expect(limited.code).toBe("SPEECH_SERVICE_RATE_LIMITED");
    expect(limited.message).toMatch(/is limiting requests \(HTTP 429\): Busy generating\. It asks to wait 3 seconds before trying again\.$/);

    standIn.fail("speak", { status: 500, body: { error: { message: "Internal server error: CUDA out of memory", type: "internal_error" } } });
    const down = await failure(speak());
    expect(down.code).toBe("SPEECH_SERVICE_UNAVAILABLE");
    expect(down.message).toMatch(/failed \(HTTP 500\): Internal server error: CUDA out of memory\.$/);

    standIn.fail("lookup", { hang: true });
    const slow = await failure(speak());
    expect(slow.code).toBe("SPEECH_SERVICE_TIMEOUT");
    expect(slow.message).toMatch(/^The voice library at 127\.0\.0\.1:\d+ did not answer within 2 seconds\.$/);

    standIn.fail("speak", { malformed: true });
    const notAudio = await failure(speak());
    expect(notAudio.code).toBe("SPEECH_SERVICE_BAD_RESPONSE");

    standIn.fail("lookup", { malformed: true });
    const noVoice = await failure(speak());
    expect(noVoice.code).toBe("SPEECH_SERVICE_BAD_RESPONSE");

    standIn.fail("delete", { status: 503, body: { error: { message: "Model loading", type: "unavailable" } } });
    expect((await failure(clones.remove(voice("f", ref)))).code).toBe("SPEECH_SERVICE_UNAVAILABLE");
    await clones.remove(voice("f", ref));
    expect(standIn.voices.has(ref)).toBe(false);

    // And the speech still works after all that.
    const ok = await engine().create({ id: "f2", name: "F2", sample: highSample });
    near(await pitchOf((await engine().synthesize(voice("f2", ok.ref), { text: "Fine again.", language: "English" })).wavPath), 220);
  });

  it("works against a server without authentication", async () => {
    const open = await startVoiceLibraryStandIn();
    try {
      const clones = createVoiceLibraryCloneEngine({ baseUrl: open.url, logger: createLogger({ level: "silent" }) });
      const { ref } = await clones.create({ id: "o", name: "Open", sample: lowSample });
      expect(open.requests.at(-1)?.headers.authorization).toBeUndefined();
      const result = await clones.synthesize(voice("o", ref), { text: "No key needed.", language: "English" });
      near(await pitchOf(result.wavPath), 100);
    } finally {
      await open.close();
    }
  });
});
