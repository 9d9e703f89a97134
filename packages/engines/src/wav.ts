import { open } from "node:fs/promises";

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
