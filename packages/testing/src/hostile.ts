/**
 * Hostile media for tests: files whose headers lie, made from honest files by editing their bytes.
 */

const CONTAINERS = new Set(["moov", "trak", "mdia"]);

/**
 * An MP4/M4A whose movie (`mvhd`) and media (`mdhd`) headers claim `seconds`, whatever the samples
 * hold. Versions 0 (32-bit) and 1 (64-bit durations) are both rewritten.
 */
export function withClaimedMp4Duration(file: Buffer, seconds: number): Buffer {
  const out = Buffer.from(file);
  let patched = 0;
  const walk = (start: number, end: number): void => {
    let offset = start;
    while (offset + 8 <= end) {
      let size = out.readUInt32BE(offset);
      const type = out.toString("latin1", offset + 4, offset + 8);
      let header = 8;
      if (size === 1) {
        size = Number(out.readBigUInt64BE(offset + 8));
        header = 16;
      } else if (size === 0) {
        size = end - offset;
      }
      if (size < header || offset + size > end) return;
      if (CONTAINERS.has(type)) walk(offset + header, offset + size);
      if (type === "mvhd" || type === "mdhd") {
        const body = offset + header;
        const version = out[body] ?? 0;
        if (version === 1) {
          const timescale = out.readUInt32BE(body + 20);
          out.writeBigUInt64BE(BigInt(Math.round(seconds * timescale)), body + 24);
        } else {
          const timescale = out.readUInt32BE(body + 12);
          out.writeUInt32BE(Math.min(0xffffffff, Math.round(seconds * timescale)), body + 16);
        }
        patched++;
      }
      offset += size;
    }
  };
  walk(0, out.length);
  if (patched < 2) throw new Error(`expected mvhd and mdhd boxes, patched ${patched}`);
  return out;
}

/** A WAV whose `fmt ` chunk declares 0 channels. */
export function withZeroWavChannels(file: Buffer): Buffer {
  const out = Buffer.from(file);
  if (out.toString("ascii", 0, 4) !== "RIFF" || out.toString("ascii", 8, 12) !== "WAVE") throw new Error("not a WAV file");
  let offset = 12;
  while (offset + 8 <= out.length) {
    const id = out.toString("ascii", offset, offset + 4);
    const size = out.readUInt32LE(offset + 4);
    if (id === "fmt ") {
      out.writeUInt16LE(0, offset + 8 + 2);
      return out;
    }
    offset += 8 + size + (size % 2);
  }
  throw new Error("no fmt chunk");
}
