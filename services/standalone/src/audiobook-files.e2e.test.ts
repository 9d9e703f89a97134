/**
 * Audio book files over HTTP, as a listener gets them: generated EPUB 3 (nav) and EPUB 2 (NCX only)
 * books uploaded with `POST /v1/uploads`, Markdown and HTML books from MEDIA_ROOT, each spoken by the
 * gateway and audio book services over a real nats-server. Measured on the downloaded files with
 * ffprobe/ffmpeg: the chapters (`-show_chapters`) and the record's `chapters` carry the source titles
 * in order and span the book; `m4b` is AAC in MP4; the cover is the attached picture with the source
 * image's pixels; a PATCHed cover replaces it without new speech (the audio packets are the same
 * bytes); a cover that cannot be fetched is a warning; Markdown marks are not spoken.
 */
import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { silentLogger } from "@voiceloc/log";
import { resolveFfmpeg } from "@voiceloc/media";
import { checkResponsesOf, freePort, makeTestEpub, startNatsServer, tempDir, type TestBookChapter } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";

const run = promisify(execFile);
const KEY = "book-files-key-alice-1";
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
const TIMEOUT = 480_000;

let nats: Awaited<ReturnType<typeof startNatsServer>>;
let runtime: Runtime;
let base: string;
let dir: { path: string; cleanup: () => Promise<void> };
let media: string;
let covers: Server;
let coverBase: string;
let tools: { ffmpeg: string; ffprobe: string };

interface BookRecord {
  id: string;
  task_status: string;
  task_error: string | null;
  localized_file: string | null;
  audio_book_cover: string | null;
  output_format: string;
  warnings: string[];
  chapters: Array<{ title: string; start_seconds: number; end_seconds: number }> | null;
}

const sentence = (topic: string, n: number) => `The keeper wrote about ${topic} in the log, and this was line ${n} of that page.`;
const chapter = (title: string, topic: string): TestBookChapter => ({ title, paragraphs: [`${sentence(topic, 1)} ${sentence(topic, 2)}`, sentence(topic, 3)] });

const EPUB3_CHAPTERS = [chapter("Arrival at the Harbour", "the harbour"), chapter("The Storm", "the storm"), chapter("Nine Boats", "the boats")];
const EPUB2_CHAPTERS = [chapter("The First Morning", "the first morning"), chapter("The Second Morning", "the second morning")];
const MARKED_TITLES = ["The Lamp Room", "The Long Night"];

/** The same words with Markdown marks (emphasis, code, links with long addresses, images, a fenced block, a rule) and as plain HTML. */
const MARKDOWN = `# The Lamp Room

The **keeper** climbed the _stairs_ to the \`lamp\` room, see [the old chart](https://example.org/charts/north/sea/harbour/approach/1898/edition/second/plate/seven.png) for the way.
![A drawing of the lamp with its brass frame and the seven prisms](https://example.org/images/lamp/brass/frame/prisms/seven/large.jpg)

He ~~never~~ always wiped the glass *twice* before the sun went down.

\`\`\`
configuration = { brightness: 100, rotation_seconds: 30, colour: "white" }
\`\`\`

***

# The Long Night

The [wind](https://example.org/weather/wind/north/north/east/gale/force/nine/report.html) pushed at the door **all night**, and the _light_ kept turning.
`;
const HTML = `<!DOCTYPE html>
<html><head><title>Marks</title></head><body>
<h1>The Lamp Room</h1>
<p>The keeper climbed the stairs to the lamp room, see the old chart for the way.</p>
<p>He never always wiped the glass twice before the sun went down.</p>
<h1>The Long Night</h1>
<p>The wind pushed at the door all night, and the light kept turning.</p>
</body></html>`;

