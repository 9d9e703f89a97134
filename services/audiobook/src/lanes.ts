/**
 * Speaking and encoding a book on every core with as little work besides the engine's and the
 * encoder's as possible:
 *
 * - Each lane (one per core) speaks a contiguous run of chunks and pipes their samples into ONE
 *   long-lived MP3 encoder (an ffmpeg per run, not per chunk: starting ffmpeg costs about as much CPU
 *   as encoding a minute of speech). While the encoder works on chunk k, the engine speaks chunk k+1.
 * - The encoder's output is cut into whole MP3 frames and each chunk's frames are stored as that
 *   chunk's checkpoint as soon as the encoder has passed the chunk's last sample. Frames of one run
 *   joined in order are exactly the continuous encoding of the run (no gaps at chunk boundaries).
 * - A lane that runs out of chunks takes the back half of the chunks another lane has not started
 *   (a new run, so a new encoder), so both cores stay busy to the end; with none left, it takes over
 *   the chunk another lane is speaking ahead of its encoder (that lane's run then ends after the
 *   chunk it is encoding). Neither when the work moved is smaller than what a new encoder costs to
 *   start. Chunks are as big as the engine takes (each is an engine start and per-chunk work here:
 *   a cut tapering to small chunks at each share's end, tried, made the bench book slower).
 * - A chunk the queue names `alone` (a long book's small first chunk) is a run of its own: its encoder
 *   ends with it, so its frames are stored as soon as it is spoken (the stream's first part), instead
 *   of when the next chunk's samples push them out of the encoder's buffers.
 *
 * Resume: a run's checkpoints are stored in order, so a stored chunk whose predecessor is not stored
 * always began a run (a fresh encoder, whose first frame refers to no earlier bytes): re-speaking the
 * missing chunks with fresh encoders joins cleanly with the stored ones.
 */
import { open, rename, rm, type FileHandle } from "node:fs/promises";
import { readWavInfo } from "@voiceloc/engines";
import {
  buildWavStreamToMp3StreamArgs,
  Mp3FrameCutter,
  pcmFormatForWav,
  WAV_DEMUXERS,
  wavStreamHeader,
  writeAll,
  type StdinFeeder,
  type EncodeOptions,
  type MediaToolkit,
  type Mp3FrameHeader,
  type PcmFormat,
} from "@voiceloc/media";

/** A chunk spoken to a WAV file, ready to be fed to an encoder. */
export interface SpokenChunk {
  index: number;
  path: string;
  format: PcmFormat;
  dataOffset: number;
  /** Bytes of whole sample frames. */
  dataBytes: number;
}

/**
 * Splits `items` (in order) into at most `parts` contiguous lists of about equal total weight: each
 * list ends where the running total comes nearest its share.
 */
export function splitByWeight(items: readonly number[], weight: (item: number) => number, parts: number): number[][] {
  const total = items.reduce((sum, item) => sum + Math.max(1, weight(item)), 0);
  const lists: number[][] = [];
  let current: number[] = [];
  let acc = 0;
  for (const item of items) {
    const w = Math.max(1, weight(item));
    const end = (total * (lists.length + 1)) / parts;
    // Taking the item would overshoot the share by more than leaving it out falls short: the list ends.
    if (lists.length < parts - 1 && current.length > 0 && acc + w - end > end - acc) {
      lists.push(current);
      current = [];
    }
    current.push(item);
    acc += w;
  }
  if (current.length > 0) lists.push(current);
  return lists;
}

/**
 * The chunks each lane still has to start. A lane takes from the front of its own list; a lane whose
 * list is empty takes the back half (by weight) of the fullest list, when that half weighs more than
 * `minTake` (a new encoder run costs about as much to start as encoding that much).
 */
export class ChunkQueue {
  private readonly lists: number[][];

  constructor(
    lists: readonly (readonly number[])[],
    lanes: number,
    private readonly weight: (item: number) => number,
    private readonly minTake = 0,
    /** Chunks that end their run (their encoder ends with them, so their frames are stored at once). */
    alone: readonly number[] = [],
  ) {
    this.lists = Array.from({ length: lanes }, (_, i) => [...(lists[i] ?? [])]);
    this.alone = new Set(alone);
  }

  private readonly alone: ReadonlySet<number>;

