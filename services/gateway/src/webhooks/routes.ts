import { createRoute, z } from "@hono/zod-openapi";
import {
  CreateWebhookSchema,
  UpdateWebhookSchema,
  WEBHOOK_EVENTS,
  WEBHOOK_LIMITS,
  WebhookCreatedSchema,
  WebhookDeliverySchema,
  WebhookListQuerySchema,
  WebhookSchema,
  uuidParam,
  webhookPayloadSchema,
  type WebhookEvent,
} from "@voiceloc/contracts";
import type { GatewayDeps, WebhookRouteDeps } from "../deps.ts";
import type { GatewayApp } from "../http/context.ts";
import { respond } from "../http/respond.ts";
import { HttpProblem, NotFoundError, ValueError422 } from "../http/errors.ts";
import { SECURITY, bodyErrorResponses, errorResponses, notFoundResponse } from "../http/responses.ts";
import { ErrorSchema } from "@voiceloc/contracts";
import { uuidv7 } from "../records/ids.ts";
import { listed } from "../http/paging.ts";
import { presentDelivery, presentWebhook, type WebhookDoc } from "./repository.ts";
import { newWebhookSecret } from "./secrets.ts";
import { webhookUrlProblem, type WebhookUrlPolicy } from "./url.ts";
import { createRouter } from "../http/router.ts";
import { deleteRoute, getRoute, listRoute } from "../http/resource-routes.ts";

/** What the webhook routes need besides the gateway's usual dependencies. */

export const WEBHOOKS_TAG = {
  name: "Webhooks",
  description:
    "Endpoints of yours that receive a signed POST (Standard Webhooks) when a record finishes. The payloads are listed under `webhooks` in this document.",
};
const TAGS = [WEBHOOKS_TAG.name];
const IdParam = uuidParam("webhook_id");
const json = <T>(schema: T) => ({ "application/json": { schema } });

const createWebhook = createRoute({
  method: "post",
  path: "/v1/webhooks",
  operationId: "create_webhook",
  summary: "Create Webhook",
  description: `Registers an endpoint for the calling account (at most ${WEBHOOK_LIMITS.perAccount}). The answer carries the signing secret, shown this once. The URL must be \`https://\` and public (see \`url\`); it is checked now and again at every delivery.`,
  tags: TAGS,
  security: SECURITY,
  request: { body: { content: json(CreateWebhookSchema), required: true } },
  responses: {
    201: {
      description: "The endpoint, with its signing secret (only in this response).",
      headers: { Location: { description: "The endpoint's URL.", schema: { type: "string" } } },
      content: json(WebhookCreatedSchema),
    },
    409: { description: `The account already has ${WEBHOOK_LIMITS.perAccount} endpoints.`, content: json(ErrorSchema) },
    ...errorResponses,
    ...bodyErrorResponses,
  },
});

const listWebhooks = listRoute({
  path: "/v1/webhooks",
  operationId: "list_webhooks",
  summary: "List Webhooks",
  description: "The caller's endpoints, newest first, paged like the other lists (no secrets).",
  tags: TAGS,
  query: WebhookListQuerySchema,
  item: WebhookSchema,
  page: "A page of endpoints.",
});

const getWebhook = getRoute({
  path: "/v1/webhooks/{webhook_id}",
  operationId: "get_webhook",
  summary: "Get Webhook",
  description: "One endpoint of the caller (without its secret): whether it is enabled and, if the service disabled it, why.",
  tags: TAGS,
  params: IdParam,
  item: WebhookSchema,
  found: "The endpoint.",
});

const updateWebhook = createRoute({
  method: "patch",
  path: "/v1/webhooks/{webhook_id}",
  operationId: "update_webhook",
  summary: "Update Webhook",
  description:
    "Changes the URL, events, description or `enabled`; omitted fields keep their value. `enabled: true` re-enables an endpoint the service disabled and clears `disabled_reason` (messages dropped meanwhile are not resent). The secret stays the same.",
  tags: TAGS,
  security: SECURITY,
  request: { params: IdParam, body: { content: json(UpdateWebhookSchema), required: true } },
  responses: {
    200: { description: "The updated endpoint.", content: json(WebhookSchema) },
    ...errorResponses,
    ...notFoundResponse,
    ...bodyErrorResponses,
  },
});

const deleteWebhook = deleteRoute({
  path: "/v1/webhooks/{webhook_id}",
  operationId: "delete_webhook",
  summary: "Delete Webhook",
  description: "Deletes the endpoint and its delivery log; messages still waiting for it are dropped.",
  tags: TAGS,
  params: IdParam,
  deleted: "Deleted.",
});

const listDeliveries = listRoute({
  path: "/v1/webhooks/{webhook_id}/deliveries",
  operationId: "list_webhook_deliveries",
  summary: "List Webhook Deliveries",
  description:
    "The endpoint's delivery log, newest first: one entry per attempt (attempt number, HTTP status, latency, the error in plain words). Entries of one message share `message_id` (the `webhook-id` header).",
  tags: TAGS,
  params: IdParam,
  query: WebhookListQuerySchema,
  item: WebhookDeliverySchema,
  page: "A page of delivery attempts.",
});

const uniqueEvents = (events: readonly WebhookEvent[]): WebhookEvent[] => WEBHOOK_EVENTS.filter((e) => events.includes(e));

async function checkUrl(policy: WebhookUrlPolicy, url: string): Promise<void> {
  const problem = await webhookUrlProblem(url, policy);
  if (problem !== null) throw new ValueError422(["body", "url"], problem, url);
}

