/**
 * What the two outside cloning engines (ElevenLabs, an OpenAI-compatible voice library) share: the
 * service root, one HTTP call with a time limit and the caller's cancellation, the plain-words errors of
 * a service that cannot be reached or did not answer in time, and audio written to disk with a size cap.
 * The API key and the sample are never logged: only the status and the service's own error detail are.
 */
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { SpeechServiceError, SynthesisError, TtsConfigError } from "../errors.ts";

/** A service root without a trailing slash or "/v1" (both accepted in settings). */
export function serviceRoot(baseUrl: string, what: string): { root: string; host: string } {
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch (cause) {
    throw new TtsConfigError(`The ${what} address "${baseUrl}" is not a valid URL.`, { cause });
  }
  if (base.protocol !== "http:" && base.protocol !== "https:") throw new TtsConfigError(`The ${what} address must start with http:// or https://.`);
  return { root: base.href.replace(/\/+$/, "").replace(/\/v1$/, ""), host: base.host };
}

export interface RemoteCall {
  /** Time limit of the whole call, the download of the answer included. */
  signal: AbortSignal;
  /** The error for a fetch or download that failed: cancelled, timed out, or the service unreachable. */
  failed(error: unknown): Error;
}

/**
 * The signal and failure mapping of one call: `service` names it in messages ("ElevenLabs", "the voice
 * library at host:port"), `timeoutMs` bounds it, `outer` is the caller's cancellation.
 */
export function remoteCall(service: string, timeoutMs: number, outer: AbortSignal | undefined): RemoteCall {
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = outer ? AbortSignal.any([outer, timeout]) : timeout;
  return {
    signal,
    failed(error: unknown): Error {
      if (error instanceof SpeechServiceError || error instanceof SynthesisError) return error;
      if (outer?.aborted) return new SynthesisError("SYNTHESIS_CANCELLED", "The request to the voice cloning service was cancelled.", { cause: error });
      if (timeout.aborted) {
        return new SpeechServiceError("SPEECH_SERVICE_TIMEOUT", `${capitalize(service)} did not answer within ${Math.round(timeoutMs / 1000)} seconds.`, { cause: error });
      }
      return new SpeechServiceError("SPEECH_SERVICE_UNAVAILABLE", `${capitalize(service)} could not be reached.`, { cause: error });
    },
  };
}

export function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Seconds a 429/503 answer asks to wait (`Retry-After`: seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterSeconds(response: Response, now = Date.now()): number | undefined {
  const value = response.headers.get("retry-after")?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/** " It asks to wait N seconds before trying again." for a Retry-After, or "". */
export function waitHint(response: Response): string {
  const seconds = retryAfterSeconds(response);
  if (seconds === undefined) return "";
  return ` It asks to wait ${seconds} second${seconds === 1 ? "" : "s"} before trying again.`;
}

/** Reads an error answer's body (at most 64 KiB; never throws). */
export async function errorBody(response: Response): Promise<string> {
  try {
    const text = await response.text();
    return text.length > 65_536 ? text.slice(0, 65_536) : text;
  } catch {
    return "";
  }
}

/** Reads a JSON answer; undefined when it is not JSON (the caller says BAD_RESPONSE in its words). */
export async function jsonBody(response: Response, call: RemoteCall): Promise<unknown> {
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    throw call.failed(error);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Streams a response body to `path`, refusing more than `maxBytes` (the file is removed on any failure).
 * `prefix` is written first (a WAV header for raw PCM). Answers the bytes of the body.
 */
export async function bodyToFile(response: Response, path: string, maxBytes: number, call: RemoteCall, service: string, prefix?: Buffer): Promise<number> {
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > maxBytes || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    throw new SpeechServiceError("SPEECH_SERVICE_BAD_RESPONSE", `${capitalize(service)} sent ${response.body ? "too much" : "no"} audio.`);
  }
  let received = 0;
  const limit = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      received += chunk.length;
      if (received > maxBytes) done(new SpeechServiceError("SPEECH_SERVICE_BAD_RESPONSE", `${capitalize(service)} sent too much audio.`));
      else done(null, chunk);
    },
  });
  const out = createWriteStream(path);
  try {
    if (prefix) {
      await new Promise<void>((resolve, reject) => out.write(prefix, (error) => (error ? reject(error) : resolve())));
    }
    await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), limit, out, { signal: call.signal });
  } catch (error) {
    out.destroy();
    await rm(path, { force: true });
    throw call.failed(error);
  }
  return received;
}

/** Control characters removed, at most 300 characters; undefined when nothing is left. */
export function cleanDetail(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const clean = value.replace(/[\u0000-\u001F\u007F]+/g, " ").trim();
  return clean === "" ? undefined : clean.length > 300 ? `${clean.slice(0, 300)}…` : clean;
}
