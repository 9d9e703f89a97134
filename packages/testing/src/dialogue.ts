/**
 * A generated dialogue for dubbing tests: lines spoken by flite voices (e.g. `slt`, about 170 Hz, and
 * `rms`, about 100 Hz) with a pause after each, optionally over a brown-noise bed, as a 16 kHz mono WAV
 * or as an MP4 with a `testsrc` picture (H.264) and the sound in AAC. It says where each line starts
 * and ends, so a test can measure the dubbed output against it.
 */
import { execFile } from "node:child_process";
import { mkdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { makeSpeechWav, type TestVoice } from "./media.ts";

export interface DialogueLine {
  voice: TestVoice;
  text: string;
  /** What a recogniser stand-in should say was heard (default `text`). */
  heard?: string;
  /** Silence after the line, seconds. */
  pause: number;
}

export interface DialogueOptions {
  /** Directory the file (and scratch speech) is written in. */
  dir: string;
  /** File name: `.wav` gives audio only, `.mp4` a video. */
  name: string;
  lines: readonly DialogueLine[];
  /** A brown-noise bed under the whole dialogue at this RMS level (dBFS); none when undefined. */
  bedDb?: number;
  /** Video frame size (`.mp4` only), default "320x240"; 25 frames per second. */
  size?: string;
  /** ffmpeg binary; default "ffmpeg" from PATH. */
  ffmpeg?: string;
}

export interface Dialogue {
  path: string;
  /** Where each line's speech starts and ends (seconds), what is heard, and its voice. */
  lines: Array<{ start: number; end: number; text: string; voice: TestVoice }>;
  /** Length of the whole recording, seconds. */
  duration: number;
}

function run(command: string, args: readonly string[]): Promise<void> {
  return new Promise((done, fail) => {
    execFile(command, [...args], { maxBuffer: 4 * 1024 * 1024 }, (error, _stdout, stderr) => {
      if (error) fail(new Error(`${command} failed while making a dialogue: ${String(stderr).trim().split("\n").slice(-3).join(" / ")}`, { cause: error }));
      else done();
    });
  });
}

/** Length of a PCM WAV file in seconds, from its `fmt ` and `data` chunks. */
async function wavSeconds(path: string): Promise<number> {
  const bytes = await readFile(path);
  let byteRate = 0;
  for (let at = 12; at + 8 <= bytes.length; ) {
    const id = bytes.toString("latin1", at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === "fmt ") byteRate = bytes.readUInt32LE(at + 16);
    if (id === "data") {
      if (byteRate <= 0) break;
      return Math.min(size, bytes.length - at - 8) / byteRate;
    }
    at += 8 + size + (size % 2);
  }
  throw new Error(`${path} is not a PCM WAV file`);
}

export async function makeDialogue(options: DialogueOptions): Promise<Dialogue> {
  const scratch = join(options.dir, ".dialogue");
  await mkdir(scratch, { recursive: true });
  const ffmpeg = options.ffmpeg ?? "ffmpeg";
  const parts: string[] = [];
  const lines: Dialogue["lines"] = [];
  const filters: string[] = [];
  let at = 0;
  for (const [i, line] of options.lines.entries()) {
    const wav = await makeSpeechWav(line.text, { voice: line.voice, path: join(scratch, `${options.name}-${i}.wav`) });
    const seconds = await wavSeconds(wav);
    parts.push(wav);
    lines.push({ start: at, end: at + seconds, text: line.heard ?? line.text, voice: line.voice });
    filters.push(`[${i}:a:0]aresample=16000,aformat=sample_fmts=s16:channel_layouts=mono,apad=pad_dur=${line.pause}[p${i}]`);
    at += seconds + line.pause;
  }
  const duration = at;
  filters.push(`${parts.map((_, i) => `[p${i}]`).join("")}concat=n=${parts.length}:v=0:a=1[speech]`);
  if (options.bedDb !== undefined) {
    // Brown noise at the wanted RMS level: amplitude 1 brown noise (seed 7) is about -14 dBFS RMS.
    filters.push(`anoisesrc=color=brown:amplitude=1:sample_rate=16000:duration=${duration}:seed=7,volume=${(options.bedDb + 14).toFixed(1)}dB[bed]`);
    filters.push(`[speech][bed]amix=inputs=2:duration=first:normalize=0[mixed]`);
  }
  const out = options.bedDb === undefined ? "[speech]" : "[mixed]";
  const path = resolve(options.dir, options.name);
  const inputs = parts.flatMap((p) => ["-i", p]);
  if (options.name.endsWith(".mp4")) {
    const size = options.size ?? "320x240";
    if (!/^\d+x\d+$/.test(size)) throw new Error(`invalid video size "${size}"`);
    await run(ffmpeg, [
      "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
      ...inputs,
      "-f", "lavfi", "-i", `testsrc=duration=${duration}:size=${size}:rate=25`,
      "-filter_complex", filters.join(";"),
      "-map", `${parts.length}:v:0`, "-map", out,
      "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
      "-c:a", "aac", "-b:a", "96k", "-ar", "48000",
      "-t", String(duration), "-movflags", "+faststart", "-f", "mp4", path,
    ]);
  } else {
    await run(ffmpeg, ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", ...inputs, "-filter_complex", filters.join(";"), "-map", out, "-c:a", "pcm_s16le", "-f", "wav", path]);
  }
  return { path, lines, duration };
}
