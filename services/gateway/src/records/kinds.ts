/**
 * The one description of each kind of task record: where its API lives, what its record looks like
 * in the store and to a client, what the documents say about it, and how the dashboard names it. The
 * routes (`records/routes.ts`), the fast path (`fast-read.ts`), live progress (`sse.ts`), the
 * dashboard, webhook bodies and the sandbox's creation limit all derive from this table: a new kind
 * is its document type, one entry here and its creating route (tsc then names the maps that hold
 * every kind: the repositories `gateway.ts` opens and the readers of `read.ts`).
 */
import { AudioBookSchema, SubtitleJobSchema, VoiceStreamSchema, type AudioBookFormat, type ClonedVoiceWire, type Language, type LexiconWire, type OriginalAudioMode, type TaskKind } from "@voiceloc/contracts";
import type { z } from "@hono/zod-openapi";
import type { TaskDoc, TaskRepository } from "./repository.ts";
import { audioBookStreamUrl } from "./stream.ts";

export type { TaskKind } from "@voiceloc/contracts";

export interface AudioBookDoc extends TaskDoc {
  file: string;
  name: string;
  source_language: Language;
  target_language: Language;
  audio_book_cover: string | null;
  use_voice_clone: boolean;
  preset_voice_name: string | null;
  voice_clone_sample: string | null;
  /** The caller's clone `preset_voice_name: "clone:<id>"` named, resolved at creation (the work message carries it); absent in older records. */
  clone?: ClonedVoiceWire | null;
  /** What the book file is written as; absent in older records (mp3). */
  output_format?: AudioBookFormat;
  /** The finished book's chapters (from the completed event); absent until then. */
  chapters?: Array<{ title: string; start_seconds: number; end_seconds: number }> | null;
  /** What went wrong without failing the book (a cover not embedded); absent: none. */
  warnings?: string[];
  /** The caller's pronunciation lexicons `lexicons` named, resolved at creation (the work message carries them). */
  lexicons?: LexiconWire[];
  /** `audio_book_cover` changed while the book was rendering: the finished file is re-wrapped with it (records/book-covers.ts). */
  cover_pending?: boolean;
}

export interface VoiceStreamDoc extends TaskDoc {
  file: string;
  source_language: Language;
  target_language: Language;
  voice: string | null;
  /** The caller's clone `voice: "clone:<id>"` named, resolved at creation; absent in older records. */
  clone?: ClonedVoiceWire | null;
  /** Speak in a clone made for this task: of `voice_clone_sample`, else of the input's own speech. */
  use_voice_clone?: boolean;
  voice_clone_sample?: string | null;
  /** The input's own sound in the dubbed track; absent in older records (`drop`). */
  original_audio?: OriginalAudioMode;
  /** "auto" or "one"; absent in older records (auto). */
  speakers?: "auto" | "one";
  /** Set by the completing event; absent before. */
  timing?: { lines_sped_up: number; largest_factor: number } | null;
  /** The caller's pronunciation lexicons `lexicons` named, resolved at creation (the work message carries them). */
  lexicons?: LexiconWire[];
}

export interface SubtitleDoc extends TaskDoc {
  file: string;
  source_language: Language;
  target_language: Language;
  mode: "burn_in" | "side_file";
  subtitle_format: "srt" | "vtt";
  /** Blob key of the subtitle file, signed on read. */
  subtitle_key: string | null;
}

/** The stored document of each kind. */
export interface KindDocs {
  audiobook: AudioBookDoc;
  "voice-stream": VoiceStreamDoc;
  subtitle: SubtitleDoc;
}

/** Turns blob keys into signed download URLs when a record is read. */
export interface UrlSigner {
  sign(key: string): string;
}

/** Publishes a stored record's work to the bus (or nowhere, while no workers exist). */
export interface TaskDispatcher {
  dispatch(kind: TaskKind, doc: TaskDoc): Promise<void>;
}

/** What the OpenAPI document says about one read operation of a kind. */
interface ReadOperation {
  operationId: string;
  summary: string;
  description: string;
  /** The 200 response's description. */
  answer: string;
}

