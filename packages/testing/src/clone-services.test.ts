/**
 * The cloning stand-ins answer like the services they stand for: FastAPI's 422 for a missing form field,
 * each service's error body shape, its status codes, and audio whose pitch is the voice's.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { standInPitch, startElevenLabsStandIn, startVoiceLibraryStandIn, type CloneServiceStandIn, type ElevenLabsRoute, type VoiceLibraryRoute } from "./clone-services.ts";
import { makeSpeechWav, makeToneWav } from "./media.ts";
import { tempDir } from "./tmp.ts";

const KEY = "xi-stand-in-key";

let dir: string;
let cleanup: () => Promise<void>;
let tone: Buffer;

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-standins-"));
  tone = await readFile(await makeToneWav(3, join(dir, "tone.wav"), { frequency: 180 }));
});

afterAll(async () => {
  await cleanup();
});

function form(fields: Record<string, string>, files: Record<string, { bytes: Buffer; name: string }> = {}): FormData {
  const body = new FormData();
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  for (const [name, file] of Object.entries(files)) body.append(name, new Blob([file.bytes], { type: "audio/wav" }), file.name);
  return body;
}

describe("standInPitch", () => {
  it("measures tones and speech, and nothing in silence or other formats", async () => {
    for (const frequency of [90, 140, 250, 330]) {
      const wav = await readFile(await makeToneWav(1, join(dir, `t${frequency}.wav`), { frequency, sampleRate: 22_050 }));
      const pitch = standInPitch(wav) ?? 0;
      expect(Math.abs(pitch - frequency) / frequency).toBeLessThan(0.03);
    }
    const speech = await readFile(await makeSpeechWav("A sample of speech for the pitch estimate.", { voice: "espeak:en", path: join(dir, "speech.wav") }));
    expect(standInPitch(speech)).toBeGreaterThan(70);
    expect(standInPitch(speech)).toBeLessThan(250);
    const silence = Buffer.from(tone);
    silence.fill(0, 44);
    expect(standInPitch(silence)).toBeUndefined();
    expect(standInPitch(Buffer.from("ID3 not a wav at all"))).toBeUndefined();
  });
});

describe("ElevenLabs stand-in", () => {
  let standIn: CloneServiceStandIn<ElevenLabsRoute>;
  beforeAll(async () => {
    standIn = await startElevenLabsStandIn({ apiKey: KEY });
  });
  afterAll(async () => {
    await standIn.close();
  });

  it("wants the key, the name and the files, like the service", async () => {
    const noKey = await fetch(`${standIn.url}/v1/voices/add`, { method: "POST", body: form({ name: "A" }, { files: { bytes: tone, name: "a.wav" } }) });
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toMatchObject({ detail: { code: "invalid_api_key", status: "invalid_api_key", message: "Invalid API key" } });

    const noFile = await fetch(`${standIn.url}/v1/voices/add`, { method: "POST", headers: { "xi-api-key": KEY }, body: form({ name: "A" }) });
    expect(noFile.status).toBe(422);
    expect(await noFile.json()).toEqual({ detail: [{ type: "missing", loc: ["body", "files"], msg: "Field required", input: null }] });

    const nothing = await fetch(`${standIn.url}/v1/voices/add`, { method: "POST", headers: { "xi-api-key": KEY }, body: form({}) });
    expect(((await nothing.json()) as { detail: Array<{ loc: string[] }> }).detail.map((d) => d.loc[1])).toEqual(["name", "files"]);
  });

  it("makes a voice, speaks raw PCM at the asked rate in its pitch, and deletes it", async () => {
    const made = await fetch(`${standIn.url}/v1/voices/add`, { method: "POST", headers: { "xi-api-key": KEY }, body: form({ name: "Tone" }, { files: { bytes: tone, name: "tone.wav" } }) });
    expect(made.status).toBe(200);
    const { voice_id: id } = (await made.json()) as { voice_id: string };
    const speak = (format: string, voiceId = id) =>
      fetch(`${standIn.url}/v1/text-to-speech/${voiceId}?output_format=${format}`, {
        method: "POST",
        headers: { "xi-api-key": KEY, "content-type": "application/json" },
        body: JSON.stringify({ text: "Twenty characters!!!", model_id: "eleven_multilingual_v2" }),
      });
    const pcm = await speak("pcm_16000");
    expect(pcm.headers.get("content-type")).toBe("audio/pcm");
    expect((await pcm.arrayBuffer()).byteLength).toBe(Math.round(20 * 0.065 * 16_000) * 2);
    const wav = Buffer.from(await (await speak("wav_24000")).arrayBuffer());
    expect(Math.abs((standInPitch(wav) ?? 0) - 180) / 180).toBeLessThan(0.03);
    expect((await speak("mp3_44100_128")).status).toBe(400);
    expect((await speak("pcm_16000", "nobody")).status).toBe(404);

    const gone = await fetch(`${standIn.url}/v1/voices/${id}`, { method: "DELETE", headers: { "xi-api-key": KEY } });
    expect(await gone.json()).toEqual({ status: "ok" });
    const again = await fetch(`${standIn.url}/v1/voices/${id}`, { method: "DELETE", headers: { "xi-api-key": KEY } });
    expect(again.status).toBe(404);
    expect(await again.json()).toMatchObject({ detail: { code: "voice_not_found" } });
  });
});

describe("voice library stand-in", () => {
  let standIn: CloneServiceStandIn<VoiceLibraryRoute>;
  beforeAll(async () => {
    standIn = await startVoiceLibraryStandIn({ defaultPitchHz: 300 });
  });
  afterAll(async () => {
    await standIn.close();
  });

  it("refuses uploads the way chatterbox-tts-api does", async () => {
    const upload = (body: FormData) => fetch(`${standIn.url}/v1/voices`, { method: "POST", body });
    const noFile = await upload(form({ voice_name: "a" }));
    expect(noFile.status).toBe(422);
    expect(await noFile.json()).toEqual({ detail: [{ type: "missing", loc: ["body", "voice_file"], msg: "Field required", input: null }] });
    const text = await upload(form({ voice_name: "a" }, { voice_file: { bytes: tone, name: "a.txt" } }));
    expect(text.status).toBe(400);
    expect(await text.json()).toEqual({ error: { message: "Unsupported audio format: .txt. Supported formats: .mp3, .wav, .flac, .m4a, .ogg", type: "invalid_request_error" } });
    const klingon = await upload(form({ voice_name: "a", language: "tlh" }, { voice_file: { bytes: tone, name: "a.wav" } }));
    expect(klingon.status).toBe(400);
    expect(((await klingon.json()) as { error: { message: string } }).error.message).toMatch(/^Unsupported language: tlh\./);
    expect((await upload(form({ voice_name: "a" }, { voice_file: { bytes: tone, name: "a.wav" } }))).status).toBe(201);
    const twice = await upload(form({ voice_name: "a" }, { voice_file: { bytes: tone, name: "a.wav" } }));
    expect(twice.status).toBe(409);
    expect(await twice.json()).toEqual({ error: { message: "Voice 'a' already exists", type: "voice_exists_error" } });
  });

  it("speaks a known voice in its pitch and an unknown one in the default voice", async () => {
    const speak = async (voice: string) => {
      const response = await fetch(`${standIn.url}/v1/audio/speech`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ input: "Some words to say.", voice, response_format: "wav" }) });
      expect(response.headers.get("content-type")).toBe("audio/wav");
      return standInPitch(Buffer.from(await response.arrayBuffer())) ?? 0;
    };
    expect(Math.abs((await speak("a")) - 180) / 180).toBeLessThan(0.03);
    expect(Math.abs((await speak("nobody")) - 300) / 300).toBeLessThan(0.03);
    const lookup = await fetch(`${standIn.url}/v1/voices/nobody`);
    expect(lookup.status).toBe(404);
    expect(await lookup.json()).toEqual({ error: { message: "Voice 'nobody' not found", type: "voice_not_found_error" } });
  });
});
