import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, scanMp3Frames, type FfmpegBinaries } from "@voiceloc/media";
import { makeToneWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { joinMp3Chunks } from "./join.ts";

const exec = promisify(execFile);
let dir: { path: string; cleanup: () => Promise<void> };
let binaries: FfmpegBinaries;

/** Bare MP3 frames (no Xing frame, no ID3 tag), as the lanes store a chunk: `seconds` of a tone. */
async function chunk(name: string, seconds: number, sampleRate = 22050): Promise<string> {
  const wav = await makeToneWav(seconds, join(dir.path, `${name}.wav`), { sampleRate, ffmpeg: binaries.ffmpeg });
  const out = join(dir.path, `${name}.mp3`);
  await exec(binaries.ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-i", wav, "-c:a", "libmp3lame", "-b:a", "64k", "-ac", "1", "-write_xing", "0", "-id3v2_version", "0", "-f", "mp3", out]);
  return out;
}

beforeAll(async () => {
  dir = await tempDir("voiceloc-audiobook-join-");
  binaries = await resolveFfmpeg({ logger: silentLogger() });
});
afterAll(async () => dir.cleanup());

describe("joinMp3Chunks", () => {
  it("writes an Info frame stating the frame count, then every chunk's bytes in order", async () => {
    const parts = [await chunk("a", 1.2), await chunk("b", 0.7), await chunk("c", 2)];
    const out = join(dir.path, "book.mp3");
    const joined = await joinMp3Chunks(parts, out);
    const bytes = await readFile(out);
    const chunks = await Promise.all(parts.map((p) => readFile(p)));
    const audio = Buffer.concat(chunks);
    expect(joined.bytes).toBe(bytes.length);
    // The chunks' frames, unchanged and in order, behind one frame of their shape.
    expect(bytes.subarray(bytes.length - audio.length).equals(audio)).toBe(true);
    const frames = chunks.reduce((sum, c) => sum + scanMp3Frames(c).frames, 0);
    expect(joined.frames).toBe(frames);
    expect(joined.seconds).toBeCloseTo((frames * 576) / 22050, 6);
    // Players read the length from the Info frame: ffprobe agrees with the stated duration.
    const media = createMediaToolkit(binaries, silentLogger());
    expect((await media.probe(out)).durationSeconds).toBeCloseTo(joined.seconds, 1);
  });

  it("uses the counts the lanes give instead of reading those chunks, and never overwrites a file", async () => {
    const a = await chunk("d", 0.5);
    const b = await chunk("e", 0.5);
    const scanB = scanMp3Frames(await readFile(b));
    const out = join(dir.path, "counted.mp3");
    const joined = await joinMp3Chunks([a, b], out, (i) => (i === 1 ? { frames: scanB.frames + 10, bytes: scanB.bytes, header: scanB.header } : undefined));
    expect(joined.frames).toBe(scanMp3Frames(await readFile(a)).frames + scanB.frames + 10);
    await writeFile(join(dir.path, "exists.mp3"), "keep");
    await expect(joinMp3Chunks([a], join(dir.path, "exists.mp3"))).rejects.toMatchObject({ code: "EEXIST" });
    expect(await readFile(join(dir.path, "exists.mp3"), "utf8")).toBe("keep");
  });

  it("refuses chunks of another shape and a book with no audio, in plain words", async () => {
    const a = await chunk("f", 0.5, 22050);
    const b = await chunk("g", 0.5, 44100);
    await expect(joinMp3Chunks([a, b], join(dir.path, "mixed.mp3"))).rejects.toThrow(/Part 2 of the audio book was encoded in another shape/);
    const empty = join(dir.path, "empty.mp3");
    await writeFile(empty, Buffer.alloc(0));
    await expect(joinMp3Chunks([empty], join(dir.path, "none.mp3"))).rejects.toThrow(/no audio/);
  });
});
