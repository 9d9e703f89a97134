/**
 * Audio book files as players expect them: chapters, tags and a cover in an MP3 (ID3v2) or an M4B
 * (AAC in Apple's MP4), written by ffmpeg from an FFMETADATA file. The pure builders here (metadata
 * text, argument arrays, cover sniffing, chapter checks) touch nothing; `bookFileOperations` runs them.
 *
 * Decisions, measured with this package's ffmpeg (5.1) and ffprobe:
 * - MP3: ID3v2.3, not 2.4. Windows (Explorer, Media Player), many car and portable players and older
 *   iTunes read only 2.3; the CHAP/CTOC addendum is defined for both versions, and 2.3's one cost is
 *   text in UTF-16 instead of UTF-8, which every reader takes. ffmpeg's mp3 muxer writes one `CHAP`
 *   frame per chapter (element ids `ch0`, `ch1`, … with start and end in ms and a `TIT2` sub-frame)
 *   and one `CTOC` (`toc`, flags top-level + ordered) listing them; the cover is an `APIC` frame of
 *   type 3 (front cover) copied byte for byte. The speech is copied (`-c copy`), never re-encoded.
 * - M4B: the `ipod` muxer (Apple's MP4 flavour: codecs Apple devices play, iTunes `ilst` tags, the
 *   cover as `covr`) with major brand `M4B ` (`-brand`; ipod's own default is `M4A `, which files the
 *   book as music) and `stik` 2 (media type "Audiobook"), AAC-LC mono from ffmpeg's native encoder
 *   (64 kb/s by default), `+faststart` (the index first: a player can start over HTTP before the whole
 *   file is there). ffmpeg writes the chapters twice: a QuickTime text chapter track (what Apple Books
 *   and ffprobe read) and a Nero `chpl` atom (other players).
 * - At most 255 chapters: the `CTOC` entry count and the `chpl` count are one byte each (measured:
 *   ffmpeg writes 300 chapters as a CTOC claiming 44, and a chpl holding the first 255).
 * - Tags: `title` → TIT2/©nam, `album` → TALB/©alb, `artist` → TPE1/©ART, `narrator` → TCOM/©wrt
 *   (the composer field, where audio book taggers commonly put the narrator: neither ID3 nor iTunes tags have a narrator field ffmpeg writes), `genre`
 *   → TCON/©gen, `language` (ISO 639-2) → TLAN in an MP3 and the audio track's language in an M4B
 *   (MP4 has no book-wide language tag).
 * - Rewrapping a finished file keeps its timestamps (`-copyts`): an MP3's first frame starts 50 ms in
 *   (the decoder delay), and without it ffmpeg moves every chapter 50 ms earlier.
 */
