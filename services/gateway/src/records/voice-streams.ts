import { createRoute } from "@hono/zod-openapi";
import { CreateVoiceStreamSchema, VoiceStreamSchema } from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayApp } from "../http/context.ts";
import { SECURITY, taskCreationErrorResponses } from "../http/responses.ts";
import { TASK_KINDS } from "./kinds.ts";
import { IdempotencyHeaders, checkCapabilities, checkFileReference, createTask } from "./shared.ts";

const TAGS = [TASK_KINDS["voice-stream"].tag];
const json = <T>(schema: T) => ({ "application/json": { schema } });

const createVoiceStream = createRoute({
  method: "post",
  path: "/v1/voices/streams",
  operationId: "create_voice_stream",
  summary: "Create Voice Stream (extension)",
  description:
    "Extension to the contract: starts a voice processing task. The audio is transcribed, translated when the languages differ, and spoken again in the target language at the original segments' times.",
  tags: TAGS,
  security: SECURITY,
  request: {
    headers: IdempotencyHeaders,
    body: {
      content: {
        "application/json": {
          schema: CreateVoiceStreamSchema,
          example: { file: "https://files.example.org/talks/keynote.wav", source_language: "English", target_language: "French" },
        },
      },
      required: true,
    },
  },
  responses: {
    201: { description: "The voice stream record, `task_status: queued`.", content: json(VoiceStreamSchema) },
    ...taskCreationErrorResponses,
  },
});

export function registerVoiceStreams(app: GatewayApp, deps: GatewayDeps): void {
  app.openapi(createVoiceStream, async (c) => {
    const body = c.req.valid("json");
    const { "idempotency-key": key } = c.req.valid("header");
    await checkFileReference(deps, c.get("principal").accountId, body.file, ["body", "file"], ["audio", "video"]);
    await checkCapabilities(deps, { kind: "voice-stream", source: body.source_language, target: body.target_language, voice: body.voice, voiceField: "voice" });
    return createTask(c, deps, "voice-stream", key, 201, {
      file: body.file,
      source_language: body.source_language,
      target_language: body.target_language,
      voice: body.voice ?? null,
    }) as Promise<never>;
  });
}
