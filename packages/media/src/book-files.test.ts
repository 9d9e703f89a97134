/**
 * Audio book files written for real: three tones of different pitch joined into an MP3 by this
 * package's encoder, wrapped with chapters at the tones' boundaries, tags and generated covers, then
 * read back the way players and ffprobe read them (ID3 frames, MP4 brand, chapters, the picture's
 * bytes, the pitch heard at each chapter's start).
 */
import { execFile } from "node:child_process";
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "@voiceloc/log";
import { makeHugePng, makeSpeechWav, makeToneWav, tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BookChapter, BookTags } from "./chapters.ts";
import { resolveFfmpeg } from "./resolve.ts";
import type { FfmpegProgress } from "./run.ts";
import { createMediaToolkit, type MediaToolkit } from "./toolkit.ts";

const exec = promisify(execFile);

let media: MediaToolkit;
let dir: string;
let cleanup: () => Promise<void>;
let bookMp3: string;
let pngCover: string;
let jpegCover: string;

/** The tones of the three chapters and their lengths: each chapter is heard by its pitch. */
const PARTS = [
  { hz: 300, seconds: 3 },
  { hz: 500, seconds: 4 },
  { hz: 800, seconds: 3 },
] as const;
const HOSTILE_TITLE = "Part = one; # not a comment \\ backslash\nsecond line";
const CHAPTERS: BookChapter[] = [
  { title: HOSTILE_TITLE, startSeconds: 0, endSeconds: 3 },
  { title: "Глава 2 — 第二章 « été »", startSeconds: 3, endSeconds: 7 },
  { title: "Three", startSeconds: 7, endSeconds: 10 },
];
const TAGS: BookTags = { title: "The Book; #1 = best", album: "Collected Tones", artist: "espeak-ng en", narrator: "espeak-ng en", language: "eng", genre: "Audiobook" };

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir("voiceloc-media-books-"));
  media = createMediaToolkit(await resolveFfmpeg({ logger: silentLogger() }), silentLogger());
  const parts = await Promise.all(PARTS.map((p, i) => makeToneWav(p.seconds, join(dir, `part${i}.wav`), { frequency: p.hz, sampleRate: 22050 })));
  bookMp3 = await media.concatAudio({ inputs: parts, outPath: join(dir, "joined.mp3"), format: "mp3", encode: { bitrateKbps: 64, channels: 1 } });
  pngCover = join(dir, "cover.png");
  jpegCover = join(dir, "cover.jpg");
  await ffmpeg(["-f", "lavfi", "-i", "color=c=0x336699:s=600x600", "-frames:v", "1", "-f", "image2", pngCover]);
  await ffmpeg(["-f", "lavfi", "-i", "color=c=0xcc3311:s=500x500", "-frames:v", "1", "-f", "image2", jpegCover]);
});
afterAll(async () => cleanup());

async function ffmpeg(args: string[]): Promise<Buffer> {
  const { stdout } = await exec("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", ...args], { encoding: "buffer", maxBuffer: 256 * 1024 * 1024 });
  return stdout;
}

interface Probed {
  format: { format_name: string; duration: string; tags?: Record<string, string> };
  streams: { codec_name: string; codec_type: string; channels?: number; bit_rate?: string; disposition: { attached_pic: number }; tags?: Record<string, string> }[];
  chapters: { start_time: string; end_time: string; tags?: { title?: string } }[];
}

async function ffprobe(path: string): Promise<Probed> {
  const { stdout } = await exec("ffprobe", ["-v", "error", "-show_chapters", "-show_streams", "-show_format", "-of", "json", path]);
  return JSON.parse(stdout) as Probed;
}

/** MD5 of every audio packet, as stored (nothing decoded). */
async function audioPacketsMd5(path: string): Promise<string> {
  return (await ffmpeg(["-i", path, "-map", "0:a", "-c", "copy", "-f", "md5", "-"])).toString().trim();
}

/** The attached picture's bytes as the file stores them. */
async function pictureBytes(path: string): Promise<Buffer> {
  return ffmpeg(["-i", path, "-map", "0:v", "-c", "copy", "-f", "image2pipe", "-"]);
}

