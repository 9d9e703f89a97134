import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFsBlobStore, uploadBlobKey, type BlobStore } from "@voiceloc/blobs";
import { FILE_NOT_AVAILABLE } from "@voiceloc/fetch";
import { buildTestZip, makeTestEpub, tempDir } from "@voiceloc/testing";
import { ALICE_KEY, BASE, BOB_KEY, startTestGateway, type TestGateway } from "../testing/harness.ts";
import { UPLOAD_NOT_AVAILABLE } from "../records/shared.ts";
import { sweepExpiredUploads } from "./sweep.ts";
import { UploadRepository } from "./repository.ts";

/** A short valid PCM WAV (what file-type recognises as audio/wav). */
function wav(samples = 8000): Buffer {
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) data.writeInt16LE(Math.round(Math.sin(i / 10) * 8000), i * 2);
  const header = Buffer.alloc(44);
  header.write("RIFF", 0);
  header.writeUInt32LE(36 + data.length, 4);
  header.write("WAVE", 8);
  header.write("fmt ", 12);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(16000, 24);
  header.writeUInt32LE(32000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36);
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082", "hex");
const BOOK = "Chapter one. It was a bright cold day in April, and the clocks were striking thirteen.\n";

interface UploadBody {
  id: string;
  file: string;
  filename: string | null;
  bytes: number;
  content_type: string;
  expires_at: string;
  date_created: string;
}

let t: TestGateway;
let dir: { path: string; cleanup: () => Promise<void> };
let blobs: BlobStore;
let media: string;

async function upload(body: NonNullable<RequestInit["body"]>, init: { key?: string; type?: string; query?: string; headers?: Record<string, string> } = {}): Promise<Response> {
  const headers: Record<string, string> = { "API-KEY": init.key ?? ALICE_KEY, ...init.headers };
  if (init.type) headers["Content-Type"] = init.type;
  return t.gateway.app.request(`${BASE}/v1/uploads${init.query ?? ""}`, { method: "POST", headers, body, duplex: "half" } as RequestInit);
}

async function uploadedText(text = BOOK, key = ALICE_KEY): Promise<UploadBody> {
  const res = await upload(text, { key, type: "text/plain", query: "?filename=book.txt" });
  expect(res.status).toBe(201);
  return (await res.json()) as UploadBody;
}

async function uploadBlobs(): Promise<string[]> {
  return blobs.list("uploads/");
}

function book(file: string, extra: Record<string, unknown> = {}) {
  return { file, name: "A book", source_language: "English", target_language: "English", ...extra };
}

beforeAll(async () => {
  dir = await tempDir("voiceloc-uploads-");
  blobs = createFsBlobStore({ root: join(dir.path, "blobs") });
  media = join(dir.path, "media");
  await mkdir(join(media, "alice"), { recursive: true });
  await writeFile(join(media, "alice", "book.txt"), BOOK);
  t = await startTestGateway({ UPLOAD_MAX_BYTES: "200000", MAX_BODY_BYTES: "4096", MEDIA_ROOT: media, MEDIA_ROOT_SCOPE: "account" }, { blobs });
});

afterAll(async () => {
  await t?.close();
  await blobs?.close();
  await dir?.cleanup();
});