/** One kind of task record. */
export interface TaskKindSpec<T extends TaskDoc, V> {
  kind: TaskKind;
  /** The store collection of its records. */
  collection: string;
  /** The list's path, where records are also created (`POST`). */
  listPath: string;
  /** The record's path up to and including the slash before its id. */
  recordPrefix: string;
  /** The record route's id parameter, and its description. */
  idParam: string;
  idDescription: string;
  /** What a client reads (the record's schema); `present` makes it from the stored document. */
  schema: z.ZodType<V>;
  present(doc: T, signer: UrlSigner): V;
  /** The 404's detail for an unknown or another account's id. */
  notFound: string;
  /** The OpenAPI tag of its operations, and the tag's description. */
  tag: string;
  tagDescription: string;
  list: ReadOperation & { linkDescription: string };
  get: ReadOperation;
  /** Its pages in the dashboard: `/dashboard/<slug>`, their titles and the result's player. */
  dashboard: { slug: string; title: string; singular: string; player: "audio" | "video" };
}

function taskView(doc: TaskDoc, signer: UrlSigner) {
  return {
    task_status: doc.task_status,
    task_progress: doc.task_progress,
    task_error: doc.task_error,
    localized_file: doc.result_key ? signer.sign(doc.result_key) : null,
    date_created: doc.date_created,
    date_updated: doc.date_updated,
  };
}

const NOT_FOUND_READ = "Another account's id is a 404, as an unknown one.";

/** Audio books (its typed presenter answers the PATCH). */
export const AUDIO_BOOKS = {
    kind: "audiobook" as const,
    collection: "audio_books",
    listPath: "/v1/audio_books/",
    recordPrefix: "/v1/audio_books/",
    idParam: "audio_book_id",
    idDescription: "The audio book's id (a UUID), as returned when it was created.",
    schema: AudioBookSchema,
    present: (doc, signer) => ({
      id: doc.id,
      file: doc.file,
      name: doc.name,
      source_language: doc.source_language,
      target_language: doc.target_language,
      audio_book_cover: doc.audio_book_cover,
      output_format: doc.output_format ?? "mp3",
      chapters: doc.chapters ?? null,
      warnings: doc.warnings ?? [],
      ...taskView(doc, signer),
      stream_url: audioBookStreamUrl(doc, signer),
    }),
    notFound: "Audio book not found",
    tag: "Audio books",
    tagDescription: "Text files turned into audio books in another language.",
    list: {
      operationId: "list_audio_books",
      summary: "List Audio Books",
      description:
        "The caller's audio books, newest first. The body is a JSON array; when there are more, the `Link` header carries the next page (`<…?cursor=…>; rel=\"next\"`).",
      answer: "A page of audio books.",
      linkDescription: "Next page, RFC 8288: `<url>; rel=\"next\"`.",
    },
    get: {
      operationId: "get_audio_book",
      summary: "Get Audio Book",
      description: `The audio book as it is now: \`task_status\` and \`task_progress\` while it is processed, then \`localized_file\` (a signed link to the MP3 or M4B with its chapters, tags and cover, valid for 1 hour, renewed on every read) once completed, or \`task_error\` when it failed. ${NOT_FOUND_READ}`,
      answer: "The audio book.",
    },
    dashboard: { slug: "audio-books", title: "Audio books", singular: "Audio book", player: "audio" as const },
} satisfies TaskKindSpec<AudioBookDoc, unknown>;