/** Mono 44.1 kHz samples of a file's audio. */
async function decode(path: string): Promise<Float64Array> {
  const raw = await ffmpeg(["-i", path, "-map", "0:a", "-ac", "1", "-ar", "44100", "-f", "s16le", "-c:a", "pcm_s16le", "-"]);
  const pcm = new Int16Array(raw.buffer, raw.byteOffset, raw.byteLength / 2);
  return Float64Array.from(pcm, (v) => v / 32768);
}

/** The pitch of `length` seconds from `at`, by normalised autocorrelation (first peak near the best one, refined by a parabola). */
function pitchAt(samples: Float64Array, at: number, length = 0.2, rate = 44100): number {
  const from = Math.round(at * rate);
  const n = Math.round(length * rate);
  const window = samples.subarray(from, from + n);
  const minLag = Math.floor(rate / 1500);
  const maxLag = Math.ceil(rate / 100);
  const r = new Float64Array(maxLag + 2);
  for (let lag = minLag; lag <= maxLag + 1; lag++) {
    let sum = 0;
    let energy = 0;
    for (let i = 0; i + lag < window.length; i++) {
      sum += (window[i] ?? 0) * (window[i + lag] ?? 0);
      energy += (window[i] ?? 0) ** 2 + (window[i + lag] ?? 0) ** 2;
    }
    r[lag] = energy === 0 ? 0 : (2 * sum) / energy;
  }
  let best = 0;
  for (let lag = minLag; lag <= maxLag; lag++) best = Math.max(best, r[lag] ?? 0);
  for (let lag = minLag + 1; lag <= maxLag; lag++) {
    const [a, b, c] = [r[lag - 1] ?? 0, r[lag] ?? 0, r[lag + 1] ?? 0];
    if (b >= 0.9 * best && b >= a && b >= c) {
      const shift = (a - c) / (2 * (a - 2 * b + c) || 1);
      return rate / (lag + shift);
    }
  }
  return Number.NaN;
}

interface Id3Frame {
  id: string;
  body: Buffer;
}

/** The frames of an ID3v2.3 body (4-byte sizes, 2 flag bytes), stopping at padding. */
function id3Frames(data: Buffer): Id3Frame[] {
  const frames: Id3Frame[] = [];
  let i = 0;
  while (i + 10 <= data.length && data[i] !== 0) {
    const size = data.readUInt32BE(i + 4);
    frames.push({ id: data.toString("latin1", i, i + 4), body: data.subarray(i + 10, i + 10 + size) });
    i += 10 + size;
  }
  return frames;
}

/** The ID3v2 tag at the start of an MP3: its version and frames. */
async function id3Tag(path: string): Promise<{ version: number; frames: Id3Frame[] }> {
  const file = await readFile(path);
  expect(file.toString("latin1", 0, 3)).toBe("ID3");
  let size = 0;
  for (let k = 6; k < 10; k++) size = size * 128 + (file[k] ?? 0);
  return { version: file[3] ?? 0, frames: id3Frames(file.subarray(10, 10 + size)) };
}

/** An ID3 text frame's text (encoding 0: Latin-1, 1: UTF-16 with a BOM, 3: UTF-8). */
function id3Text(body: Buffer): string {
  const encoding = body[0];
  const rest = body.subarray(1);
  if (encoding === 1) {
    const le = rest[0] === 0xff;
    const text = rest.subarray(2);
    const units = le ? text : Buffer.from(text).swap16();
    return units.toString("utf16le").replace(/\0+$/, "");
  }
  return rest.toString(encoding === 3 ? "utf8" : "latin1").replace(/\0+$/, "");
}

function cString(body: Buffer, from: number): [string, number] {
  const end = body.indexOf(0, from);
  return [body.toString("latin1", from, end), end + 1];
}

async function noTempFiles(): Promise<void> {
  expect((await readdir(dir)).filter((f) => f.endsWith(".tmp"))).toEqual([]);
}

