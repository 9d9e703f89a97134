/**
 * The client's helpers against a scripted local HTTP server: typed errors, SSE following with its
 * polling fallbacks, timeouts, downloads, and webhook verification with the Standard Webhooks library.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { tempDir } from "@voiceloc/testing";
import {
  AuthenticationError,
  ConnectionError,
  NotFoundError,
  RateLimitError,
  TaskFailedError,
  ValidationError,
  WaitTimeoutError,
  WebhookVerificationError,
  createClient,
  formatValidationItems,
  unwrap,
  verifyWebhook,
  type ProgressUpdate,
} from "./index.ts";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler = (_req, res) => res.writeHead(500).end();
let server: Server;
let base: string;
const seen: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url} key=${req.headers["api-key"] ?? ""}`);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
afterEach(() => {
  seen.length = 0;
});

const ID = "01a21bd8-120b-7143-b683-fa11a9163520";
const book = (status: "queued" | "processing" | "completed" | "failed", progress: number, extra: Record<string, unknown> = {}) => ({
  id: ID,
  file: "book.txt",
  name: "Book",
  source_language: "English",
  target_language: "Spanish",
  audio_book_cover: null,
  task_status: status,
  task_progress: progress,
  task_error: null,
  localized_file: null,
  date_created: "2026-11-27T07:00:00.000Z",
  date_updated: "2026-11-27T07:00:01.000Z",
  ...extra,
});
const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));

describe("typed errors", () => {
  it("turns 422, 401, 404 and 429 answers into their classes, with the 422 items readable", async () => {
    const items = [{ loc: ["body", "target_language"], msg: "Input should be 'French' or 'English'", type: "enum", input: "Klingon" }];
    handler = (req, res) => {
      if (req.url?.startsWith("/v1/audio_books/?")) return json(res, 401, { detail: "Invalid API key" });
      if (req.method === "POST") return json(res, 422, { detail: items });
      if (req.url === "/v1/voices") return json(res, 429, { detail: "slow down" }, { "retry-after": "7" });
      return json(res, 404, { detail: "Audio book not found" });
    };
    const client = createClient({ baseUrl: `${base}/`, apiKey: "k1" });
    const body = { file: "a.txt", name: "A", source_language: "English" as const, target_language: "Klingon" as never, use_voice_clone: false };
    const refused = await client.POST("/v1/audio_books/", { body }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).items).toEqual(items);
    expect((refused as ValidationError).status).toBe(422);
    expect(formatValidationItems(items)).toBe(`  - body.target_language: Input should be 'French' or 'English' (got "Klingon")`);
    expect(await client.GET("/v1/audio_books/", { params: { query: { limit: 1 } } }).catch((e: unknown) => e)).toBeInstanceOf(AuthenticationError);
    const missing = await client.GET("/v1/audio_books/{audio_book_id}", { params: { path: { audio_book_id: ID } } }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as NotFoundError).detail).toBe("Audio book not found");
    const limited = await client.GET("/v1/voices").catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(RateLimitError);
    expect((limited as RateLimitError).retryAfterSeconds).toBe(7);
    expect(seen.every((line) => line.endsWith("key=k1"))).toBe(true);
  });

  it("returns data on success and says ConnectionError when nothing listens", async () => {
    handler = (_req, res) => json(res, 200, [book("completed", 100)]);
    const client = createClient({ baseUrl: base, apiKey: "k1" });
    const list = unwrap(await client.GET("/v1/audio_books/"));
    expect(list[0]?.task_status).toBe("completed");
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const offline = createClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "k1" });
    const error = await offline.GET("/v1/voices").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as Error).message).toContain("ECONNREFUSED");
  });
});

describe("waitFor", () => {
  const sse = (res: ServerResponse, frames: string[], end: boolean) => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const frame of frames) res.write(frame);
    if (end) res.end();
  };

  it("follows the events stream to the completed record", async () => {
    handler = (req, res) => {
      if (req.url === `/v1/audio_books/${ID}/events`) {
        return sse(res, [
          ": heartbeat\n\n",
          `event: progress\nid: 1\ndata: ${JSON.stringify({ id: ID, task_status: "processing", task_progress: 10, date_updated: "x" })}\n\n`,
          `event: progress\nid: 2\ndata: ${JSON.stringify({ id: ID, task_status: "processing", task_progress: 60, date_updated: "y" })}\n\n`,
          `event: completed\nid: 3\ndata: ${JSON.stringify(book("completed", 100, { localized_file: "http://x/file.mp3" }))}\n\n`,
        ], false); // the server keeps the stream open: waitFor must stop at the final event anyway
      }
      return json(res, 500, { detail: "no" });
    };
    const client = createClient({ baseUrl: base, apiKey: "k1" });
    const updates: ProgressUpdate[] = [];
    let via = "";
    const final = await client.waitFor(book("queued", 0), { onProgress: (u) => updates.push(u), onFinal: (_r, how) => (via = how) });
    expect(final.localized_file).toBe("http://x/file.mp3");
    expect(via).toBe("events");
    expect(updates.map((u) => [u.status, u.progress])).toEqual([
      ["queued", 0],
      ["processing", 10],
      ["processing", 60],
      ["completed", 100],
    ]);
    expect(seen.filter((line) => line.startsWith("GET /v1/audio_books/") && !line.includes("/events"))).toEqual([]);
  });

  it("polls when the server has no events route (404), and when the stream breaks off", async () => {
    for (const events of ["missing", "broken"] as const) {
      let reads = 0;
      handler = (req, res) => {
        if (req.url === `/v1/videos/subtitle/${ID}/events`) {
          if (events === "missing") return json(res, 404, { detail: "Not Found" });
          return sse(res, [`event: progress\nid: 1\ndata: ${JSON.stringify({ id: ID, task_status: "processing", task_progress: 5, date_updated: "x" })}\n\n`], true);
        }
        if (req.url === `/v1/videos/subtitle/${ID}`) {
          reads += 1;
          return json(res, 200, { ...book(reads < 3 ? "processing" : "completed", reads < 3 ? 40 : 100), mode: "side_file" });
        }
        return json(res, 500, { detail: "no" });
      };
      const client = createClient({ baseUrl: base, apiKey: "k1" });
      let via = "";
      const final = await client.waitFor({ ...book("queued", 0), mode: "side_file" }, { pollIntervalMs: 20, onFinal: (_r, how) => (via = how) });
      expect(final.task_status).toBe("completed");
      expect(via).toBe("polling");
      expect(reads).toBe(3);
    }
  });

  it("throws TaskFailedError with the record for a failed task, WaitTimeoutError past timeoutMs", async () => {
    handler = (req, res) => {
      if (req.url === `/v1/voices/streams/${ID}/events`) {
        return sse(res, [`event: failed\nid: 9\ndata: ${JSON.stringify({ ...book("failed", 30, { task_error: "no speech found" }), name: undefined })}\n\n`], true);
      }
      return json(res, 500, { detail: "no" });
    };
    const client = createClient({ baseUrl: base, apiKey: "k1" });
    const { name: _name, ...stream } = book("queued", 0);
    const failed = await client.waitFor(stream).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(TaskFailedError);
    expect((failed as TaskFailedError).record.task_error).toBe("no speech found");

    handler = (req, res) => {
      if (req.url?.endsWith("/events")) return sse(res, [": heartbeat\n\n"], false);
      return json(res, 500, { detail: "no" });
    };
    const slow = await client.waitFor(book("processing", 5), { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(WaitTimeoutError);
  });
});

describe("download", () => {
  it("saves the body to the path, and a 404 is a NotFoundError with no file left behind", async () => {
    const dir = await tempDir("voiceloc-sdk-dl-");
    try {
      handler = (req, res) => {
        if (req.url?.startsWith("/v1/files/a.mp3")) return res.writeHead(200, { "content-type": "audio/mpeg" }).end(Buffer.alloc(70_000, 7));
        return json(res, 404, { detail: "gone" });
      };
      const client = createClient({ baseUrl: base, apiKey: "k1" });
      const saved = await client.download(`${base}/v1/files/a.mp3?expires=1&signature=s`, join(dir.path, "sub", "a.mp3"));
      expect(saved).toMatchObject({ bytes: 70_000, contentType: "audio/mpeg" });
      expect((await readFile(join(dir.path, "sub", "a.mp3"))).length).toBe(70_000);
      await expect(client.download("/v1/files/b.mp3", join(dir.path, "b.mp3"))).rejects.toBeInstanceOf(NotFoundError);
      await expect(readFile(join(dir.path, "b.mp3"))).rejects.toThrow();
    } finally {
      await dir.cleanup();
    }
  });
});

describe("verifyWebhook", () => {
  const secret = `whsec_${Buffer.from("0123456789abcdef0123456789abcdef").toString("base64")}`;
  const payload = JSON.stringify({ type: "audio_book.completed", timestamp: "2026-11-27T07:00:00.000Z", data: book("completed", 100) });
  const signed = (body: string, at = new Date()) => {
    const id = "msg_2Kx";
    return { "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(secret).sign(id, at, body) };
  };

  it("returns the event of a correctly signed delivery (plain object or Headers)", () => {
    const headers = signed(payload);
    const event = verifyWebhook(payload, headers, secret);
    expect(event.type).toBe("audio_book.completed");
    expect(event.data.id).toBe(ID);
    expect(verifyWebhook(Buffer.from(payload), new Headers(headers), secret).type).toBe("audio_book.completed");
  });

  it("refuses a changed body, another secret and an old timestamp", () => {
    const headers = signed(payload);
    expect(() => verifyWebhook(payload.replace("completed", "failed"), headers, secret)).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(payload, headers, `whsec_${Buffer.from("another-secret-another-secret!!").toString("base64")}`)).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(payload, signed(payload, new Date(Date.now() - 3_600_000)), secret)).toThrow(WebhookVerificationError);
  });
});
