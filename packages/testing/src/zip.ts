/**
 * A tiny ZIP writer for tests, with full control over what the headers claim: stored or deflated
 * entries, any name (`../x`, `/abs`), declared sizes that lie, and ZIP64 end records when there are
 * more than 65,535 entries. Written from the PKWARE APPNOTE (local header, central directory, end of
 * central directory; ZIP64 end record and locator).
 */
import { crc32, deflateRawSync } from "node:zlib";

export interface ZipEntry {
  name: string;
  /** The entry's content (deflated unless `method` is 0). */
  data?: Uint8Array | string;
  /** Already deflated bytes to store as the entry's data (with `method` 8). */
  deflated?: Uint8Array;
  method?: 0 | 8;
  /** The uncompressed size the headers declare (default: the real one, or 0 for `deflated`). */
  declaredSize?: number;
}

const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n & 0xffff);
  return b;
};
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
};
const u64 = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(n));
  return b;
};

/** The bytes of a ZIP archive holding `entries` in order. */
export function buildZip(entries: readonly ZipEntry[]): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, "utf8");
    const raw = entry.data === undefined ? Buffer.alloc(0) : Buffer.from(entry.data);
    const method = entry.method ?? 8;
    const body = entry.deflated !== undefined ? Buffer.from(entry.deflated) : method === 8 ? deflateRawSync(raw) : raw;
    const crc = crc32(raw);
    const size = entry.declaredSize ?? (entry.deflated !== undefined ? 0 : raw.length);
    const common = [u16(20), u16(0x0800), u16(method), u16(0), u16(0x21), u32(crc), u32(body.length), u32(size), u16(name.length)];
    const local = Buffer.concat([u32(0x04034b50), ...common, u16(0), name]);
    central.push(Buffer.concat([u32(0x02014b50), u16(20), ...common, u16(0), u16(0), u16(0), u16(0), u32(0), u32(offset), name]));
    parts.push(local, body);
    offset += local.length + body.length;
  }
  const directory = Buffer.concat(central);
  const count = entries.length;
  const tail: Buffer[] = [];
  if (count > 0xffff) {
    const zip64At = offset + directory.length;
    tail.push(
      Buffer.concat([u32(0x06064b50), u64(44), u16(45), u16(45), u32(0), u32(0), u64(count), u64(count), u64(directory.length), u64(offset)]),
      Buffer.concat([u32(0x07064b50), u32(0), u64(zip64At), u32(1)]),
    );
  }
  const shown = Math.min(count, 0xffff);
  tail.push(Buffer.concat([u32(0x06054b50), u16(0), u16(0), u16(shown), u16(shown), u32(directory.length), u32(offset), u16(0)]));
  return Buffer.concat([...parts, directory, ...tail]);
}