function expectChaptersLikeSource(chapters: readonly BookChapter[]): void {
  expect(chapters.map((c) => c.title)).toEqual(CHAPTERS.map((c) => c.title));
  chapters.forEach((chapter, i) => {
    expect(Math.abs(chapter.startSeconds - (CHAPTERS[i]?.startSeconds ?? -1))).toBeLessThanOrEqual(0.05);
    expect(Math.abs(chapter.endSeconds - (CHAPTERS[i]?.endSeconds ?? -1))).toBeLessThanOrEqual(0.05);
  });
}

/** Each chapter sounds like its tone just after it starts and just before it ends: the marks sit on the audio they name. */
async function expectChaptersOnTheirAudio(path: string): Promise<void> {
  const samples = await decode(path);
  const chapters = await media.chaptersOf(path);
  chapters.forEach((chapter, i) => {
    const hz = PARTS[i]?.hz ?? 0;
    expect(Math.abs(pitchAt(samples, chapter.startSeconds + 0.06) - hz) / hz).toBeLessThan(0.03);
    expect(Math.abs(pitchAt(samples, chapter.endSeconds - 0.26) - hz) / hz).toBeLessThan(0.03);
  });
}

describe("wrapAudioBook: MP3", () => {
  let book: string;
  beforeAll(async () => {
    book = join(dir, "book.mp3");
    const written = await media.wrapAudioBook({ input: bookMp3, outPath: book, format: "mp3", chapters: CHAPTERS, tags: TAGS, cover: pngCover });
    expect(written).toMatchObject({ path: book, format: "mp3", chapters: 3, cover: { type: "png", width: 600, height: 600 } });
  });

  it("ffprobe lists the chapters in order with their titles (escaped characters and all) and times within 50 ms", async () => {
    const probed = await ffprobe(book);
    expect(probed.chapters).toHaveLength(3);
    expectChaptersLikeSource(await media.chaptersOf(book));
    await expectChaptersOnTheirAudio(book);
  });

  it("holds an ID3v2.3 tag with TIT2/TALB/TPE1/TCOM/TLAN, a CHAP per chapter with its TIT2, a top-level ordered CTOC and an APIC front cover", async () => {
    const { version, frames } = await id3Tag(book);
    expect(version).toBe(3);
    const text = (id: string) => id3Text(frames.find((f) => f.id === id)?.body ?? Buffer.from([0]));
    expect(text("TIT2")).toBe(TAGS.title);
    expect(text("TALB")).toBe(TAGS.album);
    expect(text("TPE1")).toBe(TAGS.artist);
    expect(text("TCOM")).toBe(TAGS.narrator);
    expect(text("TLAN")).toBe("eng");

    const chaps = frames.filter((f) => f.id === "CHAP");
    expect(chaps).toHaveLength(3);
    const chapIds = chaps.map((chap, i) => {
      const [id, at] = cString(chap.body, 0);
      expect(chap.body.readUInt32BE(at)).toBe(Math.round((CHAPTERS[i]?.startSeconds ?? 0) * 1000));
      expect(chap.body.readUInt32BE(at + 4)).toBe(Math.round((CHAPTERS[i]?.endSeconds ?? 0) * 1000));
      const sub = id3Frames(chap.body.subarray(at + 16));
      expect(sub.map((f) => f.id)).toContain("TIT2");
      expect(id3Text(sub.find((f) => f.id === "TIT2")?.body ?? Buffer.alloc(1))).toBe(CHAPTERS[i]?.title);
      return id;
    });

    const ctoc = frames.filter((f) => f.id === "CTOC");
    expect(ctoc).toHaveLength(1);
    const body = ctoc[0]?.body ?? Buffer.alloc(0);
    const [, at] = cString(body, 0);
    expect((body[at] ?? 0) & 0x03).toBe(0x03); // top-level, ordered
    expect(body[at + 1]).toBe(3);
    const children: string[] = [];
    let next = at + 2;
    for (let k = 0; k < 3; k++) {
      const [child, after] = cString(body, next);
      children.push(child);
      next = after;
    }
    expect(children).toEqual(chapIds);

    const apic = frames.filter((f) => f.id === "APIC");
    expect(apic).toHaveLength(1);
    const pic = apic[0]?.body ?? Buffer.alloc(0);
    const [mime, typeAt] = cString(pic, 1);
    expect(mime).toBe("image/png");
    expect(pic[typeAt]).toBe(3); // front cover
    expect(pic.subarray(pic.length - (await stat(pngCover)).size).equals(await readFile(pngCover))).toBe(true);
  });

  it("copies the speech: the audio packets are the joined MP3's, and the cover is an attached picture of the very bytes given", async () => {
    expect(await audioPacketsMd5(book)).toBe(await audioPacketsMd5(bookMp3));
    const probed = await ffprobe(book);
    const picture = probed.streams.find((s) => s.codec_type === "video");
    expect(picture).toMatchObject({ codec_name: "png", disposition: { attached_pic: 1 } });
    expect((await pictureBytes(book)).equals(await readFile(pngCover))).toBe(true);
    await noTempFiles();
  });
});

