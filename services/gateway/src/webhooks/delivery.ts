import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { Webhook } from "standardwebhooks";
import { createCatalogBus, outcome, type Bus, type BusSubscription, type CatalogBus, type WorkContext, type WorkOutcome } from "@voiceloc/bus";
import { BUS_CATALOG, STREAMS, TASK_KINDS, webhookEventOf, type BusCatalogue, type TaskKind, type WebhookDeliveryWork, type WebhookEvent } from "@voiceloc/contracts";
import { pinnedLookup, type Resolver } from "@voiceloc/fetch";
import type { Logger } from "@voiceloc/log";
import { uuidv7 } from "../records/ids.ts";
import type { RecordChange } from "../mesh/tasks.ts";
import type { TaskDoc, TaskRepository } from "../records/repository.ts";
import type { WebhookRepository, WebhookDoc } from "./repository.ts";
import type { SecretBox } from "./secrets.ts";
import { resolveWebhookUrl } from "./url.ts";

export interface WebhookSettings {
  /** One attempt's time limit (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** Wait before the second attempt, doubled per attempt (WEBHOOK_RETRY_BASE_MS). */
  retryBaseMs: number;
  /** Attempts before the endpoint is disabled (WEBHOOK_MAX_ATTEMPTS). */
  maxAttempts: number;
  /** Deliveries in flight in this process (WEBHOOK_CONCURRENCY). */
  concurrency: number;
  /** FETCH_ALLOW_PRIVATE_HOSTS. */
  allowPrivateHosts: readonly string[];
}

/** The task records' webhook outbox marks (see `TaskDoc.webhooks_pending`), per kind. */
export type WebhookOutbox = Record<TaskKind, Pick<TaskRepository<TaskDoc>, "pendingWebhooks" | "clearWebhooksPending">>;

export interface WebhookDeliveryDeps {
  bus: Bus;
  repo: WebhookRepository;
  outbox: WebhookOutbox;
  /** How often the outbox is swept for marks older than that (default 30 s; tests shorten it). */
  outboxSweepMs?: number;
  box: SecretBox;
  /** The record as `GET` returns it now (download links signed at delivery time); null when gone. */
  render(kind: TaskKind, id: string): Promise<unknown>;
  settings: WebhookSettings;
  logger: Logger;
  resolver?: Resolver;
  now?: () => Date;
}

/** `webhook-id` of a record's event: the same for every endpoint and every attempt. */
export function webhookMessageId(recordId: string, event: WebhookEvent): string {
  return `msg_${recordId.replaceAll("-", "")}_${event.replace(".", "_")}`;
}

const DAY_MS = 24 * 3_600_000;
/** Tries to put a finished record's messages on the queue (0.5, 1, 2, 4 s apart); the outbox sweep takes over after. */
const ENQUEUE_ATTEMPTS = 5;
const OUTBOX_SWEEP_MS = 30_000;
/** Records the outbox sweep reads at a time. */
const OUTBOX_BATCH = 100;

/** Exponential back-off with ±20 % jitter: base · 2^(attempt−1), at most a day. */
export function retryDelayMs(attempt: number, baseMs: number, random: () => number = Math.random): number {
  const plain = Math.min(DAY_MS, baseMs * 2 ** Math.min(Math.max(0, attempt - 1), 40));
  return Math.max(1, Math.round(plain * (0.8 + 0.4 * random())));
}

/** What may be logged of a URL: never the path or query (they may hold tokens). */
function origin(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return "(invalid url)";
  }
}

interface AttemptResult {
  statusCode: number | null;
  error: string | null;
}

const MAX_RESPONSE_BYTES = 64 * 1024;