  /** The lane's next chunk when it directly follows `previous` in the book (same run), else undefined. */
  nextAfter(lane: number, previous: number): number | undefined {
    if (this.alone.has(previous)) return undefined;
    const list = this.lists[lane];
    if (list?.[0] === previous + 1) return list.shift();
    return undefined;
  }

  /** The lane's next chunk, or some taken from the fullest lane; undefined when none is left to start (or worth taking). */
  take(lane: number): number | undefined {
    const own = this.lists[lane];
    if (own === undefined) return undefined;
    if (own.length === 0) {
      const load = (list: number[]) => list.reduce((sum, item) => sum + this.weightOf(item), 0);
      const victim = this.lists.filter((list) => list !== own && list.length > 0).sort((a, b) => load(b) - load(a))[0];
      if (victim === undefined) return undefined;
      // The victim keeps the front half (it is speaking the chunk before it); this lane takes the rest.
      const half = load(victim) / 2;
      let keep = 0;
      let acc = 0;
      while (keep < victim.length - 1 && acc + this.weightOf(victim[keep] ?? 0) <= half) acc += this.weightOf(victim[keep++] ?? 0);
      if (victim.length === 1) keep = 0;
      if (load(victim.slice(keep)) <= this.minTake) return undefined;
      own.push(...victim.splice(keep));
    }
    return own.shift();
  }

  /** The weight of one chunk (at least 1). */
  weightOf(item: number): number {
    return Math.max(1, this.weight(item));
  }

  get remaining(): number {
    return this.lists.reduce((sum, list) => sum + list.length, 0);
  }
}

export interface LaneOptions {
  media: MediaToolkit;
  /** Speaks chunk `index` to a WAV file at `path`. */
  speak: (index: number, path: string, signal: AbortSignal) => Promise<void>;
  /** Where chunk `index`'s WAV file goes. */
  wavPath: (index: number) => string;
  /**
   * Stores chunk `index`'s MP3 frames (called in chunk order within a run, one at a time), with their
   * count and shape (every frame was checked by the cutter). The Buffer is reused for a later chunk
   * once the returned promise resolves: store (or copy) it before then.
   */
  store: (index: number, mp3: Buffer, frames: { count: number; header: Mp3FrameHeader | undefined }) => Promise<void>;
  /** The MP3 sample rate of the book; fixed by the first chunk spoken (see `bookSampleRate`). */
  sampleRate: (first: SpokenChunk) => Promise<number>;
  encode: Omit<EncodeOptions, "sampleRate" | "channels">;
  signal: AbortSignal;
  /**
   * What starting an encoder costs, in the queue's weight (the encoding of that much text): a lane
   * with nothing left takes over another lane's next chunk only while that lane has more than this
   * of its current chunk still to feed (else the new encoder would finish last). Default 0.
   */
  encoderStartWeight?: number;
}

/** Reads the WAV a chunk was spoken to; anything but 16-bit PCM is first converted to it by ffmpeg. */
async function readSpoken(media: MediaToolkit, index: number, path: string, signal: AbortSignal): Promise<SpokenChunk> {
  let info = await readWavInfo(path);
  if (info === undefined || info.bitsPerSample !== 16) {
    // Float or unusual samples (some HTTP engines): one conversion of this chunk to plain 16-bit PCM.
    const converted = `${path}.s16.wav`;
    await media.convertAudio({ input: path, outPath: converted, format: "wav", inputDemuxers: WAV_DEMUXERS, signal });
    await rename(converted, path);
    info = await readWavInfo(path);
  }
  const format = info === undefined ? undefined : pcmFormatForWav(info.bitsPerSample, info.sampleRate, info.channels);
  if (info === undefined || format === undefined) throw new Error(`The speech of chunk ${index + 1} is not a WAV file ffmpeg can read as PCM.`);
  const stated = info.statedDataBytes > 0 && info.statedDataBytes <= info.dataBytes ? info.statedDataBytes : info.dataBytes;
  const blockAlign = (info.channels * info.bitsPerSample) / 8;
  return { index, path, format, dataOffset: info.dataOffset, dataBytes: stated - (stated % blockAlign) };
}

