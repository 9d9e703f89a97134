import { createRoute, z } from "@hono/zod-openapi";
import { ErrorSchema, TaskStatusSchema, uuidParam } from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayApp } from "../http/context.ts";
import { SECURITY, errorResponses, notFoundResponse } from "../http/responses.ts";
import { SSE_RETRY_MS, recordEventStream } from "./sse.ts";
import { createRouter } from "../http/router.ts";

const TAGS = ["Events"];

/** The `data` of a `progress` event. */
export const RecordProgressSchema = z
  .object({
    id: z.string().uuid().openapi({ description: "The record's id." }),
    task_status: TaskStatusSchema,
    task_progress: z.number().min(0).max(100).openapi({ description: "Progress in percent, 0–100; never lower than in an earlier event." }),
    date_updated: z.string().datetime().openapi({ example: "2026-11-22T06:31:12.000Z" }),
  })
  .openapi("RecordProgress", { description: "The `data` of a `progress` event: the record's task fields as the projection stored them." });

const eventId = z
  .string()
  .regex(/^\d+$/)
  .openapi({
    description:
      "The event id (`id:` line): a whole number derived from the record's state (progress in hundredths × 4 + status rank: queued 0, processing 1, failed 2, completed 3), strictly increasing within a stream and the same on every gateway. Send the last one back as `Last-Event-ID` to resume.",
    example: "20001",
  });

/**
 * The frames of one kind's stream, as an OpenAPI 3.1 schema: each event's `event:` name, `id:` and
 * the JSON in its `data:` line (`contentMediaType`/`contentSchema`, JSON Schema 2020-12; the record
 * schemas are components through their own routes, `RecordProgress` is registered below).
 */
function framesSchema(recordName: string, what: string) {
  const jsonData = (ref: string, description: string) =>
    z.string().openapi({
      description,
      // JSON Schema 2020-12 keywords the metadata type does not list
      ...({ contentMediaType: "application/json", contentSchema: { $ref: `#/components/schemas/${ref}` } } as object),
    });
  const progress = z
    .object({
      event: z.literal("progress"),
      id: eventId,
      data: jsonData("RecordProgress", "`RecordProgress` as JSON."),
    })
    .openapi({ title: "progress", description: "The record's status or progress changed (also the first event: the state when the stream opened)." });
  const final = (status: "completed" | "failed") =>
    z
      .object({
        event: z.literal(status),
        id: eventId,
        data: jsonData(recordName, `The ${what} exactly as GET returns it (\`${recordName}\`, with a freshly signed \`localized_file\`), as JSON.`),
      })
      .openapi({ title: status, description: `The ${what} ${status === "completed" ? "completed" : "failed (see `task_error`)"}; the server closes the stream after it.` });
  return z.union([progress, final("completed"), final("failed")]).openapi({
    description: [
      "A `text/event-stream` (Server-Sent Events); each frame is one of the objects below, written as `event:`, `id:` and `data:` lines and a blank line.",
      `The stream opens with \`retry: ${SSE_RETRY_MS}\` and comment lines \`: heartbeat\` keep it alive.`,
      "Example:",
      "",
      "```",
      `retry: ${SSE_RETRY_MS}`,
      "",
      "event: progress",
      "id: 1",
      'data: {"id":"0193…","task_status":"processing","task_progress":0,"date_updated":"2026-11-22T06:30:01.000Z"}',
      "",
      "event: progress",
      "id: 16001",
      'data: {"id":"0193…","task_status":"processing","task_progress":40,"date_updated":"2026-11-22T06:30:20.000Z"}',
      "",
      ": heartbeat",
      "",
      "event: completed",
      "id: 40003",
      'data: {"id":"0193…", …, "task_status":"completed","task_progress":100,"localized_file":"https://…"}',
      "```",
    ].join("\n"),
  });
}

const LastEventIdHeaders = z.object({
  "last-event-id": z
    .string()
    .max(64)
    .optional()
    .openapi({
      description:
        "Resume: the id of the last event received (an EventSource sends it by itself when it reconnects). The stream then sends the current state only when it is newer; a value that is not a whole number is ignored.",
      example: "16001",
    }),
});

