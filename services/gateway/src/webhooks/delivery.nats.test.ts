/**
 * The delivery consumer on a real nats-server: two gateways' consumers share the `webhook` queue
 * (each message is POSTed once), and the SSRF guard runs again at delivery time (a name that now
 * resolves to a private address is refused and the attempt logged).
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNatsBus, type Bus } from "@voiceloc/bus";
import { silentLogger } from "@voiceloc/log";
import { openEmbeddedStore, type Store } from "@voiceloc/store";
import { freePort, startNatsServer, tempDir, type NatsServerHandle } from "@voiceloc/testing";
import { uuidv7 } from "../records/ids.ts";
import { TASK_KINDS } from "../records/kinds.ts";
import { TaskRepository, type TaskDoc } from "../records/repository.ts";
import { WebhookDelivery, type WebhookOutbox, type WebhookSettings } from "./delivery.ts";
import { WebhookRepository, type WebhookDoc } from "./repository.ts";
import { SecretBox, newWebhookSecret } from "./secrets.ts";

const SIGNING = "delivery-test-signing-secret-long-enough-01";
let nats: NatsServerHandle;
let dir: { path: string; cleanup: () => Promise<void> };
let store: Store;
let repo: WebhookRepository;
let outbox: WebhookOutbox;
const box = new SecretBox(SIGNING);
const buses: Bus[] = [];
const deliveries: WebhookDelivery[] = [];
let server: Server;
let port: number;
const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function endpoint(url: string, accountId = "alice"): Promise<WebhookDoc> {
  const id = uuidv7();
  const now = new Date().toISOString();
  const doc: WebhookDoc = {
    id,
    account_id: accountId,
    url,
    events: ["audio_book.completed"],
    description: null,
    enabled: true,
    disabled_reason: null,
    secret_sealed: box.seal(newWebhookSecret(), id),
    date_created: now,
    date_updated: now,
  };
  await repo.create(doc);
  return doc;
}

/** A gateway's delivery consumer on its own NATS connection; every process shares the store. */
async function gatewayConsumer(name: string, settings: Partial<WebhookSettings>, resolver?: (host: string) => Promise<Array<{ address: string; family: 4 | 6 }>>): Promise<WebhookDelivery> {
  const bus = await createNatsBus({ url: nats.url, logger: silentLogger(), name });
  buses.push(bus);
  const delivery = new WebhookDelivery({
    bus,
    repo,
    outbox,
    box,
    render: async (_kind, id) => ({ id, task_status: "completed" }),
    settings: { timeoutMs: 5_000, retryBaseMs: 100, maxAttempts: 3, concurrency: 4, allowPrivateHosts: [`127.0.0.1:${port}`], ...settings },
    logger: silentLogger(),
    ...(resolver ? { resolver } : {}),
  });
  await delivery.start();
  deliveries.push(delivery);
  return delivery;
}

beforeAll(async () => {
  nats = await startNatsServer();
  dir = await tempDir("voiceloc-webhook-delivery-");
  store = await openEmbeddedStore({ dir: dir.path });
  repo = await WebhookRepository.open(store);
  outbox = {
    audiobook: await TaskRepository.open<TaskDoc>(store, TASK_KINDS.audiobook.collection),
    "voice-stream": await TaskRepository.open<TaskDoc>(store, TASK_KINDS["voice-stream"].collection),
    subtitle: await TaskRepository.open<TaskDoc>(store, TASK_KINDS.subtitle.collection),
  };
  port = await freePort();
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
}, 60_000);

afterAll(async () => {
  for (const d of deliveries) await d.stop();
  for (const b of buses) await b.close();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await store?.close();
  await nats?.stop();
  await dir?.cleanup();
});

