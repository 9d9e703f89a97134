/**
 * Signed webhooks end to end: a real gateway with the audio book worker (over nats-server, and in
 * single-machine mode on the in-process bus), a local HTTP receiver on a free port (allow-listed in
 * FETCH_ALLOW_PRIVATE_HOSTS), payloads verified with the `standardwebhooks` library and the secret
 * shown at creation.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { loadConfig } from "@voiceloc/config";
import { silentLogger } from "@voiceloc/log";
import { freePort, startNatsServer, tempDir, type NatsServerHandle, checkResponsesOf } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";

const KEY = "webhooks-key-alice-1";
const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
const TEXT = "The lighthouse keeper climbed the stairs every evening. He polished the lens and wrote the weather in a small book.";

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

/** A receiver: `/ok` answers 200, `/flaky` 500 twice then 200, `/down` always 503. */
async function startReceiver(): Promise<{ port: number; received: Received[]; close: () => Promise<void> }> {
  const received: Received[] = [];
  let flaky = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      let status = 200;
      if (path.startsWith("/flaky")) status = ++flaky <= 2 ? 500 : 200;
      if (path.startsWith("/down")) status = 503;
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), status });
      res.writeHead(status, { "content-type": "text/plain" }).end(status === 200 ? "thanks" : "not now");
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { port, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 180_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A signed link without its expiry and signature (null stays null). */
function unsigned(link: unknown): string | null {
  return link == null ? null : String(link).split("?")[0]!;
}

function verify(secret: string, r: Received): any {
  const h: Record<string, string> = {
    "webhook-id": String(r.headers["webhook-id"]),
    "webhook-timestamp": String(r.headers["webhook-timestamp"]),
    "webhook-signature": String(r.headers["webhook-signature"]),
  };
  return new Webhook(secret).verify(r.body, h);
}

describe.each([
  { mode: "over nats-server", nats: true },
  { mode: "single machine (in-process bus)", nats: false },
])("webhooks $mode", ({ nats: withNats }) => {
  let nats: NatsServerHandle | undefined;
  let dir: { path: string; cleanup: () => Promise<void> };
  let runtime: Runtime;
  let base: string;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const res = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : null };
  };
  const hook = async (path: string, events: string[]): Promise<{ id: string; secret: string }> => {
    const created = await api("POST", "/v1/webhooks", { url: `http://127.0.0.1:${receiver.port}${path}`, events });
    expect(created.status).toBe(201);
    return created.json as { id: string; secret: string };
  };
  const book = async (file: string): Promise<string> => {
    const created = await api("POST", "/v1/audio_books/", { file, name: "Lighthouse", source_language: "English", target_language: "English" });
    expect(created.status).toBe(201);
    return created.json.id as string;
  };
  const finished = (id: string) =>
    until(`audio book ${id} to finish`, async () => {
      const { json } = await api("GET", `/v1/audio_books/${id}`);
      return json.task_status === "completed" || json.task_status === "failed" ? json : undefined;
    });

  beforeAll(async () => {
    dir = await tempDir("voiceloc-webhooks-");
    const media = join(dir.path, "media");
    await mkdir(media, { recursive: true });
    await writeFile(join(media, "lighthouse.txt"), TEXT);
    receiver = await startReceiver();
    if (withNats) nats = await startNatsServer();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    checkResponsesOf(base);
    runtime = await startRuntime(
      loadConfig({
        DATA_DIR: dir.path,
        MEDIA_ROOT: media,
        PORT: String(port),
        HOST: "127.0.0.1",
        PUBLIC_BASE_URL: base,
        VOICELOC_API_KEYS: `alice:${KEY}`,
        LOG_LEVEL: "silent",
        SERVICES: "gateway,audiobook",
        FETCH_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${receiver.port}`,
        WEBHOOK_RETRY_BASE_MS: "300",
        WEBHOOK_MAX_ATTEMPTS: "3",
        WEBHOOK_TIMEOUT_MS: "5000",
        ...(nats ? { NATS_URL: nats.url } : {}),
      }),
      silentLogger(),
    );
  }, 240_000);

  afterAll(async () => {
    await runtime?.stop();
    await receiver?.close();
    await nats?.stop();
    await dir?.cleanup();
  });

  it("a completed audio book is POSTed, signed, to each subscribed endpoint; retried with the same webhook-id; a failing endpoint is disabled", async () => {
    const ok = await hook("/ok", ["audio_book.completed", "audio_book.failed"]);
    const flaky = await hook("/flaky", ["audio_book.completed"]);
    const down = await hook("/down", ["audio_book.completed"]);
    const elsewhere = await hook("/subtitles-only", ["subtitle.completed"]);

    const id = await book("lighthouse.txt");
    const record = await finished(id);
    expect(record.task_status).toBe("completed");

    // the plain endpoint: one POST, verified with the secret from creation
    const first = await until("the /ok delivery", () => receiver.received.find((r) => r.path === "/ok"));
    const payload = verify(ok.secret, first);
    expect(payload.type).toBe("audio_book.completed");
    expect(Date.parse(payload.timestamp)).not.toBeNaN();
    // the links are signed when each copy is made, so only their targets are compared
    const { localized_file: signedThen, stream_url: streamThen, ...fields } = payload.data;
    const { localized_file: signedNow, stream_url: streamNow, ...expected } = record;
    expect(fields).toEqual(expected);
    expect(unsigned(signedThen)).toBe(unsigned(signedNow));
    expect(unsigned(streamThen)).toBe(unsigned(streamNow));
    expect(String(signedThen)).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/files\//);
    expect(String(streamThen)).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/files\/streams\/.+\/index\.m3u8\?/);
    expect(first.headers["content-type"]).toBe("application/json");
    expect(String(first.headers["webhook-id"])).toMatch(/^msg_[0-9a-f]{32}_audio_book_completed$/);
    // a wrong secret does not verify
    expect(() => verify(`whsec_${Buffer.alloc(24, 7).toString("base64")}`, first)).toThrow();

    // 500, 500, then 200: the third attempt delivers, every attempt with the same webhook-id
    const flakyCalls = await until("three /flaky attempts", () => {
      const calls = receiver.received.filter((r) => r.path === "/flaky");
      return calls.length >= 3 ? calls : undefined;
    });
    expect(flakyCalls.map((r) => r.status)).toEqual([500, 500, 200]);
    expect(new Set(flakyCalls.map((r) => r.headers["webhook-id"]))).toEqual(new Set([first.headers["webhook-id"]]));
    expect(verify(flaky.secret, flakyCalls[2]!).data.id).toBe(id);
    const flakyLog = await until("the /flaky delivery log", async () => {
      const { json } = await api("GET", `/v1/webhooks/${flaky.id}/deliveries`);
      return (json as any[]).length >= 3 ? (json as any[]) : undefined;
    });
    expect(flakyLog.map((d) => [d.attempt, d.status_code])).toEqual([
      [3, 200],
      [2, 500],
      [1, 500],
    ]);
    expect(flakyLog.map((d) => d.error)).toEqual([null, "the endpoint answered HTTP 500", "the endpoint answered HTTP 500"]);
    for (const d of flakyLog) {
      expect(d).toMatchObject({ webhook_id: flaky.id, message_id: first.headers["webhook-id"], event_type: "audio_book.completed" });
      expect(d.latency_ms).toBeGreaterThanOrEqual(0);
    }
    expect((await api("GET", `/v1/webhooks/${flaky.id}`)).json).toMatchObject({ enabled: true, disabled_reason: null });

    // always 503: after the last of 3 attempts the endpoint is disabled, with the reason
    const disabled = await until("the /down endpoint to be disabled", async () => {
      const { json } = await api("GET", `/v1/webhooks/${down.id}`);
      return json.enabled === false ? json : undefined;
    });
    expect(disabled.disabled_reason).toMatch(/^Disabled after 3 failed attempts to deliver audio_book\.completed \(msg_[0-9a-f]{32}_audio_book_completed\); the last one: the endpoint answered HTTP 503\.$/);
    const downLog = (await api("GET", `/v1/webhooks/${down.id}/deliveries`)).json as any[];
    expect(downLog.map((d) => [d.attempt, d.status_code])).toEqual([
      [3, 503],
      [2, 503],
      [1, 503],
    ]);
    expect(receiver.received.filter((r) => r.path === "/down")).toHaveLength(3);

    // not subscribed: nothing sent
    expect(receiver.received.filter((r) => r.path === "/subtitles-only")).toEqual([]);
    expect((await api("GET", `/v1/webhooks/${elsewhere.id}/deliveries`)).json).toEqual([]);
    expect(receiver.received.filter((r) => r.path === "/ok")).toHaveLength(1);
  }, 300_000);

  it("a failed task sends audio_book.failed with the record and its task_error, only to endpoints that asked for it", async () => {
    const before = receiver.received.length;
    const failedOnly = await hook("/ok-failed", ["audio_book.failed"]);
    const id = await book("missing.txt");
    const record = await finished(id);
    expect(record.task_status).toBe("failed");
    const delivered = await until("the audio_book.failed delivery", () => receiver.received.find((r) => r.path === "/ok-failed"));
    const payload = verify(failedOnly.secret, delivered);
    expect(payload.type).toBe("audio_book.failed");
    const { stream_url: streamThen, ...fields } = payload.data;
    const { stream_url: streamNow, ...expected } = record;
    expect(fields).toEqual(expected);
    expect(unsigned(streamThen)).toBe(unsigned(streamNow));
    expect(payload.data.task_error).toEqual(expect.any(String));
    expect(String(delivered.headers["webhook-id"])).toMatch(/_audio_book_failed$/);
    // the /ok endpoint (both events) gets it too; /flaky (completed only) does not
    await until("the /ok failed delivery", () => receiver.received.slice(before).find((r) => r.path === "/ok"));
    await new Promise((r) => setTimeout(r, 1_000));
    expect(receiver.received.slice(before).filter((r) => r.path === "/flaky")).toEqual([]);
  }, 300_000);
});
