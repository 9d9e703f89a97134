/**
 * Hostile media for tests: files whose headers lie, made from honest files by editing their bytes.
 */

/** Boxes that hold other boxes on the way to the ones rewritten: moov > trak > mdia > minf > stbl. */
const CONTAINERS = new Set(["moov", "trak", "mdia", "minf", "stbl"]);

/** Calls `visit` with the type and body offset of every box under the containers above, in file order. */
function walkMp4Boxes(file: Buffer, visit: (type: string, body: number) => void): void {
  const walk = (start: number, end: number): void => {
    let offset = start;
    while (offset + 8 <= end) {
      let size = file.readUInt32BE(offset);
      const type = file.toString("latin1", offset + 4, offset + 8);
      let header = 8;
      if (size === 1) {
        size = Number(file.readBigUInt64BE(offset + 8));
        header = 16;
      } else if (size === 0) {
        size = end - offset;
      }
      if (size < header || offset + size > end) return;
      if (CONTAINERS.has(type)) walk(offset + header, offset + size);
      visit(type, offset + header);
      offset += size;
    }
  };
  walk(0, file.length);
}

/**
 * An MP4/M4A whose movie (`mvhd`) and media (`mdhd`) headers claim `seconds`, whatever the samples
 * hold. Versions 0 (32-bit) and 1 (64-bit durations) are both rewritten.
 */
export function withClaimedMp4Duration(file: Buffer, seconds: number): Buffer {
  const out = Buffer.from(file);
  let patched = 0;
  walkMp4Boxes(out, (type, body) => {
    if (type !== "mvhd" && type !== "mdhd") return;
    const version = out[body] ?? 0;
    if (version === 1) {
      const timescale = out.readUInt32BE(body + 20);
      out.writeBigUInt64BE(BigInt(Math.round(seconds * timescale)), body + 24);
    } else {
      const timescale = out.readUInt32BE(body + 12);
      out.writeUInt32BE(Math.min(0xffffffff, Math.round(seconds * timescale)), body + 16);
    }
    patched++;
  });
  if (patched < 2) throw new Error(`expected mvhd and mdhd boxes, patched ${patched}`);
  return out;
}

/**
 * An MP4 whose sample size tables (`stsz`) claim every sample is `bytes` long (about 2 GB by
 * default), whatever the file holds: a reader that believed them would allocate far past the file.
 */
export function withClaimedMp4SampleSizes(file: Buffer, bytes = 0x7ffffff0): Buffer {
  const out = Buffer.from(file);
  let patched = 0;
  walkMp4Boxes(out, (type, body) => {
    // full box (4), one size for all samples (4; 0 when each has its own), count (4), then the sizes
    if (type !== "stsz" || out.readUInt32BE(body + 4) !== 0) return;
    const count = out.readUInt32BE(body + 8);
    for (let i = 0; i < count; i++) out.writeUInt32BE(bytes, body + 12 + 4 * i);
    patched += count;
  });
  if (patched === 0) throw new Error("expected a stsz box listing its sample sizes");
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

/**
 * An MP4 whose video headers claim `width`×`height` (the track header `tkhd` and the visual sample
 * entry in `stsd`), whatever size its pictures are: a decoder reads the real size from each picture.
 */
export function withClaimedMp4PictureSize(file: Buffer, width: number, height: number): Buffer {
  const out = Buffer.from(file);
  let patched = 0;
  walkMp4Boxes(out, (type, body) => {
    if (type === "tkhd") {
      // version 0: 4 + 4*5 + 8 + 2*4 + 36 = 76 bytes to the width; version 1: 12 more (64-bit times and duration)
      const at = body + ((out[body] ?? 0) === 1 ? 88 : 76);
      // an audio track's tkhd says 0×0: only a picture's is rewritten
      if (out.readUInt32BE(at) !== 0) {
        out.writeUInt32BE(width * 65536, at);
        out.writeUInt32BE(height * 65536, at + 4);
        patched++;
      }
    } else if (type === "stsd") {
      // full box (4) + entry count (4), then the first entry: size, type, 6 reserved, index (2), 16 bytes, width, height
      const entry = body + 8;
      const format = out.toString("latin1", entry + 4, entry + 8);
      if (!["mp4a", "ac-3", "ec-3", "Opus", "fLaC", ".mp3"].includes(format)) {
        out.writeUInt16BE(width, entry + 32);
        out.writeUInt16BE(height, entry + 34);
        patched++;
      }
    }
  });
  if (patched < 2) throw new Error(`expected a video tkhd and stsd, patched ${patched}`);
  return out;
}