describe("wrapAudioBook: M4B", () => {
  let book: string;
  beforeAll(async () => {
    book = join(dir, "book.m4b");
    const progress: FfmpegProgress[] = [];
    await media.wrapAudioBook({ input: bookMp3, outPath: book, format: "m4b", chapters: CHAPTERS, tags: TAGS, cover: jpegCover, onProgress: (p) => progress.push(p) });
    // the encoding reports how far it is through the book
    expect(progress.at(-1)).toMatchObject({ done: true, fraction: 1 });
  });

  it("is AAC mono at about 64 kb/s in MP4 with major brand M4B and media type audio book, as long as the MP3", async () => {
    const probed = await ffprobe(book);
    expect(probed.format.format_name.split(",")).toContain("mp4");
    expect(probed.format.tags).toMatchObject({ major_brand: "M4B ", media_type: "2" });
    const audio = probed.streams.find((s) => s.codec_type === "audio");
    expect(audio).toMatchObject({ codec_name: "aac", channels: 1, tags: { language: "eng" } });
    expect(Number(audio?.bit_rate)).toBeGreaterThan(40_000);
    expect(Number(audio?.bit_rate)).toBeLessThan(80_000);
    expect(Number(probed.format.duration)).toBeCloseTo(10, 0);
    // the first four bytes of the ftyp box's body: what Apple Books files the book by
    expect((await readFile(book)).toString("latin1", 4, 12)).toBe("ftypM4B ");
  });

  it("carries the tags, the chapters where their audio is, and the JPEG as its attached picture", async () => {
    const probed = await ffprobe(book);
    expect(probed.format.tags).toMatchObject({ title: TAGS.title, album: TAGS.album, artist: TAGS.artist, composer: TAGS.narrator, genre: "Audiobook" });
    expectChaptersLikeSource(await media.chaptersOf(book));
    await expectChaptersOnTheirAudio(book);
    const file = await readFile(book);
    expect(file.includes(Buffer.from("chpl"))).toBe(true);
    expect(file.includes(Buffer.from("covr"))).toBe(true);
    expect(probed.streams.find((s) => s.codec_type === "video")).toMatchObject({ codec_name: "mjpeg", disposition: { attached_pic: 1 } });
    expect((await pictureBytes(book)).equals(await readFile(jpegCover))).toBe(true);
  });

  it("speech from an engine (flite, 16 kHz) keeps its length and loudness in the M4B", async () => {
    const wav = await makeSpeechWav("Chapter one. The lighthouse keeper counted the ships. Chapter two. Nobody came back before winter.", { path: join(dir, "speech.wav") });
    const mp3 = await media.convertAudio({ input: wav, outPath: join(dir, "speech.mp3"), format: "mp3", encode: { bitrateKbps: 64 } });
    const seconds = (await ffprobe(mp3)).format.duration;
    const half = Math.floor(Number(seconds) / 2);
    const m4b = join(dir, "speech.m4b");
    await media.wrapAudioBook({
      input: mp3,
      outPath: m4b,
      format: "m4b",
      chapters: [
        { title: "Chapter one", startSeconds: 0, endSeconds: half },
        { title: "Chapter two", startSeconds: half, endSeconds: Number(seconds) },
      ],
      tags: { title: "Speech", language: "eng" },
    });
    const probed = await ffprobe(m4b);
    expect(probed.streams[0]).toMatchObject({ codec_name: "aac", channels: 1 });
    expect(Math.abs(Number(probed.format.duration) - Number(seconds))).toBeLessThan(0.1);
    const [before, after] = [await media.measureVolume(mp3), await media.measureVolume(m4b, { demuxers: ["mov"] })];
    expect(Math.abs(after.meanVolumeDb - before.meanVolumeDb)).toBeLessThan(1.5);
    expect((await media.chaptersOf(m4b)).map((c) => c.title)).toEqual(["Chapter one", "Chapter two"]);
  });

  it("wraps without a cover, tags or chapters too", async () => {
    const bare = join(dir, "bare.m4b");
    const written = await media.wrapAudioBook({ input: bookMp3, outPath: bare, format: "m4b", chapters: [] });
    expect(written.cover).toBeNull();
    const probed = await ffprobe(bare);
    expect(probed.streams.map((s) => s.codec_type)).toEqual(["audio"]);
    expect(probed.chapters).toEqual([]);
  });
});