describe("webhook deliveries over nats-server", () => {
  it("two gateways consuming the queue POST each message once", async () => {
    const a = await gatewayConsumer("gateway-a", {});
    await gatewayConsumer("gateway-b", {});
    const hook = await endpoint(`http://127.0.0.1:${port}/in`);
    const records = Array.from({ length: 24 }, () => uuidv7());
    for (const id of records) expect(await a.enqueue("audiobook", id, "alice", "audio_book.completed", new Date().toISOString())).toBe(1);
    // a repeated enqueue of the same record and event is the same message: dropped as a duplicate
    await a.enqueue("audiobook", records[0]!, "alice", "audio_book.completed", new Date().toISOString());
    await until("every message", () => (received.length >= records.length ? true : undefined));
    await new Promise((r) => setTimeout(r, 1_500));
    const ids = received.map((r) => String(r.headers["webhook-id"]));
    expect(ids).toHaveLength(records.length);
    expect(new Set(ids).size).toBe(records.length);
    expect(new Set(received.map((r) => JSON.parse(r.body).data.id))).toEqual(new Set(records));
    const log = await repo.deliveriesOf(hook.id, 200, undefined);
    expect(log.items).toHaveLength(records.length);
    expect(log.items.every((d) => d.attempt === 1 && d.status_code === 204 && d.error === null)).toBe(true);
    // other accounts' endpoints get nothing
    const bobs = await endpoint(`http://127.0.0.1:${port}/bob`, "bob");
    expect(await a.enqueue("audiobook", uuidv7(), "alice", "audio_book.completed", new Date().toISOString())).toBe(1);
    expect((await repo.deliveriesOf(bobs.id, 10, undefined)).items).toEqual([]);
    await repo.deleteOwned("alice", hook.id);
    await repo.deleteOwned("bob", bobs.id);
  }, 120_000);

  it("checks the address again at delivery: a name that now resolves to a private address is refused, logged, and the endpoint disabled", async () => {
    let answer = "93.184.215.14";
    const resolver = async () => [{ address: answer, family: 4 as const }];
    const d = await gatewayConsumer("gateway-rebind", { maxAttempts: 1 }, resolver);
    // the other consumers of the queue (earlier test) would resolve the name through the system: stop them
    for (const other of deliveries.filter((x) => x !== d)) await other.stop();
    const hook = await endpoint("https://rebind.example/hook");
    answer = "127.0.0.1";
    const before = received.length;
    await d.enqueue("audiobook", uuidv7(), "alice", "audio_book.completed", new Date().toISOString());
    const disabled = await until("the endpoint to be disabled", async () => {
      const doc = await repo.get(hook.id);
      return doc && !doc.enabled ? doc : undefined;
    });
    expect(disabled.disabled_reason).toMatch(/^Disabled after 1 failed attempt to deliver audio_book\.completed .*the URL was refused: the URL's host is \(or resolves to\) a loopback, private/);
    const [attempt] = (await repo.deliveriesOf(hook.id, 10, undefined)).items;
    expect(attempt).toMatchObject({ attempt: 1, status_code: null });
    expect(attempt?.error).toMatch(/^the URL was refused: /);
    expect(received.length).toBe(before);
  }, 120_000);

  it("queues the deliveries of a record left in the outbox when a gateway starts, and a second start sends nothing again", async () => {
    for (const other of deliveries.splice(0)) await other.stop();
    const hook = await endpoint(`http://127.0.0.1:${port}/outbox`);
    await repo.updateOwned("alice", hook.id, { events: ["audio_book.completed", "audio_book.failed"] });
    const books = outbox.audiobook as TaskRepository<TaskDoc>;
    const id = uuidv7();
    const at = new Date().toISOString();
    await books.create({ id, account_id: "alice", task_status: "processing", task_progress: 50, task_error: null, result_key: null, seq: 3, published: true, date_created: at, date_updated: at });
    // finished in the store, and the gateway that did it died before queueing anything
    expect(await books.applyEvent(id, 4, { task_status: "completed", date_updated: at }, 100)).toBe(true);
    expect((await books.pendingWebhooks(new Date(Date.now() + 1_000).toISOString(), 10)).map((doc) => doc.id)).toEqual([id]);
    const before = received.length;
    await gatewayConsumer("gateway-restarted", {});
    await until("the outbox delivery", () => (received.length > before ? true : undefined));
    expect(await books.pendingWebhooks(new Date(Date.now() + 1_000).toISOString(), 10)).toEqual([]);
    // a record failed by a dead letter is marked as well; another gateway starts: each event once
    const failed = uuidv7();
    await books.create({ id: failed, account_id: "alice", task_status: "queued", task_progress: 0, task_error: null, result_key: null, seq: 0, published: true, date_created: at, date_updated: at });
    expect(await books.failIfUnfinished(failed, "gone", new Date().toISOString())).toBe(true);
    await gatewayConsumer("gateway-second", {});
    const log = async () => (await repo.deliveriesOf(hook.id, 10, undefined)).items;
    const failedMessage = `msg_${failed.replaceAll("-", "")}_audio_book_failed`;
    await until("the failed record's delivery", async () => ((await log()).some((d) => d.message_id === failedMessage) ? true : undefined));
    expect((await log()).map((d) => d.message_id).sort()).toEqual([`msg_${id.replaceAll("-", "")}_audio_book_completed`, failedMessage].sort());
    expect(await books.pendingWebhooks(new Date(Date.now() + 1_000).toISOString(), 10)).toEqual([]);
  }, 120_000);
});
