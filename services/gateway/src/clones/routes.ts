/**
 * Cloned voices as an API resource (`/v1/voices/clones`): made from a sample by the service that holds
 * the cloning engine (bus `clone.create`, while the request waits: the sample is checked then), kept per
 * owner in the store, deleted at the engine before the record goes (bus `clone.delete`).
 */
import { createRoute } from "@hono/zod-openapi";
import {
  CLONE_SAMPLE_SECONDS,
  CreateVoiceCloneSchema,
  ErrorSchema,
  VoiceCloneListQuerySchema,
  VoiceCloneSchema,
  uuidParam,
  type CLONE_ENGINE_NAMES,
  type VOICE_CLONE_ENGINES,
} from "@voiceloc/contracts";
import type { CloneDeps, GatewayDeps } from "../deps.ts";
import type { GatewayApp } from "../http/context.ts";
import { requestLog } from "../http/context.ts";
import { respond } from "../http/respond.ts";
import { NotFoundError, ServiceUnavailableError } from "../http/errors.ts";
import { listed } from "../http/paging.ts";
import { SECURITY, bodyErrorResponses, createErrorResponses, errorResponses } from "../http/responses.ts";
import { createRouter } from "../http/router.ts";
import { deleteRoute, getRoute, listRoute } from "../http/resource-routes.ts";
import { uuidv7 } from "../records/ids.ts";
import { IdempotencyHeaders, checkFileReference, idempotent } from "../records/shared.ts";
import { cloneDescriptor, presentClone, type CloneDoc } from "./repository.ts";

// The API's engine names and the bus's are one list (contracts keeps them apart only to avoid an import circle).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
const _sameEngines: Same<(typeof VOICE_CLONE_ENGINES)[number], (typeof CLONE_ENGINE_NAMES)[number]> = true;
void _sameEngines;

export const CLONES_TAG = {
  name: "Voice cloning",
  description:
    "Cloned voices made from a sample of a person's speech, used as `voice: \"clone:<id>\"` wherever a voice is named. Only with the speaker's permission.",
};
const TAGS = [CLONES_TAG.name];
const LIST_PATH = "/v1/voices/clones";
const IdParam = uuidParam("clone_id", "The cloned voice's id (a UUID), as returned when it was made.");
const json = <T>(schema: T) => ({ "application/json": { schema } });
const NOT_FOUND = "Cloned voice not found";
const MISSING = "No such cloned voice for the calling account (another account's id is a 404 too).";

const createClone = createRoute({
  method: "post",
  path: LIST_PATH,
  operationId: "create_voice_clone",
  summary: "Create Voice Clone (extension)",
  description:
    "Makes a voice from a sample of a person's speech and answers **201** with it once it is made (the request waits: the sample is fetched and checked now). " +
    `The sample must be audio (its content is sniffed) with ${CLONE_SAMPLE_SECONDS.min} s to ${CLONE_SAMPLE_SECONDS.max / 60} min of decoded sound that is not silent; ` +
    "a sample that cannot be fetched, is not audio, is too short, too long or silent is a **422** at `body.sample` in plain words, and so is every request while this server makes no cloned voices (`CLONE_ENGINE=off`). " +
    "The voice is made by the server's cloning engine (`CLONE_ENGINE`): `elevenlabs`, `voice-library`, or `match`, which is not a clone but an approximation of the sample's pitch and rate with an installed voice. " +
    "Use it as `voice: \"clone:<id>\"` (synthesis, voice streams) or `preset_voice_name` (audio books); it belongs to the calling account (a sandbox key has a space of its own). " +
    "Engine trouble is a **503** with `Retry-After` or a **502**; nothing is stored then. You must have the speaker's permission to clone their voice.",
  tags: TAGS,
  security: SECURITY,
  request: {
    headers: IdempotencyHeaders,
    body: {
      content: {
        "application/json": {
          schema: CreateVoiceCloneSchema,
          example: { name: "Narrator (Ana)", sample: "https://files.example.org/voices/ana-30s.wav", language: "Spanish" },
        },
      },
      required: true,
    },
  },
  responses: {
    201: {
      description: "The cloned voice.",
      headers: { Location: { description: "The cloned voice's URL.", schema: { type: "string" } } },
      content: json(VoiceCloneSchema),
    },
    ...errorResponses,
    ...createErrorResponses,
    ...bodyErrorResponses,
    502: { description: "The cloning engine or the synthesis service failed; nothing was stored.", content: json(ErrorSchema) },
    503: { description: "No synthesis service runs, or the cloning engine cannot be reached or is busy (`Retry-After`); nothing was stored.", content: json(ErrorSchema) },
  },
});

const listClones = listRoute({
  path: LIST_PATH,
  operationId: "list_voice_clones",
  summary: "List Voice Clones (extension)",
  description: "The caller's cloned voices, newest first, paged like the other lists (`limit`, `cursor`, the `Link` header).",
  tags: TAGS,
  query: VoiceCloneListQuerySchema,
  item: VoiceCloneSchema,
  page: "A page of cloned voices.",
});

