import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeToneWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseWavHeader, readWavInfo, repairWavSizes } from "./wav.ts";

let dir: string;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir());
});
afterAll(async () => cleanup());

describe("WAV headers", () => {
  it("reads a WAV written by ffmpeg", async () => {
    const path = await makeToneWav(0.5, join(dir, "t.wav"), { sampleRate: 22050 });
    const info = await readWavInfo(path);
    expect(info).toMatchObject({ sampleRate: 22050, channels: 1, bitsPerSample: 16, dataBytes: 22050 });
    expect(info?.statedDataBytes).toBe(22050);
  });

  it("rejects non-WAV data", () => {
    expect(parseWavHeader(Buffer.from("{\"error\":\"nope\"}"), 16)).toBeUndefined();
    expect(parseWavHeader(Buffer.from("RIFF\0\0\0\0WAVEdata\0\0\0\0"), 20)).toBeUndefined();
  });

  it("repairs streamed headers that state 0xFFFFFFFF sizes", async () => {
    const path = await makeToneWav(0.25, join(dir, "s.wav"), { sampleRate: 16000 });
    const bytes = await readFile(path);
    const info = parseWavHeader(bytes, bytes.length);
    if (!info) throw new Error("no header");
    bytes.writeUInt32LE(0xffffffff, 4);
    bytes.writeUInt32LE(0xffffffff, info.dataOffset - 4);
    await writeFile(path, bytes);
    const broken = await readWavInfo(path);
    if (!broken) throw new Error("no header");
    expect(broken.statedDataBytes).toBe(0xffffffff);
    await repairWavSizes(path, broken);
    const fixed = await readWavInfo(path);
    expect(fixed?.statedDataBytes).toBe(8000);
    expect((await readFile(path)).readUInt32LE(4)).toBe(info.dataOffset + 8000 - 8);
  });
});
