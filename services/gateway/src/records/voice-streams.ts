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
    "`use_voice_clone: true` speaks in a voice cloned for this task (deleted at the engine when it ends): from `voice_clone_sample` when given, otherwise from the speech in the input itself (a clone of each speaker's own lines with `speakers: auto`).\n\n" +
    "A video input gives a video (`localized_file`): the same kind of container (MP4 for MP4/MOV, Matroska for MKV/WebM and others), the picture copied as it is, the dubbed audio as the first, default track (tagged with the target language) and the original audio as the second (tagged with the source language). " +
    "`original_audio: duck` keeps the input's own sound under the new speech (full level between lines, about 18 dB lower while a new line plays); `drop` (default) leaves silence between lines.\n\n" +
    "`speakers: auto` (default) gives each speaker a distinct voice nearest their pitch (a `voice` given speaks every line); `speakers: one` speaks every line in one voice. " +
    "Each translated line starts with its original line and ends before the next one starts: a longer one is sped up (pitch kept) up to 1.4×, and what still does not fit is cut with a short fade at the next line's start; the record's `timing` says how many lines were sped up and the largest factor.",
  tags: TAGS,
  security: SECURITY,
  request: {
    headers: IdempotencyHeaders,
    body: {
      content: {
        "application/json": {
          schema: CreateVoiceStreamSchema,
          example: { file: "https://files.example.org/talks/keynote.mp4", source_language: "English", target_language: "French", original_audio: "duck" },
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
      original_audio: body.original_audio ?? "drop",
      speakers: body.speakers ?? "auto",
    }) as Promise<never>;
  });
}