const getClone = getRoute({
  path: `${LIST_PATH}/{clone_id}`,
  operationId: "get_voice_clone",
  summary: "Get Voice Clone (extension)",
  description: "One of the caller's cloned voices: its engine, the sample's length and the languages it speaks. Another account's id is a 404, as an unknown one.",
  tags: TAGS,
  params: IdParam,
  missing: MISSING,
  item: VoiceCloneSchema,
  found: "The cloned voice.",
});

const deleteClone = deleteRoute({
  path: `${LIST_PATH}/{clone_id}`,
  operationId: "delete_voice_clone",
  summary: "Delete Voice Clone (extension)",
  description:
    "Deletes the voice at the engine that made it, then its record, and answers **204**. When the engine cannot be reached the answer is a **503** (or **502**) and the clone is kept, so nothing is left at the engine unseen: delete it again later. " +
    "A `match` voice has nothing at an engine and is deleted at once. Tasks already queued with the voice fail in plain words when they reach it (a `match` voice's finish).",
  tags: TAGS,
  params: IdParam,
  missing: MISSING,
  deleted: "Deleted, at the engine and here.",
  failures: {
    502: { description: "The engine or the synthesis service failed to delete the voice; the clone is kept.", content: json(ErrorSchema) },
    503: { description: "No synthesis service runs, or the engine cannot be reached (`Retry-After`); the clone is kept.", content: json(ErrorSchema) },
  },
});

const NO_SERVICE = "Voice cloning is not available: this deployment runs no synthesis service. Nothing was stored; retry when it is enabled.";

export function cloneRoutes(deps: GatewayDeps, clones: CloneDeps): GatewayApp {
  const app = createRouter();
  const now = () => (deps.now ? deps.now() : new Date());

  app.openapi(createClone, async (c) => {
    const body = c.req.valid("json");
    const { "idempotency-key": key } = c.req.valid("header");
    const owner = c.get("principal").accountId;
    await checkFileReference(deps, owner, body.sample, ["body", "sample"], ["audio"]);
    return idempotent(c, deps, `POST ${LIST_PATH}`, key, async () => {
      // read at request time: a deployment (or a test) may provide the maker after the routes are made
      const maker = clones.maker;
      if (!maker) throw new ServiceUnavailableError(NO_SERVICE);
      const id = deps.newId ? deps.newId() : uuidv7();
      const made = await maker.create({ id, name: body.name, sample: body.sample, language: body.language ?? null, accountId: owner, requestId: c.get("requestId") });
      const doc: CloneDoc = {
        id,
        account_id: owner,
        name: body.name,
        engine: made.engine,
        ref: made.ref,
        profile: made.profile,
        sample_seconds: made.sample_seconds,
        languages: made.languages,
        date_created: now().toISOString(),
      };
      try {
        await clones.repo.create(doc);
      } catch (error) {
        // nothing may stay at the engine that no record names
        await maker.remove(cloneDescriptor(doc), owner, c.get("requestId")).catch((cause: unknown) => {
          requestLog(c, deps.logger).error({ err: cause, clone: id, engine: doc.engine }, "a clone whose record could not be stored was not deleted at its engine");
        });
        throw error;
      }
      return { status: 201, body: presentClone(doc), location: `${LIST_PATH}/${id}` };
    }) as Promise<never>;
  });

  app.openapi(listClones, async (c) => {
    const owner = c.get("principal").accountId;
    const items = await listed(c, deps, LIST_PATH, c.req.valid("query"), (limit, cursor) => clones.repo.list(owner, limit, cursor));
    return respond(c, 200, items.map(presentClone));
  });

  app.openapi(getClone, async (c) => {
    const doc = await clones.repo.getOwned(c.get("principal").accountId, c.req.valid("param").clone_id);
    if (!doc) throw new NotFoundError(NOT_FOUND);
    return respond(c, 200, presentClone(doc));
  });

  app.openapi(deleteClone, async (c) => {
    const owner = c.get("principal").accountId;
    const { clone_id: id } = c.req.valid("param");
    const doc = await clones.repo.getOwned(owner, id);
    if (!doc) throw new NotFoundError(NOT_FOUND);
    if (doc.engine !== "match") {
      const maker = clones.maker;
      if (!maker) throw new ServiceUnavailableError("The voice cannot be deleted at its engine now: this deployment runs no synthesis service. The clone is kept; retry when it runs.", 30);
      await maker.remove(cloneDescriptor(doc), owner, c.get("requestId"));
    }
    if (!(await clones.repo.deleteOwned(owner, id))) throw new NotFoundError(NOT_FOUND);
    return c.body(null, 204);
  });

  return app;
}