describe("rewrapCover", () => {
  it.each(["mp3", "m4b"] as const)("%s: replaces the cover, then removes it, with the audio packets, chapters and tags unchanged", async (format) => {
    const book = join(dir, `rewrap.${format}`);
    await media.wrapAudioBook({ input: bookMp3, outPath: book, format, chapters: CHAPTERS, tags: TAGS, cover: pngCover });
    const before = await ffprobe(book);
    const md5 = await audioPacketsMd5(book);
    const chapters = await media.chaptersOf(book);

    const replaced = join(dir, `replaced.${format}`);
    const result = await media.rewrapCover({ input: book, outPath: replaced, cover: jpegCover });
    expect(result).toMatchObject({ format, chapters: 3, cover: { type: "jpeg", width: 500, height: 500 } });
    expect(await audioPacketsMd5(replaced)).toBe(md5);
    expect(await media.chaptersOf(replaced)).toEqual(chapters);
    const after = await ffprobe(replaced);
    expect(after.format.tags).toEqual(before.format.tags);
    expect(Math.abs(Number(after.format.duration) - Number(before.format.duration))).toBeLessThan(0.01);
    expect(after.streams.filter((s) => s.codec_type === "video")).toHaveLength(1);
    expect(after.streams.find((s) => s.codec_type === "video")).toMatchObject({ codec_name: "mjpeg", disposition: { attached_pic: 1 } });
    expect((await pictureBytes(replaced)).equals(await readFile(jpegCover))).toBe(true);
    if (format === "m4b") expect(after.streams.map((s) => s.codec_type)).toEqual(before.streams.map((s) => s.codec_type));

    const removed = join(dir, `removed.${format}`);
    expect((await media.rewrapCover({ input: replaced, outPath: removed, cover: null })).cover).toBeNull();
    expect(await audioPacketsMd5(removed)).toBe(md5);
    expect(await media.chaptersOf(removed)).toEqual(chapters);
    expect((await ffprobe(removed)).streams.filter((s) => s.codec_type === "video")).toEqual([]);
    await noTempFiles();
  });
});

