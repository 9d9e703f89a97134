/**
 * Speech engines people run, through the HTTP API of the shipped process (gateway and synthesis over a
 * real nats-server): a Kokoro-style OpenAI-compatible server whose voices are discovered at start
 * (no OPENAI_TTS_VOICES), a Piper HTTP server (PIPER_URL, voices from its list), and ENGINE_ORDER_TTS.
 * Each stand-in voice speaks a tone at its own pitch, so the audio says which engine spoke: Kokoro's
 * af_bella at 220 Hz, Piper's lessac at 340 Hz, espeak-ng's en-us near 100 Hz.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { measurePitch } from "@voiceloc/engines";
import { freePort, startKokoroStandIn, startNatsServer, startPiperStandIn, tempDir, type KokoroStandIn, type PiperStandIn } from "@voiceloc/testing";
import { signalAndWait, startService, type ServiceProcess } from "./testing/processes.ts";

const KEY = "tts-engines-key-alice-1";
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
/** Time limit of a test that waits for speech on a loaded machine. */
const LONG = 300_000;

interface VoiceEntry {
  name: string;
  language: string;
  engine: string;
  gender: string | null;
  default: boolean;
}
interface Caps {
  synthesis: { languages: string[]; engines: Array<{ language: string; engines: string[] }> };
}

let dir: { path: string; cleanup: () => Promise<void> };
let kokoro: KokoroStandIn;
let piper: PiperStandIn;
const nats: Array<Awaited<ReturnType<typeof startNatsServer>>> = [];
const procs: ServiceProcess[] = [];
/** The service with its usual order (OPENAI_TTS_BASE_URL on the Kokoro-style server, PIPER_URL), and one with ENGINE_ORDER_TTS=piper. */
let usual: string;
let pipersFirst: string;

async function start(name: string, extra: Record<string, string>): Promise<string> {
  const server = await startNatsServer();
  nats.push(server);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = await startService(
    "gateway,synthesis",
    {
      NATS_URL: server.url,
      DATA_DIR: join(dir.path, name),
      VOICELOC_API_KEYS: `alice:${KEY}`,
      PUBLIC_BASE_URL: base,
      LOG_LEVEL: "warn",
      OPENAI_BASE_URL: "",
      OPENAI_TTS_BASE_URL: kokoro.url,
      OPENAI_TTS_MODEL: "kokoro",
      OPENAI_TTS_VOICES: "",
      OPENAI_API_KEY: "",
      PIPER_URL: piper.url,
      PIPER_VOICES: "",
      ENGINE_ORDER_TTS: "",
      ...extra,
    },
    port,
    240_000,
  );
  procs.push(proc);
  return base;
}

beforeAll(async () => {
  dir = await tempDir("voiceloc-tts-engines-e2e-");
  kokoro = await startKokoroStandIn({ voices: { af_bella: 220, am_adam: 110, ef_dora: 260 } });
  piper = await startPiperStandIn({ voices: [{ id: "en_US-lessac-medium", pitchHz: 340 }, { id: "es_ES-davefx-medium", pitchHz: 300 }] });
  [usual, pipersFirst] = await Promise.all([start("usual", {}), start("piper-first", { ENGINE_ORDER_TTS: "piper" })]);
}, LONG);

afterAll(async () => {
  await Promise.all(procs.map((p) => signalAndWait(p, "SIGTERM")));
  await Promise.all(nats.map((n) => n.stop()));
  await kokoro?.close();
  await piper?.close();
  await dir?.cleanup();
});

async function get<T>(base: string, path: string): Promise<T> {
  const res = await fetch(`${base}${path}`, { headers });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as T;
}