/** Plain words for a failed connection. */
function connectionProblem(error: unknown, timeoutMs: number, timedOut: boolean): string {
  if (timedOut) return `no answer within ${timeoutMs} ms`;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case "ECONNREFUSED":
      return "the connection was refused";
    case "ECONNRESET":
    case "EPIPE":
      return "the connection was closed before an answer came";
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return "the host is unreachable";
    case "ETIMEDOUT":
      return "the connection timed out";
    default:
      if (typeof code === "string" && (code.startsWith("ERR_TLS") || code.includes("CERT") || code.startsWith("ERR_SSL"))) {
        return `the TLS handshake failed (${code})`;
      }
      return `the request failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/**
 * Webhook delivery: when a record finishes (the mesh's `onChange` with `finishedNow`), one message per
 * enabled endpoint of the owner that wants the event goes on the durable `webhook` work queue; the
 * gateways consume it (a shared durable consumer: one gateway per message), POST the signed payload
 * and settle: 2xx acks, anything else naks with an exponential delay until the last attempt, after
 * which the endpoint is disabled with the reason. Every attempt is written to the delivery log.
 *
 * The outbox: the update that finishes a record also marks it `webhooks_pending`, and the mark is
 * cleared once its messages are queued. A gateway that dies in between leaves the mark, which the
 * outbox sweep finds (every mark at start, then marks older than a sweep period every period) and
 * queues again. The queue drops a message whose id (endpoint and `webhook-id`) it has seen within its
 * duplicate window, so a message queued twice is delivered once.
 */
export class WebhookDelivery {
  private readonly bus: CatalogBus<BusCatalogue>;
  private readonly subscriptions: BusSubscription[] = [];
  private readonly pending = new Set<Promise<unknown>>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private stopping = false;

  constructor(private readonly deps: WebhookDeliveryDeps) {
    this.bus = createCatalogBus(deps.bus, BUS_CATALOG);
  }

  async start(): Promise<void> {
    await this.deps.bus.provision({ streams: [STREAMS.work], queues: [BUS_CATALOG.work.webhook.queue] });
    this.subscriptions.push(
      await this.bus.consumeWork("webhook", (ctx) => this.deliver(ctx), { concurrency: this.deps.settings.concurrency, heartbeat: true }),
    );
    // a message that could not even be parsed: said once in the log, not kept
    this.subscriptions.push(
      await this.bus.onDeadLetter("webhook", async (letter) => {
        this.deps.logger.warn({ msgId: letter.msgId, reason: letter.reason, deliveries: letter.deliveryCount }, "webhook delivery dead-lettered");
      }),
    );
    // every mark left by a gateway that stopped before queueing (this one, before a crash, or another)
    await this.sweepOutbox(0);
    const period = this.deps.outboxSweepMs ?? OUTBOX_SWEEP_MS;
    this.sweepTimer = setInterval(() => void this.sweepOutbox(period), period);
    this.sweepTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.sweepTimer);
    await this.sweeping;
    await Promise.allSettled([...this.pending]);
    for (const sub of this.subscriptions.splice(0).reverse()) await sub.stop({ graceMs: 5_000 });
  }

  /** The mesh listener: sync and non-blocking, the publishing runs on its own. */
  readonly onChange = (change: RecordChange): void => {
    if (!change.finishedNow) return;
    const run = this.handOver(change.kind, change.record, ENQUEUE_ATTEMPTS).finally(() => this.pending.delete(run));
    this.pending.add(run);
  };

  /**
   * Queues the deliveries of a finished record's event, then clears its outbox mark; a bus hiccup is
   * retried up to `attempts` times (publishes are deduplicated by endpoint and message id). False when
   * the mark stays for the outbox sweep.
   */
  private async handOver(kind: TaskKind, record: TaskDoc, attempts: number): Promise<boolean> {
    const status = record.task_status;
    const event = status === "completed" || status === "failed" ? webhookEventOf(kind, status) : undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        // a record that moved on since it was marked has no event to deliver any more
        if (event) await this.enqueue(kind, record.id, record.account_id, event, record.date_updated);
        await this.deps.outbox[kind].clearWebhooksPending(record.id, record.date_updated);
        return true;
      } catch (error) {
        if (attempt >= attempts || this.stopping) {
          this.deps.logger.warn({ err: error, taskId: record.id, event }, "could not enqueue webhook deliveries; the outbox sweep will retry");
          return false;
        }
        this.deps.logger.warn({ err: error, taskId: record.id, event, attempt }, "could not enqueue webhook deliveries; retrying");
        await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** (attempt - 1)));
      }
    }
  }

  /** Hands over every record whose outbox mark is older than `graceMs` (0: every mark); one sweep at a time. */
  private sweepOutbox(graceMs: number): Promise<void> {
    this.sweeping ??= (async () => {
      try {
        const olderThan = new Date((this.deps.now ?? (() => new Date()))().getTime() - graceMs).toISOString();
        for (const kind of TASK_KINDS) {
          for (;;) {
            const batch = await this.deps.outbox[kind].pendingWebhooks(olderThan, OUTBOX_BATCH);
            let queued = 0;
            for (const record of batch) if (!this.stopping && (await this.handOver(kind, record, 1))) queued += 1;
            if (queued > 0) this.deps.logger.info({ kind, records: queued }, "queued the webhook deliveries left in the outbox");
            // a full batch all handed over: more may wait; anything left is for the next sweep
            if (batch.length < OUTBOX_BATCH || queued < batch.length) break;
          }
        }
      } catch (error) {
        this.deps.logger.warn({ err: error }, "webhook outbox sweep failed; will retry");
      } finally {
        this.sweeping = undefined;
      }
    })();
    return this.sweeping;
  }

  /** Puts one delivery per enabled endpoint of the account that wants the event on the queue. */
  async enqueue(kind: TaskKind, recordId: string, accountId: string, event: WebhookEvent, timestamp: string): Promise<number> {
    const endpoints = (await this.deps.repo.enabledFor(accountId)).filter((e) => e.events.includes(event));
    const messageId = webhookMessageId(recordId, event);
    for (const endpoint of endpoints) {
      const work: WebhookDeliveryWork = {
        webhook_id: endpoint.id,
        account_id: accountId,
        message_id: messageId,
        event_type: event,
        kind,
        record_id: recordId,
        timestamp,
      };
      await this.bus.publishWork("webhook", work);
      this.deps.logger.info({ taskId: recordId, webhookId: endpoint.id, event, messageId }, "webhook delivery queued");
    }
    return endpoints.length;
  }

  private async deliver(ctx: WorkContext<WebhookDeliveryWork>): Promise<WorkOutcome> {
    const work = ctx.data;
    const log = this.deps.logger.child({ webhookId: work.webhook_id, messageId: work.message_id, taskId: work.record_id });
    const endpoint = await this.deps.repo.get(work.webhook_id);
    if (!endpoint || endpoint.account_id !== work.account_id) {
      log.info("webhook endpoint deleted; delivery dropped");
      return outcome.ack();
    }
    if (!endpoint.enabled || !endpoint.events.includes(work.event_type)) {
      log.info({ enabled: endpoint.enabled }, "webhook endpoint disabled or no longer subscribed; delivery dropped");
      return outcome.ack();
    }
    const attempt = ctx.deliveryCount;
    const started = performance.now();
    const result = await this.attempt(endpoint, work, ctx);
    const latencyMs = Math.max(0, Math.round(performance.now() - started));
    const now = (this.deps.now ?? (() => new Date()))().toISOString();
    await this.deps.repo.logDelivery({
      id: uuidv7(),
      webhook_id: endpoint.id,
      account_id: endpoint.account_id,
      message_id: work.message_id,
      event_type: work.event_type,
      attempt,
      status_code: result.statusCode,
      latency_ms: latencyMs,
      error: result.error,
      date_created: now,
    });
    if (result.error === null) {
      log.info({ attempt, status: result.statusCode, latencyMs, origin: origin(endpoint.url) }, "webhook delivered");
      return outcome.ack();
    }
    const last = attempt >= this.deps.settings.maxAttempts || ctx.lastAttempt;
    if (last) {
      const reason = `Disabled after ${attempt} failed attempt${attempt === 1 ? "" : "s"} to deliver ${work.event_type} (${work.message_id}); the last one: ${result.error}.`;
      await this.deps.repo.disable(endpoint.id, reason, now);
      log.warn({ attempt, error: result.error, origin: origin(endpoint.url) }, "webhook endpoint disabled: every attempt failed");
      return outcome.ack();
    }
    const delayMs = retryDelayMs(attempt, this.deps.settings.retryBaseMs);
    log.info({ attempt, error: result.error, delayMs, origin: origin(endpoint.url) }, "webhook attempt failed; will retry");
    return outcome.retry(delayMs, result.error);
  }

  /** One attempt: the SSRF guard on the URL as it resolves now, then the signed POST to the checked addresses. */
  private async attempt(endpoint: WebhookDoc, work: WebhookDeliveryWork, ctx: WorkContext<WebhookDeliveryWork>): Promise<AttemptResult> {
    const { timeoutMs } = this.deps.settings;
    const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)]);
    const resolved = await resolveWebhookUrl(
      endpoint.url,
      { allowPrivateHosts: this.deps.settings.allowPrivateHosts, ...(this.deps.resolver ? { resolver: this.deps.resolver } : {}) },
      signal,
    );
    if (!resolved.ok) return { statusCode: null, error: `the URL was refused: ${resolved.problem}` };
    let secret: string;
    try {
      secret = this.deps.box.open(endpoint.secret_sealed, endpoint.id);
    } catch {
      return { statusCode: null, error: "the endpoint's signing secret cannot be read (was SIGNING_SECRET changed?); delete and re-create the endpoint" };
    }
    const data = await this.deps.render(work.kind, work.record_id);
    if (data === null) return { statusCode: null, error: "the record no longer exists" };
    const body = JSON.stringify({ type: work.event_type, timestamp: work.timestamp, data });
    const sentAt = (this.deps.now ?? (() => new Date()))();
    const signature = new Webhook(secret).sign(work.message_id, sentAt, body);
    const headers = {
      "content-type": "application/json",
      "user-agent": "voiceloc-webhooks/0.1",
      "webhook-id": work.message_id,
      "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)),
      "webhook-signature": signature,
    };
    try {
      const res = await postOnce(resolved.url, resolved.addresses, headers, body, signal);
      const status = res.statusCode ?? 0;
      await drain(res);
      if (status >= 200 && status <= 299) return { statusCode: status, error: null };
      const hint = status >= 300 && status <= 399 ? " (redirects are not followed)" : "";
      return { statusCode: status, error: `the endpoint answered HTTP ${status}${hint}` };
    } catch (error) {
      const timedOut = signal.aborted && !ctx.signal.aborted;
      return { statusCode: null, error: connectionProblem(error, timeoutMs, timedOut) };
    }
  }
}

function postOnce(
  url: URL,
  addresses: Parameters<typeof pinnedLookup>[0],
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const https = url.protocol === "https:";
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const options: RequestOptions & { servername?: string } = {
    method: "POST",
    hostname,
    port: url.port !== "" ? Number(url.port) : https ? 443 : 80,
    path: `${url.pathname}${url.search}`,
    headers: { ...headers, host: url.host, "content-length": String(Buffer.byteLength(body)) },
    // a fresh connection per attempt, to the checked addresses only
    agent: false,
    lookup: pinnedLookup(addresses),
    signal,
  };
  if (https && isIP(hostname) === 0) options.servername = hostname;
  return new Promise((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(options, resolve);
    req.on("error", reject);
    req.end(body);
  });
}

/** Reads (and drops) at most 64 KiB of the answer, then closes the connection. */
async function drain(res: IncomingMessage): Promise<void> {
  let seen = 0;
  try {
    for await (const chunk of res) {
      seen += (chunk as Buffer).length;
      if (seen > MAX_RESPONSE_BYTES) break;
    }
  } catch {
    // the status is what counts
  } finally {
    res.destroy();
  }
}
