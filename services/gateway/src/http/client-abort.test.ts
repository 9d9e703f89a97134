/**
 * A request its client abandons (the connection closes before the declared body arrived) is not a
 * server error: one line "client closed the request" without a stack, status 499 in the metrics and
 * the request line, and nothing partial kept (no upload record, no blob, no task record).
 */
import { connect } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { createLogger } from "@voiceloc/log";
import { readdir } from "node:fs/promises";
import { createFsBlobStore, type BlobStore } from "@voiceloc/blobs";
import { tempDir } from "@voiceloc/testing";
import type { Collection } from "@voiceloc/store";
import { createGateway, type GatewayService } from "../gateway.ts";
import { ALICE_KEY, BOB_KEY, jsonLogSink } from "../testing/harness.ts";

let gateway: GatewayService;
let port: number;
let blobs: BlobStore;
let blobRoot: string;
/** Blob writes begun (the upload had started storing the body when the client left). */
let puts = 0;
let dir: { path: string; cleanup: () => Promise<void> };
const lines: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  dir = await tempDir("voiceloc-abort-");
  const { sink } = jsonLogSink(lines);
  const config = loadConfig({
    DATA_DIR: dir.path,
    VOICELOC_API_KEYS: `alice:${ALICE_KEY},bob:${BOB_KEY}`,
    PUBLIC_BASE_URL: "http://api.test",
    RATE_LIMIT_PER_MINUTE: "off",
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
  });
  blobRoot = join(dir.path, "upload-blobs");
  const store = createFsBlobStore({ root: blobRoot });
  blobs = { ...store, put: (...args) => ((puts += 1), store.put(...args)) };
  gateway = await createGateway({ config, logger: createLogger({ name: "gateway", destination: sink }), blobs });
  port = await gateway.start();
});

afterAll(async () => {
  await gateway.stop();
  await blobs.close();
  await dir.cleanup();
});

/**
 * Opens a raw connection, sends the head of a request declaring `declared` body bytes (with
 * `Expect: 100-continue`: the server answers `100 Continue` when it hands the request to the app),
 * then `part` of the body, then (once `until` holds) destroys the socket.
 */
async function abandon(method: string, path: string, headers: Record<string, string>, declared: number, part: Buffer, until?: () => void): Promise<void> {
  const socket = connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.on("error", () => undefined);
  const continued = new Promise<void>((resolve) => {
    let seen = "";
    socket.on("data", (chunk: Buffer) => {
      seen += chunk.toString("latin1");
      if (seen.includes("100 Continue")) resolve();
    });
  });
  const head =
    `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nExpect: 100-continue\r\n` +
    Object.entries({ ...headers, "Content-Length": String(declared) })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("") +
    "\r\n";
  socket.write(head);
  await continued;
  await new Promise<void>((resolve) => socket.write(part, () => resolve()));
  // e.g. until the server has begun storing the body
  if (until) await vi.waitFor(until, { timeout: 30_000, interval: 10 });
  socket.destroy();
}

async function metricsText(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  return res.text();
}

/** The request counter of one route and status, from /metrics (0 when absent). */
function countOf(metrics: string, method: string, route: string, status: number): number {
  for (const line of metrics.split("\n")) {
    if (!line.includes("_count{") && !line.includes("_count {")) continue;
    if (line.includes(`method="${method}"`) && line.includes(`route="${route}"`) && line.includes(`status="${status}"`)) return Number(line.split(" ").pop());
  }
  return 0;
}

function fiveHundreds(metrics: string, route: string): string[] {
  return metrics.split("\n").filter((line) => line.includes("_count") && line.includes(`route="${route}"`) && /status="5\d\d"/.test(line));
}

/** Every file under the blob store's root (kept blobs, temporary files of unfinished writes, sidecars). */
async function filesUnder(root: string): Promise<string[]> {
  try {
    const entries = await readdir(root, { recursive: true, withFileTypes: true });
    return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  } catch {
    return [];
  }
}

/** Lines of the log that would page someone: errors, 5xx request lines, stacks. */
const alarming = () => lines.filter((l) => l.level === "error" || l.level === "fatal" || (typeof l.status === "number" && l.status >= 500) || "err" in l);

