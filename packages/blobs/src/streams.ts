import type { BlobStore } from "./types.ts";

/**
 * Where an audio book's HLS stream lives: `streams/audiobook/<task id>/`, holding the playlist
 * `index.m3u8` and the parts `part-<chunk>-<segment>.ts` (and, while the book renders, the worker's
 * notes `chunk-<n>.json`). The audio book worker writes them, the gateway serves the playlist and the
 * parts (signed for the playlist key); both build every key here, so they cannot drift apart.
 */
export const AUDIO_BOOK_STREAMS_PREFIX = "streams/audiobook/";
/** The playlist's name in its book's folder. */
export const AUDIO_BOOK_STREAM_PLAYLIST = "index.m3u8";
/** The names a stream's parts have (the gateway serves nothing else of the folder). */
export const AUDIO_BOOK_STREAM_PART = /^part-\d{5}-\d{3}\.ts$/;

/** The blob folder of one book's stream (ends with a slash: a list prefix that matches no other book). */
export function audioBookStreamPrefix(taskId: string): string {
  return `${AUDIO_BOOK_STREAMS_PREFIX}${taskId}/`;
}

/** The blob key of a file of one book's stream: its playlist by default (the key its links are signed for). */
export function audioBookStreamKey(taskId: string, name: string = AUDIO_BOOK_STREAM_PLAYLIST): string {
  return `${audioBookStreamPrefix(taskId)}${name}`;
}

/**
 * Deletes every blob of one book's stream (playlist, parts, notes); resolves to the number deleted.
 * What removes a book's result removes its stream with it: the stream lives exactly as long as the result.
 */
export async function deleteAudioBookStream(blobs: BlobStore, taskId: string): Promise<number> {
  let deleted = 0;
  for (const key of await blobs.list(audioBookStreamPrefix(taskId))) if (await blobs.delete(key)) deleted++;
  return deleted;
}
