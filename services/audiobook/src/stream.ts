/**
 * Listening while a book renders: each spoken chunk's MP3 (the checkpoint the lanes stored; no second
 * synthesis) is re-encoded to AAC and cut into MPEG-TS segments of about `SEGMENT_SECONDS`, stored as
 * blobs under `streams/audiobook/<task id>/`, beside an HLS playlist (`index.m3u8`, type EVENT) that
 * lists the segments of the unbroken run of chunks from the book's start, rewritten as that run
 * grows, and closed with `#EXT-X-ENDLIST` once the book is complete (it then spans the whole book).
 *
 * Each chunk is its own encoding (chunks finish out of order, on every core), so its first segment
 * follows an `#EXT-X-DISCONTINUITY` (its timestamps start again). The playlist names its segments by
 * bare relative names: the gateway serves it with each name given the playlist's own signature.
 *
 * A small JSON note per chunk (`chunk-<n>.json`: its segments and their lengths) lets a redelivery
 * rebuild the playlist without encoding the earlier chunks again. The re-encoding runs one chunk at
 * a time, the lowest chunk first (the one the listener needs next), beside the lanes.
 */
import { mkdir, readFile, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { AUDIO_BOOK_STREAM_PART, AUDIO_BOOK_STREAM_PLAYLIST, audioBookStreamKey, audioBookStreamPrefix, type BlobStore } from "@voiceloc/blobs";
import type { Logger } from "@voiceloc/log";
import { GLOBAL_ARGS, type MediaToolkit } from "@voiceloc/media";
import { z } from "zod";

/** Target length of a segment, in seconds (segments are cut at the first AAC frame past it). */
export const SEGMENT_SECONDS = 10;
/** `#EXT-X-TARGETDURATION`: every segment is at most a frame longer than SEGMENT_SECONDS. */
const TARGET_DURATION = SEGMENT_SECONDS + 1;
/** AAC bitrate of the stream (mono speech). */
const AAC_KBPS = 64;
export const STREAM_PLAYLIST = AUDIO_BOOK_STREAM_PLAYLIST;
/** The blob folder of a book's stream (built in one place, @voiceloc/blobs, for the worker and the gateway). */
export const streamPrefix = audioBookStreamPrefix;
/** The blob key of a book's playlist. */
export const streamPlaylistKey = (taskId: string) => audioBookStreamKey(taskId);
/** The names a stream's segments may have (the gateway serves nothing else). */
export const STREAM_PART_PATTERN = AUDIO_BOOK_STREAM_PART;

const pad = (n: number, width: number) => String(n).padStart(width, "0");
const partName = (chunk: number, segment: number) => `part-${pad(chunk, 5)}-${pad(segment, 3)}.ts`;
const noteName = (chunk: number) => `chunk-${pad(chunk, 5)}.json`;

const NoteSchema = z.object({ segments: z.array(z.object({ name: z.string().regex(STREAM_PART_PATTERN), seconds: z.number().nonnegative() })).min(1) });
type Note = z.infer<typeof NoteSchema>;

/** The playlist of the chunks `notes` holds, from chunk 0 up to the first missing one; ENDLIST when `complete`. */
export function buildPlaylist(notes: ReadonlyMap<number, Note>, complete: boolean): string {
  const lines = ["#EXTM3U", "#EXT-X-VERSION:3", `#EXT-X-TARGETDURATION:${TARGET_DURATION}`, "#EXT-X-PLAYLIST-TYPE:EVENT", "#EXT-X-MEDIA-SEQUENCE:0"];
  for (let chunk = 0; ; chunk++) {
    const note = notes.get(chunk);
    if (note === undefined) break;
    if (chunk > 0) lines.push("#EXT-X-DISCONTINUITY");
    for (const segment of note.segments) lines.push(`#EXTINF:${segment.seconds.toFixed(3)},`, segment.name);
  }
  if (complete) lines.push("#EXT-X-ENDLIST");
  return `${lines.join("\n")}\n`;
}

export interface BookStreamOptions {
  blobs: BlobStore;
  media: MediaToolkit;
  taskId: string;
  /** A folder of the task's work dir for the encoder's output. */
  workDir: string;
  logger: Logger;
  signal: AbortSignal;
  /** Called once, when the first playlist with a segment is stored (the stream became playable). */
  onFirstPart?: () => void;
}

/** The HLS stream of one book while it is spoken (see the module's description). */
export class BookStream {
  private readonly notes = new Map<number, Note>();
  /** Chunks waiting for their AAC encoding, by index, with the path of their MP3. */
  private readonly pending = new Map<number, string>();
  private pump: Promise<void> | undefined;
  private failure: { error: unknown } | undefined;
  private published = -1;
  private playable = false;

  constructor(private readonly options: BookStreamOptions) {}

  /**
   * Reads the notes earlier deliveries stored, keeping those of chunks not spoken again (`respoken`):
   * those chunks' old segments are of an old cut and are replaced as they are spoken.
   */
  async restore(respoken: ReadonlySet<number>): Promise<void> {
    const { blobs, taskId } = this.options;
    const prefix = streamPrefix(taskId);
    for (const key of await blobs.list(prefix)) {
      const match = /^chunk-(\d{5})\.json$/.exec(key.slice(prefix.length));
      if (match === null) continue;
      const chunk = Number(match[1]);
      if (respoken.has(chunk)) {
        await blobs.delete(key);
        continue;
      }
      try {
        const stream = await blobs.createReadStream(key);
        const chunks: Buffer[] = [];
        for await (const piece of stream) chunks.push(piece as Buffer);
        const note = NoteSchema.safeParse(JSON.parse(Buffer.concat(chunks).toString("utf8")));
        if (note.success) this.notes.set(chunk, note.data);
      } catch (error) {
        this.options.logger.warn({ err: error, chunk }, "a stream note of an earlier delivery cannot be read; its chunk is encoded again");
      }
    }
  }

  /** Whether chunk `index` has its segments already. */
  has(index: number): boolean {
    return this.notes.has(index);
  }

  /** Queues the AAC encoding of chunk `index` from its stored MP3 at `mp3Path` (a file that stays until the book ends). */
  add(index: number, mp3Path: string): void {
    if (this.failure !== undefined || this.notes.has(index)) return;
    this.pending.set(index, mp3Path);
    if (this.pump === undefined) this.startPump();
  }

  /**
   * Runs the queue. The pump is cleared when it settles, never inside run(): a run with nothing to do
   * (a book already failing or cancelled) settles before the assignment, and a pump left set would keep
   * finish()/stop() looping. A chunk queued between the run's last look and its settling starts it again.
   */
  private startPump(): void {
    const pump = this.run();
    this.pump = pump;
    const settled = () => {
      if (this.pump !== pump) return;
      this.pump = undefined;
      if (this.pending.size > 0 && this.failure === undefined && !this.options.signal.aborted) this.startPump();
    };
    pump.then(settled, settled);
  }

  /** Waits for every queued chunk, then stores the playlist closed with ENDLIST (it spans the whole book). */
  async finish(total: number): Promise<void> {
    while (this.pump !== undefined) await this.pump;
    if (this.failure !== undefined) throw this.failure.error;
    for (let i = 0; i < total; i++) if (!this.notes.has(i)) throw new Error(`The stream has no segments for part ${i + 1} of the audio book.`);
    await this.storePlaylist(true);
  }

  /** Waits for the encoding under way (after the book failed); nothing more is started. */
  async stop(): Promise<void> {
    this.pending.clear();
    while (this.pump !== undefined) await this.pump.catch(() => undefined);
  }

  private async run(): Promise<void> {
    while (this.pending.size > 0 && this.failure === undefined && !this.options.signal.aborted) {
      const index = Math.min(...this.pending.keys());
      const path = this.pending.get(index)!;
      this.pending.delete(index);
      try {
        await this.encode(index, path);
      } catch (error) {
        if (!this.options.signal.aborted) this.failure = { error };
      }
    }
  }

  /** Encodes one chunk to AAC segments, stores them and its note, and the playlist when the run from the start grew. */
  private async encode(index: number, mp3Path: string): Promise<void> {
    const { blobs, media, taskId, signal } = this.options;
    const dir = join(this.options.workDir, `stream-${pad(index, 5)}`);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    try {
      const list = join(dir, "list.csv");
      await media.run(
        [
          ...GLOBAL_ARGS,
          "-f", "mp3",
          "-i", mp3Path,
          "-map", "0:a:0",
          "-c:a", "aac",
          // The fast coder: a third of the default's CPU (measured: 0.47 s against 1.50 s per 92 s of
          // speech), heard the same on mono speech at 64 kb/s; the stream runs beside the speaking lanes.
          "-aac_coder", "fast",
          "-b:a", `${AAC_KBPS}k`,
          "-ac", "1",
          "-f", "segment",
          "-segment_time", String(SEGMENT_SECONDS),
          "-segment_format", "mpegts",
          "-segment_list", list,
          "-segment_list_type", "csv",
          join(dir, "seg-%03d.ts"),
        ],
        { signal, what: "Encoding the stream of the audio book" },
      );
      const rows = (await readFile(list, "utf8")).split("\n").filter((line) => line.trim() !== "");
      const files = new Set(await readdir(dir));
      const segments: Note["segments"] = [];
      for (const [n, row] of rows.entries()) {
        const [file, start, end] = row.split(",");
        if (file === undefined || !files.has(file)) throw new Error(`The stream encoder did not write segment ${n + 1} of part ${index + 1}.`);
        const seconds = Math.max(0, Number(end) - Number(start));
        const name = partName(index, n);
        await blobs.put(`${streamPrefix(taskId)}${name}`, { path: join(dir, file), move: true }, { contentType: "video/mp2t" });
        segments.push({ name, seconds });
      }
      if (segments.length === 0) throw new Error(`The stream encoder wrote no segment for part ${index + 1}.`);
      const note: Note = { segments };
      await blobs.put(`${streamPrefix(taskId)}${noteName(index)}`, Buffer.from(JSON.stringify(note)), { contentType: "application/json" });
      this.notes.set(index, note);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    let run = 0;
    while (this.notes.has(run)) run++;
    if (run - 1 > this.published) await this.storePlaylist(false);
  }

  private async storePlaylist(complete: boolean): Promise<void> {
    let run = 0;
    while (this.notes.has(run)) run++;
    await this.options.blobs.put(streamPlaylistKey(this.options.taskId), Buffer.from(buildPlaylist(this.notes, complete), "utf8"), {
      contentType: "application/vnd.apple.mpegurl",
    });
    this.published = run - 1;
    if (run > 0 && !this.playable) {
      this.playable = true;
      this.options.onFirstPart?.();
    }
  }
}
