import { createRoute, z } from "@hono/zod-openapi";
import { VoiceInfoSchema, VoicesQuerySchema, ErrorSchema, languageFromNameOrCode } from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayApp } from "../http/context.ts";
import { respond } from "../http/respond.ts";
import { ServiceUnavailableError } from "../http/errors.ts";
import { SECURITY, errorResponses } from "../http/responses.ts";

const listVoices = createRoute({
  method: "get",
  path: "/v1/voices",
  operationId: "list_voices",
  summary: "List preset voices (extension)",
  description:
    "The preset voices the configured speech engines offer, best first within each language; `default: true` marks each language's default (its most natural voice).",
  tags: ["Speech"],
  security: SECURITY,
  request: { query: VoicesQuerySchema },
  responses: {
    200: { description: "Voices.", content: { "application/json": { schema: z.array(VoiceInfoSchema) } } },
    ...errorResponses,
    502: { description: "The synthesis service refused or failed the request for its voices. Retry later.", content: { "application/json": { schema: ErrorSchema } } },
    503: { description: "No synthesis service is running.", content: { "application/json": { schema: ErrorSchema } } },
  },
});

export function registerVoices(app: GatewayApp, deps: GatewayDeps): void {
  app.openapi(listVoices, async (c) => {
    if (!deps.voiceCatalog) throw new ServiceUnavailableError("The voice catalogue is not available: no synthesis service runs in this deployment.");
    const { language } = c.req.valid("query");
    const wanted = language ? languageFromNameOrCode(language) : undefined;
    const voices = await deps.voiceCatalog.voices();
    return respond(c, 200, wanted ? voices.filter((v) => v.language === wanted) : voices);
  });
}
