import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { GLOBAL_ARGS } from "@voiceloc/media";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildPlaylist, streamPlaylistKey } from "./stream.ts";
import { createBookHarness, createEngineStack, type BookHarness, type EngineStack } from "./testing/harness.ts";
import { ENGLISH_BOOK } from "./testing/texts.ts";

let stack: EngineStack;
beforeAll(async () => {
  stack = await createEngineStack();
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The segments a playlist lists, with their stated lengths, and whether it is closed. */
function parsePlaylist(text: string): { segments: Array<{ name: string; seconds: number }>; ended: boolean; type: string | undefined } {
  const lines = text.split("\n").map((line) => line.trim());
  const segments: Array<{ name: string; seconds: number }> = [];
  for (const [i, line] of lines.entries()) {
    const m = /^#EXTINF:([\d.]+),/.exec(line);
    if (m) segments.push({ seconds: Number(m[1]), name: lines[i + 1] ?? "" });
  }
  return { segments, ended: lines.includes("#EXT-X-ENDLIST"), type: lines.find((l) => l.startsWith("#EXT-X-PLAYLIST-TYPE:"))?.split(":")[1] };
}

describe("the HLS stream of an audio book while it renders", () => {
  it("lists only the unbroken run of chunks from the start, and ends only when told", () => {
    const note = (name: string) => ({ segments: [{ name, seconds: 10 }] });
    const notes = new Map([
      [0, note("part-00000-000.ts")],
      [2, note("part-00002-000.ts")],
    ]);
    const open = parsePlaylist(buildPlaylist(notes, false));
    expect(open).toEqual({ segments: [{ name: "part-00000-000.ts", seconds: 10 }], ended: false, type: "EVENT" });
    notes.set(1, note("part-00001-000.ts"));
    const closed = parsePlaylist(buildPlaylist(notes, true));
    expect(closed.segments.map((s) => s.name)).toEqual(["part-00000-000.ts", "part-00001-000.ts", "part-00002-000.ts"]);
    expect(closed.ended).toBe(true);
  });

  it("serves a playable first part long before a 30,000-character book is done, then spans the whole book", async () => {
    const h: BookHarness = await createBookHarness(stack);
    cleanups.push(h.cleanup);
    // The book cannot complete before the test has looked at the open playlist: every chunk but the
    // first is held at its checkpoint until then (the lanes go on speaking meanwhile).
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let firstPart!: () => void;
    const playable = new Promise<void>((resolve) => (firstPart = resolve));
    let chunksDone = 0;
    let total = 0;
    cleanups.push(async () => release());
    const service = h.service({
      chunkChars: 3_000,
      onChunkDone: async ({ index, total: t }) => {
        total = t;
        chunksDone++;
        if (index !== 0) await gate;
      },
      onFirstStreamPart: () => firstPart(),
    });
    await service.start();
    let text = "";
    while (text.length < 30_000) text += `${ENGLISH_BOOK}\n\n`;
    const file = await h.writeInput("books/long.txt", text);
    const id = await h.publish({ file });
    await playable;

    const key = streamPlaylistKey(id);
    const open = parsePlaylist(await readFile(await h.localFile(key), "utf8"));
    expect(open.type).toBe("EVENT");
    expect(open.ended).toBe(false);
    expect(open.segments.length).toBeGreaterThan(0);
    expect(chunksDone).toBeLessThan(total);
    // The first part is AAC in MPEG-TS that ffprobe reads, a few seconds long.
    const firstPath = await h.localFile(`${dirname(key)}/${open.segments[0]!.name}`);
    const first = await stack.media.probe(firstPath, { demuxers: ["mpegts"] });
    expect(first.audio?.codec).toBe("aac");
    expect(first.durationSeconds).toBeGreaterThan(2);
    expect(first.durationSeconds).toBeLessThan(12);
    release();

    const end = await h.waitForEnd(id, 300_000);
    expect(end.status).toBe("completed");
    const closed = parsePlaylist(await readFile(await h.localFile(key), "utf8"));
    expect(closed.ended).toBe(true);
    const book = await stack.media.probe(await h.localFile(end.result_key!));
    const listed = closed.segments.reduce((sum, s) => sum + s.seconds, 0);
    expect(Math.abs(listed - book.durationSeconds)).toBeLessThan(2);
    // ffmpeg plays the playlist through (every segment read and decoded).
    const playlistPath = await h.localFile(key);
    for (const s of closed.segments) await h.localFile(join(dirname(key), s.name));
    const decoded = await stack.media.run(
      [...GLOBAL_ARGS, "-v", "error", "-protocol_whitelist", "file", "-allowed_extensions", "ALL", "-f", "hls", "-i", playlistPath, "-f", "null", "-"],
      { what: "Playing the stream" },
    );
    expect(decoded.stderrTail.filter((line) => !/discontinuity|timestamp/i.test(line))).toEqual([]);
  }, 360_000);
});
