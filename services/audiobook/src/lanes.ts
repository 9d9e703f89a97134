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
 *   (a new run, so a new encoder), so both cores stay busy to the end.
 *
 * Resume: a run's checkpoints are stored in order, so a stored chunk whose predecessor is not stored
 * always began a run (a fresh encoder, whose first frame refers to no earlier bytes): re-speaking the
 * missing chunks with fresh encoders joins cleanly with the stored ones.
 */
import { open, rename, rm } from "node:fs/promises";
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

/** Splits `items` (in order) into at most `parts` contiguous lists of about equal total weight. */
export function splitByWeight(items: readonly number[], weight: (item: number) => number, parts: number): number[][] {
  const total = items.reduce((sum, item) => sum + Math.max(1, weight(item)), 0);
  const lists: number[][] = [];
  let current: number[] = [];
  let acc = 0;
  for (const item of items) {
    current.push(item);
    acc += Math.max(1, weight(item));
    if (lists.length < parts - 1 && acc >= (total * (lists.length + 1)) / parts) {
      lists.push(current);
      current = [];
    }
  }
  if (current.length > 0) lists.push(current);
  return lists;
}

/**
 * The chunks each lane still has to start. A lane takes from the front of its own list; a lane whose
 * list is empty takes the back half (by weight) of the fullest list.
 */
export class ChunkQueue {
  private readonly lists: number[][];

  constructor(
    lists: readonly (readonly number[])[],
    lanes: number,
    private readonly weight: (item: number) => number,
  ) {
    this.lists = Array.from({ length: lanes }, (_, i) => [...(lists[i] ?? [])]);
  }

  /** The lane's next chunk when it directly follows `previous` in the book (same run), else undefined. */
  nextAfter(lane: number, previous: number): number | undefined {
    const list = this.lists[lane];
    if (list?.[0] === previous + 1) return list.shift();
    return undefined;
  }

  /** The lane's next chunk, or one taken from the fullest lane; undefined when no chunk is left to start. */
  take(lane: number): number | undefined {
    const own = this.lists[lane];
    if (own === undefined) return undefined;
    if (own.length === 0) {
      const load = (list: number[]) => list.reduce((sum, item) => sum + Math.max(1, this.weight(item)), 0);
      const victim = this.lists.filter((list) => list !== own && list.length > 0).sort((a, b) => load(b) - load(a))[0];
      if (victim === undefined) return undefined;
      // The victim keeps the front half (it is speaking the chunk before it); this lane takes the rest.
      const half = load(victim) / 2;
      let keep = 0;
      let acc = 0;
      while (keep < victim.length - 1 && acc + Math.max(1, this.weight(victim[keep] ?? 0)) <= half) acc += Math.max(1, this.weight(victim[keep++] ?? 0));
      if (victim.length === 1) keep = 0;
      own.push(...victim.splice(keep));
    }
    return own.shift();
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
  /** Stores chunk `index`'s MP3 frames (called in chunk order within a run, one at a time). */
  store: (index: number, mp3: Buffer) => Promise<void>;
  /** The MP3 sample rate of the book; fixed by the first chunk spoken (see `bookSampleRate`). */
  sampleRate: (first: SpokenChunk) => Promise<number>;
  encode: Omit<EncodeOptions, "sampleRate" | "channels">;
  signal: AbortSignal;
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

/** Bytes of samples read and written at a time (1 MiB: a quarter of the syscalls of 256 KiB, measured). */
const FEED_BYTES = 1024 * 1024;

const sameFormat = (a: PcmFormat, b: PcmFormat) => a.sampleFormat === b.sampleFormat && a.sampleRate === b.sampleRate && a.channels === b.channels;

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

  const speak = async (index: number): Promise<SpokenChunk> => {
    const path = options.wavPath(index);
    try {
      await options.speak(index, path, signal);
      return await readSpoken(options.media, index, path, signal);
    } catch (error) {
      await rm(path, { force: true });
      throw error;
    }
  };

  /** Encodes the run that starts with `first`; returns a chunk spoken for a next run (another format), if any. */
  const encodeRun = async (lane: number, first: SpokenChunk): Promise<SpokenChunk | undefined> => {
    const outRate = await options.sampleRate(first);
    const input = first.format;
    const blockAlign = (input.channels * Number(input.sampleFormat.replace(/\D/g, ""))) / 8;
    let carry: SpokenChunk | undefined;
    /** Chunks fed whole, with the output sample their audio ends at, oldest first. */
    const ends: Array<{ index: number; endSample: number }> = [];
    let fedSamples = 0;
    const cutter = new Mp3FrameCutter();
    let storing: Promise<void> = Promise.resolve();
    let storeFailure: { error: unknown } | undefined;
    const run = new AbortController();
    const onAbort = () => run.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });

