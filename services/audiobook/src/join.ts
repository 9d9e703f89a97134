import { open } from "node:fs/promises";
import { buildMp3InfoFrame, MediaError, sameMp3Stream, scanMp3Frames, type Mp3FrameHeader } from "@voiceloc/media";

export interface JoinedMp3 {
  /** Bytes written: the Info frame, then every chunk's frames. */
  bytes: number;
  frames: number;
  /** Duration as MP3 readers state it (frames × samples per frame / sample rate). */
  seconds: number;
  /** Seconds of each input, in order (its frames × samples per frame / sample rate). */
  chunkSeconds: number[];
}

/** A chunk's frames as the lanes counted them when they cut it (no need to read it again). */
export interface CountedChunk {
  frames: number;
  bytes: number;
  /** The shape of its frames; undefined when it has none. */
  header: Mp3FrameHeader | undefined;
}

/** Bytes read and written at a time by the join (one buffer for the whole book). */
const COPY_BYTES = 1024 * 1024;

/**
 * Joins the chunks' MP3 frames (bare frames of one shape, as the lanes store them) into one MP3 file
 * at `outPath` (created new) by copying them behind a Xing "Info" frame: one pass over the bytes
 * through one reused buffer, no process and no second encode. Each chunk is checked frame by frame
 * first (the same MPEG version, sample rate and channel mode throughout), so the joined file's stated
 * length is exact; `counted(i)` gives the count of a chunk the lanes cut in this process (checked as
 * they cut it), which is then not read twice.
 */
export async function joinMp3Chunks(
  inputs: readonly string[],
  outPath: string,
  counted: (index: number) => CountedChunk | undefined = () => undefined,
): Promise<JoinedMp3> {
  let header: Mp3FrameHeader | undefined;
  let frames = 0;
  let audioBytes = 0;
  const chunkFrames: number[] = [];
  // One buffer, grown to the largest chunk checked, for every chunk's check and copy (a book's MP3
  // passes through it with no allocation per chunk; fresh buffers make the collector run).
  let buffer = Buffer.allocUnsafe(COPY_BYTES);
  /** Reads a chunk stored by an earlier delivery and counts its frames, checking each. */
  async function scanChunk(path: string): Promise<CountedChunk> {
    const file = await open(path, "r");
    let bytes: Buffer;
    try {
      const { size } = await file.stat();
      if (size > buffer.length) buffer = Buffer.allocUnsafe(Math.max(size, buffer.length * 2));
      let read = 0;
      while (read < size) {
        const { bytesRead } = await file.read(buffer, read, size - read, read);
        if (bytesRead === 0) break;
        read += bytesRead;
      }
      bytes = buffer.subarray(0, read);
    } finally {
      await file.close();
    }
    const scan = scanMp3Frames(bytes);
    return { frames: scan.frames, bytes: scan.bytes, header: scan.header };
  }
  for (const [i, path] of inputs.entries()) {
    const scan = counted(i) ?? (await scanChunk(path));
    if (scan.header !== undefined) {
      if (header !== undefined && !sameMp3Stream(header, scan.header)) {
        throw new MediaError("MEDIA_UNREADABLE", `Part ${i + 1} of the audio book was encoded in another shape than the parts before it.`);
      }
      header ??= scan.header;
    }
    frames += scan.frames;
    chunkFrames.push(scan.frames);
    audioBytes += scan.bytes;
  }
  if (header === undefined || frames === 0) throw new MediaError("MEDIA_NO_AUDIO", "The audio book has no audio.");
  const info = buildMp3InfoFrame(header, frames, audioBytes);

  const out = await open(outPath, "wx");
  let written = 0;
  try {
    const write = async (bytes: Uint8Array): Promise<void> => {
      for (let done = 0; done < bytes.length; ) {
        const { bytesWritten } = await out.write(bytes, done, bytes.length - done, written);
        done += bytesWritten;
        written += bytesWritten;
      }
    };
    await write(info);
    for (const path of inputs) {
      const file = await open(path, "r");
      try {
        for (let position = 0; ; ) {
          const { bytesRead } = await file.read(buffer, 0, buffer.length, position);
          if (bytesRead === 0) break;
          position += bytesRead;
          await write(buffer.subarray(0, bytesRead));
        }
      } finally {
        await file.close();
      }
    }
  } finally {
    await out.close();
  }
  // A chunk is never rewritten while its book is joined; a size that moved means the store changed under us.
  if (written !== info.length + audioBytes) throw new Error(`The joined audio book has ${written} bytes instead of ${info.length + audioBytes}.`);
  const perFrame = header.samplesPerFrame / header.sampleRate;
  return { bytes: written, frames, seconds: frames * perFrame, chunkSeconds: chunkFrames.map((n) => n * perFrame) };
}