/** A chunk an encoder run speaks ahead of feeding it; `taken` once an idle lane took it over. */
interface Prefetched {
  index: number;
  spoken: Promise<SpokenChunk>;
  taken: boolean;
  /** Share of the chunk being fed before it (so encoded after it) that is not fed yet, 0–1. */
  left: number;
  /** Weight of the chunk being fed before it. */
  before: number;
}

/** Bytes of samples read and written at a time (1 MiB: a quarter of the syscalls of 256 KiB, measured). */
const FEED_BYTES = 1024 * 1024;
/** Room made in the frame cutter for each read of the encoder's output file. */
const MP3_READ_BYTES = 256 * 1024;

const sameFormat = (a: PcmFormat, b: PcmFormat) => a.sampleFormat === b.sampleFormat && a.sampleRate === b.sampleRate && a.channels === b.channels;

/** What the lanes of one book share. */
interface Lanes {
  queue: ChunkQueue;
  options: LaneOptions;
  /** Aborted by the first failure of any lane, or by the caller's signal. */
  signal: AbortSignal;
  /** Per lane, the chunk its encoder run speaks ahead and has not begun feeding. */
  prefetched: Map<number, Prefetched>;
  /** Speaks chunk `index` and reads its WAV (removed again when that fails). */
  speak(index: number): Promise<SpokenChunk>;
}

/**
 * The MP3 file of one encoder run, read back as it grows into the frame cutter's own buffer (no pipe
 * of Node's between them: each piece read from a pipe is a new buffer, ~80 MB of them per 100,000
 * characters, which kept the collector running), each fully encoded chunk's frames handed to `store`
 * in order, one at a time.
 */
class RunOutput {
  /** Chunks fed whole, with the output sample their audio ends at, oldest first. */
  private readonly ends: Array<{ index: number; endSample: number }> = [];
  private readonly cutter = new Mp3FrameCutter();
  /** Buffers for chunks' MP3, each reused once its chunk is stored (a book's MP3 is not a stream of new buffers). */
  private readonly spare: Buffer[] = [];
  private file: FileHandle | undefined;
  private bytesRead = 0;
  private draining: Promise<void> = Promise.resolve();
  private storing: Promise<void> = Promise.resolve();
  drainFailure: { error: unknown } | undefined;
  storeFailure: { error: unknown } | undefined;

  constructor(
    readonly path: string,
    private readonly store: LaneOptions["store"],
    /** Stops the run (its encoder) after a read or store failed. */
    private readonly stop: (error: unknown) => void,
  ) {}

  /** Chunk `index` was fed whole; its audio ends at output sample `endSample`. */
  fed(index: number, endSample: number): void {
    this.ends.push({ index, endSample });
  }

  /** Reads what the encoder has written since the last look and hands finished chunks their frames. */
  drain(): Promise<void> {
    this.draining = this.draining.then(() => this.drainOnce());
    return this.draining;
  }

  /** Once the encoder exited: reads the rest and hands the last chunk every frame left. */
  async finish(): Promise<void> {
    await this.drain();
    if (this.drainFailure !== undefined) throw this.drainFailure.error;
    if (this.file === undefined) throw new Error("The MP3 encoder wrote no file.");
    if (this.cutter.leftover !== 0) throw new Error("The MP3 encoder stopped in the middle of a frame.");
    this.emitReady(true);
  }

  /** Waits for the reads and stores under way (after a failure). */
  async settle(): Promise<void> {
    await this.draining;
    await this.storing;
  }

  /** Waits for every chunk's store; throws the first store failure. */
  async stored(): Promise<void> {
    await this.storing;
    if (this.storeFailure !== undefined) throw this.storeFailure.error;
  }

  /** Closes and removes the run's file. */
  async close(): Promise<void> {
    await this.draining;
    await this.file?.close().catch(() => undefined);
    await rm(this.path, { force: true });
  }

  private async drainOnce(): Promise<void> {
    if (this.drainFailure !== undefined) return;
    try {
      if (this.file === undefined) {
        try {
          this.file = await open(this.path, "r");
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOENT") return; // not created by the encoder yet
          throw error;
        }
      }
      for (;;) {
        const space = this.cutter.space(MP3_READ_BYTES);
        const { bytesRead } = await this.file.read(space, 0, space.length, this.bytesRead);
        if (bytesRead === 0) break;
        this.bytesRead += bytesRead;
        this.cutter.commit(bytesRead);
      }
      this.emitReady(false);
    } catch (error) {
      this.drainFailure = { error };
      this.stop(error);
    }
  }

