/**
 * The speech stack with an OpenAI-compatible speech server limited to some languages
 * (OPENAI_TTS_LANGUAGES): its voices are offered for those only, the offline voices keep the others.
 * The server is a local stand-in of `POST /v1/audio/speech` that answers a WAV tone.
 */
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "@voiceloc/log";
import { makeToneWav, tempDir } from "@voiceloc/testing";
import { createSpeechStack } from "./engines.ts";

let dir: { path: string; cleanup: () => Promise<void> };
let server: Server;
let baseUrl: string;
const asked: Array<{ voice: string; input: string }> = [];

beforeAll(async () => {
  dir = await tempDir("voiceloc-synthesis-engines-");
  const tone = await readFile(await makeToneWav(1.5, join(dir.path, "tone.wav"), { frequency: 220, sampleRate: 24000 }));
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/audio/speech") {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ detail: "Not Found" }));
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { voice: string; input: string };
      asked.push({ voice: body.voice, input: body.input });
      res.writeHead(200, { "content-type": "audio/wav" }).end(tone);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await dir?.cleanup();
});

describe("an OpenAI-compatible speech server with OPENAI_TTS_LANGUAGES", () => {
  it("offers its voices for the languages given (names or codes) and leaves the others to the offline voices", async () => {
    const stack = await createSpeechStack({ logger: silentLogger(), openai: { baseUrl, model: "kokoro", voices: ["af_heart"], languages: ["English", "es"] } });
    const voices = stack.registry.capabilities().voices;
    expect([...new Set(voices.filter((v) => v.engine === "openai").map((v) => v.language))].sort()).toEqual(["English", "Spanish"]);
    // French is still spoken, by an installed voice, not by the server's
    expect(voices.some((v) => v.language === "French" && v.engine !== "openai")).toBe(true);
    // the server's voice was self-tested in its languages only
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.every((a) => a.voice === "af_heart")).toBe(true);
  }, 120_000);

  it("stops the start on a language it does not know, naming the setting", async () => {
    await expect(createSpeechStack({ logger: silentLogger(), openai: { baseUrl, model: "kokoro", voices: ["af_heart"], languages: ["Klingon"] } })).rejects.toThrow(/OPENAI_TTS_LANGUAGES: "Klingon"/);
  });
});