describe("POST /v1/uploads", () => {
  it("stores a raw text body: 201, Location, the sniffed type, the bytes under the owner's prefix", async () => {
    const res = await upload(BOOK, { type: "application/octet-stream", query: "?filename=book.txt" });
    expect(res.status).toBe(201);
    const body = (await res.json()) as UploadBody;
    expect(res.headers.get("location")).toBe(`/v1/uploads/${body.id}`);
    expect(body).toMatchObject({ file: `upload:${body.id}`, filename: "book.txt", bytes: Buffer.byteLength(BOOK), content_type: "text/plain" });
    expect(Date.parse(body.expires_at) - Date.parse(body.date_created)).toBe(86_400_000);
    const key = uploadBlobKey("alice", body.id);
    expect((await blobs.stat(key)).size).toBe(Buffer.byteLength(BOOK));
    const got = await t.request("GET", `/v1/uploads/${body.id}`);
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual(body);
  });

  it("takes a body larger than the JSON limit (MAX_BODY_BYTES), which still holds for the other routes", async () => {
    const big = "word ".repeat(4000); // 20,000 bytes > 4,096
    const up = await upload(big, { type: "application/json" });
    expect(up.status).toBe(201);
    expect(((await up.json()) as UploadBody).bytes).toBe(20_000);
    const json = await t.request("POST", "/v1/audio_books/", { body: book("books/a.txt", { name: big }) });
    expect(json.status).toBe(413);
  });

  it("stores a multipart/form-data file part named file, with its file name, and sniffs audio", async () => {
    const form = new FormData();
    form.append("note", "ignored");
    form.append("file", new Blob([wav()], { type: "text/plain" }), "speech.wav");
    const res = await upload(form);
    expect(res.status).toBe(201);
    const body = (await res.json()) as UploadBody;
    expect(body).toMatchObject({ filename: "speech.wav", content_type: "audio/wav", bytes: wav().length });
    const stored = await blobs.createReadStream(uploadBlobKey("alice", body.id));
    const chunks: Buffer[] = [];
    for await (const chunk of stored) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(wav())).toBe(true);
  });

  it("takes an EPUB (sniffed: a ZIP whose first entry is a stored mimetype of application/epub+zip) as a book's text; Markdown and HTML as text", async () => {
    const epub = makeTestEpub({ version: 3, title: "Sniffed", chapters: [{ title: "One", paragraphs: ["The first chapter."] }] });
    const res = await upload(epub, { type: "application/octet-stream", query: "?filename=book.epub" });
    expect(res.status).toBe(201);
    const body = (await res.json()) as UploadBody;
    expect(body).toMatchObject({ filename: "book.epub", content_type: "application/epub+zip", bytes: epub.length });
    expect(await (await blobs.createReadStream(uploadBlobKey("alice", body.id))).toArray().then((c) => Buffer.concat(c as Buffer[]).equals(epub))).toBe(true);
    // an audio book takes it; a voice stream (audio or video) does not, naming what it holds
    expect((await t.request("POST", "/v1/audio_books/", { body: book(body.file) })).status).toBe(201);
    const asStream = await t.request("POST", "/v1/voices/streams", { body: { file: body.file, source_language: "English", target_language: "Spanish" } });
    expect(asStream.status).toBe(422);
    expect(JSON.stringify(await asStream.json())).toMatch(/this upload holds application\/epub\+zip/);
    // multipart too
    const form = new FormData();
    form.append("file", new Blob([makeTestEpub({ version: 2, title: "NCX", chapters: [{ title: "Only", paragraphs: ["Words."] }] })]), "ncx.epub");
    const multipart = await upload(form);
    expect(multipart.status).toBe(201);
    expect(((await multipart.json()) as UploadBody).content_type).toBe("application/epub+zip");
    const html = await upload("<!DOCTYPE html>\n<html><body><h1>One</h1><p>Words.</p></body></html>", { type: "text/plain", query: "?filename=b.html" });
    expect(html.status).toBe(201);
    expect(((await html.json()) as UploadBody).content_type).toBe("text/html");
    const markdown = await upload("# One\n\nSome *marked* words.\n", { type: "text/markdown", query: "?filename=b.md" });
    expect(markdown.status).toBe(201);
    expect(((await markdown.json()) as UploadBody).content_type).toBe("text/plain");
  });

  it("refuses a ZIP that is not an EPUB (mimetype missing, compressed, or another type) with 415", async () => {
    const before = await uploadBlobs();
    const cases = [
      buildTestZip([{ name: "readme.txt", data: "not a book" }]),
      buildTestZip([{ name: "mimetype", data: "application/epub+zip", method: 8 }]),
      buildTestZip([{ name: "mimetype", data: "application/vnd.oasis.opendocument.text", method: 0 }]),
    ];
    for (const zip of cases) expect((await upload(zip, { type: "application/epub+zip" })).status).toBe(415);
    expect(await uploadBlobs()).toEqual(before);
  });

  it("refuses what is neither text, audio nor video with 415, and keeps nothing", async () => {
    const before = await uploadBlobs();
    const png = await upload(PNG, { type: "image/png" });
    expect(png.status).toBe(415);
    expect(((await png.json()) as { detail: string }).detail).toMatch(/neither UTF-8 text \(without NUL characters\), an EPUB book/);
    // text for 10 KB, then a NUL: refused after it was partly written
    const late = await upload(Buffer.concat([Buffer.from("a".repeat(10_000)), Buffer.from([0]), Buffer.from("tail")]), { type: "text/plain" });
    expect(late.status).toBe(415);
    const badUtf8 = await upload(Buffer.concat([Buffer.from("b".repeat(9_000)), Buffer.from([0xc3])]), { type: "text/plain" });
    expect(badUtf8.status).toBe(415);
    const form = new FormData();
    form.append("file", new Blob([PNG]), "x.png");
    expect((await upload(form)).status).toBe(415);
    expect(await uploadBlobs()).toEqual(before);
  });

  it("answers 413 above UPLOAD_MAX_BYTES, declared or streamed, raw or multipart, and keeps nothing", async () => {
    const before = await uploadBlobs();
    const listed = ((await (await t.request("GET", "/v1/uploads?limit=100")).json()) as UploadBody[]).length;
    const tooBig = Buffer.alloc(250_000, "x");
    const declared = await upload(tooBig, { type: "text/plain" });
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as { detail: string }).detail).toMatch(/UPLOAD_MAX_BYTES/);
    // streamed without a Content-Length: counted as it passes
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 25; i++) controller.enqueue(new Uint8Array(Buffer.alloc(10_000, "y")));
        controller.close();
      },
    });
    const streamed = await upload(stream, { type: "text/plain" });
    expect(streamed.status).toBe(413);
    const form = new FormData();
    form.append("file", new Blob([tooBig]), "big.txt");
    expect((await upload(form)).status).toBe(413);
    expect(await uploadBlobs()).toEqual(before);
    expect(((await (await t.request("GET", "/v1/uploads?limit=100")).json()) as UploadBody[]).length).toBe(listed);
  });

  it("answers 422 for an empty body, a multipart body without one file part named file, and a bad filename", async () => {
    const before = await uploadBlobs();
    const empty = await upload("", { type: "text/plain" });
    expect(empty.status).toBe(422);
    expect(await empty.json()).toEqual({ detail: [{ type: "missing", loc: ["body"], msg: "Field required", input: null }] });
    const none = new FormData();
    none.append("note", "no file here");
    const noFile = await upload(none);
    expect(noFile.status).toBe(422);
    expect(((await noFile.json()) as { detail: Array<{ loc: unknown }> }).detail[0]?.loc).toEqual(["body", "file"]);
    const two = new FormData();
    two.append("file", new Blob([BOOK]), "a.txt");
    two.append("file", new Blob([BOOK]), "b.txt");
    expect((await upload(two)).status).toBe(422);
    const named = new FormData();
    named.append("document", new Blob([BOOK]), "a.txt");
    expect((await upload(named)).status).toBe(422);
    const garbage = await upload("not a multipart body", { type: "multipart/form-data; boundary=xyz" });
    expect(garbage.status).toBe(422);
    const noBoundary = await upload("x", { type: "multipart/form-data" });
    expect(noBoundary.status).toBe(422);
    const emptyPart = new FormData();
    emptyPart.append("file", new Blob([]), "empty.txt");
    expect((await upload(emptyPart)).status).toBe(422);
    const longName = await upload(BOOK, { type: "text/plain", query: `?filename=${"n".repeat(300)}` });
    expect(longName.status).toBe(422);
    expect(await uploadBlobs()).toEqual(before);
  });

  it("needs credentials", async () => {
    const res = await t.gateway.app.request(`${BASE}/v1/uploads`, { method: "POST", body: BOOK });
    expect(res.status).toBe(401);
  });
});

