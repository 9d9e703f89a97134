import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { silentLogger } from "@voiceloc/log";
import { tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GLOBAL_ARGS } from "./args.ts";
import { buildDubbedAudioArgs, buildDubbedVideoArgs, dubContainerFor, duckVolumeExpression, mergeDuckIntervals, originalAudioNeedsEncoding } from "./dub.ts";
import { MediaRequestError } from "./errors.ts";
import { resolveFfmpeg } from "./resolve.ts";
import { createMediaToolkit, type MediaToolkit } from "./toolkit.ts";

let media: MediaToolkit;
let dir: { path: string; cleanup: () => Promise<void> };
const RATE = 16_000;

beforeAll(async () => {
  media = createMediaToolkit(await resolveFfmpeg({ logger: silentLogger() }), silentLogger());
  dir = await tempDir("voiceloc-dub-");
});
afterAll(async () => {
  await dir?.cleanup();
});

async function pcm(path: string): Promise<Float32Array> {
  const out = join(dir.path, "out.f32");
  await media.run([...GLOBAL_ARGS, "-i", path, "-ac", "1", "-ar", String(RATE), "-c:a", "pcm_f32le", "-f", "f32le", "-y", out]);
  const bytes = await readFile(out);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

function levelDb(samples: Float32Array, from: number, to: number): number {
  let sum = 0;
  const a = Math.floor(from * RATE);
  const b = Math.floor(to * RATE);
  for (let i = a; i < b; i++) sum += (samples[i] ?? 0) ** 2;
  return 10 * Math.log10(sum / (b - a) + 1e-20);
}

describe("dubbing arguments", () => {
  it("keeps MP4 for MP4/MOV whose picture MP4 carries, Matroska otherwise", () => {
    expect(dubContainerFor("mov,mp4,m4a,3gp,3g2,mj2", "h264")).toBe("mp4");
    expect(dubContainerFor("mov,mp4,m4a,3gp,3g2,mj2", "prores")).toBe("matroska");
    expect(dubContainerFor("matroska,webm", "vp9")).toBe("matroska");
    expect(dubContainerFor("avi", "h264")).toBe("matroska");
    expect(originalAudioNeedsEncoding("mp4", "aac")).toBe(false);
    expect(originalAudioNeedsEncoding("mp4", "pcm_s16le")).toBe(true);
    expect(originalAudioNeedsEncoding("matroska", "pcm_s16le")).toBe(false);
  });

  it("merges lines whose ramps would meet, and refuses nonsense shapes", () => {
    expect(mergeDuckIntervals([{ start: 3, end: 4 }, { start: 1, end: 2 }, { start: 2.2, end: 2.5 }, { start: 5, end: 5 }])).toEqual([
      { start: 1, end: 2.5 },
      { start: 3, end: 4 },
    ]);
    expect(duckVolumeExpression([])).toBe("1");
    expect(() => duckVolumeExpression([{ start: 1, end: 2 }], { depthDb: 0 })).toThrow(MediaRequestError);
  });

  it("copies the picture, puts the dubbed track first and default, tags both languages, and refuses a bad tag", () => {
    const spec = {
      original: "/in/talk.mp4", speech: "/tmp/speech.wav", output: "/out/dub.mp4", durationSeconds: 10, mode: "duck" as const, lines: [{ start: 1, end: 2 }],
      originalHasAudio: true, channels: 2 as const, container: "mp4" as const, targetLanguage: "fra", sourceLanguage: "eng", encodeOriginalAudio: false, maxSeconds: 3600,
    };
    const args = buildDubbedVideoArgs(spec);
    const joined = args.join(" ");
    expect(joined).toContain("-map 0:V:0 -map [dub] -map 0:a:0");
    expect(joined).toContain("-c:v copy");
    expect(joined).toContain("-c:a:1 copy");
    expect(joined).toContain("-metadata:s:a:0 language=fra -disposition:a:0 default -metadata:s:a:1 language=eng -disposition:a:1 0");
    expect(args.slice(-4)).toEqual(["-f", "mp4", "-y", "/out/dub.mp4"]);
    expect(buildDubbedVideoArgs({ ...spec, container: "matroska", encodeOriginalAudio: false }).join(" ")).toContain("-c:a:0 libopus");
    expect(() => buildDubbedVideoArgs({ ...spec, targetLanguage: "fr" })).toThrow(/three-letter ISO 639-2/);
  });

  it("ducks the original by the asked depth while a line plays and leaves it whole between lines (measured)", async () => {
    const tone = join(dir.path, "tone.wav");
    const silence = join(dir.path, "silence.wav");
    await media.run([...GLOBAL_ARGS, "-f", "lavfi", "-i", `sine=frequency=300:sample_rate=${RATE}:duration=6`, "-c:a", "pcm_s16le", "-f", "wav", "-y", tone]);
    await media.run([...GLOBAL_ARGS, "-f", "lavfi", "-i", `anullsrc=r=${RATE}:cl=mono`, "-t", "6", "-c:a", "pcm_s16le", "-f", "wav", "-y", silence]);
    const out = join(dir.path, "ducked.mp3");
    await media.run(
      buildDubbedAudioArgs({ original: tone, speech: silence, output: out, durationSeconds: 6, mode: "duck", lines: [{ start: 2, end: 3.5 }], originalHasAudio: true, channels: 1, bitrateKbps: 128 }),
    );
    const samples = await pcm(out);
    const full = levelDb(samples, 0.3, 1.6);
    // ffmpeg's sine is at 1/8 of full scale: -21 dB RMS, unchanged before the first line.
    expect(Math.abs(full - levelDb(await pcm(tone), 0.3, 1.6))).toBeLessThan(0.5);
    expect(levelDb(samples, 2.1, 3.4) - full).toBeCloseTo(-18, 0);
    // The ramps: half way down 75 ms before the line, back to full level by 0.4 s after it.
    expect(levelDb(samples, 1.9, 1.95) - full).toBeLessThan(-4);
    expect(levelDb(samples, 1.9, 1.95) - full).toBeGreaterThan(-14);
    expect(Math.abs(levelDb(samples, 4.0, 5.5) - full)).toBeLessThan(0.5);
    // drop: only the speech (silence here).
    await media.run(buildDubbedAudioArgs({ original: tone, speech: silence, output: out, durationSeconds: 6, mode: "drop", originalHasAudio: true, channels: 1 }));
    expect(levelDb(await pcm(out), 0, 6)).toBeLessThan(-80);
  });
});
