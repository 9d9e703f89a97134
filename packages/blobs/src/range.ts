/** Result of {@link parseRange}. `start` and `end` are inclusive byte offsets. */
export type ParsedRange =
  | { kind: "none" }
  | { kind: "range"; start: number; end: number }
  | { kind: "unsatisfiable" };

const NONE: ParsedRange = { kind: "none" };
const UNSATISFIABLE: ParsedRange = { kind: "unsatisfiable" };

const RANGE_SPEC = /^(\d*)-(\d*)$/;

/** Digits to a number; values past Number.MAX_SAFE_INTEGER become Infinity. */
function toPosition(digits: string): number {
  const value = Number(digits);
  return Number.isSafeInteger(value) ? value : Number.POSITIVE_INFINITY;
}

/**
 * Interprets an HTTP `Range` header for a representation of `size` bytes,
 * following RFC 9110 §14 for a single byte range:
 *
 * - no header, an empty one, a unit other than `bytes`, or a syntactically
 *   invalid set (including `first > last`) → `none`: ignore it, send 200 and
 *   the whole body (§14.2: a server MAY ignore Range; an invalid one MUST
 *   be ignored);
 * - `bytes=a-b` → `a..min(b, size-1)`; `bytes=a-` → `a..size-1`;
 *   `bytes=-n` → the last `n` bytes (the whole body when `n >= size`);
 * - `a >= size`, or a suffix of length 0 → `unsatisfiable` (send 416 with
 *   `Content-Range: bytes *\/size`);
 * - a zero-length body: `bytes=-n` (n > 0) → `none` (nothing to slice, send
 *   the empty body with 200), any `bytes=a-…` → `unsatisfiable`;
 * - **several ranges** (`bytes=0-1,5-6`) → `none`: the whole body with 200.
 *   This is allowed by RFC 9110, avoids multipart/byteranges and the
 *   overlapping-ranges amplification it invites. Browsers and media players
 *   only ever ask for one range.
 *
 * Whitespace around `=` and `,` is tolerated; inside a range-spec it is not.
 */
export function parseRange(header: string | undefined, size: number): ParsedRange {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`invalid representation size: ${size}`);
  if (header === undefined) return NONE;
  const trimmed = header.trim();
  if (trimmed === "") return NONE;
  const eq = trimmed.indexOf("=");
  if (eq < 0) return NONE;
  if (trimmed.slice(0, eq).trim().toLowerCase() !== "bytes") return NONE;

  const specs = trimmed
    .slice(eq + 1)
    .split(",")
    .map((s) => s.trim())
    // RFC 9110 list rule: empty elements are allowed and ignored.
    .filter((s) => s !== "");
  if (specs.length === 0) return NONE;
  const parsed: Array<{ first: string; last: string }> = [];
  for (const spec of specs) {
    const match = RANGE_SPEC.exec(spec);
    if (match === null) return NONE;
    const first = match[1] ?? "";
    const last = match[2] ?? "";
    if (first === "" && last === "") return NONE;
    if (first !== "" && last !== "" && toPosition(last) < toPosition(first)) return NONE;
    parsed.push({ first, last });
  }
  if (parsed.length !== 1) return NONE;
  const { first, last } = parsed[0] as { first: string; last: string };

  if (first === "") {
    // suffix-range: the last `n` bytes
    const length = toPosition(last);
    if (length === 0) return UNSATISFIABLE;
    if (size === 0) return NONE;
    return { kind: "range", start: Math.max(0, size - length), end: size - 1 };
  }
  const start = toPosition(first);
  if (start >= size) return UNSATISFIABLE;
  const end = last === "" ? size - 1 : Math.min(toPosition(last), size - 1);
  return { kind: "range", start, end };
}

/** Content-Range value for a 206 (`bytes 0-99/1000`) or a 416 (`bytes *\/1000`). */
export function contentRange(range: { start: number; end: number } | "unsatisfiable", size: number): string {
  return range === "unsatisfiable" ? `bytes */${size}` : `bytes ${range.start}-${range.end}/${size}`;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  mp3: "audio/mpeg",
  wav: "audio/wav",
  ogg: "audio/ogg",
  opus: "audio/ogg",
  flac: "audio/flac",
  mp4: "video/mp4",
  webm: "video/webm",
  mkv: "video/x-matroska",
  srt: "application/x-subrip",
  vtt: "text/vtt",
  txt: "text/plain; charset=utf-8",
  json: "application/json",
};

export const DEFAULT_CONTENT_TYPE = "application/octet-stream";

/** Media type for a key from its extension (case-insensitive); `application/octet-stream` when unknown. */
export function contentTypeFor(key: string): string {
  const base = key.slice(key.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  if (dot <= 0) return DEFAULT_CONTENT_TYPE; // no extension, or a dot file such as ".mp3"
  const ext = base.slice(dot + 1).toLowerCase();
  return Object.hasOwn(CONTENT_TYPES, ext) ? (CONTENT_TYPES[ext] as string) : DEFAULT_CONTENT_TYPE;
}