describe("GET / DELETE /v1/uploads", () => {
  it("lists the caller's own uploads newest first, paged with Link", async () => {
    const mine = [await uploadedText(), await uploadedText(), await uploadedText()];
    const bobs = await uploadedText(BOOK, BOB_KEY);
    const page = await t.request("GET", "/v1/uploads?limit=2");
    expect(page.status).toBe(200);
    const first = (await page.json()) as UploadBody[];
    expect(first.map((u) => u.id)).toEqual([mine[2]!.id, mine[1]!.id]);
    const next = /<([^>]+)>; rel="next"/.exec(page.headers.get("link") ?? "")?.[1];
    expect(next).toBeDefined();
    const second = (await (await t.request("GET", next!.slice(BASE.length))).json()) as UploadBody[];
    expect(second[0]?.id).toBe(mine[0]!.id);
    const all = (await (await t.request("GET", "/v1/uploads?limit=100")).json()) as UploadBody[];
    expect(all.some((u) => u.id === bobs.id)).toBe(false);
    expect((await t.request("GET", "/v1/uploads?cursor=nonsense")).status).toBe(422);
  });

  it("404s another account's and unknown ids; DELETE removes record and bytes", async () => {
    const up = await uploadedText();
    expect((await t.request("GET", `/v1/uploads/${up.id}`, { key: BOB_KEY })).status).toBe(404);
    expect((await t.request("DELETE", `/v1/uploads/${up.id}`, { key: BOB_KEY })).status).toBe(404);
    expect((await t.request("GET", "/v1/uploads/0190d6a4-6b7e-7c3a-9f00-000000000000")).status).toBe(404);
    const del = await t.request("DELETE", `/v1/uploads/${up.id}`);
    expect(del.status).toBe(204);
    expect(await blobs.exists(uploadBlobKey("alice", up.id))).toBe(false);
    expect((await t.request("GET", `/v1/uploads/${up.id}`)).status).toBe(404);
    expect((await t.request("DELETE", `/v1/uploads/${up.id}`)).status).toBe(404);
  });
});