    const emit = (index: number, count: number) => {
      const mp3 = cutter.take(count);
      storing = storing.then(async () => {
        if (storeFailure !== undefined) return;
        try {
          await options.store(index, mp3);
        } catch (error) {
          storeFailure = { error };
          run.abort(error);
        }
      });
    };
    /** Hands each fully encoded chunk its frames: those whose first sample lies before the chunk's end. */
    const emitReady = (final: boolean) => {
      const spf = cutter.header?.samplesPerFrame ?? 1152;
      const framesSeen = cutter.framesSeen;
      while (ends.length > 0) {
        const { index, endSample } = ends[0]!;
        const last = final && ends.length === 1;
        const endFrame = last ? framesSeen : Math.ceil(endSample / spf);
        if (!final && framesSeen < endFrame) return;
        emit(index, Math.max(0, Math.min(endFrame, framesSeen) - cutter.framesTaken));
        ends.shift();
      }
    };

    /**
     * Feeds the run's samples to the encoder through one reused buffer (no allocation per piece: a
     * book's samples pass through this process without churning its memory).
     */
    const feeder: StdinFeeder = {
      async feed(stdin) {
        const buffer = Buffer.allocUnsafe(FEED_BYTES);
        await writeAll(stdin, wavStreamHeader(input));
        let current: SpokenChunk | undefined = first;
        while (current !== undefined) {
          const nextIndex = queue.nextAfter(lane, current.index);
          // The engine speaks the next chunk while the encoder works on this one.
          const next = nextIndex === undefined ? undefined : speak(nextIndex);
          next?.catch(() => undefined);
          const file = await open(current.path, "r");
          try {
            let position = current.dataOffset;
            const end = current.dataOffset + current.dataBytes;
            while (position < end) {
              const { bytesRead } = await file.read(buffer, 0, Math.min(buffer.length, end - position), position);
              if (bytesRead === 0) break;
              await writeAll(stdin, buffer.subarray(0, bytesRead));
              position += bytesRead;
            }
          } finally {
            await file.close();
            await rm(current.path, { force: true });
          }
          fedSamples += current.dataBytes / blockAlign;
          ends.push({ index: current.index, endSample: Math.round((fedSamples * outRate) / input.sampleRate) });
          if (next === undefined) return;
          const spoken = await next;
          if (!sameFormat(spoken.format, input)) {
            carry = spoken; // another voice or engine answered in another format: it starts a new run
            return;
          }
          current = spoken;
        }
      },
    };

    try {
      await options.media.run(buildWavStreamToMp3StreamArgs({ encode: { ...options.encode, sampleRate: outRate, channels: 1 } }), {
        signal: run.signal,
        what: "Encoding the speech",
        stdin: feeder,
        onStdout: (chunk) => {
          cutter.push(chunk);
          emitReady(false);
        },
      });
      if (cutter.leftover !== 0) throw new Error("The MP3 encoder stopped in the middle of a frame.");
      emitReady(true);
    } catch (error) {
      await storing;
      if (carry !== undefined) await rm(carry.path, { force: true });
      throw storeFailure?.error ?? error;
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
    await storing;
    if (storeFailure !== undefined) throw storeFailure.error;
    return carry;
  };

  const lane = async (id: number): Promise<void> => {
    let carry: SpokenChunk | undefined;
    while (failure === undefined && !signal.aborted) {
      let first = carry;
      carry = undefined;
      if (first === undefined) {
        const index = queue.take(id);
        if (index === undefined) return;
        first = await speak(index);
      }
      carry = await encodeRun(id, first);
    }
  };

  try {
    await Promise.all(
      Array.from({ length: Math.max(1, lanes) }, async (_, id) => {
        try {
          await lane(id);
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
