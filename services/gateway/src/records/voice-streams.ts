import { createRoute } from "@hono/zod-openapi";
import { CreateVoiceStreamSchema, VoiceStreamSchema } from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayApp } from "../http/context.ts";
import { SECURITY, taskCreationErrorResponses } from "../http/responses.ts";
import { TASK_KINDS } from "./kinds.ts";
import { resolveVoiceClone } from "../clones/resolve.ts";
import { resolveLexicons } from "../lexicons/resolve.ts";
import { IdempotencyHeaders, checkCapabilities, checkFileReference, createTask } from "./shared.ts";

const TAGS = [TASK_KINDS["voice-stream"].tag];
const json = <T>(schema: T) => ({ "application/json": { schema } });

const createVoiceStream = createRoute({
  method: "post",
  path: "/v1/voices/streams",
  operationId: "create_voice_stream",
  summary: "Create Voice Stream (extension)",
  description:
    "Extension to the contract: starts a voice processing task. The audio is transcribed, translated when the languages differ, and spoken again in the target language at the original segments' times.\n\n" +
    "`voice` takes a preset voice or one of your cloned voices, `clone:<id>` (another account's, or one that does not speak the target language, is a **422** at `voice`). " +
    "`use_voice_clone: true` speaks in a voice cloned for this task (deleted at the engine when it ends): from `voice_clone_sample` when given, otherwise from the speech in the input itself (one voice for the whole input).",
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
    const owner = c.get("principal").accountId;
    await checkFileReference(deps, owner, body.file, ["body", "file"], ["audio", "video"]);
    if (body.voice_clone_sample) await checkFileReference(deps, owner, body.voice_clone_sample, ["body", "voice_clone_sample"], ["audio"]);
    const clone = await resolveVoiceClone(deps, owner, body.voice, ["body", "voice"], body.target_language);
    const lexicons = await resolveLexicons(deps, owner, body.lexicons, body.target_language, { voice: body.voice, cloned: clone !== null || body.use_voice_clone === true });
    await checkCapabilities(deps, {
      kind: "voice-stream",
      source: body.source_language,
      target: body.target_language,
      // a clone is checked above, against the caller's own clones; the table lists preset voices
      voice: clone ? null : body.voice,
      voiceField: "voice",
      useVoiceClone: body.use_voice_clone,
    });
    return createTask(c, deps, "voice-stream", key, 201, {
      file: body.file,
      source_language: body.source_language,
      target_language: body.target_language,
      voice: body.voice ?? null,
      clone,
      ...(lexicons.length > 0 ? { lexicons } : {}),
      use_voice_clone: body.use_voice_clone ?? false,
      voice_clone_sample: body.voice_clone_sample ?? null,
    }) as Promise<never>;
  });
}
