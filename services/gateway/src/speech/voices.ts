import { createRoute, z } from "@hono/zod-openapi";
import { VoiceInfoSchema, VoicesQuerySchema, ErrorSchema, languageFromNameOrCode } from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayApp } from "../http/context.ts";
import { respond } from "../http/respond.ts";
import { ServiceUnavailableError } from "../http/errors.ts";
import { SECURITY, errorResponses } from "../http/responses.ts";
import { CLONE_VOICE_PREFIX, type CloneDoc } from "../clones/repository.ts";

const listVoices = createRoute({
  method: "get",
  path: "/v1/voices",
  operationId: "list_voices",
  summary: "List voices (extension)",
  description:
    "The preset voices the configured speech engines offer, best first within each language; `default: true` marks each language's default (its most natural voice). " +
    "Then the calling account's cloned voices (`clone:<id>`, see `GET /v1/voices/clones`), once for every language each can speak, with the engine that made it; the description says what it is (an `elevenlabs` or `voice-library` clone, or a `match` voice: an approximation, not a clone).",
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
    const owner = c.get("principal").accountId;
    const [presets, clones] = await Promise.all([deps.voiceCatalog.voices(), deps.clones ? deps.clones.repo.all(owner) : Promise.resolve([])]);
    const voices = [...presets, ...clones.flatMap(cloneVoices)];
    return respond(c, 200, wanted ? voices.filter((v) => v.language === wanted) : voices);
  });
}

const CLONE_WORDS: Record<CloneDoc["engine"], string> = {
  elevenlabs: "a clone of the sample's voice, made and spoken by ElevenLabs",
  "voice-library": "a clone of the sample's voice, kept and spoken by the self-hosted voice library server",
  match: "an approximation of the sample's pitch and rate with an installed voice, not a clone of the voice",
};

/** A cloned voice as catalogue entries: one per language it speaks. */
function cloneVoices(doc: CloneDoc) {
  return doc.languages.map((language) => ({
    name: `${CLONE_VOICE_PREFIX}${doc.id}`,
    language,
    engine: doc.engine,
    gender: null,
    description: `Your cloned voice '${doc.name}': ${CLONE_WORDS[doc.engine]}.`,
    default: false,
  }));
}
