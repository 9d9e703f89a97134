import { open, readFile, writeFile } from "node:fs/promises";

export interface WavInfo {
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
  /** Offset of the first sample byte. */
  dataOffset: number;
  /** Size stated by the data chunk (may be a placeholder such as 0xFFFFFFFF in streamed files). */
  statedDataBytes: number;
  /** Bytes of samples actually present in the file. */
  dataBytes: number;
}

const HEADER_WINDOW = 64 * 1024;

/** Reads a RIFF/WAVE header. Returns undefined when the file is not a WAV file. */
export async function readWavInfo(path: string): Promise<WavInfo | undefined> {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    const buffer = Buffer.alloc(Math.min(size, HEADER_WINDOW));
    await handle.read(buffer, 0, buffer.length, 0);
    return parseWavHeader(buffer, size);
  } finally {
    await handle.close();
  }
}

/** Parses the chunks at the start of a WAV file of `fileSize` bytes. */
export function parseWavHeader(buffer: Buffer, fileSize: number): WavInfo | undefined {
  if (buffer.length < 12 || buffer.toString("ascii", 0, 4) !== "RIFF" || buffer.toString("ascii", 8, 12) !== "WAVE") return undefined;
  let offset = 12;
  let format: { sampleRate: number; channels: number; bitsPerSample: number } | undefined;
  while (offset + 8 <= buffer.length) {
    const id = buffer.toString("ascii", offset, offset + 4);
    const size = buffer.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === "fmt ") {
      if (body + 16 > buffer.length) return undefined;
      format = {
        channels: buffer.readUInt16LE(body + 2),
        sampleRate: buffer.readUInt32LE(body + 4),
        bitsPerSample: buffer.readUInt16LE(body + 14),
      };
    } else if (id === "data") {
      if (!format || format.sampleRate === 0 || format.channels === 0) return undefined;
      return { ...format, dataOffset: body, statedDataBytes: size, dataBytes: Math.max(0, fileSize - body) };
    }
    offset = body + size + (size % 2);
  }
  return undefined;
}

/**
 * Makes the RIFF and data sizes match the bytes present (streamed WAV responses often state 0 or
 * 0xFFFFFFFF), so ffmpeg computes the right duration when joining chunks.
 */
export async function repairWavSizes(path: string, info: WavInfo): Promise<void> {
  if (info.statedDataBytes > 0 && info.statedDataBytes <= info.dataBytes) return;
  const blockAlign = Math.max(1, (info.channels * info.bitsPerSample) / 8);
  const dataBytes = info.dataBytes - (info.dataBytes % blockAlign);
  const handle = await open(path, "r+");
  try {
    const riff = Buffer.alloc(4);
    riff.writeUInt32LE(Math.min(0xffffffff, info.dataOffset + dataBytes - 8));
    await handle.write(riff, 0, 4, 4);
    const data = Buffer.alloc(4);
    data.writeUInt32LE(Math.min(0xffffffff, dataBytes));
    await handle.write(data, 0, 4, info.dataOffset - 4);
    if (dataBytes !== info.dataBytes) await handle.truncate(info.dataOffset + dataBytes);
  } finally {
    await handle.close();
  }
}

/** Mono 16-bit samples of a PCM WAV file (channels mixed down). */
export interface Pcm16Audio {
  sampleRate: number;
  samples: Int16Array;
}

/** Reads a 16-bit PCM WAV file into memory (for short clips only). Returns undefined for any other format. */
export async function readPcm16Wav(path: string): Promise<Pcm16Audio | undefined> {
  const bytes = await readFile(path);
  const info = parseWavHeader(bytes.subarray(0, HEADER_WINDOW), bytes.length);
  if (!info || info.bitsPerSample !== 16) return undefined;
  const fmt = bytes.indexOf("fmt ", 12, "ascii");
  const tag = fmt >= 0 && fmt + 10 <= bytes.length ? bytes.readUInt16LE(fmt + 8) : 0;
  if (tag !== 1 && tag !== 0xfffe) return undefined;
  const end = Math.min(bytes.length, info.dataOffset + (info.statedDataBytes > 0 && info.statedDataBytes < 0xffffffff ? info.statedDataBytes : info.dataBytes));
  const frameBytes = 2 * info.channels;
  const frames = Math.floor((end - info.dataOffset) / frameBytes);
  const samples = new Int16Array(frames);
  for (let f = 0; f < frames; f++) {
    let sum = 0;
    for (let c = 0; c < info.channels; c++) sum += bytes.readInt16LE(info.dataOffset + f * frameBytes + c * 2);
    samples[f] = Math.round(sum / info.channels);
  }
  return { sampleRate: info.sampleRate, samples };
}

/** Linear resampling of mono 16-bit samples. */
export function resamplePcm16(samples: Int16Array, from: number, to: number): Int16Array {
  if (from === to || samples.length === 0) return samples;
  const length = Math.max(1, Math.round((samples.length * to) / from));
  const out = new Int16Array(length);
  const step = from / to;
  for (let i = 0; i < length; i++) {
    const x = i * step;
    const left = Math.min(samples.length - 1, Math.floor(x));
    const right = Math.min(samples.length - 1, left + 1);
    const frac = x - left;
    out[i] = Math.round((samples[left] ?? 0) * (1 - frac) + (samples[right] ?? 0) * frac);
  }
  return out;
}

/** A mono 16-bit PCM WAV file's bytes. */
export function encodePcm16Wav(samples: Int16Array, sampleRate: number): Buffer {
  const data = samples.length * 2;
  const out = Buffer.alloc(44 + data);
  out.write("RIFF", 0, "ascii");
  out.writeUInt32LE(36 + data, 4);
  out.write("WAVE", 8, "ascii");
  out.write("fmt ", 12, "ascii");
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20);
  out.writeUInt16LE(1, 22);
  out.writeUInt32LE(sampleRate, 24);
  out.writeUInt32LE(sampleRate * 2, 28);
  out.writeUInt16LE(2, 32);
  out.writeUInt16LE(16, 34);
  out.write("data", 36, "ascii");
  out.writeUInt32LE(data, 40);
  for (let i = 0; i < samples.length; i++) out.writeInt16LE(samples[i] ?? 0, 44 + i * 2);
  return out;
}

/**
 * Joins 16-bit PCM WAV clips (of any sample rates and channel counts) into one mono WAV at the
 * highest rate among them. Returns that rate, or undefined when a clip is not 16-bit PCM.
 */
export async function joinPcm16Wavs(inputs: readonly string[], outPath: string): Promise<number | undefined> {
  const clips: Pcm16Audio[] = [];
  for (const input of inputs) {
    const clip = await readPcm16Wav(input);
    if (!clip) return undefined;
    clips.push(clip);
  }
  const rate = Math.max(...clips.map((c) => c.sampleRate));
  const parts = clips.map((c) => resamplePcm16(c.samples, c.sampleRate, rate));
  const joined = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    joined.set(part, at);
    at += part.length;
  }
  await writeFile(outPath, encodePcm16Wav(joined, rate));
  return rate;
}

/** Seconds of sound in a WAV file described by `info`. */
export function wavSeconds(info: WavInfo): number {
  const bytesPerSecond = (info.sampleRate * info.channels * info.bitsPerSample) / 8;
  return bytesPerSecond > 0 ? info.dataBytes / bytesPerSecond : 0;
}
