/**
 * Uploads end to end: a gateway process and an audio book worker process with separate data
 * directories, sharing only nats-server (bus and the JetStream blob store) and MEDIA_ROOT, with
 * MEDIA_ROOT_SCOPE=account as the mesh runs them.
 */
import { request as httpRequest } from "node:http";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNatsBlobStore, uploadBlobKey, type BlobStore } from "@voiceloc/blobs";
import { FILE_NOT_AVAILABLE } from "@voiceloc/fetch";
import { probe, resolveFfmpeg } from "@voiceloc/media";
import { silentLogger } from "@voiceloc/log";
import { freePort, startNatsServer, tempDir } from "@voiceloc/testing";
import { isRunning, signalAndWait, startService, type ServiceProcess } from "./testing/processes.ts";

const ALICE = "uploads-key-alice-1";
const BOB = "uploads-key-bob-2";
const LIMIT = 300_000;
const BOOK = "The upload reached the worker through the shared blob store. It was read, spoken and joined.";

interface Record {
  id: string;
  task_status: string;
  task_error: string | null;
  localized_file: string | null;
}

let nats: Awaited<ReturnType<typeof startNatsServer>>;
let dir: { path: string; cleanup: () => Promise<void> };
let blobs: BlobStore;
let base: string;
let media: string;
const procs: ServiceProcess[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  dir = await tempDir("voiceloc-uploads-e2e-");
  media = join(dir.path, "media");
  await mkdir(join(media, "alice"), { recursive: true });
  await mkdir(join(media, "bob", "adir"), { recursive: true });
  await writeFile(join(media, "alice", "own.txt"), "Alice's private manuscript.");
  const common = {
    NATS_URL: nats.url,
    BLOB_STORE: "nats",
    MEDIA_ROOT: media,
    MEDIA_ROOT_SCOPE: "account",
    VOICELOC_API_KEYS: `alice:${ALICE},bob:${BOB}`,
    SIGNING_SECRET: "uploads-signing-secret-0123456789-abcdef",
    UPLOAD_MAX_BYTES: String(LIMIT),
    LOG_LEVEL: "warn",
  };
  const gatewayPort = await freePort();
  base = `http://127.0.0.1:${gatewayPort}`;
  procs.push(await startService("audiobook", { ...common, DATA_DIR: join(dir.path, "worker") }, await freePort(), 120_000));
  procs.push(await startService("gateway", { ...common, DATA_DIR: join(dir.path, "gateway"), PUBLIC_BASE_URL: base }, gatewayPort, 60_000));
  blobs = await createNatsBlobStore({ url: nats.url, bucket: "voiceloc-blobs" });
}, 240_000);

afterAll(async () => {
  for (const p of procs.splice(0).reverse()) if (isRunning(p)) await signalAndWait(p, "SIGTERM");
  await blobs?.close();
  await nats?.stop();
  await dir?.cleanup();
}, 60_000);

async function createBook(key: string, file: string): Promise<Response> {
  return fetch(`${base}/v1/audio_books/`, {
    method: "POST",
    headers: { "API-KEY": key, "Content-Type": "application/json" },
    body: JSON.stringify({ file, name: "Uploaded", source_language: "English", target_language: "English" }),
  });
}