import { open, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "@voiceloc/log";
import { AUDIO_CLIP_DEMUXERS, GLOBAL_ARGS, inputArgs, safePath } from "./args.ts";
import { MediaError, MediaRequestError } from "./errors.ts";
import type { DecodedFrameSize, MediaInfo } from "./probe.ts";
import { runProcess } from "./process.ts";
import type { FfmpegBinaries } from "./resolve.ts";
import { ffmpegResultError, withTempOutput, type FfmpegProgress, type FfmpegRunResult } from "./run.ts";

export const BOOK_FORMATS = ["mp3", "m4b"] as const;
export type BookFormat = (typeof BOOK_FORMATS)[number];

export function isBookFormat(value: unknown): value is BookFormat {
  return typeof value === "string" && (BOOK_FORMATS as readonly string[]).includes(value);
}

/** Most chapters one book file holds: the ID3 `CTOC` and the MP4 `chpl` count them in one byte. */
export const MAX_BOOK_CHAPTERS = 255;
/** Longer chapter titles are cut (with "…"): players show a line, and a heading of a page is no title. */
export const MAX_CHAPTER_TITLE_CHARACTERS = 500;
/** Longer tag values are cut (with "…"). */
export const MAX_TAG_CHARACTERS = 2000;
/** Default largest cover file, in bytes (10 MiB): a 3000×3000 JPEG is 1–4 MB. */
export const DEFAULT_MAX_COVER_BYTES = 10 * 1024 * 1024;
/** Default largest cover picture, in pixels (4096×4096); stores ask for 1400 to 3000 pixels a side. */
export const DEFAULT_MAX_COVER_PIXELS = 4096 * 4096;
/** How far past the end of the audio the last chapter may end (rounding of chunk lengths, encoder padding). */
export const CHAPTER_END_TOLERANCE_SECONDS = 1;
/** Default AAC bitrate of an M4B, in kbit/s (mono speech). */
export const DEFAULT_M4B_BITRATE_KBPS = 64;

/** Demuxers a finished book file is read with. */
export const BOOK_DEMUXERS: readonly string[] = ["mp3", "mov"];

export interface BookChapter {
  title: string;
  startSeconds: number;
  endSeconds: number;
}

/** Book-wide tags; every one is optional. */
export interface BookTags {
  /** The book's name (TIT2 / ©nam). */
  title?: string | undefined;
  /** TALB / ©alb. */
  album?: string | undefined;
  /** TPE1 / ©ART: what players show as the artist (the author, or the voice). */
  artist?: string | undefined;
  /** TCOM / ©wrt: the narrator (the voice), in the composer field, where audio book taggers commonly put it. */
  narrator?: string | undefined;
  /** ISO 639-2 code of three lowercase letters ("eng", "fra", "deu"). */
  language?: string | undefined;
  /** TCON / ©gen, e.g. "Audiobook". */
  genre?: string | undefined;
}

// ---------------------------------------------------------------------------------------------
// User text in FFMETADATA
// ---------------------------------------------------------------------------------------------

/**
 * User text as a tag can hold it: line breaks made `\n` (ffmpeg's FFMETADATA reader ends a value at a
 * bare carriage return), other control characters (NUL ends it too) dropped, cut to `maxCharacters`.
 */
export function cleanTagText(value: string, maxCharacters = MAX_TAG_CHARACTERS): string {
  const text = value.replace(/\r\n?/g, "\n").replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "");
  const chars = Array.from(text);
  return chars.length <= maxCharacters ? text : `${chars.slice(0, maxCharacters - 1).join("")}…`;
}

