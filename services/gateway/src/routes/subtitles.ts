import { uuidv7 } from "../records/ids.ts";
import { createRoute, z } from "@hono/zod-openapi";
import { ListQuerySchema, SubtitleJobSchema, SubtitleVideoSchema, uuidParam } from "@voiceloc/contracts";
import type { GatewayDeps } from "../app.ts";
import type { GatewayApp } from "../http/context.ts";
import { respond } from "../http/respond.ts";
import { NotFoundError } from "../http/errors.ts";
import { bodyErrorResponses, capabilityErrorResponses, createErrorResponses, errorResponses, notFoundResponse } from "../http/responses.ts";
import { newTaskFields, presentSubtitle, type SubtitleDoc } from "../records/kinds.ts";
import { IdempotencyHeaders, SECURITY, checkCapabilities, checkFileReference, dispatchQuietly, idempotent, listPage } from "./shared.ts";
import { storeTask } from "../records/sandbox-tasks.ts";

const TAGS = ["Video"];
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
    ...errorResponses,
    ...createErrorResponses,
    ...capabilityErrorResponses,
    ...bodyErrorResponses,
  },
});

const listSubtitleJobs = createRoute({
  method: "get",
  path: "/v1/videos/subtitle",
  operationId: "list_subtitle_jobs",
  summary: "List Subtitle Jobs (extension)",
  description:
    "Extension to the contract: the caller's subtitle jobs, newest first, paged like the audio books (`limit`, `cursor`, the `Link` header); `task_status` filters.",
  tags: TAGS,
  security: SECURITY,
  request: { query: ListQuerySchema },
  responses: {
    200: {
      description: "A page of subtitle jobs, newest first.",
      headers: { Link: { description: "Next page, RFC 8288.", schema: { type: "string" } } },
      content: json(z.array(SubtitleJobSchema)),
    },
    ...errorResponses,
  },
});

const getSubtitleJob = createRoute({
  method: "get",
  path: "/v1/videos/subtitle/{subtitle_id}",
  operationId: "get_subtitle_job",
  summary: "Get Subtitle Job (extension)",
  description:
    "Extension to the contract: the subtitle job as it is now. Once completed, `subtitle_file` links to the SRT or WebVTT file and, with `mode: burn_in`, `localized_file` to the video with the subtitles rendered in (signed links valid for 1 hour, renewed on every read); `task_error` says why a failed job failed. Another account's id is a 404, as an unknown one.",
  tags: TAGS,
  security: SECURITY,
  request: { params: uuidParam("subtitle_id", "The subtitle job's id (a UUID), as returned when it was created.") },
  responses: {
    200: { description: "The subtitle job.", content: json(SubtitleJobSchema) },
    ...errorResponses,
    ...notFoundResponse,
  },
});

export function registerSubtitles(app: GatewayApp, deps: GatewayDeps): void {
  app.openapi(subtitleVideo, async (c) => {
    const body = c.req.valid("json");
    const { "idempotency-key": key } = c.req.valid("header");
    await checkFileReference(deps, c.get("principal").accountId, body.file, ["body", "file"], ["video"]);
    await checkCapabilities(deps, { kind: "subtitle", source: body.source_language, target: body.target_language });
    const accountId = c.get("principal").accountId;
    return idempotent(c, deps, "POST /v1/videos/subtitle", key, async () => {
      const id = deps.newId ? deps.newId() : uuidv7();
      const doc: SubtitleDoc = {
        id,
        ...newTaskFields(accountId, deps.now ? deps.now() : new Date()),
        file: body.file,
        source_language: body.source_language,
        target_language: body.target_language,
        mode: body.mode ?? "burn_in",
        subtitle_format: body.subtitle_format ?? "srt",
        subtitle_key: null,
      };
      await storeTask(deps.sandboxTasks, "subtitle", deps.subtitles, doc);
      await dispatchQuietly(c, deps, () => deps.dispatcher.dispatch("subtitle", doc));
      return { status: 202, body: presentSubtitle(doc, deps.signer), location: `/v1/videos/subtitle/${id}` };
    }) as Promise<never>;
  });

  app.openapi(listSubtitleJobs, async (c) => {
    const page = await listPage(c, deps, deps.subtitles, "/v1/videos/subtitle", c.req.valid("query"));
    return respond(c, 200, page.items.map((doc) => presentSubtitle(doc, deps.signer)));
  });

  app.openapi(getSubtitleJob, async (c) => {
    const { subtitle_id: id } = c.req.valid("param");
    const doc = await deps.subtitles.getOwned(c.get("principal").accountId, id);
    if (!doc) throw new NotFoundError("Subtitle job not found");
    return respond(c, 200, presentSubtitle(doc, deps.signer));
  });
}