describe("covers that are refused, in plain words and before anything is written", () => {
  const wrap = (cover: string, extra: { maxCoverBytes?: number } = {}) =>
    media.wrapAudioBook({ input: bookMp3, outPath: join(dir, "refused.mp3"), format: "mp3", chapters: CHAPTERS, cover, ...extra }).catch((e: unknown) => e);

  it("a 16000×16000 PNG (a few hundred KB that would decode to 256 megapixels) is refused before its decoder allocates it", async () => {
    const huge = await makeHugePng(16000, 16000, join(dir, "huge.png"));
    const started = Date.now();
    const error = await wrap(huge);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(error).toMatchObject({ code: "MEDIA_TOO_LARGE" });
    expect((error as Error).message).toMatch(/^The cover is 16000×16000 pixels \(256 megapixels\), more than the 16\.8 megapixels this service takes\.$/);
    await expect(stat(join(dir, "refused.mp3"))).rejects.toThrow();
    await noTempFiles();
  });

  it("a JPEG over the picture bound (5000×5000, 25 megapixels) is refused the same way; a smaller bound applies when asked", async () => {
    const big = join(dir, "big.jpg");
    await ffmpeg(["-f", "lavfi", "-i", "color=c=gray:s=5000x5000", "-frames:v", "1", "-f", "image2", big]);
    expect(await wrap(big)).toMatchObject({ code: "MEDIA_TOO_LARGE", message: expect.stringMatching(/^The cover is 5000×5000 pixels \(25 megapixels\)/) });
    await expect(media.checkCover(jpegCover, { maxPixels: 400 * 400 })).rejects.toMatchObject({ code: "MEDIA_TOO_LARGE", message: expect.stringMatching(/^The cover is 500×500 pixels/) });
  });

  it("a GIF is named and refused; a PNG named .jpg is taken for what its bytes are", async () => {
    const gif = join(dir, "cover.gif");
    await ffmpeg(["-f", "lavfi", "-i", "color=c=red:s=64x64", "-frames:v", "1", "-f", "gif", gif]);
    expect(await wrap(gif)).toMatchObject({ code: "MEDIA_FORMAT_NOT_ALLOWED", message: "The cover must be a JPEG or PNG picture; this file is a GIF picture." });
    const misnamed = join(dir, "really-png.jpg");
    await writeFile(misnamed, await readFile(pngCover));
    expect(await media.checkCover(misnamed)).toMatchObject({ type: "png", width: 600, height: 600 });
  });

  it("a cover over the byte bound, and a damaged PNG", async () => {
    const size = (await stat(pngCover)).size;
    expect(await wrap(pngCover, { maxCoverBytes: size - 1 })).toMatchObject({ code: "MEDIA_TOO_LARGE", message: `The cover is ${Math.ceil(size / 1000)} KB, more than the ${Math.ceil((size - 1) / 1000)} KB a book's cover may be.` });
    const damaged = join(dir, "damaged.png");
    await writeFile(damaged, Buffer.concat([(await readFile(pngCover)).subarray(0, 16), Buffer.alloc(200, 0x41)]));
    expect(await wrap(damaged)).toMatchObject({ code: "MEDIA_UNREADABLE", message: "The cover could not be read: the PNG picture is damaged." });
  });
});

describe("requests that cannot make a book", () => {
  it("an MP3 book from audio that is not MP3 (it would have to be encoded again)", async () => {
    const wav = await makeToneWav(1, join(dir, "one.wav"));
    await expect(media.wrapAudioBook({ input: wav, outPath: join(dir, "x.mp3"), format: "mp3", chapters: [] })).rejects.toMatchObject({
      code: "MEDIA_INVALID_REQUEST",
      message: expect.stringMatching(/MP3 book is made from MP3 audio/),
    });
  });

  it("chapters past the end of the audio; a cancelled request", async () => {
    await expect(
      media.wrapAudioBook({ input: bookMp3, outPath: join(dir, "x.m4b"), format: "m4b", chapters: [{ title: "Long", startSeconds: 0, endSeconds: 30 }] }),
    ).rejects.toMatchObject({ code: "MEDIA_INVALID_REQUEST", message: expect.stringMatching(/past the end of the audio \(10\.\d\d s\)/) });
    const controller = new AbortController();
    controller.abort();
    await expect(
      media.wrapAudioBook({ input: bookMp3, outPath: join(dir, "x.m4b"), format: "m4b", chapters: CHAPTERS, signal: controller.signal }),
    ).rejects.toMatchObject({ code: "MEDIA_CANCELLED" });
    await noTempFiles();
  });
});