const VOICE_STREAMS = {
    kind: "voice-stream" as const,
    collection: "voice_streams",
    listPath: "/v1/voices/streams",
    recordPrefix: "/v1/voices/streams/",
    idParam: "voice_id",
    idDescription: "The voice stream's id (a UUID), as returned when it was created.",
    schema: VoiceStreamSchema,
    present: (doc, signer) => ({
      id: doc.id,
      file: doc.file,
      source_language: doc.source_language,
      target_language: doc.target_language,
      original_audio: doc.original_audio ?? "drop",
      speakers: doc.speakers ?? "auto",
      timing: doc.timing ?? null,
      ...taskView(doc, signer),
    }),
    notFound: "Voice stream not found",
    tag: "Voice streams",
    tagDescription: "Speech turned into translated speech.",
    list: {
      operationId: "list_audio_streams",
      summary: "List Audio Streams",
      description: "The voice streams performed by the caller, newest first, paged like the audio books.",
      answer: "A page of voice streams.",
      linkDescription: "Next page, RFC 8288.",
    },
    get: {
      operationId: "get_audio_stream",
      summary: "Get Audio Stream",
      description: `The voice stream as it is now: \`task_status\` and \`task_progress\` while it is processed, then \`localized_file\` (a signed link to the translated speech: an MP3 for audio, the dubbed video for a video; valid for 1 hour, renewed on every read) once completed, or \`task_error\` when it failed. ${NOT_FOUND_READ}`,
      answer: "The voice stream.",
    },
    dashboard: { slug: "voice-streams", title: "Voice streams", singular: "Voice stream", player: "audio" as const },
} satisfies TaskKindSpec<VoiceStreamDoc, unknown>;

const SUBTITLES = {
    kind: "subtitle" as const,
    collection: "subtitle_jobs",
    listPath: "/v1/videos/subtitle",
    recordPrefix: "/v1/videos/subtitle/",
    idParam: "subtitle_id",
    idDescription: "The subtitle job's id (a UUID), as returned when it was created.",
    schema: SubtitleJobSchema,
    present: (doc, signer) => ({
      id: doc.id,
      file: doc.file,
      source_language: doc.source_language,
      target_language: doc.target_language,
      mode: doc.mode,
      subtitle_format: doc.subtitle_format,
      ...taskView(doc, signer),
      subtitle_file: doc.subtitle_key ? signer.sign(doc.subtitle_key) : null,
    }),
    notFound: "Subtitle job not found",
    tag: "Video",
    tagDescription: "Transcribed, translated subtitles for videos.",
    list: {
      operationId: "list_subtitle_jobs",
      summary: "List Subtitle Jobs (extension)",
      description:
        "Extension to the contract: the caller's subtitle jobs, newest first, paged like the audio books (`limit`, `cursor`, the `Link` header); `task_status` filters.",
      answer: "A page of subtitle jobs, newest first.",
      linkDescription: "Next page, RFC 8288.",
    },
    get: {
      operationId: "get_subtitle_job",
      summary: "Get Subtitle Job (extension)",
      description: `Extension to the contract: the subtitle job as it is now. Once completed, \`subtitle_file\` links to the SRT or WebVTT file and, with \`mode: burn_in\`, \`localized_file\` to the video with the subtitles rendered in (signed links valid for 1 hour, renewed on every read); \`task_error\` says why a failed job failed. ${NOT_FOUND_READ}`,
      answer: "The subtitle job.",
    },
    dashboard: { slug: "subtitles", title: "Subtitle jobs", singular: "Subtitle job", player: "video" as const },
} satisfies TaskKindSpec<SubtitleDoc, unknown>;

/** Every kind of task record, by kind: the table. */
export type KindTable = { [K in TaskKind]: TaskKindSpec<KindDocs[K], unknown> };
export const TASK_KINDS: KindTable = { audiobook: AUDIO_BOOKS, "voice-stream": VOICE_STREAMS, subtitle: SUBTITLES };

/** Every kind, in the table's order (routes are registered, and documented, in this order). */
export const KIND_LIST = Object.values(TASK_KINDS);

/** The repository of each kind's records. */
export type TaskRecords = { [K in TaskKind]: TaskRepository<KindDocs[K]> };

export function newTaskFields(accountId: string, now: Date): Omit<TaskDoc, "id"> {
  const iso = now.toISOString();
  return {
    account_id: accountId,
    task_status: "queued",
    task_progress: 0,
    task_error: null,
    result_key: null,
    seq: 0,
    published: false,
    date_created: iso,
    date_updated: iso,
  };
}
