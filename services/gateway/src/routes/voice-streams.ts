import { uuidv7 } from "../records/ids.ts";
import { createRoute, z } from "@hono/zod-openapi";
import { CreateVoiceStreamSchema, ListQuerySchema, VoiceStreamSchema, uuidParam } from "@voiceloc/contracts";
import type { GatewayDeps } from "../app.ts";
import type { GatewayApp } from "../http/context.ts";
import { respond } from "../http/respond.ts";
import { NotFoundError } from "../http/errors.ts";
import { bodyErrorResponses, capabilityErrorResponses, createErrorResponses, errorResponses, notFoundResponse } from "../http/responses.ts";
import { newTaskFields, presentVoiceStream, type VoiceStreamDoc } from "../records/kinds.ts";
import { IdempotencyHeaders, SECURITY, checkCapabilities, checkFileReference, dispatchQuietly, idempotent, listPage } from "./shared.ts";
import { storeTask } from "../records/sandbox-tasks.ts";

const TAGS = ["Voice streams"];
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
    ...errorResponses,
    ...createErrorResponses,
    ...capabilityErrorResponses,
    ...bodyErrorResponses,
  },
});

const listVoiceStreams = createRoute({
  method: "get",
  path: "/v1/voices/streams",
  operationId: "list_audio_streams",
  summary: "List Audio Streams",
  description: "The voice streams performed by the caller, newest first, paged like the audio books.",
  tags: TAGS,
  security: SECURITY,
  request: { query: ListQuerySchema },
  responses: {
    200: {
      description: "A page of voice streams.",
      headers: { Link: { description: "Next page, RFC 8288.", schema: { type: "string" } } },
      content: json(z.array(VoiceStreamSchema)),
    },
    ...errorResponses,
  },
});

const getVoiceStream = createRoute({
  method: "get",
  path: "/v1/voices/streams/{voice_id}",
  operationId: "get_audio_stream",
  summary: "Get Audio Stream",
  description:
    "The voice stream as it is now: `task_status` and `task_progress` while it is processed, then `localized_file` (a signed link to the translated speech, valid for 1 hour, renewed on every read) once completed, or `task_error` when it failed. Another account's id is a 404, as an unknown one.",
  tags: TAGS,
  security: SECURITY,
  request: { params: uuidParam("voice_id", "The voice stream's id (a UUID), as returned when it was created.") },
  responses: {
    200: { description: "The voice stream.", content: json(VoiceStreamSchema) },
    ...errorResponses,
    ...notFoundResponse,
  },
});

export function registerVoiceStreams(app: GatewayApp, deps: GatewayDeps): void {
  app.openapi(createVoiceStream, async (c) => {
    const body = c.req.valid("json");
    const { "idempotency-key": key } = c.req.valid("header");
    await checkFileReference(deps, c.get("principal").accountId, body.file, ["body", "file"], ["audio", "video"]);
    await checkCapabilities(deps, { kind: "voice-stream", source: body.source_language, target: body.target_language, voice: body.voice, voiceField: "voice" });
    const accountId = c.get("principal").accountId;
    return idempotent(c, deps, "POST /v1/voices/streams", key, async () => {
      const id = deps.newId ? deps.newId() : uuidv7();
      const doc: VoiceStreamDoc = {
        id,
        ...newTaskFields(accountId, deps.now ? deps.now() : new Date()),
        file: body.file,
        source_language: body.source_language,
        target_language: body.target_language,
        voice: body.voice ?? null,
      };
      await storeTask(deps.sandboxTasks, "voice-stream", deps.voiceStreams, doc);
      await dispatchQuietly(c, deps, () => deps.dispatcher.dispatch("voice-stream", doc));
      return { status: 201, body: presentVoiceStream(doc, deps.signer), location: `/v1/voices/streams/${id}` };
    }) as Promise<never>;
  });

  app.openapi(listVoiceStreams, async (c) => {
    const page = await listPage(c, deps, deps.voiceStreams, "/v1/voices/streams", c.req.valid("query"));
    return respond(c, 200, page.items.map((doc) => presentVoiceStream(doc, deps.signer)));
  });

  app.openapi(getVoiceStream, async (c) => {
    const { voice_id: id } = c.req.valid("param");
    const doc = await deps.voiceStreams.getOwned(c.get("principal").accountId, id);
    if (!doc) throw new NotFoundError("Voice stream not found");
    return respond(c, 200, presentVoiceStream(doc, deps.signer));
  });
}
