/**
 * Verifying a webhook delivery (Standard Webhooks: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature`, HMAC-SHA256 with the endpoint's `whsec_…` secret, 5-minute tolerance).
 */
import { Webhook } from "standardwebhooks";
import type { components } from "./generated/api.ts";
import { WebhookVerificationError } from "./errors.ts";

type Schemas = components["schemas"];

/** A verified delivery: the event type, when it was sent, and the record as `GET` returns it. */
export type WebhookEvent =
  | { type: "audio_book.completed" | "audio_book.failed"; timestamp: string; data: Schemas["AudioBook"] }
  | { type: "voice_stream.completed" | "voice_stream.failed"; timestamp: string; data: Schemas["VoiceStream"] }
  | { type: "subtitle.completed" | "subtitle.failed"; timestamp: string; data: Schemas["SubtitleJob"] };

export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/**
 * Checks the signature of a delivery against the raw body (exactly the bytes received: parse it
 * only afterwards) and returns the parsed event; throws WebhookVerificationError otherwise.
 */
export function verifyWebhook(payload: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEvent {
  const flat: Record<string, string> = {};
  const entries: Array<[string, string | string[] | undefined]> = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  for (const [name, value] of entries) {
    if (value === undefined) continue;
    flat[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  }
  const body = typeof payload === "string" ? payload : new TextDecoder().decode(payload);
  try {
    return new Webhook(secret).verify(body, flat) as WebhookEvent;
  } catch (error) {
    throw new WebhookVerificationError(`webhook did not verify: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}