/** A value escaped for an FFMETADATA file: `=`, `;`, `#`, `\` and newline get a backslash before them. */
export function escapeFfmetadata(value: string): string {
  return value.replace(/[=;#\\\n]/g, (c) => `\\${c}`);
}

/** ISO 639-2 codes as tags take them: three lowercase letters. */
const ISO_639_2 = /^[a-z]{3}$/;

/** The tags checked and cleaned: text values cleaned, the language checked; empty values left out. */
export function checkBookTags(tags: BookTags = {}): BookTags {
  const out: BookTags = {};
  for (const key of ["title", "album", "artist", "narrator", "genre"] as const) {
    const value = tags[key];
    if (value === undefined) continue;
    if (typeof value !== "string") throw new MediaRequestError(`The book's ${key} must be text.`);
    const clean = cleanTagText(value).trim();
    if (clean !== "") out[key] = clean;
  }
  if (tags.language !== undefined) {
    if (typeof tags.language !== "string" || !ISO_639_2.test(tags.language)) {
      throw new MediaRequestError('The book\'s language must be an ISO 639-2 code of three lowercase letters, like "eng".');
    }
    out.language = tags.language;
  }
  return out;
}

/** A chapter's place in milliseconds, as the FFMETADATA file and the ID3 `CHAP` frame hold it. */
export interface ChapterMarks {
  title: string;
  startMs: number;
  endMs: number;
}

/**
 * The chapters checked: in order, not overlapping, each at least a millisecond long and titled (titles
 * cleaned like tags and cut at MAX_CHAPTER_TITLE_CHARACTERS), at most MAX_BOOK_CHAPTERS, and (with
 * `durationSeconds`) ending by the end of the audio, give or take CHAPTER_END_TOLERANCE_SECONDS.
 */
export function checkBookChapters(chapters: readonly BookChapter[], durationSeconds?: number): ChapterMarks[] {
  if (!Array.isArray(chapters)) throw new MediaRequestError("The chapters must be a list.");
  if (chapters.length > MAX_BOOK_CHAPTERS) {
    throw new MediaRequestError(
      `The book has ${chapters.length} chapters; a book file holds at most ${MAX_BOOK_CHAPTERS} (its table of contents counts them in one byte).`,
    );
  }
  let previousEnd = 0;
  return chapters.map((chapter, i) => {
    const n = i + 1;
    const { startSeconds, endSeconds } = chapter;
    if (!Number.isFinite(startSeconds) || startSeconds < 0 || !Number.isFinite(endSeconds)) {
      throw new MediaRequestError(`Chapter ${n} has an invalid start or end; both must be zero or more seconds.`);
    }
    const startMs = Math.round(startSeconds * 1000);
    const endMs = Math.round(endSeconds * 1000);
    if (endMs <= startMs) throw new MediaRequestError(`Chapter ${n} ends before it starts (${startSeconds} s to ${endSeconds} s).`);
    if (startMs < previousEnd) throw new MediaRequestError(`Chapter ${n} starts before chapter ${n - 1} ends; chapters must be in order and must not overlap.`);
    if (durationSeconds !== undefined && endSeconds > durationSeconds + CHAPTER_END_TOLERANCE_SECONDS) {
      throw new MediaRequestError(`Chapter ${n} ends at ${endSeconds} s, past the end of the audio (${durationSeconds.toFixed(2)} s).`);
    }
    previousEnd = endMs;
    const title = typeof chapter.title === "string" ? cleanTagText(chapter.title, MAX_CHAPTER_TITLE_CHARACTERS).trim() : "";
    if (title === "") throw new MediaRequestError(`Chapter ${n} has no title.`);
    return { title, startMs, endMs };
  });
}

/**
 * The FFMETADATA file of a book: its tags (all but the language, which each format places itself)
 * and its chapters in milliseconds, every value escaped. Takes what `checkBookTags` and
 * `checkBookChapters` answer.
 */
export function ffmetadataContent(spec: { tags: BookTags; chapters: readonly ChapterMarks[]; format: BookFormat }): string {
  const lines = [";FFMETADATA1"];
  const { tags } = spec;
  const global: [string, string | undefined][] = [
    ["title", tags.title],
    ["album", tags.album],
    ["artist", tags.artist],
    ["composer", tags.narrator],
    ["genre", tags.genre],
    // MP3: TLAN. MP4 has no book-wide language: the audio track carries it (see buildWrapAudioBookArgs).
    ["language", spec.format === "mp3" ? tags.language : undefined],
    // MP4 `stik` 2: the file is an audio book (Apple files it under Books, not Music).
    ["media_type", spec.format === "m4b" ? "2" : undefined],
  ];
  for (const [key, value] of global) if (value !== undefined) lines.push(`${key}=${escapeFfmetadata(value)}`);
  for (const chapter of spec.chapters) {
    lines.push("", "[CHAPTER]", "TIMEBASE=1/1000", `START=${chapter.startMs}`, `END=${chapter.endMs}`, `title=${escapeFfmetadata(chapter.title)}`);
  }
  return `${lines.join("\n")}\n`;
}

// ---------------------------------------------------------------------------------------------
// Covers
// ---------------------------------------------------------------------------------------------

export type CoverImageType = "jpeg" | "png";

/** The single-picture demuxer that reads each cover type (never `image2`, which expands file patterns). */
export const COVER_DEMUXERS: Readonly<Record<CoverImageType, string>> = { jpeg: "jpeg_pipe", png: "png_pipe" };

/** Bytes `sniffCoverImage` looks at. */
export const COVER_SNIFF_BYTES = 16;

/**
 * The cover's type from its first bytes (not its name): JPEG (`FF D8 FF`) or PNG (its 8-byte
 * signature). Anything else is refused, naming what it looks like when that is known.
 */
export function sniffCoverImage(head: Uint8Array): { type: CoverImageType } | { refused: string } {
  const bytes = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  const ascii = (from: number, to: number): string => bytes.toString("latin1", from, to);
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return { type: "jpeg" };
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return { type: "png" };
  const known: [boolean, string][] = [
    [ascii(0, 4) === "GIF8", "a GIF picture"],
    [ascii(0, 4) === "RIFF" && ascii(8, 12) === "WEBP", "a WebP picture"],
    [ascii(0, 2) === "BM", "a BMP picture"],
    [ascii(0, 4) === "II*\0" || ascii(0, 4) === "MM\0*", "a TIFF picture"],
    [ascii(4, 8) === "ftyp" && /^(avi[fs]|hei[cfmsx]|mif1|msf1)$/.test(ascii(8, 12)), "an AVIF or HEIC picture"],
    [/^\s*</.test(ascii(0, 16)), "text (SVG or HTML)"],
  ];
  const found = known.find(([match]) => match)?.[1];
  return { refused: `The cover must be a JPEG or PNG picture; this file is ${found ?? "not a picture this service knows"}.` };
}

/** A cover checked by `checkCover`: its type from its bytes, its size on disk and its decoded size. */
export interface CheckedCover {
  path: string;
  type: CoverImageType;
  bytes: number;
  width: number;
  height: number;
}

/** "3.2 MB", "850 KB" */
function fileSize(bytes: number): string {
  return bytes >= 1_000_000 ? `${(bytes / 1_000_000).toFixed(1)} MB` : `${Math.ceil(bytes / 1000)} KB`;
}

// ---------------------------------------------------------------------------------------------
// Argument builders
// ---------------------------------------------------------------------------------------------

/** The muxer options that make each book format. */
export function bookMuxerArgs(format: BookFormat): string[] {
  return format === "mp3"
    ? ["-id3v2_version", "3", "-write_id3v1", "0", "-f", "mp3"]
    : ["-movflags", "+faststart", "-brand", "M4B ", "-f", "ipod"];
}

/** The cover stream's options: an attached picture, copied; in an MP3 an APIC "front cover". */
function coverStreamArgs(format: BookFormat): string[] {
  return [
    "-c:v", "copy", "-disposition:v:0", "attached_pic",
    ...(format === "mp3" ? ["-metadata:s:v:0", "comment=Cover (front)", "-metadata:s:v:0", "title=Cover"] : []),
  ];
}

function coverInputArgs(cover: { path: string; type: CoverImageType }, pictureLimit?: number): string[] {
  const demuxer = COVER_DEMUXERS[cover.type];
  return inputArgs(cover.path, [demuxer], demuxer, pictureLimit);
}

export interface WrapAudioBookArgs {
  /** The book's audio: an MP3 (copied into an MP3 book) or any audio (encoded into an M4B). */
  input: string;
  /** Demuxers allowed for the input. Default: AUDIO_CLIP_DEMUXERS. */
  inputDemuxers?: readonly string[];
  /** The FFMETADATA file written from `ffmetadataContent`. */
  metadataFile: string;
  cover?: { path: string; type: CoverImageType } | undefined;
  /** Largest cover picture its decoder may produce (the cover is copied; ffmpeg still looks at it). */
  coverPixelLimit?: number;
  output: string;
  format: BookFormat;
  /** M4B: the audio track's language (ISO 639-2). */
  language?: string | undefined;
  /** M4B: AAC bitrate in kbit/s (default 64). */
  bitrateKbps?: number;
}

/**
 * The book file from its audio, an FFMETADATA file (tags and chapters) and an optional cover. MP3:
 * the audio frames copied; M4B: AAC mono. The cover is copied as an attached picture.
 */
export function buildWrapAudioBookArgs(spec: WrapAudioBookArgs): string[] {
  const bitrate = spec.bitrateKbps ?? DEFAULT_M4B_BITRATE_KBPS;
  if (!(Number.isInteger(bitrate) && bitrate >= 16 && bitrate <= 320)) {
    throw new MediaRequestError("The M4B bitrate must be a whole number of kbit/s between 16 and 320.");
  }
  if (spec.language !== undefined && !ISO_639_2.test(spec.language)) {
    throw new MediaRequestError('The book\'s language must be an ISO 639-2 code of three lowercase letters, like "eng".');
  }
  const audio =
    spec.format === "mp3"
      ? ["-c:a", "copy"]
      : [
          "-c:a", "aac", "-b:a", `${bitrate}k`, "-ac", "1",
          ...(spec.language === undefined ? [] : ["-metadata:s:a:0", `language=${spec.language}`]),
        ];
  return [
    ...GLOBAL_ARGS,
    ...inputArgs(spec.input, spec.inputDemuxers ?? AUDIO_CLIP_DEMUXERS),
    ...inputArgs(spec.metadataFile, ["ffmetadata"], "ffmetadata"),
    ...(spec.cover === undefined ? [] : coverInputArgs(spec.cover, spec.coverPixelLimit)),
    "-map", "0:a:0",
    ...(spec.cover === undefined ? [] : ["-map", "2:v:0"]),
    "-map_metadata", "1", "-map_chapters", "1",
    "-sn", "-dn",
    ...audio,
    ...(spec.cover === undefined ? [] : coverStreamArgs(spec.format)),
    ...bookMuxerArgs(spec.format),
    "-y", safePath(spec.output, "output"),
  ];
}

export interface RewrapCoverArgs {
  /** A finished book file (MP3 or M4B). */
  input: string;
  format: BookFormat;
  /** The new cover, or null to leave the book without one. */
  cover: { path: string; type: CoverImageType } | null;
  coverPixelLimit?: number;
  output: string;
}

/**
 * The same book with another cover (or none): the audio packets, chapters and tags copied as they are
 * (`-copyts` keeps an MP3's chapters where they were), the old picture left out, the new one attached.
 */
export function buildRewrapCoverArgs(spec: RewrapCoverArgs): string[] {
  return [
    ...GLOBAL_ARGS,
    "-copyts",
    ...inputArgs(spec.input, BOOK_DEMUXERS),
    ...(spec.cover === null ? [] : coverInputArgs(spec.cover, spec.coverPixelLimit)),
    // Only the audio of the book: not its picture, nor the M4B's chapter text track (the muxer writes a new one).
    "-map", "0:a",
    ...(spec.cover === null ? [] : ["-map", "1:v:0"]),
    "-map_metadata", "0", "-map_chapters", "0",
    "-c:a", "copy",
    ...(spec.cover === null ? [] : coverStreamArgs(spec.format)),
    ...bookMuxerArgs(spec.format),
    "-y", safePath(spec.output, "output"),
  ];
}

/** ffprobe's arguments that list a book file's chapters as JSON. */
export function buildChaptersProbeArgs(path: string): string[] {
  return ["-v", "error", "-hide_banner", "-print_format", "json", "-show_chapters", ...inputArgs(path, BOOK_DEMUXERS)];
}

/** The chapters of ffprobe's `-show_chapters` JSON, in order. */
export function parseChaptersJson(json: unknown): BookChapter[] {
  const list = typeof json === "object" && json !== null && Array.isArray((json as { chapters?: unknown }).chapters) ? (json as { chapters: unknown[] }).chapters : [];
  const chapters: BookChapter[] = [];
  for (const item of list) {
    if (typeof item !== "object" || item === null) continue;
    const entry = item as { start_time?: unknown; end_time?: unknown; tags?: { title?: unknown } };
    const startSeconds = Number(entry.start_time);
    const endSeconds = Number(entry.end_time);
    if (!Number.isFinite(startSeconds) || !Number.isFinite(endSeconds)) continue;
    const title = typeof entry.tags?.title === "string" ? entry.tags.title : "";
    chapters.push({ title, startSeconds, endSeconds });
  }
  return chapters;
}

// ---------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------

export interface WrapAudioBookRequest {
  /** The joined audio of the book (an MP3 for an MP3 book: its frames are copied, never re-encoded). */
  input: string;
  outPath: string;
  format: BookFormat;
  chapters: readonly BookChapter[];
  tags?: BookTags;
  /** A JPEG or PNG picture, embedded as the attached picture. */
  cover?: string | undefined;
  /** Largest cover file in bytes (default DEFAULT_MAX_COVER_BYTES). */
  maxCoverBytes?: number;
  /** Largest cover picture in pixels (default DEFAULT_MAX_COVER_PIXELS; never above MAX_VIDEO_PIXELS). */
  maxCoverPixels?: number;
  /** M4B: AAC bitrate in kbit/s (default 64). */
  bitrateKbps?: number;
  signal?: AbortSignal | undefined;
  onProgress?: ((progress: FfmpegProgress) => void) | undefined;
}

export interface RewrapCoverRequest {
  /** A book file written by `wrapAudioBook` (MP3 or M4B). */
  input: string;
  outPath: string;
  /** The new cover (JPEG or PNG), or null to remove the one it has. */
  cover: string | null;
  maxCoverBytes?: number;
  maxCoverPixels?: number;
  signal?: AbortSignal | undefined;
}

export interface WrittenBook {
  path: string;
  format: BookFormat;
  /** The audio's length as probed before wrapping. */
  durationSeconds: number;
  chapters: number;
  cover: CheckedCover | null;
}

export interface BookFileOperations {
  /**
   * Writes the book file: MP3 with ID3v2.3 chapters (`CHAP` + `CTOC`), tags and an `APIC` front
   * cover, the speech copied; or M4B (AAC mono in MP4, brand `M4B `) with chapter markers, tags and a
   * `covr` picture. The cover is checked first (`checkCover`). Written under a temporary name, then
   * renamed into place.
   */
  wrapAudioBook(request: WrapAudioBookRequest): Promise<WrittenBook>;
  /**
   * Replaces (or, with `cover: null`, removes) the picture of a finished book file; its audio
   * packets, chapters and tags are copied unchanged.
   */
  rewrapCover(request: RewrapCoverRequest): Promise<WrittenBook>;
  /** The chapters of a book file as ffprobe reads them (`-show_chapters`), in order. */
  chaptersOf(path: string, options?: { signal?: AbortSignal }): Promise<BookChapter[]>;
  /**
   * Checks a cover before anything embeds it: its size in bytes (refused over `maxBytes`), its type
   * from its bytes (JPEG or PNG), and its picture decoded under `maxPixels` (refused before the decoder
   * allocates a bigger one, whatever the headers say). Errors are plain words about "the cover".
   */
  checkCover(path: string, options?: { maxBytes?: number; maxPixels?: number; signal?: AbortSignal }): Promise<CheckedCover>;
}

/** What the book operations need of the toolkit. */
export interface BookFileDeps {
  binaries: FfmpegBinaries;
  run(args: readonly string[], options: { signal?: AbortSignal | undefined; onProgress?: ((p: FfmpegProgress) => void) | undefined; what: string; expectedDurationSeconds?: number }): Promise<FfmpegRunResult>;
  probe(path: string, options: { signal?: AbortSignal | undefined; demuxers: readonly string[] }): Promise<MediaInfo>;
  firstFrame(path: string, options: { maxPixels: number; signal?: AbortSignal | undefined; demuxers: readonly string[]; forceFormat: string }): Promise<DecodedFrameSize>;
  withWorkDir<T>(fn: (dir: string) => Promise<T>): Promise<T>;
  log: Logger;
}

function positiveWhole(value: number | undefined, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) throw new MediaRequestError(`${what} must be a whole number of at least 1.`);
  return value;
}

/** The book's format from a probed container: "mp3", or an MP4 family name ("mov,mp4,m4a,3gp,3g2,mj2"). */
function bookFormatOf(info: MediaInfo): BookFormat {
  if (info.format === "mp3") return "mp3";
  if (info.format.split(",").includes("mp4")) return "m4b";
  throw new MediaRequestError("The book file is neither an MP3 nor an M4B.");
}

export function bookFileOperations(deps: BookFileDeps): BookFileOperations {
  const { log } = deps;

  const checkCover: BookFileOperations["checkCover"] = async (path, options = {}) => {
    const maxBytes = positiveWhole(options.maxBytes, DEFAULT_MAX_COVER_BYTES, "The largest cover size");
    const maxPixels = positiveWhole(options.maxPixels, DEFAULT_MAX_COVER_PIXELS, "The largest cover picture");
    const file = safePath(path, "cover");
    const info = await stat(file).catch(() => undefined);
    if (info === undefined || !info.isFile()) throw new MediaError("MEDIA_UNREADABLE", "The cover could not be read: there is no such file.");
    if (info.size === 0) throw new MediaError("MEDIA_UNREADABLE", "The cover is an empty file.");
    if (info.size > maxBytes) {
      throw new MediaError("MEDIA_TOO_LARGE", `The cover is ${fileSize(info.size)}, more than the ${fileSize(maxBytes)} a book's cover may be.`);
    }
    const head = Buffer.alloc(COVER_SNIFF_BYTES);
    const handle = await open(file, "r");
    let read = 0;
    try {
      ({ bytesRead: read } = await handle.read(head, 0, head.length, 0));
    } finally {
      await handle.close();
    }
    const sniffed = sniffCoverImage(head.subarray(0, read));
    if ("refused" in sniffed) throw new MediaError("MEDIA_FORMAT_NOT_ALLOWED", sniffed.refused);
    const name = sniffed.type === "jpeg" ? "JPEG" : "PNG";
    let size: DecodedFrameSize;
    try {
      const demuxer = COVER_DEMUXERS[sniffed.type];
      size = await deps.firstFrame(file, { maxPixels, signal: options.signal, demuxers: [demuxer], forceFormat: demuxer });
    } catch (error) {
      if (!(error instanceof MediaError) || error.code === "MEDIA_CANCELLED" || error.code === "FFMPEG_NOT_FOUND") throw error;
      if (error.code === "MEDIA_TOO_LARGE") {
        // "The video's picture is 16000×16000 pixels (256 megapixels), more than …": the same figures, about the cover.
        throw new MediaError("MEDIA_TOO_LARGE", error.message.replace(/^The video's picture/, "The cover"), { cause: error });
      }
      throw new MediaError("MEDIA_UNREADABLE", `The cover could not be read: the ${name} picture is damaged.`, { cause: error });
    }
    return { path: file, type: sniffed.type, bytes: info.size, width: size.width, height: size.height };
  };

  const chaptersOf: BookFileOperations["chaptersOf"] = async (path, options = {}) => {
    const args = buildChaptersProbeArgs(path);
    const result = await runProcess(deps.binaries.ffprobe, args, { signal: options.signal, collectStdout: true, maxStdoutBytes: 8 * 1024 * 1024 });
    const error = ffmpegResultError("ffprobe", deps.binaries.ffprobe, result, "Reading the book's chapters", args);
    if (error) throw error;
    let json: unknown;
    try {
      json = JSON.parse(result.stdout.toString("utf8"));
    } catch (cause) {
      throw new MediaError("PROBE_FAILED", "Reading the book's chapters failed: ffprobe's answer was not readable.", { cause });
    }
    return parseChaptersJson(json);
  };

  const wrapAudioBook: BookFileOperations["wrapAudioBook"] = async (request) => {
    const { format } = request;
    if (!isBookFormat(format)) throw new MediaRequestError('The book format must be "mp3" or "m4b".');
    const tags = checkBookTags(request.tags);
    const info = await deps.probe(request.input, { signal: request.signal, demuxers: AUDIO_CLIP_DEMUXERS });
    if (!info.audio) throw new MediaRequestError("The book's audio file has no audio track.");
    if (format === "mp3" && info.audio.codec !== "mp3") {
      throw new MediaRequestError("An MP3 book is made from MP3 audio: its frames are copied, never encoded again.");
    }
    const chapters = checkBookChapters(request.chapters, info.durationSeconds);
    const cover =
      request.cover === undefined
        ? null
        : await checkCover(request.cover, { maxBytes: request.maxCoverBytes, maxPixels: request.maxCoverPixels, signal: request.signal });
    await deps.withWorkDir(async (dir) => {
      const metadataFile = join(dir, "book.ffmetadata");
      await writeFile(metadataFile, ffmetadataContent({ tags, chapters, format }), "utf8");
      await withTempOutput(request.outPath, (temp) =>
        deps.run(
          buildWrapAudioBookArgs({
            input: request.input,
            metadataFile,
            cover: cover ?? undefined,
            coverPixelLimit: request.maxCoverPixels ?? DEFAULT_MAX_COVER_PIXELS,
            output: temp,
            format,
            language: format === "m4b" ? tags.language : undefined,
            bitrateKbps: request.bitrateKbps,
          }),
          {
            signal: request.signal,
            onProgress: request.onProgress,
            expectedDurationSeconds: info.durationSeconds,
            what: format === "mp3" ? "Writing the MP3 book" : "Encoding the M4B book",
          },
        ),
      );
    });
    log.debug({ format, chapters: chapters.length, cover: cover?.type ?? null }, "book file written");
    return { path: request.outPath, format, durationSeconds: info.durationSeconds, chapters: chapters.length, cover };
  };

  const rewrapCover: BookFileOperations["rewrapCover"] = async (request) => {
    const info = await deps.probe(request.input, { signal: request.signal, demuxers: BOOK_DEMUXERS });
    if (!info.audio) throw new MediaRequestError("The book file has no audio track.");
    const format = bookFormatOf(info);
    const cover =
      request.cover === null
        ? null
        : await checkCover(request.cover, { maxBytes: request.maxCoverBytes, maxPixels: request.maxCoverPixels, signal: request.signal });
    await withTempOutput(request.outPath, (temp) =>
      deps.run(
        buildRewrapCoverArgs({ input: request.input, format, cover, coverPixelLimit: request.maxCoverPixels ?? DEFAULT_MAX_COVER_PIXELS, output: temp }),
        { signal: request.signal, what: cover === null ? "Removing the book's cover" : "Replacing the book's cover" },
      ),
    );
    const chapters = (await chaptersOf(request.outPath, { signal: request.signal })).length;
    log.debug({ format, cover: cover?.type ?? null }, "book cover rewrapped");
    return { path: request.outPath, format, durationSeconds: info.durationSeconds, chapters, cover };
  };

  return { wrapAudioBook, rewrapCover, chaptersOf, checkCover };
}