function eventRoute(options: { path: string; param: string; operationId: string; summary: string; what: string; recordName: string }) {
  const base = uuidParam(options.param);
  const params = z.object({
    [options.param]: (base.shape as Record<string, z.ZodTypeAny>)[options.param]!.openapi({ description: `The ${options.what}'s id.` }),
  });
  return createRoute({
    method: "get",
    path: options.path,
    operationId: options.operationId,
    summary: options.summary,
    description: [
      `Live progress of one ${options.what} as Server-Sent Events (\`text/event-stream\`): first its current state as a \`progress\` event, then a \`progress\` event each time its status or progress changes, then one final \`completed\` or \`failed\` event carrying the ${options.what} exactly as GET returns it; then the server closes the stream. An ${options.what} that already finished gets the final event at once.`,
      "Works whichever gateway holds the stream. Event ids rise strictly and are derived from the record, so `Last-Event-ID` resumes on any gateway without repeats; when it already covers the final event the answer is `204` (an EventSource stops reconnecting).",
      "A `: heartbeat` comment is written every `SSE_HEARTBEAT_MS` (15 s by default) so proxies keep the connection; at most `SSE_MAX_STREAMS_PER_ACCOUNT` (100) streams per account are open at once, counted across every gateway (429 beyond).",
    ].join("\n\n"),
    tags: TAGS,
    security: SECURITY,
    request: { params, headers: LastEventIdHeaders },
    responses: {
      200: {
        description: "The event stream.",
        headers: {
          "Cache-Control": { description: "`no-cache, no-transform`: a live stream is never cached or recoded.", schema: { type: "string" } },
        },
        content: { "text/event-stream": { schema: framesSchema(options.recordName, options.what) } },
      },
      204: { description: "`Last-Event-ID` already covers the final event of a finished record: nothing more will come." },
      ...errorResponses,
      ...notFoundResponse,
      429: {
        ...errorResponses[429],
        description: `${errorResponses[429].description} Also: the account already holds \`SSE_MAX_STREAMS_PER_ACCOUNT\` open event streams (on any gateway).`,
        content: { "application/json": { schema: ErrorSchema } },
      },
      503: {
        description: "This gateway is shutting down and opens no new stream: reconnect (to any gateway, with `Last-Event-ID`) after `Retry-After`.",
        headers: { "Retry-After": { description: "Seconds to wait before reconnecting.", schema: { type: "integer", minimum: 1, example: 1 } } },
        content: { "application/json": { schema: ErrorSchema } },
      },
    },
  });
}

const streamAudioBookEvents = eventRoute({
  path: "/v1/audio_books/{audio_book_id}/events",
  param: "audio_book_id",
  operationId: "stream_audio_book_events",
  summary: "Stream Audio Book Events",
  what: "audio book",
  recordName: "AudioBook",
});

const streamVoiceStreamEvents = eventRoute({
  path: "/v1/voices/streams/{voice_id}/events",
  param: "voice_id",
  operationId: "stream_voice_stream_events",
  summary: "Stream Voice Stream Events",
  what: "voice stream",
  recordName: "VoiceStream",
});

const streamSubtitleEvents = eventRoute({
  path: "/v1/videos/subtitle/{subtitle_id}/events",
  param: "subtitle_id",
  operationId: "stream_subtitle_events",
  summary: "Stream Subtitle Job Events",
  what: "subtitle job",
  recordName: "SubtitleJob",
});

/** GET …/events of every kind (live progress). */
export function eventRoutes(deps: GatewayDeps): GatewayApp {
  const app = createRouter();
  app.openAPIRegistry.register("RecordProgress", RecordProgressSchema);
  // named only inside `contentSchema` (the record schemas are components through their own routes)
  const owner = (c: { get(key: "principal"): { accountId: string } }) => c.get("principal").accountId;
  app.openapi(streamAudioBookEvents, (c) =>
    recordEventStream(c, deps, { kind: "audiobook", ownerId: owner(c), id: c.req.valid("param").audio_book_id as string }) as never,
  );
  app.openapi(streamVoiceStreamEvents, (c) =>
    recordEventStream(c, deps, { kind: "voice-stream", ownerId: owner(c), id: c.req.valid("param").voice_id as string }) as never,
  );
  app.openapi(streamSubtitleEvents, (c) =>
    recordEventStream(c, deps, { kind: "subtitle", ownerId: owner(c), id: c.req.valid("param").subtitle_id as string }) as never,
  );
  return app;
}
