/**
 * `audiobook.cover`: a finished audio book's file re-wrapped with a new cover (or none), asked by the
 * gateway when a client changes `audio_book_cover` of a completed book (or when a book whose cover
 * changed while it was rendering completes). Served by the audio book service: it fetches the cover
 * under the account's rights (the rules task inputs are fetched by), checks it (JPEG or PNG, sniffed,
 * bounded in bytes and pixels), copies the book's audio and chapters unchanged behind the new picture
 * and stores the file under the same key. No speech is made again.
 */
import { z } from "zod";

export const AUDIOBOOK_COVER_SUBJECT = "svc.audiobook.cover";

export const AudioBookCoverRequestSchema = z.object({
  task_id: z.string().uuid(),
  account_id: z.string().min(1),
  /** The blob key of the finished book (`result_key` of its record). */
  result_key: z.string().min(1),
  /** A file reference (URL, MEDIA_ROOT path, `upload:<id>`) fetched under the account's rights; null removes the cover. */
  cover: z.string().min(1).nullable(),
  request_id: z.string(),
});
export type AudioBookCoverRequest = z.infer<typeof AudioBookCoverRequestSchema>;

export const AudioBookCoverReplySchema = z.object({
  /** The key the re-wrapped book is stored under (the same key). */
  result_key: z.string().min(1),
  /** The audio's length, unchanged by the re-wrap. */
  duration_seconds: z.number().nonnegative(),
  /** The picture embedded now; null: the book has no cover. */
  cover: z.object({ type: z.enum(["jpeg", "png"]), width: z.number().int().positive(), height: z.number().int().positive(), bytes: z.number().int().positive() }).nullable(),
});
export type AudioBookCoverReply = z.infer<typeof AudioBookCoverReplySchema>;

/**
 * Refusals of `audiobook.cover`. The first two are the client's doing (the gateway answers 422 at
 * `audio_book_cover` in the service's plain words); the others are the server's (the book's file is
 * gone, or ffmpeg could not write it).
 */
export const AUDIOBOOK_COVER_ERROR_CODES = [
  /** The cover cannot be fetched (unknown upload, unreachable or private URL, path outside the media root, too large). */
  "cover_not_available",
  /** Not a JPEG or PNG, empty, or a picture over the pixel limit. */
  "cover_unusable",
  /** The finished book's file is not in the blob store any more. */
  "book_not_available",
  /** The book file could not be written again. */
  "rewrap_failed",
] as const;
export type AudioBookCoverErrorCode = (typeof AUDIOBOOK_COVER_ERROR_CODES)[number];
