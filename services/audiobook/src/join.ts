import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import { Readable } from "node:stream";
import { buildMp3InfoFrame, MediaError, sameMp3Stream, scanMp3Frames, type Mp3FrameHeader } from "@voiceloc/media";

export interface JoinedMp3 {
  /** The whole book: an Info frame stating the frame count, then every chunk's frames in order. */
  stream: Readable;
  /** Bytes the stream yields. */
  bytes: number;
  frames: number;
  /** Duration as MP3 readers state it (frames × samples per frame / sample rate). */
  seconds: number;
}

/** A chunk's frames as the lanes counted them when they cut it (no need to read it again). */
export interface CountedChunk {
  frames: number;
  bytes: number;
  /** The shape of its frames; undefined when it has none. */
  header: Mp3FrameHeader | undefined;
}

/**
 * Joins the chunks' MP3 frames (bare frames of one shape, as the lanes store them) into one MP3 by
 * copying them behind a Xing "Info" frame: one pass over the bytes, no process and no second encode.
 * Each chunk is checked frame by frame first (the same MPEG version, sample rate and channel mode
 * throughout), so the joined file's stated length is exact; `counted(i)` gives the count of a chunk
 * the lanes cut in this process (checked as they cut it), which is then not read twice.
 */
export async function joinMp3Chunks(inputs: readonly string[], counted: (index: number) => CountedChunk | undefined = () => undefined): Promise<JoinedMp3> {
  let header: Mp3FrameHeader | undefined;
  let frames = 0;
  let audioBytes = 0;
  // One buffer, grown to the largest chunk, for every chunk's check (a book's MP3 passes through it
  // with no allocation per chunk; fresh buffers of that size make the collector run several times).
  let buffer = Buffer.allocUnsafe(0);
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
    audioBytes += scan.bytes;
  }
  if (header === undefined || frames === 0) throw new MediaError("MEDIA_NO_AUDIO", "The audio book has no audio.");
  const info = buildMp3InfoFrame(header, frames, audioBytes);
  async function* bytes(): AsyncGenerator<Buffer> {
    yield info;
    for (const path of inputs) {
      for await (const piece of createReadStream(path, { highWaterMark: 1024 * 1024 })) yield piece as Buffer;
    }
  }
  return {
    stream: Readable.from(bytes(), { objectMode: false }),
    bytes: info.length + audioBytes,
    frames,
    seconds: (frames * header.samplesPerFrame) / header.sampleRate,
  };
}
