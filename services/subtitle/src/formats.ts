/**
 * SubRip (SRT) and WebVTT writers, and small readers used to check them.
 *
 * SRT: numbered blocks, `HH:MM:SS,mmm --> HH:MM:SS,mmm` (comma before the milliseconds), the text
 * lines, a blank line; CRLF line ends (what most SRT files carry; readers accept both), UTF-8.
 * WebVTT (W3C WebVTT): the `WEBVTT` header, a blank line, then cues with `HH:MM:SS.mmm --> HH:MM:SS.mmm`
 * (a dot); `&`, `<` and `>` in cue text are written as `&amp;`, `&lt;`, `&gt;` (a cue's text can then
 * never contain `-->` or a tag). Neither format allows a blank line inside a cue: lines are never empty.
 */
import type { Cue } from "./cues.ts";

export type SubtitleFormat = "srt" | "vtt";

/** `HH:MM:SS<sep>mmm` from seconds (hours grow past 99 when needed). */
export function formatTimestamp(seconds: number, separator: "," | "."): string {
  const total = Math.max(0, Math.round(seconds * 1000));
  const msPart = total % 1000;
  const s = Math.floor(total / 1000) % 60;
  const m = Math.floor(total / 60_000) % 60;
  const h = Math.floor(total / 3_600_000);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(h)}:${two(m)}:${two(s)}${separator}${String(msPart).padStart(3, "0")}`;
}

/** Cue lines without line breaks or empty lines (either would end the cue early). */
function cueLines(cue: Cue): string[] {
  return cue.lines.flatMap((line) => line.split(/\r\n|\r|\n/)).map((line) => line.replace(/\s+/g, " ").trim()).filter((line) => line !== "");
}

export function writeSrt(cues: readonly Cue[]): string {
  const blocks: string[] = [];
  for (const cue of cues) {
    const lines = cueLines(cue);
    if (lines.length === 0) continue;
    blocks.push([String(blocks.length + 1), `${formatTimestamp(cue.start, ",")} --> ${formatTimestamp(cue.end, ",")}`, ...lines].join("\r\n"));
  }
  return blocks.map((block) => `${block}\r\n\r\n`).join("");
}

export function escapeVttText(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export function writeVtt(cues: readonly Cue[]): string {
  const out = ["WEBVTT", ""];
  for (const cue of cues) {
    const lines = cueLines(cue);
    if (lines.length === 0) continue;
    out.push(`${formatTimestamp(cue.start, ".")} --> ${formatTimestamp(cue.end, ".")}`, ...lines.map(escapeVttText), "");
  }
  return `${out.join("\n")}\n`;
}

export function writeSubtitles(format: SubtitleFormat, cues: readonly Cue[]): string {
  switch (format) {
    case "srt":
      return writeSrt(cues);
    case "vtt":
      return writeVtt(cues);
    default: {
      const unreachable: never = format;
      throw new Error(`unknown subtitle format ${String(unreachable)}`);
    }
  }
}

export const SUBTITLE_CONTENT_TYPES: Record<SubtitleFormat, string> = {
  srt: "application/x-subrip; charset=utf-8",
  vtt: "text/vtt; charset=utf-8",
};

const TIMING = /^(\d{2,}):(\d{2}):(\d{2})([,.])(\d{3})\s+-->\s+(\d{2,}):(\d{2}):(\d{2})([,.])(\d{3})/;

function seconds(h: string, m: string, s: string, f: string): number {
  return Number(h) * 3600 + Number(m) * 60 + Number(s) + Number(f) / 1000;
}

/**
 * Reads SRT or WebVTT cues (LF or CRLF line ends; a BOM and the WEBVTT header are skipped; WebVTT
 * entities are decoded). Checks our own output; not a full parser of either format.
 */
export function parseSubtitles(text: string): Cue[] {
  const cues: Cue[] = [];
  const blocks = text.replace(/^\uFEFF/, "").split(/\r\n|\r|\n/);
  let current: Cue | undefined;
  const vtt = blocks[0]?.startsWith("WEBVTT") ?? false;
  for (const line of blocks) {
    const timing = TIMING.exec(line);
    if (timing) {
      const [, h1, m1, s1, , f1, h2, m2, s2, , f2] = timing as unknown as string[];
      current = { start: seconds(h1 ?? "", m1 ?? "", s1 ?? "", f1 ?? ""), end: seconds(h2 ?? "", m2 ?? "", s2 ?? "", f2 ?? ""), lines: [] };
      cues.push(current);
    } else if (line.trim() === "") {
      current = undefined;
    } else if (current !== undefined) {
      current.lines.push(vtt ? line.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&") : line);
    }
  }
  return cues;
}
