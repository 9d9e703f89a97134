/**
 * Listening to an audio book while it renders, over HTTP: the record's `stream_url` serves an open
 * HLS playlist (EVENT, no ENDLIST) whose first AAC part downloads and ffprobe reads while the book is
 * spoken; at completion it ends and spans the book; ffprobe reads the stream through by its URL.
 */
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { silentLogger } from "@voiceloc/log";
import { resolveFfmpeg } from "@voiceloc/media";
import { checkResponsesOf, freePort, tempDir } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";

const run = promisify(execFile);
const KEY = "stream-key-alice-1";
const BOB = "stream-key-bob-1";
let runtime: Runtime;
let base: string;
let dir: { path: string; cleanup: () => Promise<void> };
let ffprobe: string;
let ffmpeg: string;
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };

const PARAGRAPH = [
  "The lighthouse keeper climbed the stairs every evening before the sun went down.",
  "He polished the great lens, trimmed the wick, and wrote the weather in a small book.",
  "Ships passed far out at sea, and none of them knew his name, yet all of them trusted his light.",
  "In winter the wind pushed against the door so hard that he had to lean on it with his shoulder.",
].join(" ");

beforeAll(async () => {
  dir = await tempDir("voiceloc-stream-");
  const media = join(dir.path, "media");
  await mkdir(media, { recursive: true });
  let book = "";
  while (book.length < 30_000) book += `${PARAGRAPH}\n\n`;
  await writeFile(join(media, "book.txt"), book, "utf8");
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  checkResponsesOf(base);
  runtime = await startRuntime(
    loadConfig({
      DATA_DIR: dir.path,
      MEDIA_ROOT: media,
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_BASE_URL: base,
      VOICELOC_API_KEYS: `alice:${KEY},bob:${BOB}`,
      LOG_LEVEL: "silent",
    }),
    silentLogger(),
  );
  ({ ffprobe, ffmpeg } = await resolveFfmpeg({ logger: silentLogger() }));
});

afterAll(async () => {
  await runtime?.stop();
  await dir?.cleanup();
});

interface Playlist {
  segments: Array<{ uri: string; seconds: number }>;
  ended: boolean;
  type: string | undefined;
}

function parse(text: string): Playlist {
  const lines = text.split("\n").map((line) => line.trim());
  const segments: Playlist["segments"] = [];
  for (const [i, line] of lines.entries()) {
    const m = /^#EXTINF:([\d.]+),/.exec(line);
    if (m) segments.push({ seconds: Number(m[1]), uri: lines[i + 1] ?? "" });
  }
  return { segments, ended: lines.includes("#EXT-X-ENDLIST"), type: lines.find((l) => l.startsWith("#EXT-X-PLAYLIST-TYPE:"))?.split(":")[1] };
}

const read = async (id: string) => (await (await fetch(`${base}/v1/audio_books/${id}`, { headers })).json()) as Record<string, unknown>;
const pause = () => new Promise<void>((resolve) => setTimeout(resolve, 100));

