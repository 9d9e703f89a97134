import { join } from "node:path";
import { tempDir } from "@voiceloc/testing";
import { describe, expect, it } from "vitest";
import { createFsBlobStore } from "./fs.ts";
import { AUDIO_BOOK_STREAM_PART, audioBookStreamKey, audioBookStreamPrefix, deleteAudioBookStream } from "./streams.ts";

describe("audio book stream keys", () => {
  const id = "3f1c2b7a-8d4e-4f6a-9b0c-1d2e3f4a5b6c";

  it("puts a book's playlist and parts in its own folder", () => {
    expect(audioBookStreamPrefix(id)).toBe(`streams/audiobook/${id}/`);
    expect(audioBookStreamKey(id)).toBe(`streams/audiobook/${id}/index.m3u8`);
    expect(audioBookStreamKey(id, "part-00000-000.ts")).toBe(`streams/audiobook/${id}/part-00000-000.ts`);
    expect(AUDIO_BOOK_STREAM_PART.test("part-00012-003.ts")).toBe(true);
    for (const name of ["index.m3u8", "chunk-00000.json", "part-1-1.ts", "../part-00000-000.ts"]) expect(AUDIO_BOOK_STREAM_PART.test(name)).toBe(false);
  });

  it("deletes one book's stream (playlist, parts, notes) and nothing of another book or the result", async () => {
    const dir = await tempDir("voiceloc-blobs-streams-");
    const blobs = createFsBlobStore({ root: join(dir.path, "blobs") });
    try {
      // Another book whose id starts like this one's: the prefix ends with a slash, so it is not touched.
      const other = `${id.slice(0, -1)}d`;
      const mine = [audioBookStreamKey(id), audioBookStreamKey(id, "part-00000-000.ts"), audioBookStreamKey(id, "part-00001-000.ts"), audioBookStreamKey(id, "chunk-00001.json")];
      const kept = [audioBookStreamKey(other), audioBookStreamKey(other, "part-00000-000.ts"), `results/audiobook/${id}.mp3`];
      for (const key of [...mine, ...kept]) await blobs.put(key, Buffer.from(key));
      expect(await deleteAudioBookStream(blobs, id)).toBe(mine.length);
      expect(await blobs.list(audioBookStreamPrefix(id))).toEqual([]);
      for (const key of kept) expect((await blobs.stat(key)).size).toBe(Buffer.byteLength(key));
      expect(await deleteAudioBookStream(blobs, id)).toBe(0);
    } finally {
      await blobs.close();
      await dir.cleanup();
    }
  });
});
