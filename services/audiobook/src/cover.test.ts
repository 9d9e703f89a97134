/**
 * `audiobook.cover`'s handler on real files: a finished MP3 book in a blob store, covers given as
 * MEDIA_ROOT paths (fetched as the account), ffmpeg doing the re-wrap. The cover's problems are the
 * client's refusals in plain words, a book gone from the store is `book_not_available`, and a cover
 * that is embedded leaves the audio packets as they were.
 */
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFsBlobStore, type BlobStore } from "@voiceloc/blobs";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { makeToneWav, tempDir } from "@voiceloc/testing";
import { rewrapBookCover, type CoverDeps } from "./cover.ts";

const run = promisify(execFile);
const TASK = "0190d6a4-6b7e-7c3a-9f00-00000000c0de";
const KEY = `results/audiobook/${TASK}.mp3`;

let dir: { path: string; cleanup: () => Promise<void> };
let blobs: BlobStore;
let media: MediaToolkit;
let deps: CoverDeps;
let ffmpeg: string;

const request = (cover: string | null, resultKey = KEY) => ({ task_id: TASK, account_id: "alice", result_key: resultKey, cover, request_id: "r1" });

async function audioPackets(path: string): Promise<string> {
  return (await run(ffmpeg, ["-v", "error", "-i", path, "-map", "0:a:0", "-c", "copy", "-f", "md5", "-"])).stdout.trim();
}

beforeAll(async () => {
  dir = await tempDir("voiceloc-cover-");
  const binaries = await resolveFfmpeg({ logger: silentLogger() });
  ffmpeg = binaries.ffmpeg;
  media = createMediaToolkit(binaries, silentLogger());
  blobs = createFsBlobStore({ root: join(dir.path, "blobs") });
  const root = join(dir.path, "media");
  await mkdir(root, { recursive: true });
  await run(ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "color=c=green:s=32x24", "-frames:v", "1", join(root, "green.png")]);
  await writeFile(join(root, "words.png"), "not a picture at all, only words");
  const wav = await makeToneWav(4, join(dir.path, "tone.wav"), { ffmpeg });
  const mp3 = join(dir.path, "tone.mp3");
  await run(ffmpeg, ["-v", "error", "-i", wav, "-c:a", "libmp3lame", "-b:a", "64k", mp3]);
  const book = join(dir.path, "book.mp3");
  await media.wrapAudioBook({ input: mp3, outPath: book, format: "mp3", chapters: [{ title: "One", startSeconds: 0, endSeconds: 4 }], tags: { title: "Tone" } });
  await blobs.put(KEY, { path: book });
  deps = { blobs, media, fetch: { mediaRoot: root } };
}, 120_000);

afterAll(async () => {
  await dir?.cleanup();
});

describe("rewrapBookCover", () => {
  it("embeds a cover fetched as the account, the audio packets unchanged, under the same key; null removes it", async () => {
    const before = await audioPackets(await blobs.toLocalFile(KEY, join(dir.path, "x")));
    const outcome = await rewrapBookCover(deps, request("green.png"), silentLogger());
    expect(outcome).toMatchObject({ ok: true, reply: { result_key: KEY, cover: { type: "png", width: 32, height: 24 } } });
    const after = await blobs.toLocalFile(KEY, join(dir.path, "y"));
    expect(await audioPackets(after)).toBe(before);
    expect((await media.chaptersOf(after)).map((c) => c.title)).toEqual(["One"]);
    expect(await rewrapBookCover(deps, request(null), silentLogger())).toMatchObject({ ok: true, reply: { cover: null } });
  }, 120_000);

  it("refuses what is not a picture, what cannot be fetched, and a book no longer stored, in plain words", async () => {
    expect(await rewrapBookCover(deps, request("words.png"), silentLogger())).toMatchObject({ ok: false, code: "cover_unusable", message: expect.stringMatching(/cover/i) });
    expect(await rewrapBookCover(deps, request("missing.png"), silentLogger())).toMatchObject({ ok: false, code: "cover_not_available", message: expect.stringMatching(/^The cover cannot be fetched: /) });
    expect(await rewrapBookCover(deps, request("../outside.png"), silentLogger())).toMatchObject({ ok: false, code: "cover_not_available" });
    expect(await rewrapBookCover(deps, request("http://127.0.0.1:9/c.png"), silentLogger())).toMatchObject({ ok: false, code: "cover_not_available" });
    expect(await rewrapBookCover(deps, request("green.png", `results/audiobook/${TASK}-gone.mp3`), silentLogger())).toMatchObject({ ok: false, code: "book_not_available" });
  }, 120_000);
});
