/**
 * Reading what an outside service answers without trusting its size: a body longer than the bound is
 * cancelled as soon as it is known to be (by its Content-Length, or while it streams), never buffered.
 */
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { SpeechServiceError } from "./errors.ts";
import { readWavInfo, repairWavSizes, type WavInfo } from "./wav.ts";

/** The body as UTF-8 text; undefined when it is (or says it is) longer than `limit` bytes; "" when there is none. */
export async function readBoundedText(response: Response, limit: number): Promise<string | undefined> {
  if (response.body === null) return "";
  if (Number(response.headers.get("content-length") ?? "0") > limit) {
    await response.body.cancel().catch(() => undefined);
    return undefined;
  }
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * A speech service's WAV answer streamed to `wavPath` under `maxBytes` (by its Content-Length, then while
 * it streams), checked to be WAV with samples, its sizes repaired; anything else is a bad response of
 * `who` ("The speech service at …"), and the file is removed. `failed` words a broken transfer.
 */
export async function saveWavAnswer(
  response: Response,
  options: { wavPath: string; maxBytes: number; who: string; signal: AbortSignal; failed: (error: unknown) => Error },
): Promise<{ info: WavInfo; bytes: number }> {
  const { wavPath, maxBytes, who } = options;
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > maxBytes || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    throw new SpeechServiceError("SPEECH_SERVICE_BAD_RESPONSE", `${who} sent ${response.body ? "too much" : "no"} audio.`);
  }
  let bytes = 0;
  const limit = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      if (bytes > maxBytes) done(new SpeechServiceError("SPEECH_SERVICE_BAD_RESPONSE", `${who} sent too much audio.`));
      else done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), limit, createWriteStream(wavPath), { signal: options.signal });
  } catch (error) {
    await rm(wavPath, { force: true });
    throw options.failed(error);
  }
  const info = await readWavInfo(wavPath);
  if (!info || info.dataBytes === 0) {
    await rm(wavPath, { force: true });
    throw new SpeechServiceError("SPEECH_SERVICE_BAD_RESPONSE", `${who} answered with something that is not WAV audio.`);
  }
  await repairWavSizes(wavPath, info);
  return { info, bytes };
}