beforeAll(async () => {
  nats = await startNatsServer();
  dir = await tempDir("voiceloc-book-files-");
  media = join(dir.path, "media");
  await mkdir(media, { recursive: true });
  await writeFile(join(media, "marked.md"), MARKDOWN);
  await writeFile(join(media, "plain.html"), HTML);
  const found = await resolveFfmpeg({ logger: silentLogger() });
  tools = { ffmpeg: found.ffmpeg, ffprobe: found.ffprobe };
  // Two covers (a PNG and a JPEG of other sizes and colours) and a text file, served over HTTP.
  await run(tools.ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "color=c=red:s=64x48", "-frames:v", "1", join(dir.path, "a.png")]);
  await run(tools.ffmpeg, ["-v", "error", "-f", "lavfi", "-i", "testsrc=s=80x60", "-frames:v", "1", join(dir.path, "b.jpg")]);
  const served: Record<string, { type: string; path: string }> = {
    "/a.png": { type: "image/png", path: join(dir.path, "a.png") },
    "/b.jpg": { type: "image/jpeg", path: join(dir.path, "b.jpg") },
    "/words.txt": { type: "text/plain", path: join(media, "plain.html") },
  };
  covers = createServer((req, res) => {
    const file = served[req.url ?? ""];
    if (file === undefined) {
      res.writeHead(404).end("not here");
      return;
    }
    void readFile(file.path).then((bytes) => res.writeHead(200, { "Content-Type": file.type, "Content-Length": bytes.length }).end(bytes));
  });
  const coverPort = await freePort();
  await new Promise<void>((resolve) => covers.listen(coverPort, "127.0.0.1", resolve));
  coverBase = `http://127.0.0.1:${coverPort}`;

  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  checkResponsesOf(base);
  runtime = await startRuntime(
    loadConfig({
      SERVICES: "gateway,audiobook",
      NATS_URL: nats.url,
      DATA_DIR: dir.path,
      MEDIA_ROOT: media,
      FETCH_ALLOW_PRIVATE_HOSTS: "127.0.0.1",
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_BASE_URL: base,
      VOICELOC_API_KEYS: `alice:${KEY}`,
      LOG_LEVEL: "silent",
    }),
    silentLogger(),
  );
}, 240_000);

afterAll(async () => {
  await runtime?.stop();
  await new Promise<void>((resolve) => (covers ? covers.close(() => resolve()) : resolve()));
  await nats?.stop();
  await dir?.cleanup();
}, 60_000);

async function uploadFile(bytes: Buffer | string, filename: string): Promise<{ file: string; content_type: string }> {
  const res = await fetch(`${base}/v1/uploads?filename=${filename}`, { method: "POST", headers: { "API-KEY": KEY, "Content-Type": "application/octet-stream" }, body: bytes });
  expect(res.status).toBe(201);
  return (await res.json()) as { file: string; content_type: string };
}

