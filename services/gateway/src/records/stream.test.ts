import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { audioBookStreamKey, createFsBlobStore, deleteAudioBookStream, signBlobUrl, type BlobStore } from "@voiceloc/blobs";
import { tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, startTestGateway, type TestGateway } from "../testing/harness.ts";

const SECRET = "stream-test-signing-secret-0123456789abcdef";
let gw: TestGateway;
let blobs: BlobStore;
let dir: { path: string; cleanup: () => Promise<void> };

beforeAll(async () => {
  dir = await tempDir("voiceloc-gw-stream-");
  blobs = createFsBlobStore({ root: join(dir.path, "blobs") });
  gw = await startTestGateway({ SIGNING_SECRET: SECRET }, { blobs });
});

afterAll(async () => {
  await gw?.close();
  await blobs?.close();
  await dir?.cleanup();
});

const PLAYLIST = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:11\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:9.984,\npart-00000-000.ts\n";

/** The signed playlist link of a book (what its record's stream_url is), as a path with its query. */
const streamPath = (id: string) => {
  const url = new URL(signBlobUrl({ key: audioBookStreamKey(id), baseUrl: BASE, secret: SECRET }));
  return `${url.pathname}${url.search}`;
};

describe("the signed HLS stream of an audio book (gateway)", () => {
  it("serves the playlist with signed part names and the parts under the worker's keys; once the stream is deleted, an empty open playlist and 404 parts", async () => {
    const id = randomUUID();
    await blobs.put(audioBookStreamKey(id), Buffer.from(PLAYLIST));
    await blobs.put(audioBookStreamKey(id, "part-00000-000.ts"), Buffer.from("a part of the book"));
    const link = streamPath(id);
    const query = link.slice(link.indexOf("?"));

    const playlist = await gw.request("GET", link, { key: null });
    expect(playlist.status).toBe(200);
    expect(playlist.headers.get("content-type")).toBe("application/vnd.apple.mpegurl");
    const text = await playlist.text();
    expect(text).toContain(`part-00000-000.ts${query}`);
    const partPath = link.replace("index.m3u8", "part-00000-000.ts");
    const part = await gw.request("GET", partPath, { key: null });
    expect(part.status).toBe(200);
    expect(await part.text()).toBe("a part of the book");
    // Another book's signature, none, or a name outside the stream's are refused.
    expect((await gw.request("GET", streamPath(randomUUID()).replace(/[0-9a-f-]{36}/, id), { key: null })).status).toBe(403);
    expect((await gw.request("GET", partPath.split("?")[0]!, { key: null })).status).toBe(403);
    expect((await gw.request("GET", link.replace("index.m3u8", "chunk-00000.json"), { key: null })).status).toBe(404);

    // The book's stream deleted (as its result would be): nothing of it is served any more.
    expect(await deleteAudioBookStream(blobs, id)).toBe(2);
    const emptied = await gw.request("GET", link, { key: null });
    expect(emptied.status).toBe(200);
    expect(await emptied.text()).not.toContain("#EXTINF");
    expect((await gw.request("GET", partPath, { key: null })).status).toBe(404);
  });
});
