/**
 * `audiobook.cover` (request/reply): a finished book's file re-wrapped with a new cover, or without
 * one. The cover is fetched under the requesting account's rights (the rules the book's own file is
 * fetched by: MEDIA_ROOT paths, SSRF-guarded http(s), `upload:<id>`), bounded in bytes while it is
 * read, then checked (`checkCover`: JPEG or PNG sniffed from its bytes, its picture decoded under the
 * pixel limit). The book's audio packets, chapters and tags are copied unchanged (`rewrapCover`): no
 * speech is made again, and the file replaces the old one under the same key (atomically).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isBlobNotFoundError, type BlobStore } from "@voiceloc/blobs";
import type { AudioBookCoverErrorCode, AudioBookCoverReply, AudioBookCoverRequest } from "@voiceloc/contracts";
import { fetchToFile, FetchRefusedError } from "@voiceloc/fetch";
import type { Logger } from "@voiceloc/log";
import { DEFAULT_MAX_COVER_BYTES, MediaError, type MediaToolkit } from "@voiceloc/media";
import { classifyFailure } from "@voiceloc/worker";
import type { AudioBookFetchOptions } from "./pipeline.ts";

/** The longest one re-wrap may take (fetch, check, copy, store): below the catalogue's 120 s request timeout. */
export const COVER_REWRAP_TIMEOUT_MS = 100_000;

export interface CoverDeps {
  blobs: BlobStore;
  media: Pick<MediaToolkit, "rewrapCover" | "checkCover">;
  fetch: AudioBookFetchOptions;
  /** Parent of the per-request work dirs. Default the OS temp dir. */
  workRoot?: string | undefined;
}

export type CoverOutcome = { ok: true; reply: AudioBookCoverReply } | { ok: false; code: AudioBookCoverErrorCode; message: string };

function lowerFirst(text: string): string {
  return text.length > 1 && /^[A-Z][a-z]/.test(text) ? `${text[0]?.toLowerCase() ?? ""}${text.slice(1)}` : text;
}

function contentTypeOf(key: string): string {
  return key.endsWith(".m4b") ? "audio/mp4" : "audio/mpeg";
}

/** Re-wraps the book of `request.result_key` with the cover it names (null: none). */
export async function rewrapBookCover(deps: CoverDeps, request: AudioBookCoverRequest, log: Logger): Promise<CoverOutcome> {
  const work = await mkdtemp(join(deps.workRoot ?? tmpdir(), "voiceloc-cover-"));
  const signal = AbortSignal.timeout(COVER_REWRAP_TIMEOUT_MS);
  const started = performance.now();
  try {
    let coverPath: string | null = null;
    if (request.cover !== null) {
      const fetchOptions = deps.fetch;
      try {
        const fetched = await fetchToFile(request.cover, join(work, "cover"), {
          mediaRoot: fetchOptions.mediaRoot,
          ...(fetchOptions.mediaRootScope === undefined ? {} : { mediaRootScope: fetchOptions.mediaRootScope }),
          owner: request.account_id,
          blobs: deps.blobs,
          maxBytes: DEFAULT_MAX_COVER_BYTES,
          ...(fetchOptions.allowPrivateHosts === undefined ? {} : { allowPrivateHosts: fetchOptions.allowPrivateHosts }),
          ...(fetchOptions.timeoutMs === undefined ? {} : { timeoutMs: Math.min(fetchOptions.timeoutMs, COVER_REWRAP_TIMEOUT_MS) }),
          ...(fetchOptions.s3 === undefined ? {} : { s3: fetchOptions.s3 }),
          ...(fetchOptions.gs === undefined ? {} : { gs: fetchOptions.gs }),
          signal,
          logger: log,
        });
        coverPath = fetched.path;
      } catch (error) {
        if (error instanceof FetchRefusedError) {
          log.info({ code: error.code }, "the new cover cannot be fetched");
          return { ok: false, code: "cover_not_available", message: `The cover cannot be fetched: ${lowerFirst(error.message)}` };
        }
        if (signal.aborted) return { ok: false, code: "cover_not_available", message: "The cover cannot be fetched: it took too long." };
        throw error;
      }
      try {
        await deps.media.checkCover(coverPath, { signal });
      } catch (error) {
        if (error instanceof MediaError && classifyFailure(error, "input").class === "input") {
          return { ok: false, code: "cover_unusable", message: error.message };
        }
        throw error;
      }
    }
    let bookPath: string;
    try {
      bookPath = await deps.blobs.toLocalFile(request.result_key, join(work, "book"));
    } catch (error) {
      if (isBlobNotFoundError(error)) {
        log.warn({ key: request.result_key }, "the finished book's file is not in the blob store");
        return { ok: false, code: "book_not_available", message: "The audio book's file is no longer stored." };
      }
      throw error;
    }
    const outPath = join(work, `rewrapped.${request.result_key.endsWith(".m4b") ? "m4b" : "mp3"}`);
    let written;
    try {
      written = await deps.media.rewrapCover({ input: bookPath, outPath, cover: coverPath, signal });
    } catch (error) {
      if (error instanceof MediaError) {
        const failure = classifyFailure(error, "input");
        log.warn({ err: error }, "the book could not be re-wrapped with its new cover");
        return failure.class === "input" && request.cover !== null
          ? { ok: false, code: "cover_unusable", message: error.message }
          : { ok: false, code: "rewrap_failed", message: "The audio book file could not be written with the new cover." };
      }
      throw error;
    }
    await deps.blobs.put(request.result_key, { path: outPath, move: true }, { contentType: contentTypeOf(request.result_key) });
    const cover = written.cover === null ? null : { type: written.cover.type, width: written.cover.width, height: written.cover.height, bytes: written.cover.bytes };
    log.info({ key: request.result_key, cover: cover?.type ?? null, ms: Math.round(performance.now() - started) }, "audio book cover replaced");
    return { ok: true, reply: { result_key: request.result_key, duration_seconds: written.durationSeconds, cover } };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