describe("upload:<id> in the create operations", () => {
  it("creates an audio book from the owner's text upload", async () => {
    const up = await uploadedText();
    const res = await t.request("POST", "/v1/audio_books/", { body: book(up.file) });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { file: string }).file).toBe(up.file);
  });

  it("gives another account's, an unknown and a malformed id the same 422", async () => {
    const up = await uploadedText();
    const refused = async (file: string, key: string) => {
      const res = await t.request("POST", "/v1/audio_books/", { body: book(file), key });
      expect(res.status, file).toBe(422);
      return ((await res.json()) as { detail: Array<{ loc: unknown; msg: string }> }).detail;
    };
    const foreign = await refused(up.file, BOB_KEY);
    const unknown = await refused("upload:0190d6a4-6b7e-7c3a-9f00-000000000000", BOB_KEY);
    const malformed = await refused("upload:nope", BOB_KEY);
    expect(foreign[0]).toMatchObject({ loc: ["body", "file"], msg: `Value error, ${UPLOAD_NOT_AVAILABLE}` });
    expect(unknown[0]?.msg).toBe(foreign[0]?.msg);
    expect(malformed[0]?.msg).toBe(foreign[0]?.msg);
  });

  it("refuses an upload of the wrong kind for the field, naming both", async () => {
    const form = new FormData();
    form.append("file", new Blob([wav()]), "s.wav");
    const audio = (await (await upload(form)).json()) as UploadBody;
    const text = await uploadedText();
    const asBook = await t.request("POST", "/v1/audio_books/", { body: book(audio.file) });
    expect(asBook.status).toBe(422);
    expect(JSON.stringify(await asBook.json())).toMatch(/this upload holds audio\/wav; this field takes UTF-8 text \(plain, Markdown, HTML\) or an EPUB/);
    const sample = await t.request("POST", "/v1/audio_books/", { body: book(text.file, { use_voice_clone: true, voice_clone_sample: text.file }) });
    expect(sample.status).toBe(422);
    expect(((await sample.json()) as { detail: Array<{ loc: unknown }> }).detail[0]?.loc).toEqual(["body", "voice_clone_sample"]);
    const stream = await t.request("POST", "/v1/voices/streams", { body: { file: text.file, source_language: "English", target_language: "Spanish" } });
    expect(stream.status).toBe(422);
    const subtitle = await t.request("POST", "/v1/videos/subtitle", { body: { file: audio.file, source_language: "English", target_language: "Spanish" } });
    expect(subtitle.status).toBe(422);
    const voiceStream = await t.request("POST", "/v1/voices/streams", { body: { file: audio.file, source_language: "English", target_language: "Spanish" } });
    expect(voiceStream.status).toBe(201);
  });

  it("refuses an expired upload like an unknown one, and the sweep deletes it with its bytes", async () => {
    const up = await uploadedText();
    const later = new Date(Date.parse(up.expires_at) + 1000);
    t.gateway.deps.now = () => later;
    try {
      const res = await t.request("POST", "/v1/audio_books/", { body: book(up.file) });
      expect(res.status).toBe(422);
      expect(JSON.stringify(await res.json())).toContain(UPLOAD_NOT_AVAILABLE);
      expect((await t.request("GET", `/v1/uploads/${up.id}`)).status).toBe(404);
    } finally {
      delete t.gateway.deps.now;
    }
    const repo = await UploadRepository.open(t.gateway.deps.store);
    const removed = await sweepExpiredUploads(repo, blobs, later);
    expect(removed).toBeGreaterThanOrEqual(1);
    expect(await blobs.exists(uploadBlobKey("alice", up.id))).toBe(false);
    expect(await repo.getUsable("alice", up.id, new Date(0))).toBeNull();
  });
});

describe("MEDIA_ROOT_SCOPE=account at request time", () => {
  it("refuses an absolute path outside the caller's folder with the one file-not-available reason", async () => {
    const alicePath = join(media, "alice", "book.txt");
    expect((await t.request("POST", "/v1/audio_books/", { body: book(alicePath) })).status).toBe(201);
    for (const file of [alicePath, join(media, "alice", "missing.txt"), "../alice/book.txt"]) {
      const res = await t.request("POST", "/v1/audio_books/", { body: book(file), key: BOB_KEY });
      expect(res.status, file).toBe(422);
      const detail = ((await res.json()) as { detail: Array<{ msg: string }> }).detail;
      expect(detail[0]?.msg, file).toBe(`Value error, ${FILE_NOT_AVAILABLE}`);
    }
  });
});