async function follow(key: string, id: string): Promise<Record> {
  const deadline = Date.now() + 240_000;
  for (;;) {
    const record = (await (await fetch(`${base}/v1/audio_books/${id}`, { headers: { "API-KEY": key } })).json()) as Record;
    if (record.task_status === "completed" || record.task_status === "failed") return record;
    if (Date.now() > deadline) throw new Error(`book ${id} still ${record.task_status}:\n${procs.map((p) => p.output.join("").slice(-2000)).join("\n")}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** POST /v1/uploads over a raw socket with a chunked body (no Content-Length): the status, whatever happens to the rest of the body. */
function chunkedUpload(key: string, chunks: number, chunkBytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${base}/v1/uploads`);
    const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { "API-KEY": key, "Content-Type": "text/plain" } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", (error) => reject(error));
    let sent = 0;
    const pump = () => {
      while (sent < chunks) {
        sent++;
        if (!req.write(Buffer.alloc(chunkBytes, "z"))) {
          req.once("drain", pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}

describe("uploads through a gateway process and an audio book worker process", () => {
  let upload: { id: string; file: string; bytes: number; content_type: string };

  it("uploads a text file (raw body), makes an audio book of upload:<id>, and its MP3 downloads", async () => {
    const res = await fetch(`${base}/v1/uploads?filename=book.txt`, { method: "POST", headers: { "API-KEY": ALICE, "Content-Type": "text/plain" }, body: BOOK });
    expect(res.status).toBe(201);
    upload = (await res.json()) as typeof upload;
    expect(upload).toMatchObject({ file: `upload:${upload.id}`, bytes: Buffer.byteLength(BOOK), content_type: "text/plain" });
    expect(await blobs.exists(uploadBlobKey("alice", upload.id))).toBe(true);

    const created = await createBook(ALICE, upload.file);
    expect(created.status).toBe(201);
    const record = await follow(ALICE, ((await created.json()) as Record).id);
    expect(record.task_status, String(record.task_error)).toBe("completed");
    const audio = await fetch(String(record.localized_file));
    expect(audio.status).toBe(200);
    const bytes = Buffer.from(await audio.arrayBuffer());
    const path = join(dir.path, "uploaded.mp3");
    await writeFile(path, bytes);
    const { ffprobe } = await resolveFfmpeg({ logger: silentLogger() });
    const info = await probe(path, { ffprobePath: ffprobe });
    expect(info.format).toBe("mp3");
    expect(info.durationSeconds).toBeGreaterThan(2);
  }, 300_000);

  it("stores a multipart upload in the shared blob store, byte for byte", async () => {
    const form = new FormData();
    form.append("file", new Blob([BOOK.repeat(3)]), "three.txt");
    const res = await fetch(`${base}/v1/uploads`, { method: "POST", headers: { "API-KEY": ALICE }, body: form });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { id: string; filename: string; bytes: number };
    expect(body).toMatchObject({ filename: "three.txt", bytes: Buffer.byteLength(BOOK) * 3 });
    const chunks: Buffer[] = [];
    for await (const chunk of await blobs.createReadStream(uploadBlobKey("alice", body.id))) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString("utf8")).toBe(BOOK.repeat(3));
  });

  it("bob gets the same 422 for alice's upload id as for an unknown one", async () => {
    const foreign = await createBook(BOB, upload.file);
    const unknown = await createBook(BOB, "upload:0190d6a4-6b7e-7c3a-9f00-000000000000");
    expect(foreign.status).toBe(422);
    expect(unknown.status).toBe(422);
    const [a, b] = [(await foreign.json()) as { detail: Array<{ msg: string; loc: unknown }> }, (await unknown.json()) as { detail: Array<{ msg: string; loc: unknown }> }];
    expect(a.detail[0]?.loc).toEqual(["body", "file"]);
    expect(a.detail[0]?.msg).toBe(b.detail[0]?.msg);
    expect((await fetch(`${base}/v1/uploads/${upload.id}`, { headers: { "API-KEY": BOB } })).status).toBe(404);
  });

  it("with MEDIA_ROOT_SCOPE=account, a path to alice's file fails for bob exactly as a missing file does", async () => {
    // absolute: refused at request time, whether the file exists or not
    for (const file of [join(media, "alice", "own.txt"), join(media, "alice", "nothing.txt")]) {
      const res = await createBook(BOB, file);
      expect(res.status, file).toBe(422);
      expect(((await res.json()) as { detail: Array<{ msg: string }> }).detail[0]?.msg).toBe(`Value error, ${FILE_NOT_AVAILABLE}`);
    }
    // relative: resolved under bob's own folder by the worker; the task fails with the one reason
    const ids: string[] = [];
    for (const file of ["alice/own.txt", "missing.txt", "adir"]) {
      const res = await createBook(BOB, file);
      expect(res.status, file).toBe(201);
      ids.push(((await res.json()) as Record).id);
    }
    const records = await Promise.all(ids.map((id) => follow(BOB, id)));
    for (const record of records) {
      expect(record.task_status).toBe("failed");
      expect(record.task_error).toBe(FILE_NOT_AVAILABLE);
    }
  }, 300_000);

  it("an upload over UPLOAD_MAX_BYTES is a 413, declared or streamed, and leaves no blob and no record", async () => {
    const before = (await blobs.list("uploads/")).sort();
    const listed = ((await (await fetch(`${base}/v1/uploads`, { headers: { "API-KEY": ALICE } })).json()) as unknown[]).length;
    const declared = await fetch(`${base}/v1/uploads`, { method: "POST", headers: { "API-KEY": ALICE, "Content-Type": "text/plain" }, body: Buffer.alloc(LIMIT + 1, "y") });
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as { detail: string }).detail).toMatch(/UPLOAD_MAX_BYTES/);
    expect(await chunkedUpload(ALICE, 40, 10_000)).toBe(413);
    expect((await blobs.list("uploads/")).sort()).toEqual(before);
    expect(((await (await fetch(`${base}/v1/uploads`, { headers: { "API-KEY": ALICE } })).json()) as unknown[]).length).toBe(listed);
    // the gateway still serves
    expect((await fetch(`${base}/v1/uploads/${upload.id}`, { headers: { "API-KEY": ALICE } })).status).toBe(200);
  });

  it("refuses bytes that are neither text, audio nor video with 415", async () => {
    const png = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000", "hex");
    const res = await fetch(`${base}/v1/uploads`, { method: "POST", headers: { "API-KEY": ALICE, "Content-Type": "image/png" }, body: png });
    expect(res.status).toBe(415);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/neither UTF-8 text/);
  });
});
