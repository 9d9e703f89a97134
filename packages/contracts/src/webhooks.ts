/**
 * Webhooks: the API bodies of `/v1/webhooks`, the events and their payloads, and the bus message of
 * one delivery (the `webhook` work queue).
 */
import { z } from "@hono/zod-openapi";
import { AudioBookSchema, PageQuerySchema, SubtitleJobSchema, VoiceStreamSchema } from "./api.ts";
import { TASK_KINDS, type TaskKind } from "./bus.ts";
import { pyBool, pyEnum, pyStr } from "./pydantic/index.ts";

/** Every event an endpoint can subscribe to: `<record type>.<final status>`. */
export const WEBHOOK_EVENTS = [
  "audio_book.completed",
  "audio_book.failed",
  "voice_stream.completed",
  "voice_stream.failed",
  "subtitle.completed",
  "subtitle.failed",
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** The record type of each task kind in event names. */
export const WEBHOOK_RECORD_TYPE: Record<TaskKind, "audio_book" | "voice_stream" | "subtitle"> = {
  audiobook: "audio_book",
  "voice-stream": "voice_stream",
  subtitle: "subtitle",
};

/** The event of a record of this kind that finished with this status. */
export function webhookEventOf(kind: TaskKind, status: "completed" | "failed"): WebhookEvent {
  return `${WEBHOOK_RECORD_TYPE[kind]}.${status}`;
}

export const WEBHOOK_LIMITS = { urlLength: 2048, descriptionLength: 500, perAccount: 50 } as const;

const eventsField = z
  .array(pyEnum(WEBHOOK_EVENTS))
  .min(1)
  .max(WEBHOOK_EVENTS.length * 4)
  .openapi({ description: `Events sent to the endpoint, at least one of: ${WEBHOOK_EVENTS.map((e) => `\`${e}\``).join(", ")}. Duplicates are ignored.` });
const urlField = pyStr({ min: 1, max: WEBHOOK_LIMITS.urlLength }).openapi({
  format: "uri",
  description:
    "Where events are POSTed. `https://` is required; loopback, private, link-local and metadata addresses are refused (at registration and again at every delivery, since DNS can change), except for hosts the operator allow-listed in `FETCH_ALLOW_PRIVATE_HOSTS`, which may also use `http://`.",
  example: "https://example.com/hooks/voiceloc",
});
const descriptionField = pyStr({ max: WEBHOOK_LIMITS.descriptionLength }).nullable().openapi({ description: "A note for yourself, up to 500 characters." });

export const CreateWebhookSchema = z
  .object({
    url: urlField,
    events: eventsField,
    description: descriptionField.optional(),
  })
  .openapi("CreateWebhook", {
    example: { url: "https://example.com/hooks/voiceloc", events: ["audio_book.completed", "audio_book.failed"], description: "production" },
  });

export const UpdateWebhookSchema = z
  .object({
    url: urlField.optional(),
    events: eventsField.optional(),
    description: descriptionField.optional(),
    enabled: pyBool().optional().openapi({ description: "`false` pauses deliveries; `true` re-enables the endpoint and clears `disabled_reason`." }),
  })
  .openapi("UpdateWebhook", { example: { enabled: true } });

const webhookFields = {
  id: z.string().uuid(),
  url: z.string(),
  events: z.array(z.enum(WEBHOOK_EVENTS)),
  description: z.string().nullable(),
  enabled: z.boolean().openapi({ description: "Whether events are delivered to the endpoint." }),
  disabled_reason: z
    .string()
    .nullable()
    .openapi({ description: "Why the service disabled the endpoint (every attempt of a delivery failed), in plain words; null while enabled or when you disabled it." }),
  date_created: z.string().datetime(),
  date_updated: z.string().datetime(),
};

export const WebhookSchema = z.object(webhookFields).openapi("Webhook");

export const WebhookCreatedSchema = z
  .object({
    ...webhookFields,
    secret: z.string().openapi({
      description: "The signing secret (`whsec_` + base64 of 24 random bytes). Shown only in this response: store it to verify the `webhook-signature` header.",
      example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    }),
  })
  .openapi("WebhookCreated");

export const WebhookDeliverySchema = z
  .object({
    id: z.string().uuid(),
    webhook_id: z.string().uuid(),
    message_id: z.string().openapi({ description: "The `webhook-id` header of the message: the same on every attempt of it.", example: "msg_0193f1c2a7b47cc2a1f04e4ab2b1a4d0_audio_book_completed" }),
    event_type: z.enum(WEBHOOK_EVENTS),
    attempt: z.number().int().min(1).openapi({ description: "1 for the first attempt of the message, then 2, 3…" }),
    status_code: z.number().int().nullable().openapi({ description: "The endpoint's HTTP status; null when no answer came (refused address, timeout, connection error)." }),
    latency_ms: z.number().int().min(0).openapi({ description: "Time from sending to the answer (or the failure), in milliseconds." }),
    error: z.string().nullable().openapi({ description: "Why the attempt failed, in plain words; null when the endpoint answered 2xx." }),
    date_created: z.string().datetime(),
  })
  .openapi("WebhookDelivery");

export const WebhookListQuerySchema = PageQuerySchema;

const eventRecord: Record<WebhookEvent, z.ZodType> = {
  "audio_book.completed": AudioBookSchema,
  "audio_book.failed": AudioBookSchema,
  "voice_stream.completed": VoiceStreamSchema,
  "voice_stream.failed": VoiceStreamSchema,
  "subtitle.completed": SubtitleJobSchema,
  "subtitle.failed": SubtitleJobSchema,
};

/** The JSON body POSTed for one event. */
export function webhookPayloadSchema(event: WebhookEvent) {
  const name = event
    .split(/[._]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
  return z
    .object({
      type: z.literal(event),
      timestamp: z.string().datetime().openapi({ description: "When the record finished." }),
      data: eventRecord[event].openapi({ description: "The record exactly as `GET` returns it at delivery time (download links signed then, valid 1 hour)." }),
    })
    .openapi(`${name}Event`);
}

/** One delivery on the bus: a message for one endpoint (its attempts are the queue's redeliveries). */
export const WebhookDeliveryWorkSchema = z.object({
  webhook_id: z.string().uuid(),
  account_id: z.string().min(1),
  /** `webhook-id`: stable per record and event. */
  message_id: z.string().min(1),
  event_type: z.enum(WEBHOOK_EVENTS),
  kind: z.enum(TASK_KINDS),
  record_id: z.string().uuid(),
  /** When the record finished (the payload's `timestamp`). */
  timestamp: z.string().datetime(),
});
export type WebhookDeliveryWork = z.infer<typeof WebhookDeliveryWorkSchema>;