/** Speaks `text` through the API as WAV and measures the median pitch of what came back. */
async function spokenPitch(base: string, text: string, language: string, name: string, voice?: string): Promise<number> {
  const res = await fetch(`${base}/v1/speech/synthesize`, {
    method: "POST",
    headers,
    body: JSON.stringify({ text, language, format: "wav", ...(voice ? { voice } : {}) }),
    signal: AbortSignal.timeout(150_000),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  const { audio_url: url, duration_seconds: seconds } = (await res.json()) as { audio_url: string; duration_seconds: number };
  expect(seconds).toBeGreaterThan(1);
  const path = join(dir.path, `${name}.wav`);
  await writeFile(path, Buffer.from(await (await fetch(url)).arrayBuffer()));
  return (await measurePitch(path)).medianHz ?? 0;
}

const chainOf = (caps: Caps, language: string) => caps.synthesis.engines.find((c) => c.language === language)?.engines ?? [];

describe("speech engines people run", () => {
  it("lists the voices a Kokoro-style server offers without OPENAI_TTS_VOICES, each in its own language, and Piper's voices", async () => {
    const voices = await get<VoiceEntry[]>(usual, "/v1/voices");
    const openai = voices.filter((v) => v.engine === "openai").map((v) => `${v.name} ${v.language} ${v.gender ?? "-"}`);
    expect(openai).toEqual(expect.arrayContaining(["openai:af_bella English female", "openai:am_adam English male", "openai:ef_dora Spanish female"]));
    expect(openai).toHaveLength(3);
    // OpenAI's preset names are not claimed: this server has none of them.
    expect(voices.some((v) => v.name === "openai:alloy")).toBe(false);
    expect(voices.filter((v) => v.engine === "piper").map((v) => `${v.name} ${v.language}`)).toEqual(
      expect.arrayContaining(["piper:en_US-lessac-medium English", "piper:es_ES-davefx-medium Spanish"]),
    );
    const spanish = await get<VoiceEntry[]>(usual, "/v1/voices?language=Spanish");
    expect(spanish.find((v) => v.default)?.name).toBe("openai:ef_dora");
    expect(kokoro.requests.some((r) => r.method === "GET" && r.path === "/v1/audio/voices")).toBe(true);
  });

  it("GET /v1/capabilities shows the engines of each language in the order they are tried; ENGINE_ORDER_TTS changes it", async () => {
    const caps = await get<Caps>(usual, "/v1/capabilities");
    expect(chainOf(caps, "English").slice(0, 2)).toEqual(["openai", "piper"]);
    expect(chainOf(caps, "English")).toContain("espeak");
    expect(chainOf(caps, "Spanish").slice(0, 2)).toEqual(["openai", "piper"]);
    // A language only espeak-ng speaks here.
    expect(chainOf(caps, "Swahili")).toEqual(["espeak"]);
    expect(caps.synthesis.engines.map((c) => c.language)).toEqual(caps.synthesis.languages);
    const ordered = await get<Caps>(pipersFirst, "/v1/capabilities");
    expect(chainOf(ordered, "English").slice(0, 2)).toEqual(["piper", "openai"]);
    expect(chainOf(ordered, "Swahili")).toEqual(["espeak"]);
    const voices = await get<VoiceEntry[]>(pipersFirst, "/v1/voices?language=English");
    expect(voices.find((v) => v.default)?.name).toBe("piper:en_US-lessac-medium");
  });

  it("the engine the order puts first speaks: Kokoro's voice by default, Piper's with ENGINE_ORDER_TTS=piper, espeak-ng when named", async () => {
    const text = "Good morning everyone, and welcome to the harbour tour.";
    const byKokoro = await spokenPitch(usual, text, "English", "usual");
    expect(byKokoro, `${byKokoro.toFixed(1)} Hz`).toBeGreaterThan(200);
    expect(byKokoro, `${byKokoro.toFixed(1)} Hz`).toBeLessThan(240);
    expect(kokoro.speeches.some((s) => s.voice === "af_bella" && s.text.includes("harbour"))).toBe(true);

    const byPiper = await spokenPitch(pipersFirst, text, "English", "piper-first");
    expect(byPiper, `${byPiper.toFixed(1)} Hz`).toBeGreaterThan(315);
    expect(byPiper, `${byPiper.toFixed(1)} Hz`).toBeLessThan(365);
    expect(piper.speeches.some((s) => s.spokenBy === "en_US-lessac-medium" && s.text.includes("harbour"))).toBe(true);

    const byEspeak = await spokenPitch(pipersFirst, text, "English", "espeak", "espeak:en-us");
    expect(byEspeak, `${byEspeak.toFixed(1)} Hz`).toBeLessThan(170);
  }, LONG);

  it("when Piper fails, the next engine of the language speaks", async () => {
    piper.fail("synthesize", { status: 500, body: "<title>500 Internal Server Error</title>" }, 20);
    const pitch = await spokenPitch(pipersFirst, "The ferry leaves at noon from the northern pier.", "English", "fallback");
    // The next engine of the chain, the Kokoro-style server's af_bella (220 Hz), not Piper's 340 Hz.
    expect(pitch, `${pitch.toFixed(1)} Hz`).toBeLessThan(300);
    expect(pitch, `${pitch.toFixed(1)} Hz`).toBeGreaterThan(200);
  }, LONG);
});