async function createBook(body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${base}/v1/audio_books/`, {
    method: "POST",
    headers,
    body: JSON.stringify({ name: "A book", source_language: "English", target_language: "English", ...body }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as BookRecord).id;
}

async function read(id: string): Promise<BookRecord> {
  const res = await fetch(`${base}/v1/audio_books/${id}`, { headers });
  expect(res.status).toBe(200);
  return (await res.json()) as BookRecord;
}

async function follow(id: string): Promise<BookRecord> {
  const deadline = Date.now() + 400_000;
  for (;;) {
    const record = await read(id);
    if (record.task_status === "completed" || record.task_status === "failed") return record;
    if (Date.now() > deadline) throw new Error(`book ${id} still ${record.task_status}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

async function patchCover(id: string, cover: string | null): Promise<Response> {
  return fetch(`${base}/v1/audio_books/${id}`, { method: "PATCH", headers, body: JSON.stringify({ audio_book_cover: cover }) });
}

let downloads = 0;
async function download(record: BookRecord): Promise<string> {
  // The record's own result, signed: this gateway, the book's id and format, an expiry and a signature.
  expect(record.localized_file).toMatch(new RegExp(`^${base}/v1/files/results/audiobook/${record.id}\\.${record.output_format}\\?expires=\\d+&signature=[A-Za-z0-9_-]{43}$`));
  const res = await fetch(String(record.localized_file));
  expect(res.status).toBe(200);
  const path = join(dir.path, `download-${++downloads}.${record.output_format}`);
  await writeFile(path, Buffer.from(await res.arrayBuffer()));
  return path;
}

interface Probed {
  format: string;
  duration: number;
  streams: Array<{ codec_type: string; codec_name: string; width?: number; height?: number; disposition?: { attached_pic?: number } }>;
  chapters: Array<{ title: string; start: number; end: number }>;
}

async function probeBook(path: string): Promise<Probed> {
  const { stdout } = await run(tools.ffprobe, ["-v", "error", "-print_format", "json", "-show_format", "-show_streams", "-show_chapters", path]);
  const json = JSON.parse(stdout) as {
    format: { format_name: string; duration: string };
    streams: Probed["streams"];
    chapters: Array<{ start_time: string; end_time: string; tags?: { title?: string } }>;
  };
  return {
    format: json.format.format_name,
    duration: Number(json.format.duration),
    streams: json.streams,
    chapters: json.chapters.map((c) => ({ title: c.tags?.title ?? "", start: Number(c.start_time), end: Number(c.end_time) })),
  };
}

/** The decoded pixels (RGB) of a picture file, or of a book's attached picture. */
async function pixels(path: string): Promise<Buffer> {
  const { stdout } = await run(tools.ffmpeg, ["-v", "error", "-i", path, "-map", "0:v:0", "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], {
    encoding: "buffer",
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

/** A digest of the book's audio packets as stored (no decoding): the same speech is the same bytes. */
async function audioPackets(path: string): Promise<string> {
  const { stdout } = await run(tools.ffmpeg, ["-v", "error", "-i", path, "-map", "0:a:0", "-c", "copy", "-f", "md5", "-"]);
  return stdout.trim();
}

const picture = (probed: Probed) => probed.streams.find((s) => s.codec_type === "video" && s.disposition?.attached_pic === 1);

/** The file's and the record's chapters carry `titles` in order, follow one another and span the book. */
function expectChapters(probed: Probed, record: BookRecord, titles: readonly string[]): void {
  expect(probed.chapters.map((c) => c.title)).toEqual(titles);
  expect(record.chapters?.map((c) => c.title)).toEqual(titles);
  expect(probed.chapters[0]?.start).toBeCloseTo(0, 1);
  for (let i = 1; i < probed.chapters.length; i++) expect(probed.chapters[i]?.start).toBeCloseTo(probed.chapters[i - 1]?.end ?? -1, 1);
  expect(Math.abs((probed.chapters.at(-1)?.end ?? 0) - probed.duration)).toBeLessThan(1);
  for (const [i, c] of probed.chapters.entries()) {
    expect(c.end - c.start, c.title).toBeGreaterThan(1);
    expect(record.chapters?.[i]?.start_seconds).toBeCloseTo(c.start, 1);
    expect(record.chapters?.[i]?.end_seconds).toBeCloseTo(c.end, 1);
  }
}

describe("audio book files through the HTTP API", () => {
  it("an uploaded EPUB 3 (nav) as M4B: AAC in MP4, its chapters, the cover as attached picture; a PATCHed cover replaces it with the same audio", async () => {
    const upload = await uploadFile(makeTestEpub({ version: 3, title: "The Keeper", chapters: EPUB3_CHAPTERS }), "keeper.epub");
    expect(upload.content_type).toBe("application/epub+zip");
    const id = await createBook({ file: upload.file, output_format: "m4b", audio_book_cover: `${coverBase}/a.png` });
    const record = await follow(id);
    expect(record.task_status, String(record.task_error)).toBe("completed");
    expect(record.warnings).toEqual([]);
    const first = await download(record);
    const probed = await probeBook(first);
    expect(probed.format.split(",")).toContain("mp4");
    expect(probed.streams.filter((s) => s.codec_type === "audio").map((s) => s.codec_name)).toEqual(["aac"]);
    expectChapters(probed, record, EPUB3_CHAPTERS.map((c) => c.title));
    expect(picture(probed)).toMatchObject({ codec_name: "png", width: 64, height: 48 });
    expect((await pixels(first)).equals(await pixels(join(dir.path, "a.png")))).toBe(true);

    // The new cover: the answer carries it, the next read's file has its picture and the same audio packets.
    const patched = await patchCover(id, `${coverBase}/b.jpg`);
    expect(patched.status, await patched.clone().text()).toBe(200);
    expect(((await patched.json()) as BookRecord).audio_book_cover).toBe(`${coverBase}/b.jpg`);
    const after = await read(id);
    const second = await download(after);
    const reprobed = await probeBook(second);
    expect(picture(reprobed)).toMatchObject({ codec_name: "mjpeg", width: 80, height: 60 });
    expect((await pixels(second)).equals(await pixels(join(dir.path, "b.jpg")))).toBe(true);
    expect(await audioPackets(second)).toBe(await audioPackets(first));
    expect(reprobed.duration).toBeCloseTo(probed.duration, 2);
    expectChapters(reprobed, after, EPUB3_CHAPTERS.map((c) => c.title));

    // null removes the picture; the audio stays.
    expect((await patchCover(id, null)).status).toBe(200);
    const bare = await download(await read(id));
    expect(picture(await probeBook(bare))).toBeUndefined();
    expect(await audioPackets(bare)).toBe(await audioPackets(first));
  }, TIMEOUT);

  it("an uploaded EPUB 2 (NCX only) as MP3: its chapters; a cover that cannot be fetched is a warning; a refused PATCH changes nothing; a good one embeds", async () => {
    const upload = await uploadFile(makeTestEpub({ version: 2, title: "Northern Light", chapters: EPUB2_CHAPTERS }), "north.epub");
    expect(upload.content_type).toBe("application/epub+zip");
    const id = await createBook({ file: upload.file, audio_book_cover: `${coverBase}/missing.png` });
    const record = await follow(id);
    expect(record.task_status, String(record.task_error)).toBe("completed");
    expect(record.warnings).toHaveLength(1);
    expect(record.warnings[0]).toMatch(/^The cover was not embedded: /);
    const first = await download(record);
    const probed = await probeBook(first);
    expect(probed.format).toBe("mp3");
    expectChapters(probed, record, EPUB2_CHAPTERS.map((c) => c.title));
    expect(picture(probed)).toBeUndefined();

    // Not a picture: 422 at the field in plain words; the record and the file are as they were.
    const refused = await patchCover(id, `${coverBase}/words.txt`);
    expect(refused.status).toBe(422);
    const problem = (await refused.json()) as { detail: Array<{ loc: string[]; msg: string }> };
    expect(problem.detail[0]?.loc).toEqual(["body", "audio_book_cover"]);
    expect(problem.detail[0]?.msg).toMatch(/cover/i);
    const unchanged = await read(id);
    expect(unchanged.audio_book_cover).toBe(`${coverBase}/missing.png`);
    expect(unchanged.warnings).toEqual(record.warnings);
    expect(await audioPackets(await download(unchanged))).toBe(await audioPackets(first));
    const gone = await patchCover(id, `${coverBase}/gone.png`);
    expect(gone.status).toBe(422);

    const embedded = await patchCover(id, `${coverBase}/a.png`);
    expect(embedded.status, await embedded.clone().text()).toBe(200);
    const after = (await embedded.json()) as BookRecord;
    expect(after.warnings).toEqual([]);
    const second = await download(after);
    expect(picture(await probeBook(second))).toMatchObject({ codec_name: "png", width: 64, height: 48 });
    expect((await pixels(second)).equals(await pixels(join(dir.path, "a.png")))).toBe(true);
    expect(await audioPackets(second)).toBe(await audioPackets(first));
  }, TIMEOUT);

  it("Markdown and HTML books: the headings are the chapters, and Markdown marks are not spoken (the same words take the same time)", async () => {
    const markdownId = await createBook({ file: "marked.md" });
    const htmlUpload = await uploadFile(HTML, "plain.html");
    expect(htmlUpload.content_type).toBe("text/html");
    // The HTML book's cover is changed at once, while it is queued or rendering: it takes the new one when it completes.
    const htmlId = await createBook({ file: htmlUpload.file, audio_book_cover: `${coverBase}/a.png` });
    const early = await patchCover(htmlId, `${coverBase}/b.jpg`);
    expect(early.status, await early.clone().text()).toBe(200);
    expect((await early.json()) as BookRecord).toMatchObject({ audio_book_cover: `${coverBase}/b.jpg` });
    const [markdown, html] = [await follow(markdownId), await follow(htmlId)];
    expect(markdown.task_status, String(markdown.task_error)).toBe("completed");
    expect(html.task_status, String(html.task_error)).toBe("completed");
    const [mdProbed, htmlProbed] = [await probeBook(await download(markdown)), await probeBook(await download(html))];
    expectChapters(mdProbed, markdown, MARKED_TITLES);
    expectChapters(htmlProbed, html, MARKED_TITLES);
    // Spoken marks ("asterisk", the addresses, the code block) would add many seconds; the same words take the same time.
    expect(Math.abs(mdProbed.duration - htmlProbed.duration)).toBeLessThan(Math.max(0.5, htmlProbed.duration * 0.03));
    // the completed HTML book is re-wrapped with the cover given while it rendered (in the background: waited for)
    const deadline = Date.now() + 120_000;
    let cover = picture(htmlProbed);
    while (!(cover?.codec_name === "mjpeg" && cover.width === 80) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      cover = picture(await probeBook(await download(await read(htmlId))));
    }
    expect(cover).toMatchObject({ codec_name: "mjpeg", width: 80, height: 60 });
    expect((await read(htmlId)).warnings).toEqual([]);
    for (let i = 0; i < MARKED_TITLES.length; i++) {
      const md = mdProbed.chapters[i]!;
      const plain = htmlProbed.chapters[i]!;
      expect(Math.abs(md.end - md.start - (plain.end - plain.start))).toBeLessThan(0.5);
    }
  }, TIMEOUT);
});
