/**
 * The webhook outbox: a gateway killed (SIGKILL, as `kill -9`) right after projecting a record as
 * finished and before queueing its webhooks loses nothing. The gateway runs as its own process over a
 * real nats-server and the embedded store on disk, with no worker: the test publishes the tasks'
 * final events itself. VOICELOC_TEST_CRASH_AFTER_FINISHING=1 makes the first gateway kill itself at
 * that point; the gateway restarted on the same store and bus queues the delivery, and the endpoint (a
 * local HTTP receiver) gets the event exactly once, through another restart too.
 */
import { createServer, type Server } from "node:http";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCatalogBus, createNatsBus, type Bus } from "@voiceloc/bus";
import { BUS_CATALOG } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { freePort, startNatsServer, tempDir, type NatsServerHandle } from "@voiceloc/testing";
import { createEnglishBook, isRunning, signalAndWait, startService, type ServiceProcess } from "./testing/processes.ts";

const KEY = "outbox-key-alice-1";

let nats: NatsServerHandle;
let dir: { path: string; cleanup: () => Promise<void> };
let bus: Bus;
let receiver: Server;
/** The `webhook-id` of every POST the receiver got, in order. */
const received: string[] = [];
const procs: ServiceProcess[] = [];

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; received ${JSON.stringify(received)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** How many POSTs carried the webhook-id of this record's completion. */
const deliveriesOf = (recordId: string) => received.filter((id) => id === `msg_${recordId.replaceAll("-", "")}_audio_book_completed`).length;

beforeAll(async () => {
  nats = await startNatsServer();
  dir = await tempDir("voiceloc-outbox-");
  bus = await createNatsBus({ url: nats.url, logger: silentLogger(), name: "outbox-test-worker" });
  receiver = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received.push(String(req.headers["webhook-id"]));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
}, 60_000);

afterAll(async () => {
  for (const proc of procs.splice(0)) if (isRunning(proc)) await signalAndWait(proc, "SIGKILL");
  await bus?.close();
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  await nats?.stop();
  await dir?.cleanup();
});

describe("webhook outbox", () => {
  it("a gateway killed between finishing a record and queueing its webhook: after a restart the endpoint gets the event exactly once", async () => {
    const media = join(dir.path, "media");
    await mkdir(media, { recursive: true });
    await writeFile(join(media, "tide.txt"), "The tide came in over the flats.");
    const receiverPort = (receiver.address() as { port: number }).port;
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {
      NATS_URL: nats.url,
      DATA_DIR: dir.path,
      MEDIA_ROOT: media,
      PUBLIC_BASE_URL: base,
      VOICELOC_API_KEYS: `alice:${KEY}`,
      SIGNING_SECRET: "outbox-signing-secret-0123456789-abcdef",
      FETCH_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${receiverPort}`,
    };
    const start = async (extra: Record<string, string> = {}) => {
      const proc = await startService("gateway", { ...env, ...extra }, port);
      procs.push(proc);
      return proc;
    };
    const events = createCatalogBus(bus, BUS_CATALOG);
    const complete = (taskId: string) =>
      events.publishEvent("task", { task_id: taskId, kind: "audiobook", seq: 1, status: "completed", progress: 100, result_key: null, at: new Date().toISOString() });

    const doomed = await start({ VOICELOC_TEST_CRASH_AFTER_FINISHING: "1" });
    const hook = await fetch(`${base}/v1/webhooks`, {
      method: "POST",
      headers: { "API-KEY": KEY, "Content-Type": "application/json" },
      body: JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hook`, events: ["audio_book.completed"] }),
    });
    expect(hook.status).toBe(201);
    const first = await createEnglishBook(base, KEY, "tide.txt", "First");
    await complete(first);
    // the gateway projected the record as finished, then died before anything else
    expect(await doomed.exited).toEqual({ code: null, signal: "SIGKILL" });

    await start();
    const status = await fetch(`${base}/v1/audio_books/${first}`, { headers: { "API-KEY": KEY } });
    expect(((await status.json()) as { task_status: string }).task_status).toBe("completed");
    await until("the first book's webhook", () => (deliveriesOf(first) > 0 ? true : undefined));

    // another restart, and another finished record delivered after it: nothing is sent twice
    await signalAndWait(procs.at(-1)!, "SIGTERM");
    await start();
    const second = await createEnglishBook(base, KEY, "tide.txt", "Second");
    await complete(second);
    await until("the second book's webhook", () => (deliveriesOf(second) > 0 ? true : undefined));
    expect(deliveriesOf(first)).toBe(1);
    expect(deliveriesOf(second)).toBe(1);
    expect(received).toHaveLength(2);
  }, 240_000);
});
