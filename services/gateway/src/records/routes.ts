/**
 * The task records' operations, one sub-app: each kind's creation (its own module), then its list and
 * record reads, made from the kind table (`kinds.ts`) and answered by the read core (`read.ts`), which
 * the fast path shares.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { LIMITS, ListQuerySchema, uuidParam, type TaskKind } from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayApp } from "../http/context.ts";
import { NotFoundError, ValueError422 } from "../http/errors.ts";
import { headerFields, respondText } from "../http/respond.ts";
import { SECURITY, errorResponses, notFoundResponse } from "../http/responses.ts";
import { createRouter } from "../http/router.ts";
import { registerAudioBooks, registerAudioBookUpdate } from "./audio-books.ts";
import { TASK_KINDS } from "./kinds.ts";
import { InvalidCursorError } from "./repository.ts";
import { registerSubtitles } from "./subtitles.ts";
import { registerVoiceStreams } from "./voice-streams.ts";

const json = <T>(schema: T) => ({ "application/json": { schema } });

/** GET of a kind's list and of one of its records. */
function registerReads(app: GatewayApp, deps: GatewayDeps, kind: TaskKind): void {
  const spec = TASK_KINDS[kind];
  const reader = deps.reads[kind];
  const list = createRoute({
    method: "get",
    path: spec.listPath,
    operationId: spec.list.operationId,
    summary: spec.list.summary,
    description: spec.list.description,
    tags: [spec.tag],
    security: SECURITY,
    request: { query: ListQuerySchema },
    responses: {
      200: {
        description: spec.list.answer,
        headers: { Link: { description: spec.list.linkDescription, schema: { type: "string" } } },
        content: json(z.array(spec.schema)),
      },
      ...errorResponses,
    },
  });
  const get = createRoute({
    method: "get",
    path: `${spec.recordPrefix}{${spec.idParam}}`,
    operationId: spec.get.operationId,
    summary: spec.get.summary,
    description: spec.get.description,
    tags: [spec.tag],
    security: SECURITY,
    request: { params: uuidParam(spec.idParam, spec.idDescription) },
    responses: {
      200: { description: spec.get.answer, content: json(spec.schema) },
      ...errorResponses,
      ...notFoundResponse,
    },
  });

  // The bodies are the read core's JSON text, typed by the kind's presenter rather than by the route.
  app.openapi(list, async (c) => {
    const query = c.req.valid("query");
    const limit = query.limit ?? LIMITS.listDefault;
    let page;
    try {
      page = await reader.list(c.get("principal").accountId, { limit, cursor: query.cursor, taskStatus: query.task_status });
    } catch (error) {
      if (error instanceof InvalidCursorError) {
        throw new ValueError422(["query", "cursor"], "invalid cursor: pass the cursor of a previous page's Link header unchanged", query.cursor);
      }
      throw error;
    }
    if (page.link !== undefined) headerFields(c).Link = page.link;
    return respondText(c, 200, page.body) as never;
  });

  app.openapi(get, async (c) => {
    const id = c.req.valid("param")[spec.idParam] ?? "";
    const reply = await reader.record(c.get("principal").accountId, id);
    if (reply === null) throw new NotFoundError(spec.notFound);
    return respondText(c, 200, reply.body) as never;
  });
}

/** Every kind's operations, in the table's order. */
export function recordRoutes(deps: GatewayDeps): GatewayApp {
  const app = createRouter();
  registerAudioBooks(app, deps);
  registerReads(app, deps, "audiobook");
  registerAudioBookUpdate(app, deps);
  registerVoiceStreams(app, deps);
  registerReads(app, deps, "voice-stream");
  registerSubtitles(app, deps);
  registerReads(app, deps, "subtitle");
  return app;
}
