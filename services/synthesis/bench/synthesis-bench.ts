/**
 * Synthesis latency for a 100-character English sentence to MP3, the full service path beside the
 * raw engine run by hand, in one run:
 *   - raw:     `espeak-ng -v en-us -w out.wav -f text.txt` / `flite -voice slt -f text.txt -o out.wav`,
 *              then `ffmpeg -i out.wav -c:a libmp3lame -b:a 128k -ac 1 out.mp3` (execFile);
 *   - library: synthesizeToFile in this process (engine → encode → duration), no HTTP, bus or blob;
 *   - service: HTTP `POST /v1/speech/synthesize` on the single-process runtime (gateway → in-process
 *              bus → synthesis service → blob store → signed URL), started here on a free port with
 *              a temporary DATA_DIR and a seeded API key.
 * The raw encode uses the service's defaults (MP3 at 128 kbit/s, mono). Variants are interleaved in
 * every round so machine load affects them alike; p50/p95 are nearest-rank percentiles.
 *
 * Usage: pnpm --filter @voiceloc/synthesis bench      (ROUNDS=30 by default, WARMUP=3)
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { loadConfig } from "@voiceloc/config";
import { synthesizeToFile } from "@voiceloc/engines";
import { silentLogger } from "@voiceloc/log";
import { freePort } from "@voiceloc/testing";
// The standalone runtime is the production assembly of gateway + bus + synthesis + blobs. It is
// imported by path because @voiceloc/standalone depends on this package (a devDependency back
// would make the workspace graph cyclic).
import { startRuntime } from "../../standalone/src/runtime.ts";
import { createSpeechStack } from "../src/engines.ts";

const exec = promisify(execFile);
const SENTENCE = "The quick brown fox jumps over the lazy dog while the busy farmer counts sheep in the green meadows.";
const ROUNDS = Number(process.env.ROUNDS ?? 30);
const WARMUP = Number(process.env.WARMUP ?? 3);
const TARGET_MS = 50;
const KEY = "bench-key-alice-1";
/** What the service encodes MP3 with by default (audioEncodeArgs: 128 kbit/s; synthesizeToFile: mono). */
const RAW_ENCODE = ["-c:a", "libmp3lame", "-b:a", "128k", "-ac", "1"];

