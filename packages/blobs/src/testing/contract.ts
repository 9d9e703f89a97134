import { createHash } from "node:crypto";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { tempDir } from "@voiceloc/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BlobError, BlobNotFoundError, BlobRangeError, InvalidBlobKeyError, InvalidContentTypeError } from "../errors.ts";
import type { BlobStore } from "../types.ts";

/** What a contract run needs from an adapter: a fresh, empty store per test, and how to dispose of it. */
export interface BlobStoreFixture {
  store: BlobStore;
  /** Called after each test, after `store.close()`. */
  cleanup?: () => Promise<void>;
}

export type MakeBlobStore = () => Promise<BlobStoreFixture>;

/** Deterministic pseudo-random bytes (xorshift32), so offset mistakes cannot hide in a short period. */
export function patternBytes(size: number, seed = 1): Buffer {
  const out = Buffer.allocUnsafe(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

export async function readAll(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(parts);
}

function sha256(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** A promise and its resolver. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const BAD_KEYS: ReadonlyArray<readonly [string, string]> = [
  ["", "empty"],
  ["../x", "parent segment"],
  ["/etc/passwd", "absolute"],
  ["a/../../b", "parent segment inside"],
  ["a\\b", "backslash"],
  ["a\u0000b", "NUL"],
  ["a\nb", "control character"],
  ["a//b", "empty segment"],
  ["./a", "dot segment"],
  ["a/", "trailing slash"],
  ["a b", "space"],
  ["caf\u00e9.mp3", "non-ASCII"],
];

/**
 * The behaviour every BlobStore adapter must share. Call at the top level of
 * an adapter's test file; `makeStore` runs before each test.
 */
export function describeBlobContract(name: string, makeStore: MakeBlobStore): void {
  describe(`BlobStore contract: ${name}`, () => {
    let fixture: BlobStoreFixture;
    let store: BlobStore;
    let scratch: { path: string; cleanup: () => Promise<void> };

    beforeEach(async () => {
      fixture = await makeStore();
      store = fixture.store;
      scratch = await tempDir("voiceloc-blobs-contract-");
    });

    afterEach(async () => {
      await store.close();
      await fixture.cleanup?.();
      await scratch.cleanup();
    });

    describe("round trip", () => {
      it("stores a Buffer and reads it back", async () => {
        const data = patternBytes(10_000, 7);
        const result = await store.put("tasks/t1/out.mp3", data);
        expect(result.key).toBe("tasks/t1/out.mp3");
        expect(result.size).toBe(10_000);
        if (result.sha256 !== undefined) expect(result.sha256).toBe(sha256(data));
        expect(await readAll(await store.createReadStream("tasks/t1/out.mp3"))).toEqual(data);
        expect(await store.exists("tasks/t1/out.mp3")).toBe(true);
        expect((await store.stat("tasks/t1/out.mp3")).size).toBe(10_000);
      });

      it("stores a Readable of many chunks, including string chunks", async () => {
        const parts = [patternBytes(70_000, 1), patternBytes(1, 2), "héllo", patternBytes(200_000, 3)];
        const expected = Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "utf8") : p)));
        const result = await store.put("a/stream.bin", Readable.from(parts));
        expect(result.size).toBe(expected.length);
        if (result.sha256 !== undefined) expect(result.sha256).toBe(sha256(expected));
        expect(await readAll(await store.createReadStream("a/stream.bin"))).toEqual(expected);
      });

      it("stores a local file given as { path }", async () => {
        const data = patternBytes(333_333, 9);
        const path = join(scratch.path, "input.wav");
        await writeFile(path, data);
        const result = await store.put("in/input.wav", { path });
        expect(result.size).toBe(data.length);
        expect(await readAll(await store.createReadStream("in/input.wav"))).toEqual(data);
        // the source file is copied, not moved
        expect(await readFile(path)).toEqual(data);
      });

      it("takes over a local file given as { path, move: true }", async () => {
        const data = patternBytes(333_333, 10);
        const path = join(scratch.path, "book.mp3");
        await writeFile(path, data);
        const result = await store.put("results/book.mp3", { path, move: true });
        expect(result.size).toBe(data.length);
        expect(await readAll(await store.createReadStream("results/book.mp3"))).toEqual(data);
        // the file is the store's now
        await expect(stat(path)).rejects.toMatchObject({ code: "ENOENT" });
      });

      it("stores an empty blob", async () => {
        const result = await store.put("empty.txt", Buffer.alloc(0));
        expect(result.size).toBe(0);
        if (result.sha256 !== undefined) expect(result.sha256).toBe(sha256(Buffer.alloc(0)));
        expect((await store.stat("empty.txt")).size).toBe(0);
        expect(await readAll(await store.createReadStream("empty.txt"))).toEqual(Buffer.alloc(0));
        await expect(store.createReadStream("empty.txt", { start: 0, end: 0 })).rejects.toBeInstanceOf(BlobRangeError);
      });

      it("streams a 20 MB blob in and out without one giant chunk", async () => {
        const chunkSize = 64 * 1024;
        const chunks = 320; // 20 MiB
        const inHash = createHash("sha256");
        async function* produce(): AsyncGenerator<Buffer> {
          for (let i = 0; i < chunks; i++) {
            const chunk = patternBytes(chunkSize, i + 1);
            inHash.update(chunk);
            yield chunk;
          }
        }
        const result = await store.put("big/video.mp4", Readable.from(produce()));
        const expectedHash = inHash.digest("hex");
        expect(result.size).toBe(chunkSize * chunks);
        if (result.sha256 !== undefined) expect(result.sha256).toBe(expectedHash);
        expect((await store.stat("big/video.mp4")).size).toBe(chunkSize * chunks);

        const outHash = createHash("sha256");
        let total = 0;
        let largest = 0;
        for await (const chunk of await store.createReadStream("big/video.mp4")) {
          const bytes = chunk as Buffer;
          outHash.update(bytes);
          total += bytes.length;
          largest = Math.max(largest, bytes.length);
        }
        expect(total).toBe(chunkSize * chunks);
        expect(outHash.digest("hex")).toBe(expectedHash);
        expect(largest).toBeLessThanOrEqual(1024 * 1024);
      });
    });

    describe("ranges", () => {
      // Larger than two 128 KiB object-store chunks, so ranges cross chunk boundaries.
      const size = 300_000;
      const data = patternBytes(size, 42);
      const read = async (range: { start?: number; end?: number }) =>
        readAll(await store.createReadStream("r/blob.bin", range));

      beforeEach(async () => {
        await store.put("r/blob.bin", data);
      });

      it("reads the first byte", async () => {
        expect(await read({ start: 0, end: 0 })).toEqual(data.subarray(0, 1));
      });

      it("reads a middle slice", async () => {
        expect(await read({ start: 1_000, end: 1_999 })).toEqual(data.subarray(1_000, 2_000));
      });

      it("reads across a chunk boundary", async () => {
        expect(await read({ start: 131_000, end: 131_200 })).toEqual(data.subarray(131_000, 131_201));
        expect(await read({ start: 131_072, end: 262_144 })).toEqual(data.subarray(131_072, 262_145));
      });

      it("reads the last bytes, open-ended and clamped", async () => {
        expect(await read({ start: size - 10 })).toEqual(data.subarray(size - 10));
        expect(await read({ start: size - 1, end: size - 1 })).toEqual(data.subarray(size - 1));
        expect(await read({ start: size - 5, end: size + 1_000 })).toEqual(data.subarray(size - 5));
      });

      it("reads the whole blob with or without an explicit range", async () => {
        expect(await read({})).toEqual(data);
        expect(await read({ start: 0, end: size - 1 })).toEqual(data);
        expect(await read({ end: 9 })).toEqual(data.subarray(0, 10));
      });

      it("refuses ranges outside the blob or reversed", async () => {
        for (const range of [{ start: size }, { start: size + 10, end: size + 20 }, { start: 10, end: 9 }, { start: -1 }, { start: 1.5 }]) {
          await expect(store.createReadStream("r/blob.bin", range)).rejects.toBeInstanceOf(BlobRangeError);
        }
        await expect(store.createReadStream("r/blob.bin", { start: size })).rejects.toMatchObject({ code: "invalid_range" });
      });
    });

    describe("stat", () => {
      it("derives the content type from the extension", async () => {
        await store.put("x/a.mp3", Buffer.from("a"));
        await store.put("x/b.vtt", Buffer.from("WEBVTT"));
        await store.put("x/c.unknownext", Buffer.from("c"));
        await store.put("x/noext", Buffer.from("d"));
        expect((await store.stat("x/a.mp3")).contentType).toBe("audio/mpeg");
        expect((await store.stat("x/b.vtt")).contentType).toBe("text/vtt");
        expect((await store.stat("x/c.unknownext")).contentType).toBe("application/octet-stream");
        expect((await store.stat("x/noext")).contentType).toBe("application/octet-stream");
      });

      it("keeps an explicit content type until the blob is overwritten without one", async () => {
        await store.put("x/voice.bin", Buffer.from("abc"), { contentType: "audio/x-custom; rate=16000" });
        expect(await store.stat("x/voice.bin")).toMatchObject({ size: 3, contentType: "audio/x-custom; rate=16000" });
        await store.put("x/voice.bin", Buffer.from("abcd"), { contentType: "audio/ogg" });
        expect(await store.stat("x/voice.bin")).toMatchObject({ size: 4, contentType: "audio/ogg" });
        await store.put("x/voice.bin", Buffer.from("abcde"));
        expect(await store.stat("x/voice.bin")).toMatchObject({ size: 5, contentType: "application/octet-stream" });
        await store.put("x/song.wav", Buffer.from("w"), { contentType: "audio/wav" });
        expect((await store.stat("x/song.wav")).contentType).toBe("audio/wav");
      });

      it("refuses a content type that could break an HTTP header", async () => {
        for (const contentType of ["text/plain\r\nX-Evil: 1", "nonsense", "", "a/b\u0000"]) {
          await expect(store.put("x/bad.txt", Buffer.from("x"), { contentType })).rejects.toBeInstanceOf(InvalidContentTypeError);
        }
        expect(await store.exists("x/bad.txt")).toBe(false);
      });

      it("reports a modification time", async () => {
        const before = Date.now();
        await store.put("x/t.txt", Buffer.from("t"));
        const { modified } = await store.stat("x/t.txt");
        expect(modified).toBeInstanceOf(Date);
        // generous bounds: file systems may store coarse timestamps
        expect(modified.getTime()).toBeGreaterThanOrEqual(before - 5_000);
        expect(modified.getTime()).toBeLessThanOrEqual(Date.now() + 5_000);
      });
    });

    describe("list", () => {
      beforeEach(async () => {
        for (const key of [
          "tasks/1/chunks/0002.wav",
          "tasks/1/chunks/0001.wav",
          "tasks/1/out.mp3",
          "tasks/10/chunks/0001.wav",
          "tasks/2/chunks/0001.wav",
          "other.txt",
        ]) {
          await store.put(key, Buffer.from(key));
        }
      });

      it("lists by directory-like prefix, sorted", async () => {
        expect(await store.list("tasks/1/chunks/")).toEqual(["tasks/1/chunks/0001.wav", "tasks/1/chunks/0002.wav"]);
        expect(await store.list("tasks/1/")).toEqual(["tasks/1/chunks/0001.wav", "tasks/1/chunks/0002.wav", "tasks/1/out.mp3"]);
      });

      it("matches a plain string prefix", async () => {
        expect(await store.list("tasks/1")).toEqual([
          "tasks/1/chunks/0001.wav",
          "tasks/1/chunks/0002.wav",
          "tasks/1/out.mp3",
          "tasks/10/chunks/0001.wav",
        ]);
        expect(await store.list("tasks/1/chunks/0001")).toEqual(["tasks/1/chunks/0001.wav"]);
        expect(await store.list("oth")).toEqual(["other.txt"]);
      });

      it("lists everything with an empty prefix and nothing for an unknown one", async () => {
        expect(await store.list("")).toHaveLength(6);
        expect(await store.list("nope/")).toEqual([]);
        expect(await store.list("tasks/1/out.mp3/")).toEqual([]);
      });

      it("drops deleted keys", async () => {
        await store.delete("tasks/1/chunks/0001.wav");
        expect(await store.list("tasks/1/chunks/")).toEqual(["tasks/1/chunks/0002.wav"]);
        await store.delete("tasks/1/chunks/0002.wav");
        expect(await store.list("tasks/1/chunks/")).toEqual([]);
        expect(await store.list("tasks/1/")).toEqual(["tasks/1/out.mp3"]);
      });

      it("refuses a prefix that escapes", async () => {
        for (const prefix of ["../", "/etc", "a/../b", "a\\b"]) {
          await expect(store.list(prefix)).rejects.toBeInstanceOf(InvalidBlobKeyError);
        }
      });
    });

    describe("delete and not found", () => {
      it("deletes once, then reports absence", async () => {
        await store.put("d/x.txt", Buffer.from("x"));
        expect(await store.delete("d/x.txt")).toBe(true);
        expect(await store.delete("d/x.txt")).toBe(false);
        expect(await store.exists("d/x.txt")).toBe(false);
        await expect(store.stat("d/x.txt")).rejects.toBeInstanceOf(BlobNotFoundError);
        await store.put("d/x.txt", Buffer.from("again"));
        expect(await readAll(await store.createReadStream("d/x.txt"))).toEqual(Buffer.from("again"));
      });

      it("does not treat a key prefix as a blob", async () => {
        await store.put("p/q/r.txt", Buffer.from("r"));
        expect(await store.exists("p/q")).toBe(false);
        await expect(store.stat("p/q")).rejects.toBeInstanceOf(BlobNotFoundError);
        expect(await store.delete("p/q")).toBe(false);
        expect(await store.exists("p/q/r.txt")).toBe(true);
      });

      it("throws BlobNotFoundError from stat, createReadStream and toLocalFile", async () => {
        for (const attempt of [
          () => store.stat("missing/a.wav"),
          () => store.createReadStream("missing/a.wav"),
          () => store.createReadStream("missing/a.wav", { start: 0, end: 1 }),
          () => store.toLocalFile("missing/a.wav", scratch.path),
        ]) {
          const error = await attempt().then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(error).toBeInstanceOf(BlobNotFoundError);
          expect(error).toMatchObject({ name: "BlobNotFoundError", code: "blob_not_found", key: "missing/a.wav" });
        }
        expect(await store.exists("missing/a.wav")).toBe(false);
        expect(await store.delete("missing/a.wav")).toBe(false);
      });
    });

    describe("key validation", () => {
      it.each(BAD_KEYS)("refuses %j (%s) in every method", async (key) => {
        const attempts: Array<() => Promise<unknown>> = [
          () => store.put(key, Buffer.from("x")),
          () => store.stat(key),
          () => store.createReadStream(key),
          () => store.exists(key),
          () => store.delete(key),
          () => store.toLocalFile(key, scratch.path),
        ];
        for (const attempt of attempts) {
          const error = await attempt().then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(error).toBeInstanceOf(InvalidBlobKeyError);
          expect(error).toMatchObject({ code: "invalid_blob_key" });
        }
        expect(await store.list("")).toEqual([]);
      });

      it("accepts the whole allowed charset", async () => {
        const key = "AZ-az_09.x/..y/.hidden/a.b.c";
        await store.put(key, Buffer.from("ok"));
        expect(await store.list("")).toEqual([key]);
      });
    });

    describe("atomic writes", () => {
      it("serves the old blob until an overwrite completes", async () => {
        const v1 = Buffer.alloc(200_000, "a");
        await store.put("atomic/x.bin", v1);
        const halfway = gate();
        const release = gate();
        async function* slow(): AsyncGenerator<Buffer> {
          yield Buffer.alloc(150_000, "b");
          yield Buffer.alloc(150_000, "b");
          halfway.open();
          await release.promise;
          yield Buffer.alloc(150_000, "b");
        }
        const pending = store.put("atomic/x.bin", Readable.from(slow()));
        await halfway.promise;
        expect((await store.stat("atomic/x.bin")).size).toBe(200_000);
        expect(await readAll(await store.createReadStream("atomic/x.bin"))).toEqual(v1);
        expect(await store.list("atomic/")).toEqual(["atomic/x.bin"]);
        release.open();
        expect((await pending).size).toBe(450_000);
        expect(await readAll(await store.createReadStream("atomic/x.bin"))).toEqual(Buffer.alloc(450_000, "b"));
        expect(await store.list("atomic/")).toEqual(["atomic/x.bin"]);
      });

      it("keeps the old blob when the source fails mid-way", async () => {
        const v1 = patternBytes(50_000, 5);
        await store.put("atomic/y.bin", v1);
        async function* failing(): AsyncGenerator<Buffer> {
          yield Buffer.alloc(300_000, "z");
          throw new Error("source broke");
        }
        const error = await store.put("atomic/y.bin", Readable.from(failing())).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(BlobError);
        expect(await readAll(await store.createReadStream("atomic/y.bin"))).toEqual(v1);
        expect(await store.list("")).toEqual(["atomic/y.bin"]);

        await expect(store.put("atomic/new.bin", Readable.from(failing()))).rejects.toBeInstanceOf(BlobError);
        expect(await store.exists("atomic/new.bin")).toBe(false);
      });

      it("fails cleanly when a { path } source does not exist", async () => {
        await expect(store.put("atomic/z.bin", { path: join(scratch.path, "nope.bin") })).rejects.toBeInstanceOf(BlobError);
        expect(await store.exists("atomic/z.bin")).toBe(false);
      });
    });

    describe("toLocalFile", () => {
      it("gives a local path holding the blob, keeping the extension", async () => {
        const data = patternBytes(150_000, 11);
        await store.put("tasks/9/audio/source.wav", data);
        const path = await store.toLocalFile("tasks/9/audio/source.wav", scratch.path);
        expect(path.endsWith(".wav")).toBe(true);
        expect(await readFile(path)).toEqual(data);
      });
    });
  });
}
