/**
 * A task's `task_error` is read by the person who submitted the task: plain words, never a program's
 * stderr, a path of this machine, a network or memory address, or a stack trace. Messages of our
 * packages are written that way; this is the last guard, applied where the runtime writes a failure.
 */

/** Longest reason kept, in characters (a sentence or two). */
export const MAX_REASON_CHARS = 300;

const FALLBACK = "The task could not be completed.";

/** `[pcm_s16le @ 0x55abdb24a500]`-style prefixes of ffmpeg log lines. */
const FFMPEG_CONTEXT = /\[[A-Za-z0-9_:.-]+ @ (?:0x)?[0-9a-fA-F]+\]\s*/g;
/** Heap or pointer addresses: 0x55abdb24a500. */
const HEX_ADDRESS = /\b0x[0-9a-fA-F]{4,}\b/g;
/** An absolute path not part of a URL (not after `:` or another `/` or a word character). */
const ABSOLUTE_PATH = /(?<![\w.:/~-])(?:\/(?:[\w.@%+~-]+))+\/?/g;
/** A Windows absolute path. */
const WINDOWS_PATH = /\b[A-Za-z]:\\[^\s"'`]*/g;
/** IPv4 literals with an optional port. */
const IPV4 = /\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b/g;
/** Bracketed IPv6 literals with an optional port, and bare ones of several groups. */
const IPV6 = /\[[0-9a-fA-F:.]*:[0-9a-fA-F:.]*\](?::\d{1,5})?|\b(?:[0-9a-fA-F]{1,4}:){4,7}[0-9a-fA-F]{1,4}\b|(?<![\w:])[0-9a-fA-F]{0,4}::[0-9a-fA-F:]*[0-9a-fA-F]/g;
/** The frames of a stack trace (`    at fn (file:1:2)`) and everything after the first one. */
const STACK = /\n\s*at [\s\S]*$/;
/** Control characters other than tab (newlines are handled first). */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g;

/**
 * `text` made safe to show as a task error: the first paragraph, without stack frames, ffmpeg log
 * prefixes, addresses or local paths (each replaced by a neutral word), at most MAX_REASON_CHARS.
 */
export function plainReason(text: unknown): string {
  if (typeof text !== "string") return FALLBACK;
  let out = text.replace(STACK, "");
  // The first line carries the sentence; what follows a newline is usually a tool's output.
  out = out.split(/\r\n|\r|\n/)[0] ?? "";
  out = out
    .replace(CONTROL, " ")
    .replace(FFMPEG_CONTEXT, "")
    .replace(HEX_ADDRESS, "(address)")
    .replace(IPV6, "(address)")
    .replace(IPV4, "(address)")
    .replace(WINDOWS_PATH, "(a file on the server)")
    .replace(ABSOLUTE_PATH, "(a file on the server)")
    .replace(/\s+/g, " ")
    .trim();
  if (out.length > MAX_REASON_CHARS) out = `${out.slice(0, MAX_REASON_CHARS - 1).trimEnd()}…`;
  return out === "" ? FALLBACK : out;
}
