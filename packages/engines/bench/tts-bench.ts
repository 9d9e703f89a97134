/**
 * Latency of speaking a 100-character English sentence to MP3:
 *   - synthesizeToFile (espeak-ng voice, and the default English voice flite:slt), which includes
 *     engine detection-free synthesis, encoding through @voiceloc/media, the temp-file rename and the
 *     duration read from the encoded file's container;
 *   - the raw commands run directly: `espeak-ng -w out.wav` then `ffmpeg -i out.wav out.mp3`.
 * Variants are interleaved in every round so machine load affects them alike.
 *
 * Usage: pnpm --filter @voiceloc/engines bench [rounds]   (default 30 rounds, 3 warm-up)
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg } from "@voiceloc/media";
import { createTtsRegistry, detectOfflineEngines, synthesizeToFile } from "../src/index.ts";

const exec = promisify(execFile);
const SENTENCE = "The quick brown fox jumps over the lazy dog while the busy farmer counts sheep in the green meadows.";
const rounds = Number(process.argv[2] ?? 30);
const warmup = 3;

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

async function main(): Promise<void> {
  if (SENTENCE.length !== 100) throw new Error(`benchmark sentence must be 100 characters, is ${SENTENCE.length}`);
  const logger = silentLogger();
  const binaries = await resolveFfmpeg({ logger });
  const media = createMediaToolkit(binaries, logger);
  const registry = createTtsRegistry(await detectOfflineEngines({ logger }));
  const dir = await mkdtemp(join(tmpdir(), "voiceloc-bench-"));

  const variants: [string, (i: number) => Promise<unknown>][] = [
    [
      "synthesizeToFile espeak:en-us → mp3",
      (i) => synthesizeToFile({ registry, media }, { text: SENTENCE, language: "English", voice: "espeak:en-us", format: "mp3", outPath: join(dir, `a${i}.mp3`) }),
    ],
    [
      "raw espeak-ng → wav, ffmpeg → mp3",
      async (i) => {
        const wav = join(dir, `b${i}.wav`);
        await exec("espeak-ng", ["-v", "en-us", "-w", wav, SENTENCE]);
        await exec(binaries.ffmpeg, ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", wav, "-c:a", "libmp3lame", "-b:a", "128k", join(dir, `b${i}.mp3`)]);
      },
    ],
    [
      "synthesizeToFile flite:slt (default) → mp3",
      (i) => synthesizeToFile({ registry, media }, { text: SENTENCE, language: "English", format: "mp3", outPath: join(dir, `c${i}.mp3`) }),
    ],
  ];
  const times = new Map<string, number[]>(variants.map(([name]) => [name, []]));
  try {
    for (let round = 0; round < warmup + rounds; round++) {
      for (const [name, run] of variants) {
        const start = process.hrtime.bigint();
        await run(round);
        const ms = Number(process.hrtime.bigint() - start) / 1e6;
        if (round >= warmup) times.get(name)?.push(ms);
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }

  const out: string[] = [
    `TTS latency, 100-character English sentence to MP3 — ${rounds} rounds after ${warmup} warm-up, ffmpeg ${binaries.version} (${binaries.source}), Node ${process.version}`,
    "",
    `${"variant".padEnd(44)} ${"p50 ms".padStart(8)} ${"p95 ms".padStart(8)} ${"mean ms".padStart(8)} ${"min ms".padStart(8)}`,
  ];
  for (const [name, values] of times) {
    const sorted = [...values].sort((a, b) => a - b);
    const mean = sorted.reduce((s, v) => s + v, 0) / sorted.length;
    out.push(
      `${name.padEnd(44)} ${percentile(sorted, 50).toFixed(1).padStart(8)} ${percentile(sorted, 95).toFixed(1).padStart(8)} ${mean.toFixed(1).padStart(8)} ${(sorted[0] ?? 0).toFixed(1).padStart(8)}`,
    );
  }
  process.stdout.write(`${out.join("\n")}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
