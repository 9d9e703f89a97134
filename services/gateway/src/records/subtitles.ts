import { createRoute } from "@hono/zod-openapi";
import { SubtitleJobSchema, SubtitleVideoSchema } from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayApp } from "../http/context.ts";
import { SECURITY, taskCreationErrorResponses } from "../http/responses.ts";
import { TASK_KINDS } from "./kinds.ts";
import { IdempotencyHeaders, checkCapabilities, checkFileReference, createTask } from "./shared.ts";

const TAGS = [TASK_KINDS.subtitle.tag];
const json = <T>(schema: T) => ({ "application/json": { schema } });

const subtitleVideo = createRoute({
  method: "post",
  path: "/v1/videos/subtitle",
  operationId: "subtitle_video_file",
  summary: "Subtitle Video File",
  description:
    "Accepts the video for processing and answers **202** with the subtitle job: the audio is extracted, transcribed, translated when the languages differ, and the subtitles are burned into the video (`mode: burn_in`, default) or delivered as a side file (`mode: side_file`) in SRT (default) or WebVTT. Requires a credential like the other operations.",
  tags: TAGS,
  security: SECURITY,
  request: {
    headers: IdempotencyHeaders,
    body: {
      content: {
        "application/json": {
          schema: SubtitleVideoSchema,
          example: {
            file: "https://files.example.org/talks/keynote.mp4",
            source_language: "English",
            target_language: "Spanish",
            mode: "side_file",
            subtitle_format: "vtt",
          },
        },
      },
      required: true,
    },
  },
  responses: {
    202: {
      description: "The subtitle job, `task_status: queued`. `Location` points at it.",
      content: json(SubtitleJobSchema),
    },
    ...taskCreationErrorResponses,
  },
});

export function registerSubtitles(app: GatewayApp, deps: GatewayDeps): void {
  app.openapi(subtitleVideo, async (c) => {
    const body = c.req.valid("json");
    const { "idempotency-key": key } = c.req.valid("header");
    await checkFileReference(deps, c.get("principal").accountId, body.file, ["body", "file"], ["video"]);
    await checkCapabilities(deps, { kind: "subtitle", source: body.source_language, target: body.target_language });
    return createTask(c, deps, "subtitle", key, 202, {
      file: body.file,
      source_language: body.source_language,
      target_language: body.target_language,
      mode: body.mode ?? "burn_in",
      subtitle_format: body.subtitle_format ?? "srt",
      subtitle_key: null,
    }) as Promise<never>;
  });
}
