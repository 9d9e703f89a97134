import { createRoute } from "@hono/zod-openapi";
import { CapabilitiesResponseSchema, ErrorSchema } from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayApp } from "../http/context.ts";
import { respond } from "../http/respond.ts";
import { ServiceUnavailableError } from "../http/errors.ts";
import { SECURITY, errorResponses } from "../http/responses.ts";

const getCapabilities = createRoute({
  method: "get",
  path: "/v1/capabilities",
  operationId: "get_capabilities",
  summary: "What the configured engines can do (extension)",
  description:
    "Per operation, the languages the engines of the running workers cover: the union over the kinds of work that answer (synthesis languages from the synthesis, audio book and voice-stream workers; recognition from the voice-stream and subtitle workers; translation pairs from the audio book, voice-stream and subtitle workers), so an entry is listed when at least one running operation that needs it can do it. Creating a task is checked against the workers of its own kind: what they do not cover is a 422 naming the missing capability; while no worker of that kind runs, the task is accepted and queued.",
  tags: ["Speech"],
  security: SECURITY,
  responses: {
    200: { description: "The capability table.", content: { "application/json": { schema: CapabilitiesResponseSchema } } },
    ...errorResponses,
    502: { description: "A worker refused or failed the capability request. Retry later.", content: { "application/json": { schema: ErrorSchema } } },
    503: { description: "No worker of any kind is running to answer.", content: { "application/json": { schema: ErrorSchema } } },
  },
});

export function registerCapabilities(app: GatewayApp, deps: GatewayDeps): void {
  app.openapi(getCapabilities, async (c) => {
    const caps = await deps.capabilities?.get();
    if (!caps) throw new ServiceUnavailableError("The capability table is not available: no worker service is running.", 5);
    // Engine order per language and pair; a worker of an older version states none.
    const recognition = { languages: caps.recognition.languages, engines: caps.recognition.engines ?? [] };
    const translation = { pairs: caps.translation.pairs.map((p) => ({ ...p, engines: p.engines ?? [] })) };
    const synthesis = { languages: caps.synthesis.languages, engines: caps.synthesis.engines ?? [] };
    return respond(c, 200, { synthesis, recognition, translation, cloning: caps.cloning });
  });
}