describe("a client that closes the connection before its body arrived", () => {
  it("POST /v1/uploads (raw body): one info line, counted as 499 and no 5xx, no record and no blob kept", async () => {
    const uploads = (await gateway.deps.store.collection({ name: "uploads" })) as Collection<{ id: string }>;
    const before = await uploads.count({});
    const putsBefore = puts;
    await abandon("POST", "/v1/uploads?filename=big.txt", { "API-KEY": ALICE_KEY, "Content-Type": "text/plain" }, 1_000_000, Buffer.alloc(64 * 1024, "a"), () =>
      expect(puts).toBeGreaterThan(putsBefore),
    );

    await vi.waitFor(async () => expect(countOf(await metricsText(), "POST", "/v1/uploads", 499)).toBe(1), { timeout: 30_000, interval: 50 });
    expect(fiveHundreds(await metricsText(), "/v1/uploads")).toEqual([]);
    expect(alarming()).toEqual([]);
    const mine = lines.filter((l) => l.path === "/v1/uploads");
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ level: "info", msg: "client closed the request", method: "POST", status: 499, account: "alice" });
    expect(JSON.stringify(mine[0])).not.toContain("stack");
    // the body had begun to be stored (see abandon's `until`); none of it stays
    expect(await uploads.count({})).toBe(before);
    await vi.waitFor(async () => expect(await filesUnder(blobRoot)).toEqual([]), { timeout: 30_000, interval: 50 });
  });

  it("POST /v1/uploads (multipart): the same, not a 422 for a form cut short", async () => {
    const boundary = "----abort-boundary";
    const part = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\n${"b".repeat(32 * 1024)}`);
    const uploads = (await gateway.deps.store.collection({ name: "uploads" })) as Collection<{ id: string }>;
    const before = await uploads.count({});
    const closed = countOf(await metricsText(), "POST", "/v1/uploads", 499);
    const putsBefore = puts;
    await abandon("POST", "/v1/uploads", { "API-KEY": ALICE_KEY, "Content-Type": `multipart/form-data; boundary=${boundary}` }, 1_000_000, part, () =>
      expect(puts).toBeGreaterThan(putsBefore),
    );

    await vi.waitFor(async () => expect(countOf(await metricsText(), "POST", "/v1/uploads", 499)).toBe(closed + 1), { timeout: 30_000, interval: 50 });
    const metrics = await metricsText();
    expect(fiveHundreds(metrics, "/v1/uploads")).toEqual([]);
    expect(countOf(metrics, "POST", "/v1/uploads", 422)).toBe(0);
    expect(alarming()).toEqual([]);
    expect(lines.filter((l) => l.path === "/v1/uploads").map((l) => [l.msg, l.status])).toEqual([
      ["client closed the request", 499],
      ["client closed the request", 499],
    ]);
    expect(await uploads.count({})).toBe(before);
    await vi.waitFor(async () => expect(await filesUnder(blobRoot)).toEqual([]), { timeout: 30_000, interval: 50 });
  });

  it("a JSON body cut short (POST /v1/audio_books/): counted as 499, no 5xx or 422, no record", async () => {
    const body = Buffer.from('{"file": "book.txt", "name": "Cut short", "source_language": "English", ');
    await abandon("POST", "/v1/audio_books/", { "API-KEY": ALICE_KEY, "Content-Type": "application/json" }, 10_000, body);

    await vi.waitFor(async () => expect(countOf(await metricsText(), "POST", "/v1/audio_books/", 499)).toBe(1), { timeout: 30_000, interval: 50 });
    const metrics = await metricsText();
    expect(fiveHundreds(metrics, "/v1/audio_books/")).toEqual([]);
    expect(countOf(metrics, "POST", "/v1/audio_books/", 422)).toBe(0);
    expect(alarming()).toEqual([]);
    expect(lines.filter((l) => l.path === "/v1/audio_books/")).toEqual([expect.objectContaining({ level: "info", msg: "client closed the request", status: 499 })]);
    expect(await gateway.deps.records.audiobook.countUnfinished("alice")).toBe(0);
  });

  it("a request read whole still gets its answer (the same connection code path, no client gone)", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/uploads?filename=small.txt`, { method: "POST", headers: { "API-KEY": ALICE_KEY, "Content-Type": "text/plain" }, body: "Hello." });
    expect(res.status).toBe(201);
    const res422 = await fetch(`http://127.0.0.1:${port}/v1/audio_books/`, { method: "POST", headers: { "API-KEY": ALICE_KEY, "Content-Type": "application/json" }, body: "{" });
    expect(res422.status).toBe(422);
  });
});
