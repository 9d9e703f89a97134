import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { LIMITS, capabilityProblems, pyStr, type TaskRequirements } from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import { requestLog, type GatewayEnv } from "../http/context.ts";
import { respondText } from "../http/respond.ts";
import { ValueError422 } from "../http/errors.ts";
import type { UploadKind } from "../uploads/repository.ts";
import type { TaskDoc } from "./repository.ts";
import { TASK_KINDS, newTaskFields, type KindDocs, type TaskKind } from "./kinds.ts";
import { uuidv7 } from "./ids.ts";
import { storeTask } from "./sandbox-tasks.ts";
import { UPLOAD_ID } from "@voiceloc/fetch";

export const IdempotencyHeaders = z.object({
  "idempotency-key": pyStr({ min: 1, max: LIMITS.idempotencyKeyLength })
    .optional()
    .openapi({
      description:
        "Makes a creating POST safe to retry: the same key and body replay the first response (`Idempotent-Replayed: true`) for 24 hours; the same key with another body is a 409.",
    }),
});

/** 422 naming every capability the engines of this kind's workers lack for this task (skipped when none answers: the task is queued). */
export async function checkCapabilities(deps: GatewayDeps, req: TaskRequirements): Promise<void> {
  const caps = await deps.capabilities?.get(req.kind);
  if (!caps) return;
  const problems = capabilityProblems(caps, req);
  if (problems.length > 0) {
    throw ValueError422.many(problems.map((p) => ({ loc: ["body", p.field], message: p.message, input: p.input })));
  }
}

/** The one 422 reason for an `upload:<id>` that is unknown, another account's or expired. */
export const UPLOAD_NOT_AVAILABLE = "upload not available: no current upload of this account has this id (uploads expire at their expires_at)";

const KIND_WORDS: Record<UploadKind, string> = { text: "UTF-8 text (plain, Markdown, HTML) or an EPUB", audio: "audio", video: "video" };

/**
 * 422 when a `file` / `voice_clone_sample` reference cannot be used by `ownerId`: an `upload:<id>` that is
 * not the owner's current upload ({@link UPLOAD_NOT_AVAILABLE}, one text for unknown, foreign and
 * expired) or holds another kind of content than the field takes (`accepts`); any other reference by
 * its shape (`fileReferenceCheck`: the scheme, a private host, a path outside the caller's media root).
 */
export async function checkFileReference(
  deps: GatewayDeps,
  ownerId: string,
  ref: string,
  loc: Array<string | number>,
  accepts: readonly UploadKind[],
): Promise<void> {
  if (/^upload:/i.test(ref)) {
    const id = ref.slice("upload:".length);
    const doc = deps.uploads && UPLOAD_ID.test(id) ? await deps.uploads.repo.getUsable(ownerId, id, deps.now ? deps.now() : new Date()) : null;
    if (!doc) throw new ValueError422(loc, UPLOAD_NOT_AVAILABLE, ref);
    if (!accepts.includes(doc.kind)) {
      const wanted = accepts.map((kind) => KIND_WORDS[kind]).join(" or ");
      throw new ValueError422(loc, `this upload holds ${doc.content_type}; this field takes ${wanted}`, ref);
    }
    return;
  }
  const problem = deps.fileReferenceCheck(ref, ownerId);
  if (problem !== null) throw new ValueError422(loc, problem, ref);
}

export interface Created {
  status: 201 | 202;
  body: unknown;
  location: string;
}

/**
 * Runs a creating operation under the request's Idempotency-Key (if any): a replay
 * returns the first response; otherwise the result is stored for later replays.
 */
export async function idempotent(
  c: Context<GatewayEnv>,
  deps: GatewayDeps,
  routeKey: string,
  key: string | undefined,
  produce: () => Promise<Created>,
): Promise<Response> {
  const respond = (status: number, body: string, location: string | null, replayed: boolean) =>
    respondText(c, status, body, {
      ...(location ? { Location: location } : {}),
      ...(replayed ? { "Idempotent-Replayed": "true" } : {}),
    });
  if (key === undefined) {
    const created = await produce();
    return respond(created.status, JSON.stringify(created.body), created.location, false);
  }
  const claim = await deps.idempotency.claim(c.get("principal").accountId, routeKey, key, c.get("jsonBody"));
  if (claim.kind === "replay") return respond(claim.status, claim.body, claim.location, true);
  let created: Created;
  try {
    created = await produce();
  } catch (error) {
    await deps.idempotency.release(claim.id);
    throw error;
  }
  const body = JSON.stringify(created.body);
  await deps.idempotency.complete(claim.id, created.status, body, created.location);
  return respond(created.status, body, created.location, false);
}

/** Stores a new record, then hands it to the dispatcher; a failed publish is retried by the sweep. */
export async function dispatchQuietly(c: Context<GatewayEnv>, deps: GatewayDeps, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    requestLog(c, deps.logger).warn({ err: error }, "work not published yet; the re-publish sweep will retry");
  }
}

/**
 * What every kind's creating operation does once its request is checked: under the request's
 * Idempotency-Key (the replay first, before any limit), a new record of `kind` with these fields is
 * stored (a sandbox owner's within the sandbox's places), handed to the dispatcher, and answered with
 * `status`, its view and `Location`.
 */
export function createTask<K extends TaskKind>(
  c: Context<GatewayEnv>,
  deps: GatewayDeps,
  kind: K,
  key: string | undefined,
  status: Created["status"],
  fields: Omit<KindDocs[K], keyof TaskDoc>,
): Promise<Response> {
  const spec = TASK_KINDS[kind];
  const accountId = c.get("principal").accountId;
  return idempotent(c, deps, `POST ${spec.listPath}`, key, async () => {
    const id = deps.newId ? deps.newId() : uuidv7();
    const doc = { id, ...newTaskFields(accountId, deps.now ? deps.now() : new Date()), ...fields } as KindDocs[K];
    await storeTask(deps.sandboxTasks, kind, deps.records[kind], doc);
    await dispatchQuietly(c, deps, () => deps.dispatcher.dispatch(kind, doc));
    return { status, body: spec.present(doc, deps.signer), location: `${spec.recordPrefix}${id}` };
  });
}
