import { Readable } from "node:stream";
import {
  AUDIO_BOOK_STREAM_PART,
  AUDIO_BOOK_STREAM_PLAYLIST,
  AUDIO_BOOK_STREAMS_PREFIX,
  audioBookStreamKey as streamKey,
  BlobNotFoundError,
  SIGNED_FILES_PATH,
  verifyBlobSignature,
  type BlobStore,
  type SigningSecrets,
} from "@voiceloc/blobs";
import type { GatewayApp } from "../http/context.ts";
import { HttpProblem, NotFoundError } from "../http/errors.ts";
import { createRouter } from "../http/router.ts";

/**
 * The HLS stream of an audio book while it renders (written by the audio book worker's `stream.ts`
 * under `streams/audiobook/<id>/`: `index.m3u8` and `part-<chunk>-<segment>.ts`; both build the keys
 * with @voiceloc/blobs' `audioBookStreamKey`).
 *
 * The record's `stream_url` is the playlist's signed download link,
 * `/v1/files/streams/audiobook/<id>/index.m3u8?expires=…&signature=…` (1 hour, like `localized_file`).
 * The playlist names its parts by relative names; it is served with the playlist's own `expires` and
 * `signature` added to each, and a part is served only with a valid signature of ITS book's playlist
 * key: a link opens one book's stream and nothing else (the id is part of the signed key).
 */
/** The signed files' path of a book's stream folder (`/v1/files/streams/audiobook/`). */
const STREAMS_PATH = `${SIGNED_FILES_PATH}${AUDIO_BOOK_STREAMS_PREFIX}`;
const STREAM_PATH = new RegExp(`^${STREAMS_PATH}([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/([^/]+)$`);
const PART_NAME = AUDIO_BOOK_STREAM_PART;
const PLAYLIST = AUDIO_BOOK_STREAM_PLAYLIST;

/** The blob key of an audio book's playlist (the key its stream links are signed for). */
export const audioBookStreamKey = (id: string) => streamKey(id);

/** Progress at which the worker has spoken a first chunk (its speech band starts at 20). */
const SPEAKING_FROM = 20;

/**
 * The record's `stream_url`: from the moment its speech began (a first part is spoken a few seconds
 * later; until then the playlist lists no part) and after completion; null before, and for a failed book.
 */
export function audioBookStreamUrl(
  doc: { id: string; task_status: string; task_progress: number },
  signer: { sign(key: string): string },
): string | null {
  const live = doc.task_status === "processing" && doc.task_progress > SPEAKING_FROM;
  if (!live && doc.task_status !== "completed") return null;
  return signer.sign(audioBookStreamKey(doc.id));
}

/** An open playlist before any part is ready: players load it again until one is listed. */
const EMPTY_PLAYLIST = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:11\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXT-X-MEDIA-SEQUENCE:0\n";

async function readText(blobs: BlobStore, key: string): Promise<string | undefined> {
  try {
    const stream = await blobs.createReadStream(key);
    const chunks: Buffer[] = [];
    for await (const piece of stream) chunks.push(piece as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  } catch (error) {
    if (error instanceof BlobNotFoundError) return undefined;
    throw error;
  }
}

/** `GET|HEAD /v1/files/streams/audiobook/<id>/<index.m3u8 | part>`: mount before the signed file downloads. */
export function streamRoutes(blobs: BlobStore, secret: SigningSecrets): GatewayApp {
  const app = createRouter();
  app.on(["GET", "HEAD"], `${STREAMS_PATH}*`, async (c, next) => {
    const match = STREAM_PATH.exec(new URL(c.req.url).pathname);
    if (match === null) return next();
    const [, id, name] = match as unknown as [string, string, string];
    if (name !== PLAYLIST && !PART_NAME.test(name)) throw new NotFoundError("File not found");
    const expires = c.req.query("expires");
    const signature = c.req.query("signature");
    const verdict = verifyBlobSignature({ key: audioBookStreamKey(id), expires, signature, secret });
    if (!verdict.ok) {
      throw new HttpProblem(
        403,
        "forbidden",
        verdict.reason === "expired" ? "This stream link has expired; read the audio book again for a fresh stream_url" : "This stream link is not valid",
      );
    }
    const key = streamKey(id, name);
    if (name === PLAYLIST) {
      const stored = await readText(blobs, key);
      const query = `?expires=${encodeURIComponent(expires ?? "")}&signature=${encodeURIComponent(signature ?? "")}`;
      const body = (stored ?? EMPTY_PLAYLIST)
        .split("\n")
        .map((line) => (PART_NAME.test(line.trim()) ? `${line.trim()}${query}` : line))
        .join("\n");
      const headers = { "Content-Type": "application/vnd.apple.mpegurl", "Cache-Control": "no-store" };
      if (c.req.method === "HEAD") return c.body(null, 200, headers);
      return c.body(body, 200, headers);
    }
    let stat;
    try {
      stat = await blobs.stat(key);
    } catch (error) {
      if (error instanceof BlobNotFoundError) throw new NotFoundError("File not found");
      throw error;
    }
    const headers = { "Content-Type": "video/mp2t", "Content-Length": String(stat.size), "Cache-Control": "private, max-age=3600" };
    if (c.req.method === "HEAD") return c.body(null, 200, headers);
    const stream = await blobs.createReadStream(key);
    return c.body(Readable.toWeb(stream) as ReadableStream, 200, headers);
  });
  return app;
}
