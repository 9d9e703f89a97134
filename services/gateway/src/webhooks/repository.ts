import type { Collection, Store } from "@voiceloc/store";
import type { WebhookEvent } from "@voiceloc/contracts";
import { newestFirstPage, type Page } from "../records/repository.ts";

/** A webhook endpoint as stored: the signing secret only sealed (see SecretBox). */
export interface WebhookDoc {
  id: string;
  account_id: string;
  url: string;
  events: WebhookEvent[];
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  secret_sealed: string;
  date_created: string;
  date_updated: string;
}

/** One attempt of one message to one endpoint. */
export interface WebhookDeliveryDoc {
  id: string;
  webhook_id: string;
  account_id: string;
  message_id: string;
  event_type: WebhookEvent;
  attempt: number;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  date_created: string;
}

export function presentWebhook(doc: WebhookDoc) {
  return {
    id: doc.id,
    url: doc.url,
    events: doc.events,
    description: doc.description,
    enabled: doc.enabled,
    disabled_reason: doc.disabled_reason,
    date_created: doc.date_created,
    date_updated: doc.date_updated,
  };
}

export function presentDelivery(doc: WebhookDeliveryDoc) {
  return {
    id: doc.id,
    webhook_id: doc.webhook_id,
    message_id: doc.message_id,
    event_type: doc.event_type,
    attempt: doc.attempt,
    status_code: doc.status_code,
    latency_ms: doc.latency_ms,
    error: doc.error,
    date_created: doc.date_created,
  };
}

/** Endpoints per account and their delivery log. */
export class WebhookRepository {
  private constructor(
    private readonly endpoints: Collection<WebhookDoc>,
    private readonly deliveries: Collection<WebhookDeliveryDoc>,
  ) {}

  static async open(store: Store): Promise<WebhookRepository> {
    const endpoints = await store.collection<WebhookDoc>({
      name: "webhooks",
      indexes: [{ fields: [["account_id", 1], ["date_created", -1], ["id", -1]] }],
    });
    const deliveries = await store.collection<WebhookDeliveryDoc>({
      name: "webhook_deliveries",
      indexes: [{ fields: [["webhook_id", 1], ["date_created", -1], ["id", -1]] }],
    });
    return new WebhookRepository(endpoints, deliveries);
  }

  async create(doc: WebhookDoc): Promise<void> {
    await this.endpoints.insert(doc);
  }

  async count(accountId: string): Promise<number> {
    return this.endpoints.count({ account_id: accountId });
  }

  /** The endpoint, whoever owns it (the delivery consumer). */
  get(id: string): Promise<WebhookDoc | null> {
    return this.endpoints.get(id);
  }

  async getOwned(accountId: string, id: string): Promise<WebhookDoc | null> {
    const doc = await this.endpoints.get(id);
    return doc && doc.account_id === accountId ? doc : null;
  }

  list(accountId: string, limit: number, cursor: string | undefined): Promise<Page<WebhookDoc>> {
    return newestFirstPage(this.endpoints, { account_id: accountId }, limit, cursor);
  }

  /** The account's enabled endpoints (the event filter runs on the caller's side: `events` is a list). */
  async enabledFor(accountId: string): Promise<WebhookDoc[]> {
    return this.endpoints.find({ account_id: accountId, enabled: true }, { sort: [["date_created", 1], ["id", 1]], limit: 1_000 });
  }

  updateOwned(accountId: string, id: string, set: Partial<WebhookDoc>): Promise<WebhookDoc | null> {
    return this.endpoints.updateOne({ id, account_id: accountId }, set);
  }

  /** Disables an endpoint that is still enabled, with the reason; null when it was gone or already disabled. */
  disable(id: string, reason: string, at: string): Promise<WebhookDoc | null> {
    return this.endpoints.updateOne({ id, enabled: true }, { enabled: false, disabled_reason: reason, date_updated: at });
  }

  /** Deletes the endpoint and its delivery log; false when it does not exist or is another account's. */
  async deleteOwned(accountId: string, id: string): Promise<boolean> {
    const deleted = await this.endpoints.deleteMany({ id, account_id: accountId });
    if (deleted === 0) return false;
    await this.deliveries.deleteMany({ webhook_id: id });
    return true;
  }

  async logDelivery(doc: WebhookDeliveryDoc): Promise<void> {
    await this.deliveries.insert(doc);
  }

  deliveriesOf(webhookId: string, limit: number, cursor: string | undefined): Promise<Page<WebhookDeliveryDoc>> {
    return newestFirstPage(this.deliveries, { webhook_id: webhookId }, limit, cursor);
  }
}