async function probeJson(args: string[]): Promise<{ format?: { duration?: string }; streams?: Array<{ codec_name?: string }> }> {
  const { stdout } = await run(ffprobe, ["-v", "error", "-print_format", "json", "-show_format", "-show_streams", ...args], { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout) as { format?: { duration?: string }; streams?: Array<{ codec_name?: string }> };
}

/** A file played as a player would: decoded whole to 16 kHz mono samples; its length (s), loudness (dBFS RMS) and decoder complaints. */
async function play(path: string): Promise<{ seconds: number; rmsDb: number; errors: string }> {
  const { stdout, stderr } = await run(ffmpeg, ["-nostdin", "-v", "error", "-i", path, "-f", "s16le", "-ac", "1", "-ar", "16000", "-"], {
    encoding: "buffer",
    maxBuffer: 64 * 1024 * 1024,
  });
  const samples = stdout.length >> 1;
  let sum = 0;
  for (let i = 0; i < samples; i++) sum += (stdout.readInt16LE(i * 2) / 32768) ** 2;
  return { seconds: samples / 16000, rmsDb: 10 * Math.log10(sum / Math.max(1, samples) || 1e-12), errors: stderr.toString("utf8").trim() };
}

describe("listening to an audio book while it renders", () => {
  it("serves an open playlist whose first part plays before the book is done, then the whole book", async () => {
    const created = await fetch(`${base}/v1/audio_books/`, {
      method: "POST",
      headers,
      body: JSON.stringify({ file: "book.txt", name: "The keeper", source_language: "English", target_language: "English" }),
    });
    expect(created.status).toBe(201);
    const id = ((await created.json()) as { id: string; stream_url: unknown }).id;

    // Until the first part is listed (the record polled as a client would, under a generous deadline).
    let record: Record<string, unknown> = {};
    let playlist: Playlist | undefined;
    let streamUrl = "";
    for (const deadline = Date.now() + 240_000; Date.now() < deadline; await pause()) {
      record = await read(id);
      if (record.task_status === "completed" || record.task_status === "failed") break;
      if (typeof record.stream_url !== "string") continue;
      streamUrl = record.stream_url;
      const answer = await fetch(streamUrl);
      expect(answer.status).toBe(200);
      expect(answer.headers.get("content-type")).toBe("application/vnd.apple.mpegurl");
      playlist = parse(await answer.text());
      if (playlist.segments.length > 0) break;
    }
    expect(record.task_status).toBe("processing");
    expect(playlist?.type).toBe("EVENT");
    expect(playlist?.ended).toBe(false);
    const first = new URL(playlist!.segments[0]!.uri, streamUrl);
    const part = await fetch(first);
    expect(part.status).toBe(200);
    expect(part.headers.get("content-type")).toBe("video/mp2t");
    const partPath = join(dir.path, "first.ts");
    await writeFile(partPath, Buffer.from(await part.arrayBuffer()));
    const partInfo = await probeJson([partPath]);
    expect(partInfo.streams?.[0]?.codec_name).toBe("aac");
    expect(Number(partInfo.format?.duration)).toBeGreaterThan(2);
    // It plays: every frame decodes, as long as it says, and it is speech, not silence.
    const played = await play(partPath);
    expect(played.errors).toBe("");
    expect(played.seconds).toBeGreaterThan(2);
    expect(Math.abs(played.seconds - Number(partInfo.format?.duration))).toBeLessThan(0.5);
    expect(played.rmsDb).toBeGreaterThan(-35);
    const openSeconds = playlist!.segments.reduce((sum, s) => sum + s.seconds, 0);

    // A part needs its own book's signature: none, or another book's, is refused.
    expect((await fetch(`${first.origin}${first.pathname}`)).status).toBe(403);
    const other = new URL(first);
    other.pathname = other.pathname.replace(id, "00000000-0000-4000-8000-000000000000");
    expect((await fetch(other)).status).toBe(403);
    // Another account cannot read the record to get a link.
    expect((await fetch(`${base}/v1/audio_books/${id}`, { headers: { "API-KEY": BOB } })).status).toBe(404);

    for (const deadline = Date.now() + 300_000; Date.now() < deadline && record.task_status === "processing"; await pause()) record = await read(id);
    expect(record.task_status).toBe("completed");
    const finalUrl = String(record.stream_url);
    const closed = parse(await (await fetch(finalUrl)).text());
    expect(closed.ended).toBe(true);
    const book = await probeJson([String(record.localized_file)]);
    const bookSeconds = Number(book.format?.duration);
    const listed = closed.segments.reduce((sum, s) => sum + s.seconds, 0);
    expect(Math.abs(listed - bookSeconds)).toBeLessThan(2);
    // The open playlist was listed while the book was still being spoken: it held only its beginning.
    expect(openSeconds).toBeLessThan(bookSeconds / 2);
    // ffprobe reads the stream through by its URL, every part fetched over HTTP with its signature.
    const { stdout } = await run(
      ffprobe,
      ["-v", "error", "-protocol_whitelist", "http,tcp,hls", "-count_packets", "-show_entries", "stream=codec_name,sample_rate,nb_read_packets", "-print_format", "json", "-i", finalUrl],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    const through = JSON.parse(stdout) as { streams: Array<{ codec_name: string; sample_rate: string; nb_read_packets: string }> };
    expect(through.streams[0]?.codec_name).toBe("aac");
    // Every AAC frame (1024 samples) of the book was read: as many seconds as the book, within 2 s.
    const sampleRate = Number(through.streams[0]?.sample_rate);
    const frames = Number(through.streams[0]?.nb_read_packets);
    expect(Math.abs((frames * 1024) / sampleRate - bookSeconds)).toBeLessThan(2);
  }, 600_000);
});