  /** Hands each fully encoded chunk its frames: those whose first sample lies before the chunk's end. */
  private emitReady(final: boolean): void {
    const spf = this.cutter.header?.samplesPerFrame ?? 1152;
    const framesSeen = this.cutter.framesSeen;
    while (this.ends.length > 0) {
      const { index, endSample } = this.ends[0]!;
      const last = final && this.ends.length === 1;
      const endFrame = last ? framesSeen : Math.ceil(endSample / spf);
      if (!final && framesSeen < endFrame) return;
      this.emit(index, Math.max(0, Math.min(endFrame, framesSeen) - this.cutter.framesTaken));
      this.ends.shift();
    }
  }

  private emit(index: number, count: number): void {
    const cutter = this.cutter;
    const bytes = cutter.bytesOf(count);
    let buffer = this.spare.pop();
    if (buffer === undefined || buffer.length < bytes) buffer = Buffer.allocUnsafe(Math.max(bytes, 2 * 1024 * 1024));
    const held = buffer;
    const frames = { count: Math.min(count, cutter.framesSeen - cutter.framesTaken), header: cutter.header };
    const mp3 = cutter.take(count, held);
    this.storing = this.storing.then(async () => {
      if (this.storeFailure !== undefined) return;
      try {
        await this.store(index, mp3, frames);
        this.spare.push(held);
      } catch (error) {
        this.storeFailure = { error };
        this.stop(error);
      }
    });
  }
}

/**
 * Feeds a run's samples to its encoder through one reused buffer (no allocation per piece: a book's
 * samples pass through this process without churning its memory): `first`, then the lane's next chunk
 * in book order, spoken while the encoder works on the one before, and so on. Resolves to a chunk spoken
 * in another format than the run's (another voice or engine answered): it starts a new run.
 */
async function feedRun(
  lanes: Lanes,
  lane: number,
  first: SpokenChunk,
  outRate: number,
  output: RunOutput,
  stdin: Parameters<StdinFeeder["feed"]>[0],
): Promise<SpokenChunk | undefined> {
  const { queue, prefetched } = lanes;
  const input = first.format;
  const blockAlign = (input.channels * Number(input.sampleFormat.replace(/\D/g, ""))) / 8;
  let fedSamples = 0;
  const buffer = Buffer.allocUnsafe(FEED_BYTES);
  await writeAll(stdin, wavStreamHeader(input));
  let current: SpokenChunk | undefined = first;
  while (current !== undefined) {
    const nextIndex = queue.nextAfter(lane, current.index);
    // The engine speaks the next chunk while the encoder works on this one. Until this run begins
    // feeding it, a lane with nothing left to do may take it over (see `runLane`).
    const next = nextIndex === undefined ? undefined : lanes.speak(nextIndex);
    next?.catch(() => undefined);
    const ticket: Prefetched | undefined =
      next === undefined || nextIndex === undefined ? undefined : { index: nextIndex, spoken: next, taken: false, left: 1, before: queue.weightOf(current.index) };
    if (ticket !== undefined) prefetched.set(lane, ticket);
    const file = await open(current.path, "r");
    try {
      let position = current.dataOffset;
      const end = current.dataOffset + current.dataBytes;
      while (position < end) {
        const { bytesRead } = await file.read(buffer, 0, Math.min(buffer.length, end - position), position);
        if (bytesRead === 0) break;
        await writeAll(stdin, buffer.subarray(0, bytesRead));
        position += bytesRead;
        if (ticket !== undefined) ticket.left = (end - position) / Math.max(1, current.dataBytes);
        void output.drain();
      }
    } finally {
      await file.close();
      await rm(current.path, { force: true });
    }
    fedSamples += current.dataBytes / blockAlign;
    output.fed(current.index, Math.round((fedSamples * outRate) / input.sampleRate));
    if (ticket !== undefined && prefetched.get(lane) === ticket) prefetched.delete(lane);
    if (next === undefined || ticket?.taken === true) return undefined; // the next chunk went to an idle lane: this run ends here
    const spoken = await next;
    if (!sameFormat(spoken.format, input)) return spoken; // another voice or engine answered in another format
    current = spoken;
  }
  return undefined;
}