export function webhookRoutes(deps: GatewayDeps, hooks: WebhookRouteDeps): GatewayApp {
  const app = createRouter();
  const now = () => (deps.now ? deps.now() : new Date());
  const { repo } = hooks;

  app.openapi(createWebhook, async (c) => {
    const body = c.req.valid("json");
    await checkUrl(hooks.urlPolicy, body.url);
    const accountId = c.get("principal").accountId;
    if ((await repo.count(accountId)) >= WEBHOOK_LIMITS.perAccount) {
      throw new HttpProblem(409, "too_many_webhooks", `An account may register at most ${WEBHOOK_LIMITS.perAccount} webhook endpoints; delete one first.`);
    }
    const id = deps.newId ? deps.newId() : uuidv7();
    const secret = newWebhookSecret();
    const iso = now().toISOString();
    const doc: WebhookDoc = {
      id,
      account_id: accountId,
      url: body.url,
      events: uniqueEvents(body.events),
      description: body.description ?? null,
      enabled: true,
      disabled_reason: null,
      secret_sealed: hooks.box.seal(secret, id),
      date_created: iso,
      date_updated: iso,
    };
    await repo.create(doc);
    return respond(c, 201, { ...presentWebhook(doc), secret }, { Location: `/v1/webhooks/${id}` });
  });

  app.openapi(listWebhooks, async (c) => {
    const accountId = c.get("principal").accountId;
    const items = await listed(c, deps, "/v1/webhooks", c.req.valid("query"), (limit, cursor) => repo.list(accountId, limit, cursor));
    return respond(c, 200, items.map(presentWebhook));
  });

  app.openapi(getWebhook, async (c) => {
    const doc = await repo.getOwned(c.get("principal").accountId, c.req.valid("param").webhook_id);
    if (!doc) throw new NotFoundError("Webhook not found");
    return respond(c, 200, presentWebhook(doc));
  });

  app.openapi(updateWebhook, async (c) => {
    const { webhook_id: id } = c.req.valid("param");
    const body = c.req.valid("json");
    const accountId = c.get("principal").accountId;
    const existing = await repo.getOwned(accountId, id);
    if (!existing) throw new NotFoundError("Webhook not found");
    if (body.url !== undefined) await checkUrl(hooks.urlPolicy, body.url);
    const set: Partial<WebhookDoc> = {};
    if (body.url !== undefined) set.url = body.url;
    if (body.events !== undefined) set.events = uniqueEvents(body.events);
    if (body.description !== undefined) set.description = body.description;
    if (body.enabled !== undefined) {
      set.enabled = body.enabled;
      // re-enabling clears the reason; disabling by hand is not the service's doing and has none
      set.disabled_reason = body.enabled ? null : existing.disabled_reason;
    }
    let doc: WebhookDoc | null = existing;
    if (Object.keys(set).length > 0) {
      set.date_updated = now().toISOString();
      doc = await repo.updateOwned(accountId, id, set);
    }
    if (!doc) throw new NotFoundError("Webhook not found");
    return respond(c, 200, presentWebhook(doc));
  });

  app.openapi(deleteWebhook, async (c) => {
    if (!(await repo.deleteOwned(c.get("principal").accountId, c.req.valid("param").webhook_id))) throw new NotFoundError("Webhook not found");
    return c.body(null, 204);
  });

  app.openapi(listDeliveries, async (c) => {
    const { webhook_id: id } = c.req.valid("param");
    const doc = await repo.getOwned(c.get("principal").accountId, id);
    if (!doc) throw new NotFoundError("Webhook not found");
    const items = await listed(c, deps, `/v1/webhooks/${id}/deliveries`, c.req.valid("query"), (limit, cursor) => repo.deliveriesOf(id, limit, cursor));
    return respond(c, 200, items.map(presentDelivery));
  });

  return app;
}

/**
 * The payloads, in the document's OpenAPI 3.1 `webhooks` section (one entry per event): registered on
 * the root app, as a mounted sub-app's webhooks would be given a path.
 */
export function documentWebhookEvents(app: GatewayApp): void {
  // The payloads, in the document's OpenAPI 3.1 `webhooks` section (one entry per event).
  for (const event of WEBHOOK_EVENTS) {
    app.openAPIRegistry.registerWebhook({
      method: "post",
      path: event,
      operationId: `webhook_${event.replace(".", "_")}`,
      summary: event,
      description: `Sent to each enabled endpoint subscribed to \`${event}\` when a record finishes so. Signed per the Standard Webhooks specification: headers \`webhook-id\` (the same on every attempt of the message), \`webhook-timestamp\` (Unix seconds of this attempt) and \`webhook-signature\` (\`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">\`, keyed with the endpoint's secret). Answer 2xx within the timeout (10 s by default); anything else is retried with exponential back-off over about a day.`,
      tags: TAGS,
      // Our call to your endpoint: it carries no credential of this API's schemes (the signature
      // headers authenticate it), which `security: []` states.
      security: [],
      request: {
        headers: z.object({
          "webhook-id": z.string().openapi({ description: "Message id, stable across retries: deduplicate on it.", example: "msg_0193f1c2a7b47cc2a1f04e4ab2b1a4d0_audio_book_completed" }),
          "webhook-timestamp": z.string().openapi({ description: "Unix time (seconds) of this attempt; refuse old ones (5 minutes) against replays.", example: "1764230400" }),
          "webhook-signature": z.string().openapi({ description: "`v1,<base64 signature>` (space-separated when several).", example: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=" }),
        }),
        body: { content: json(webhookPayloadSchema(event)), required: true },
      },
      responses: {
        200: { description: "Any 2xx: delivered. Anything else, or no answer in time, is retried." },
      },
    });
  }
}
