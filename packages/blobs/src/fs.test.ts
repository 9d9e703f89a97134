import { lstat, readdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { tempDir } from "@voiceloc/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BlobKeyConflictError } from "./errors.ts";
import { blobRootFor, createFsBlobStore } from "./fs.ts";
import { describeBlobContract, patternBytes, readAll } from "./testing/contract.ts";
import type { BlobStore } from "./types.ts";

describeBlobContract("fs", async () => {
  const dir = await tempDir("voiceloc-blobs-fs-");
  return { store: createFsBlobStore({ root: join(dir.path, "blobs") }), cleanup: dir.cleanup };
});

describe("fs blob store specifics", () => {
  let dir: { path: string; cleanup: () => Promise<void> };
  let root: string;
  let store: BlobStore;

  beforeEach(async () => {
    dir = await tempDir("voiceloc-blobs-fs-");
    root = blobRootFor(dir.path);
    store = createFsBlobStore({ root });
  });

  afterEach(async () => {
    await store.close();
    await dir.cleanup();
  });

  it("puts the store under <dataDir>/blobs", () => {
    expect(blobRootFor("/var/lib/voiceloc")).toBe("/var/lib/voiceloc/blobs");
  });

  it("toLocalFile returns the blob's own file without copying", async () => {
    await store.put("tasks/1/in.wav", Buffer.from("RIFF"));
    const path = await store.toLocalFile("tasks/1/in.wav", join(dir.path, "work"));
    expect(path).toBe(join(root, "objects", "tasks", "1", "in.wav"));
    await expect(stat(join(dir.path, "work"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("streams a large put to disk instead of buffering it", async () => {
    const chunk = 64 * 1024;
    const total = 320; // 20 MiB
    let yielded = 0;
    let largestLag = 0;
    async function* produce(): AsyncGenerator<Buffer> {
      for (let i = 0; i < total; i++) {
        if (i > 0 && i % 32 === 0) {
          // Backpressure means everything but a few buffers already reached the temp file.
          const tmp = await readdir(join(root, "tmp"));
          expect(tmp).toHaveLength(1);
          const onDisk = (await stat(join(root, "tmp", tmp[0] as string))).size;
          largestLag = Math.max(largestLag, yielded - onDisk);
        }
        yielded += chunk;
        yield patternBytes(chunk, i);
      }
    }
    const result = await store.put("big/stream.bin", Readable.from(produce()));
    expect(result.size).toBe(chunk * total);
    expect(largestLag).toBeLessThan(4 * 1024 * 1024);
    expect(await readdir(join(root, "tmp"))).toEqual([]);
  });

  it("lets a reader opened before an overwrite finish reading the old version", async () => {
    const v1 = patternBytes(1_000_000, 1);
    await store.put("v/x.bin", v1);
    const reader = await store.createReadStream("v/x.bin");
    await store.put("v/x.bin", patternBytes(10, 2));
    expect(await readAll(reader)).toEqual(v1);
    expect((await store.stat("v/x.bin")).size).toBe(10);
  });

  it("refuses a key that is also a directory of keys", async () => {
    await store.put("a", Buffer.from("file"));
    await expect(store.put("a/b", Buffer.from("x"))).rejects.toBeInstanceOf(BlobKeyConflictError);
    await store.put("c/d", Buffer.from("x"));
    await expect(store.put("c", Buffer.from("x"))).rejects.toMatchObject({ code: "blob_key_conflict" });
    expect(await readdir(join(root, "tmp"))).toEqual([]);
    expect(await store.list("")).toEqual(["a", "c/d"]);
  });

  it("removes empty directories on delete", async () => {
    await store.put("tasks/7/chunks/0001.wav", Buffer.from("x"), { contentType: "audio/x-special" });
    await store.put("tasks/8/out.mp3", Buffer.from("y"));
    await store.delete("tasks/7/chunks/0001.wav");
    expect(await readdir(join(root, "objects", "tasks"))).toEqual(["8"]);
    await expect(stat(join(root, "meta", "tasks"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("writes a sidecar only for a content type the extension does not imply, and ignores a stale one", async () => {
    await store.put("m/a.mp3", Buffer.from("x"), { contentType: "audio/mpeg" });
    await expect(stat(join(root, "meta", "m", "a.mp3.json"))).rejects.toMatchObject({ code: "ENOENT" });

    await store.put("m/b.mp3", Buffer.from("x"), { contentType: "audio/x-odd" });
    const sidecarPath = join(root, "meta", "m", "b.mp3.json");
    const sidecar = JSON.parse(await readFile(sidecarPath, "utf8")) as { ino: string };
    expect((await store.stat("m/b.mp3")).contentType).toBe("audio/x-odd");
    await writeFile(sidecarPath, JSON.stringify({ ...sidecar, ino: "1" }));
    expect((await store.stat("m/b.mp3")).contentType).toBe("audio/mpeg");
    await writeFile(sidecarPath, "not json");
    expect((await store.stat("m/b.mp3")).contentType).toBe("audio/mpeg");
  });

  it("leaves no temp file behind after a failed put", async () => {
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.alloc(100_000);
      throw new Error("boom");
    }
    await expect(store.put("f/x.bin", Readable.from(failing()), { contentType: "audio/x-a" })).rejects.toThrow(/boom/);
    expect(await readdir(join(root, "tmp"))).toEqual([]);
  });

  it("renames a file handed over on the same file system into place (the same inode, no copy)", async () => {
    const path = join(dir.path, "book.mp3");
    await writeFile(path, patternBytes(50_000, 3));
    const before = await stat(path);
    await store.put("r/book.mp3", { path, move: true });
    const after = await stat(await store.toLocalFile("r/book.mp3", dir.path));
    expect(after.ino).toBe(before.ino);
    expect(await readdir(join(root, "tmp"))).toEqual([]);
  });

  it("copies a file it is not handed over, leaving the source as it was", async () => {
    const data = patternBytes(70_000, 4);
    const path = join(dir.path, "in.wav");
    await writeFile(path, data);
    await store.put("r/in.wav", { path });
    const stored = await store.toLocalFile("r/in.wav", dir.path);
    expect((await stat(stored)).ino).not.toBe((await stat(path)).ino);
    expect(await readFile(stored)).toEqual(data);
    expect(await readFile(path)).toEqual(data);
  });

  it("puts a file handed over back where it was when the put fails", async () => {
    await store.put("taken", Buffer.from("x"));
    const data = patternBytes(1_000, 5);
    const path = join(dir.path, "keep.mp3");
    await writeFile(path, data);
    // "taken" is a blob, so "taken/book.mp3" cannot be one: the put fails after the file was taken
    await expect(store.put("taken/book.mp3", { path, move: true })).rejects.toBeInstanceOf(BlobKeyConflictError);
    expect(await readFile(path)).toEqual(data);
    expect(await readdir(join(root, "tmp"))).toEqual([]);
  });

  it("copies a file handed over that it cannot rename (a symbolic link), then removes what it was handed", async () => {
    const data = patternBytes(20_000, 6);
    const target = join(dir.path, "target.mp3");
    const link = join(dir.path, "link.mp3");
    await writeFile(target, data);
    await symlink(target, link);
    await store.put("r/linked.mp3", { path: link, move: true });
    expect(await readFile(await store.toLocalFile("r/linked.mp3", dir.path))).toEqual(data);
    await expect(lstat(link)).rejects.toMatchObject({ code: "ENOENT" });
    // only the link was handed over: the file it pointed to is left as it was
    expect(await readFile(target)).toEqual(data);
  });

  it("streams a { path } that is not a regular file (a pipe) instead of copying it", async () => {
    const stored = await store.put("r/dev.bin", { path: "/dev/null" });
    expect(stored.size).toBe(0);
  });
});