/**
 * Encodes the run of `lane` that starts with `first` (one encoder for the run); resolves to a chunk
 * spoken for a next run (another format), if any.
 */
async function encodeRun(lanes: Lanes, lane: number, first: SpokenChunk): Promise<SpokenChunk | undefined> {
  const { options, signal } = lanes;
  const outRate = await options.sampleRate(first);
  const run = new AbortController();
  const onAbort = () => run.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  // The encoder writes the run's MP3 to a file, read back as it grows (RunOutput).
  const output = new RunOutput(`${options.wavPath(first.index)}.run.mp3`, options.store, (error) => run.abort(error));
  await rm(output.path, { force: true });
  let carry: SpokenChunk | undefined;
  const feeder: StdinFeeder = {
    async feed(stdin) {
      carry = await feedRun(lanes, lane, first, outRate, output, stdin);
    },
  };
  try {
    await options.media.run(buildWavStreamToMp3StreamArgs({ encode: { ...options.encode, sampleRate: outRate, channels: 1 }, output: output.path }), {
      signal: run.signal,
      what: "Encoding the speech",
      stdin: feeder,
    });
    await output.finish();
  } catch (error) {
    await output.settle();
    if (carry !== undefined) await rm(carry.path, { force: true });
    throw output.storeFailure?.error ?? output.drainFailure?.error ?? error;
  } finally {
    signal.removeEventListener("abort", onAbort);
    await output.close();
  }
  await output.stored();
  return carry;
}

/**
 * One lane: starts runs with its own chunks, then with chunks taken from the fullest lane, then with
 * the chunk another lane is speaking ahead of its encoder, until nothing is left worth taking.
 */
async function runLane(lanes: Lanes, id: number, failed: () => boolean): Promise<void> {
  const { queue, prefetched, options, signal } = lanes;
  let carry: SpokenChunk | undefined;
  while (!failed() && !signal.aborted) {
    let first = carry;
    carry = undefined;
    if (first === undefined) {
      const index = queue.take(id);
      if (index !== undefined) first = await lanes.speak(index);
      else {
        // Nothing left to start: take over the chunk another lane is speaking ahead of its encoder
        // (the book's last chunks end on both cores at once instead of one after the other).
        // Only while the other lane's encoder has at least half of its current chunk left, and more
        // than a new encoder costs to start: nearer its end, a new encoder for the taken chunk would
        // finish after that lane would have.
        const other = [...prefetched.entries()].find(
          ([owner, ticket]) => owner !== id && ticket.left >= 0.5 && ticket.left * ticket.before > (options.encoderStartWeight ?? 0),
        );
        if (other === undefined) return;
        const [owner, ticket] = other;
        prefetched.delete(owner);
        ticket.taken = true;
        first = await ticket.spoken;
      }
    }
    carry = await encodeRun(lanes, id, first);
  }
}

/**
 * Runs `lanes` lanes over `queue` until every chunk is spoken, encoded and stored. The first failure
 * aborts the other lanes (their engines and encoders are stopped) and is thrown once all have ended.
 */
export async function runLanes(queue: ChunkQueue, lanes: number, options: LaneOptions): Promise<void> {
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(options.signal.reason);
  if (options.signal.aborted) onParentAbort();
  else options.signal.addEventListener("abort", onParentAbort, { once: true });
  const signal = controller.signal;
  let failure: { error: unknown } | undefined;
  const shared: Lanes = {
    queue,
    options,
    signal,
    prefetched: new Map(),
    async speak(index) {
      const path = options.wavPath(index);
      try {
        await options.speak(index, path, signal);
        return await readSpoken(options.media, index, path, signal);
      } catch (error) {
        await rm(path, { force: true });
        throw error;
      }
    },
  };
  try {
    await Promise.all(
      Array.from({ length: Math.max(1, lanes) }, async (_, id) => {
        try {
          await runLane(shared, id, () => failure !== undefined);
        } catch (error) {
          failure ??= { error };
          controller.abort(error);
        }
      }),
    );
  } finally {
    options.signal.removeEventListener("abort", onParentAbort);
  }
  if (failure !== undefined) throw failure.error;
  if (signal.aborted) throw signal.reason;
}
