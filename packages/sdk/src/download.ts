/** Saves a result URL to a file: streamed to `<path>.part`, renamed into place once complete. */
import { createWriteStream } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeWebStream } from "node:stream/web";
import { ConnectionError, describeCause, errorFromFetchResponse } from "./errors.ts";

export interface DownloadResult {
  path: string;
  bytes: number;
  contentType: string | null;
}

export async function download(fetchImpl: typeof fetch, url: string, path: string, options: { signal?: AbortSignal } = {}): Promise<DownloadResult> {
  let response: Response;
  try {
    response = await fetchImpl(url, options.signal ? { signal: options.signal } : {});
  } catch (error) {
    if (error instanceof Error && error.name === "AbortError") throw error;
    throw new ConnectionError(`could not download ${new URL(url).pathname}: ${describeCause(error)}`, { cause: error });
  }
  if (!response.ok || !response.body) throw await errorFromFetchResponse(response, "GET");
  await mkdir(dirname(path), { recursive: true });
  const part = `${path}.part`;
  let bytes = 0;
  const source = Readable.fromWeb(response.body as unknown as NodeWebStream<Uint8Array>);
  source.on("data", (chunk: Buffer) => {
    bytes += chunk.length;
  });
  try {
    await pipeline(source, createWriteStream(part));
    await rename(part, path);
  } catch (error) {
    await rm(part, { force: true });
    if (error instanceof Error && error.name === "AbortError") throw error;
    throw new ConnectionError(`download of ${new URL(url).pathname} broke off: ${describeCause(error)}`, { cause: error });
  }
  return { path, bytes, contentType: response.headers.get("content-type") };
}
