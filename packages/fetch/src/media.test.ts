import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFsBlobStore, uploadBlobKey, type BlobStore } from "@voiceloc/blobs";
import { tempDir } from "@voiceloc/testing";
import { FILE_NOT_AVAILABLE, FetchRefusedError, accountMediaFolder, checkReference, fetchToFile, type FetchOptions } from "./index.ts";

let tmp: { path: string; cleanup: () => Promise<void> };
let media: string;
let dest: string;
let blobs: BlobStore;
const UPLOAD = "0190d6a4-6b7e-7c3a-9f00-1234567890ab";

beforeAll(async () => {
  tmp = await tempDir("voiceloc-fetch-media-");
  media = join(tmp.path, "media");
  dest = join(tmp.path, "dest");
  await mkdir(join(media, "alice", "dir"), { recursive: true });
  await mkdir(join(media, "bob"), { recursive: true });
  await mkdir(join(media, "sandbox%3Aacme"), { recursive: true });
  await writeFile(join(media, "alice", "book.txt"), "alice's book");
  await writeFile(join(media, "sandbox%3Aacme", "book.txt"), "sandbox book");
  await writeFile(join(media, "shared.txt"), "shared text");
  await symlink("../alice/book.txt", join(media, "bob", "peek.txt"));
  blobs = createFsBlobStore({ root: join(tmp.path, "blobs") });
  await blobs.put(uploadBlobKey("alice", UPLOAD), Buffer.from("uploaded words"));
});

afterAll(async () => {
  await blobs.close();
  await tmp.cleanup();
});

async function reason(ref: string, options: FetchOptions): Promise<FetchRefusedError> {
  try {
    await fetchToFile(ref, dest, options);
  } catch (error) {
    expect(error).toBeInstanceOf(FetchRefusedError);
    return error as FetchRefusedError;
  }
  throw new Error(`expected ${ref} to be refused`);
}

describe("accountMediaFolder", () => {
  it("percent-encodes the id into one path segment, distinct ids to distinct folders", () => {
    expect(accountMediaFolder("alice")).toBe("alice");
    expect(accountMediaFolder("sandbox:acme")).toBe("sandbox%3Aacme");
    expect(accountMediaFolder("a/b")).toBe("a%2Fb");
    expect(accountMediaFolder("..")).toBe("%2E%2E");
    expect(accountMediaFolder(".")).toBe("%2E");
    expect(accountMediaFolder("\ud800x")).toBe("%uD800x");
    const long = accountMediaFolder("é".repeat(150));
    expect(long).toMatch(/^%h-[0-9a-f]{64}$/);
    const ids = ["a", "A", "a/b", "a%2Fb", "..", "%2E%2E", "\ud800", "%uD800", "sandbox:acme"];
    expect(new Set(ids.map(accountMediaFolder)).size).toBe(ids.length);
    for (const id of ids) expect(accountMediaFolder(id)).not.toContain("/");
  });
});

describe("MEDIA_ROOT_SCOPE=account", () => {
  const scoped = (owner: string): FetchOptions => ({ mediaRoot: media, mediaRootScope: "account", owner });

  it("resolves relative and absolute paths under the owner's folder", async () => {
    const got = await fetchToFile("book.txt", dest, scoped("alice"));
    expect(await readFile(got.path, "utf8")).toBe("alice's book");
    const abs = await fetchToFile(join(media, "alice", "book.txt"), dest, scoped("alice"));
    expect(await readFile(abs.path, "utf8")).toBe("alice's book");
    const sandbox = await fetchToFile("book.txt", dest, scoped("sandbox:acme"));
    expect(await readFile(sandbox.path, "utf8")).toBe("sandbox book");
  });

  it("gives one reason for another account's file, a missing one, a directory, a link out and '..'", async () => {
    const bob = scoped("bob");
    const refs = [
      "alice/book.txt", // bob's own folder has no alice/ folder
      join(media, "alice", "book.txt"), // absolute, outside bob's folder
      "../alice/book.txt",
      "missing.txt",
      "peek.txt", // a link into alice's folder
    ];
    for (const ref of refs) {
      const error = await reason(ref, bob);
      expect(error.message, ref).toBe(FILE_NOT_AVAILABLE);
    }
    expect((await reason("dir", scoped("alice"))).message).toBe(FILE_NOT_AVAILABLE);
    // an account without a folder at all
    expect((await reason("book.txt", scoped("carol"))).message).toBe(FILE_NOT_AVAILABLE);
    // the shared root's files are not in anyone's folder
    expect((await reason("shared.txt", scoped("alice"))).message).toBe(FILE_NOT_AVAILABLE);
  });

  it("shared scope reads the whole root, with the same one reason for what is not there", async () => {
    const shared: FetchOptions = { mediaRoot: media };
    expect(await readFile((await fetchToFile("alice/book.txt", dest, shared)).path, "utf8")).toBe("alice's book");
    for (const ref of ["missing.txt", "alice/dir", "../secret", "/etc/passwd"]) {
      expect((await reason(ref, shared)).message, ref).toBe(FILE_NOT_AVAILABLE);
    }
  });
});

describe("upload:<id>", () => {
  it("classifies upload references and refuses malformed ids with the one reason", () => {
    expect(checkReference(`upload:${UPLOAD}`)).toEqual({ kind: "upload", id: UPLOAD });
    for (const ref of ["upload:", "upload:nope", `upload:${UPLOAD}/x`, `upload:${UPLOAD.toUpperCase()}`]) {
      expect(() => checkReference(ref), ref).toThrow(FILE_NOT_AVAILABLE);
    }
  });

  it("copies the owner's upload from the blob store", async () => {
    const got = await fetchToFile(`upload:${UPLOAD}`, dest, { mediaRoot: media, owner: "alice", blobs });
    expect(got.sourceKind).toBe("upload");
    expect(await readFile(got.path, "utf8")).toBe("uploaded words");
  });

  it("another account's, an unknown and a store-less upload read as file not available", async () => {
    const other = await reason(`upload:${UPLOAD}`, { mediaRoot: media, owner: "bob", blobs });
    const unknown = await reason("upload:0190d6a4-6b7e-7c3a-9f00-000000000000", { mediaRoot: media, owner: "alice", blobs });
    const noStore = await reason(`upload:${UPLOAD}`, { mediaRoot: media, owner: "alice" });
    for (const error of [other, unknown, noStore]) {
      expect(error.code).toBe("not_found");
      expect(error.message).toBe(FILE_NOT_AVAILABLE);
    }
  });

  it("stops an upload larger than maxBytes", async () => {
    const error = await reason(`upload:${UPLOAD}`, { mediaRoot: media, owner: "alice", blobs, maxBytes: 4 });
    expect(error.code).toBe("too_large");
  });
});
