import { randomBytes } from "node:crypto";

/**
 * A UUID version 7 (RFC 9562): 48-bit Unix milliseconds, then a 12-bit counter that
 * rises within a millisecond (method 1 of §6.2), then random bits. Ids made by one
 * generator sort in creation order, which makes `date_created, id` a stable total order.
 * Each generator keeps its own clock and counter.
 */
export function uuidv7Generator(): (now?: number) => string {
  let lastMs = 0;
  let counter = 0;
  return (now = Date.now()) => {
    if (now > lastMs) {
      lastMs = now;
      counter = randomBytes(2).readUInt16BE(0) & 0x1ff; // start low so the counter has room
    } else {
      counter += 1;
      if (counter > 0xfff) {
        lastMs += 1; // borrow the next millisecond rather than repeat
        counter = 0;
      }
    }
    const bytes = randomBytes(16);
    const ms = lastMs;
    bytes[0] = Math.floor(ms / 2 ** 40) & 0xff;
    bytes[1] = Math.floor(ms / 2 ** 32) & 0xff;
    bytes[2] = (ms >>> 24) & 0xff;
    bytes[3] = (ms >>> 16) & 0xff;
    bytes[4] = (ms >>> 8) & 0xff;
    bytes[5] = ms & 0xff;
    bytes[6] = 0x70 | ((counter >>> 8) & 0x0f);
    bytes[7] = counter & 0xff;
    bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
    const hex = bytes.toString("hex");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
}

/** The process-wide generator (ids of one process sort in creation order). */
export const uuidv7: (now?: number) => string = uuidv7Generator();
