/**
 * A finished audio book's cover changed by `PATCH /v1/audio_books/{id}`: the audio book service
 * re-wraps the stored file with the new picture over the bus (`audiobook.cover`; no speech is made
 * again), while the request waits. A book still rendering takes the new cover when it completes: the
 * PATCH marks the record (`cover_pending`) and the gateway that projects the completion asks for the
 * re-wrap then (`coverOnCompletion`); a cover that cannot be embedded then is a `warnings` entry.
 */
import { NoRespondersError, RequestTimeoutError, createCatalogBus, type Bus, type ReplyErrorCode } from "@voiceloc/bus";
import { BUS_CATALOG, type AudioBookCoverReply, type BusCatalogue } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import { HttpProblem, ServiceUnavailableError, ValueError422 } from "../http/errors.ts";
import type { RecordChange } from "../mesh/tasks.ts";
import type { AudioBookDoc } from "./kinds.ts";
import type { TaskRepository } from "./repository.ts";

export interface CoverRequest {
  taskId: string;
  accountId: string;
  resultKey: string;
  /** The cover's URL as the client sent it; null removes the picture. */
  cover: string | null;
  requestId: string;
}

/** Re-wraps finished books with a new cover at the audio book service. */
export interface BookCovers {
  /** The book re-wrapped; throws the HTTP answer of a refusal (422 at `audio_book_cover`, 502/503 for the server's trouble). */
  rewrap(request: CoverRequest): Promise<AudioBookCoverReply>;
}

/** Every code `audiobook.cover` may answer with: its refusals and the bus's system codes. */
export type CoverReplyCode = ReplyErrorCode<BusCatalogue, "audiobook.cover">;

const LOC = ["body", "audio_book_cover"];

/**
 * The HTTP answer to each code (a new code fails to compile until it is mapped here): the cover's
 * problems are 422s at `audio_book_cover` in the service's plain words; the rest is the server's (502).
 * The book keeps its file and its record its cover either way.
 */
export const COVER_ANSWERS: Record<CoverReplyCode, (failure: { message: string }, cover: string | null) => HttpProblem> = {
  cover_not_available: (failure, cover) => new ValueError422(LOC, failure.message, cover),
  cover_unusable: (failure, cover) => new ValueError422(LOC, failure.message, cover),
  book_not_available: () => new HttpProblem(502, "cover_failed", "The cover was not changed: the audio book's file is no longer stored."),
  rewrap_failed: () => new HttpProblem(502, "cover_failed", "The cover was not changed: the audio book file could not be written with it. The book keeps its file; retry later."),
  invalid_request: () =>
    new HttpProblem(502, "cover_failed", "The cover was not changed: the audio book service did not accept the request (its version differs from the gateway's)."),
  internal: () => new HttpProblem(502, "cover_failed", "The cover was not changed: the audio book service failed. The book keeps its file; retry later."),
};

/** Finished books re-wrapped by the audio book service over the bus. */
export function busBookCovers(bus: Bus): BookCovers {
  const catalog = createCatalogBus(bus, BUS_CATALOG);
  const unavailable = (error: unknown): never => {
    if (error instanceof NoRespondersError) {
      throw new ServiceUnavailableError("The cover was not changed: no audio book service is running to write the book file again. Retry shortly.", 5);
    }
    if (error instanceof RequestTimeoutError) {
      throw new ServiceUnavailableError("The cover was not changed: the audio book service did not answer in time. Retry shortly.", 5);
    }
    throw error;
  };
  return {
    async rewrap(request) {
      const result = await catalog
        .request("audiobook.cover", {
          task_id: request.taskId,
          account_id: request.accountId,
          result_key: request.resultKey,
          cover: request.cover,
          request_id: request.requestId,
        })
        .catch(unavailable);
      if (!result.ok) throw COVER_ANSWERS[result.code](result, request.cover);
      return result.reply;
    },
  };
}

/** The warnings the book's own cover left (the pipeline's "The cover was not embedded: …"), gone once a cover is embedded or removed. */
export function withoutCoverWarnings(warnings: readonly string[] | undefined): string[] {
  return (warnings ?? []).filter((w) => !/^The (new )?cover\b/u.test(w));
}

/**
 * Applies a cover changed while the book was rendering, to the finished book: re-wrapped with the
 * record's `audio_book_cover`; what cannot be done is a `warnings` entry in plain words (the book
 * keeps the file it was finished with). Never throws.
 */
export async function applyPendingCover(
  deps: { repo: TaskRepository<AudioBookDoc>; covers: BookCovers; logger: Logger; now: () => Date },
  doc: AudioBookDoc,
  requestId: string,
): Promise<void> {
  if (doc.task_status !== "completed" || doc.result_key === null || doc.cover_pending !== true) return;
  const log = deps.logger.child({ taskId: doc.id });
  let warnings: string[];
  try {
    await deps.covers.rewrap({ taskId: doc.id, accountId: doc.account_id, resultKey: doc.result_key, cover: doc.audio_book_cover, requestId });
    warnings = withoutCoverWarnings(doc.warnings);
    log.info({ cover: doc.audio_book_cover === null ? "removed" : "replaced" }, "the cover changed while the book was rendering is in its file");
  } catch (error) {
    const detail = error instanceof ValueError422 ? error.message : error instanceof HttpProblem ? error.message : "the audio book service failed";
    if (!(error instanceof HttpProblem)) log.error({ err: error }, "the cover changed while the book was rendering could not be applied");
    else log.info({ detail }, "the cover changed while the book was rendering was not embedded");
    const words = detail.replace(/^The cover was not changed: /u, "").replace(/\s+$/u, "");
    warnings = [...withoutCoverWarnings(doc.warnings), `The new cover was not embedded: ${words.charAt(0).toUpperCase()}${words.slice(1)}`];
  }
  await deps.repo.updateOwned(doc.account_id, doc.id, { cover_pending: false, warnings, date_updated: deps.now().toISOString() } as Partial<AudioBookDoc>);
}

/**
 * The mesh listener: when this process projects an audio book completing with a cover changed while it
 * rendered, the book is re-wrapped with it (in the background: listeners must not block).
 */
export function coverOnCompletion(deps: { repo: TaskRepository<AudioBookDoc>; covers: BookCovers; logger: Logger; now?: () => Date }): (change: RecordChange) => void {
  const now = deps.now ?? (() => new Date());
  return (change) => {
    if (change.kind !== "audiobook" || !change.finishedNow) return;
    const doc = change.record as AudioBookDoc;
    if (doc.task_status !== "completed" || doc.cover_pending !== true) return;
    void applyPendingCover({ repo: deps.repo, covers: deps.covers, logger: deps.logger, now }, doc, `completion:${doc.id}`).catch((error: unknown) =>
      deps.logger.error({ err: error, taskId: doc.id }, "the cover changed while the book was rendering could not be applied"),
    );
  };
}
