import { createRoute } from "@hono/zod-openapi";
import {
  SpeechSynthesisRequestSchema,
  SpeechSynthesisResponseSchema,
  ErrorSchema,
  languageFromNameOrCode,
  type AudioFormat,
  type Language,
} from "@voiceloc/contracts";
import type { GatewayDeps } from "../app.ts";
import type { GatewayApp } from "../http/context.ts";
import { ServiceUnavailableError } from "../http/errors.ts";
import { bodyErrorResponses, errorResponses } from "../http/responses.ts";

export interface SynthesisRequest {
  text: string;
  language: Language;
  voice: string | null;
  format: AudioFormat;
  accountId: string;
  requestId: string;
}

export interface Synthesizer {
  /** Returns the blob key of the audio and its measured duration. */
  synthesize(request: SynthesisRequest): Promise<{ key: string; durationSeconds: number }>;
}

const json = <T>(schema: T) => ({ "application/json": { schema } });

const synthesize = createRoute({
  method: "post",
  path: "/v1/speech/synthesize",
  operationId: "synthesize_speech",
  summary: "Synthesise speech",
  description:
    "Synthesises the text and answers **200** with a signed link to the audio (valid for 1 hour) and its duration measured from the file. Send the credential as `Authorization: Bearer <API_KEY>` (the `API-KEY` header and access tokens are accepted too).",
  tags: ["Speech"],
  security: [{ HTTPBearer: [] }, { APIKeyHeader: [] }] as Array<Record<string, string[]>>,
  request: { body: { content: json(SpeechSynthesisRequestSchema), required: true } },
  responses: {
    200: { description: "The audio link and its duration.", content: json(SpeechSynthesisResponseSchema) },
    ...errorResponses,
    ...bodyErrorResponses,
    503: { description: "No synthesis engine is available right now.", content: json(ErrorSchema) },
  },
});

export function registerSpeech(app: GatewayApp, deps: GatewayDeps): void {
  app.openapi(synthesize, async (c) => {
    const body = c.req.valid("json");
    const language = languageFromNameOrCode(body.language);
    if (!language) throw new Error("validated language did not resolve");
    if (!deps.synthesizer) {
      throw new ServiceUnavailableError(
        "Speech synthesis is not available: this deployment runs no synthesis service yet. Nothing was charged or stored; retry when it is enabled.",
      );
    }
    const result = await deps.synthesizer.synthesize({
      text: body.text,
      language,
      voice: body.voice ?? null,
      format: body.format ?? "mp3",
      accountId: c.get("principal").accountId,
      requestId: c.get("requestId"),
    });
    return c.json({ audio_url: deps.signer.sign(result.key), duration_seconds: result.durationSeconds }, 200);
  });
}
