import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { Transform, type Readable, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import { FetchRefusedError } from "./errors.ts";

export function tooLarge(maxBytes: number): FetchRefusedError {
  return new FetchRefusedError("too_large", `The input is larger than the limit of ${formatBytes(maxBytes)}.`);
}

export function formatBytes(bytes: number): string {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1 && value % 1024 === 0) {
    value /= 1024;
    unit += 1;
  }
  return `${value} ${units[unit]}`;
}

/**
 * Streams `source` into a new file at `dest` (created exclusively, mode 0600),
 * failing with `too_large` as soon as more than `maxBytes` went through. On
 * any failure the partial file is removed. Resolves to the byte count.
 */
export async function writeCapped(source: Readable, dest: string, maxBytes: number, signal: AbortSignal): Promise<number> {
  let size = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      size += chunk.length;
      if (size > maxBytes) callback(tooLarge(maxBytes));
      else callback(null, chunk);
    },
  });
  try {
    await pipeline(source, counter, createWriteStream(dest, { flags: "wx", mode: 0o600 }), { signal });
  } catch (error) {
    source.destroy();
    await rm(dest, { force: true });
    throw error;
  }
  return size;
}
