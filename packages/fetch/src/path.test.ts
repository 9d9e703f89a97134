import { execFileSync } from "node:child_process";
import { mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "@voiceloc/testing";
import { FetchRefusedError, fetchToFile, type FetchOptions } from "./index.ts";

let tmp: { path: string; cleanup: () => Promise<void> };
let media: string;
let dest: string;
let options: FetchOptions;

beforeAll(async () => {
  tmp = await tempDir("voiceloc-fetch-path-");
  media = join(tmp.path, "media");
  dest = join(tmp.path, "dest");
  await mkdir(join(media, "sub"), { recursive: true });
  await mkdir(join(tmp.path, "outside"));
  await writeFile(join(media, "a.wav"), "RIFF-a");
  await writeFile(join(media, "sub", "b.mp3"), "ID3-b");
  await writeFile(join(media, "big.wav"), Buffer.alloc(1000, 7));
  await writeFile(join(tmp.path, "secret.txt"), "secret");
  await writeFile(join(tmp.path, "outside", "x.wav"), "outside");
  await symlink("a.wav", join(media, "link-in.wav"));
  await symlink("../secret.txt", join(media, "link-out.txt"));
  await symlink(join(tmp.path, "secret.txt"), join(media, "abs-link-out.txt"));
  await symlink("../outside", join(media, "dirlink"));
  await symlink("sub", join(media, "dirlink-in"));
  await symlink("loop2", join(media, "loop1"));
  await symlink("loop1", join(media, "loop2"));
  await symlink(media, join(tmp.path, "media-link"));
  options = { mediaRoot: media, maxBytes: 1000 };
});

afterAll(async () => {
  await tmp.cleanup();
});

async function refusal(ref: string, opts: FetchOptions = options): Promise<FetchRefusedError> {
  try {
    await fetchToFile(ref, dest, opts);
  } catch (error) {
    expect(error).toBeInstanceOf(FetchRefusedError);
    return error as FetchRefusedError;
  }
  throw new Error(`expected ${ref} to be refused`);
}

async function leftovers(): Promise<string[]> {
  try {
    return (await readdir(dest)).filter((name) => name.startsWith("input-"));
  } catch {
    return [];
  }
}

describe("fetchToFile: paths under the media root", () => {
  it("copies a relative path into destDir, keeping the extension", async () => {
    const result = await fetchToFile("a.wav", dest, options);
    expect(result.sourceKind).toBe("path");
    expect(result.size).toBe(6);
    expect(result.contentType).toBeUndefined();
    expect(result.path.startsWith(dest)).toBe(true);
    expect(result.path.endsWith(".wav")).toBe(true);
    expect(await readFile(result.path, "utf8")).toBe("RIFF-a");
  });

  it("copies nested and absolute paths under the media root", async () => {
    expect(await readFile((await fetchToFile("sub/b.mp3", dest, options)).path, "utf8")).toBe("ID3-b");
    expect(await readFile((await fetchToFile(join(media, "sub", "b.mp3"), dest, options)).path, "utf8")).toBe("ID3-b");
  });

  it("follows symlinks that stay inside the media root", async () => {
    expect(await readFile((await fetchToFile("link-in.wav", dest, options)).path, "utf8")).toBe("RIFF-a");
    expect(await readFile((await fetchToFile("dirlink-in/b.mp3", dest, options)).path, "utf8")).toBe("ID3-b");
  });

  it("works when the media root itself is reached through a symlink", async () => {
    const result = await fetchToFile("a.wav", dest, { ...options, mediaRoot: join(tmp.path, "media-link") });
    expect(await readFile(result.path, "utf8")).toBe("RIFF-a");
  });

  it("refuses '..' and absolute paths outside the media root", async () => {
    expect((await refusal("../secret.txt")).code).toBe("path_outside_media_root");
    expect((await refusal("sub/../../secret.txt")).code).toBe("path_outside_media_root");
    expect((await refusal(join(tmp.path, "secret.txt"))).code).toBe("path_outside_media_root");
    expect((await refusal("/etc/passwd")).code).toBe("path_outside_media_root");
  });

  it("refuses symlink escapes: file, absolute and directory links", async () => {
    for (const ref of ["link-out.txt", "abs-link-out.txt", "dirlink/x.wav", join(media, "dirlink", "x.wav")]) {
      const error = await refusal(ref);
      expect(error.code, ref).toBe("path_outside_media_root");
      expect(error.message).not.toContain(tmp.path);
    }
  });

  it("refuses NUL bytes", async () => {
    expect((await refusal("a.wav\u0000.txt")).code).toBe("invalid_reference");
  });

  it("says not_found for a missing file or directory", async () => {
    expect((await refusal("missing.wav")).code).toBe("not_found");
    expect((await refusal("nodir/missing.wav")).code).toBe("not_found");
    expect((await refusal("a.wav/inner")).code).toBe("not_found");
  });

  it("refuses directories, symlink loops and FIFOs as not_a_file", async () => {
    expect((await refusal("sub")).code).toBe("not_a_file");
    expect((await refusal("loop1")).code).toBe("not_a_file");
    execFileSync("mkfifo", [join(media, "fifo")]);
    expect((await refusal("fifo")).code).toBe("not_a_file");
  });

  it("enforces the size cap and leaves no partial file", async () => {
    const before = await leftovers();
    expect((await fetchToFile("big.wav", dest, options)).size).toBe(1000);
    const error = await refusal("big.wav", { ...options, maxBytes: 999 });
    expect(error.code).toBe("too_large");
    expect(error.message).toContain("999 bytes");
    expect((await leftovers()).length).toBe(before.length + 1);
  });
});