function percentile(sorted: readonly number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

interface Variant {
  name: string;
  voice: "espeak:en-us" | "flite:slt";
  kind: "raw" | "library" | "service";
  run(round: number): Promise<void>;
}

async function main(): Promise<void> {
  if (SENTENCE.length !== 100) throw new Error(`benchmark sentence must be 100 characters, is ${SENTENCE.length}`);
  if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error("ROUNDS must be a positive whole number");
  const loadBefore = loadavg();
  const logger = silentLogger();
  const dir = await mkdtemp(join(tmpdir(), "voiceloc-synth-bench-"));
  const dataDir = join(dir, "data");
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const config = loadConfig({
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_BASE_URL: base,
    VOICELOC_API_KEYS: `alice:${KEY}`,
    SERVICES: "gateway,synthesis",
    LOG_LEVEL: "silent",
  });
  const runtime = await startRuntime(config, logger);
  const speech = await createSpeechStack({ logger });
  const ffmpeg = speech.media.binaries.ffmpeg;
  const textFile = join(dir, "text.txt");
  await writeFile(textFile, `${SENTENCE}\n`, "utf8");

  const encodeRaw = async (wav: string, mp3: string): Promise<void> => {
    await exec(ffmpeg, ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", wav, ...RAW_ENCODE, mp3]);
  };
  const viaHttp = async (voice: string): Promise<void> => {
    const res = await fetch(`${base}/v1/speech/synthesize`, {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ text: SENTENCE, language: "English", voice, format: "mp3" }),
    });
    const body = (await res.json()) as { audio_url?: string; duration_seconds?: number };
    if (res.status !== 200 || typeof body.audio_url !== "string" || !(Number(body.duration_seconds) > 1)) {
      throw new Error(`service answered ${res.status}: ${JSON.stringify(body)}`);
    }
  };

  const variants: Variant[] = [
    {
      name: "raw espeak-ng -w + ffmpeg → mp3",
      voice: "espeak:en-us",
      kind: "raw",
      run: async (i) => {
        const wav = join(dir, `ra${i}.wav`);
        await exec("espeak-ng", ["-v", "en-us", "-w", wav, "-f", textFile]);
        await encodeRaw(wav, join(dir, `ra${i}.mp3`));
      },
    },
    {
      name: "synthesizeToFile espeak:en-us → mp3",
      voice: "espeak:en-us",
      kind: "library",
      run: async (i) => {
        await synthesizeToFile(speech, { text: SENTENCE, language: "English", voice: "espeak:en-us", format: "mp3", outPath: join(dir, `la${i}.mp3`) });
      },
    },
    { name: "service HTTP espeak:en-us → mp3", voice: "espeak:en-us", kind: "service", run: () => viaHttp("espeak:en-us") },
    {
      name: "raw flite -o + ffmpeg → mp3",
      voice: "flite:slt",
      kind: "raw",
      run: async (i) => {
        const wav = join(dir, `rf${i}.wav`);
        await exec("flite", ["-voice", "slt", "-f", textFile, "-o", wav]);
        await encodeRaw(wav, join(dir, `rf${i}.mp3`));
      },
    },
    {
      name: "synthesizeToFile flite:slt → mp3",
      voice: "flite:slt",
      kind: "library",
      run: async (i) => {
        await synthesizeToFile(speech, { text: SENTENCE, language: "English", voice: "flite:slt", format: "mp3", outPath: join(dir, `lf${i}.mp3`) });
      },
    },
    { name: "service HTTP flite:slt (default voice) → mp3", voice: "flite:slt", kind: "service", run: () => viaHttp("flite:slt") },
  ];

  const times = new Map<Variant, number[]>(variants.map((v) => [v, []]));
  try {
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      for (const variant of variants) {
        const start = performance.now();
        await variant.run(round);
        const ms = performance.now() - start;
        if (round >= WARMUP) times.get(variant)?.push(ms);
      }
    }
  } finally {
    await runtime.stop();
    await rm(dir, { recursive: true, force: true });
  }
  const loadAfter = loadavg();

  const fmt = (n: number): string => n.toFixed(1).padStart(8);
  const load = (l: number[]): string => l.map((v) => v.toFixed(2)).join(" ");
  const out: string[] = [
    `Synthesis latency, 100-character English sentence → MP3 128k mono — ${ROUNDS} rounds after ${WARMUP} warm-up, interleaved`,
    `ffmpeg ${speech.media.binaries.version} (${speech.media.binaries.source}), Node ${process.version}; load average before ${load(loadBefore)}, after ${load(loadAfter)}`,
    "",
    `${"variant".padEnd(46)} ${"p50 ms".padStart(8)} ${"p95 ms".padStart(8)} ${"mean ms".padStart(8)} ${"min ms".padStart(8)}`,
  ];
  const p50 = new Map<string, number>();
  for (const [variant, values] of times) {
    const sorted = [...values].sort((a, b) => a - b);
    const mean = sorted.reduce((s, v) => s + v, 0) / sorted.length;
    p50.set(`${variant.kind}:${variant.voice}`, percentile(sorted, 50));
    out.push(`${variant.name.padEnd(46)} ${fmt(percentile(sorted, 50))} ${fmt(percentile(sorted, 95))} ${fmt(mean)} ${fmt(sorted[0] ?? Number.NaN)}`);
  }
  out.push("", `overhead at p50 (service − raw), target < ${TARGET_MS} ms:`);
  for (const voice of ["espeak:en-us", "flite:slt"]) {
    const service = p50.get(`service:${voice}`) ?? Number.NaN;
    const raw = p50.get(`raw:${voice}`) ?? Number.NaN;
    const library = p50.get(`library:${voice}`) ?? Number.NaN;
    const overhead = service - raw;
    out.push(
      `  ${voice.padEnd(14)} ${overhead.toFixed(1).padStart(7)} ms  ${overhead < TARGET_MS ? "PASS" : "FAIL"}` +
        `   (library − raw ${(library - raw).toFixed(1)} ms, service − library ${(service - library).toFixed(1)} ms)`,
    );
  }
  process.stdout.write(`${out.join("\n")}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
