import { createRoute, z } from "@hono/zod-openapi";
import { ErrorSchema, PageQuerySchema, pyStr, uuidParam } from "@voiceloc/contracts";
import { uploadBlobKey } from "@voiceloc/blobs";
import type { GatewayDeps, UploadDeps } from "../deps.ts";
import { requestLog, type GatewayApp } from "../http/context.ts";
import { headerFields, requestHeader, respond } from "../http/respond.ts";
import { NotFoundError, ValueError422 } from "../http/errors.ts";
import { SECURITY, errorResponses } from "../http/responses.ts";
import { uuidv7 } from "../records/ids.ts";
import { nextPageLink } from "../records/cursor.ts";
import { InvalidCursorError } from "../records/repository.ts";
import { cleanFilename, storeMultipart, storeUpload, uploadTooLarge, webChunks, type Stored } from "./intake.ts";
import type { UploadDoc } from "./repository.ts";
import { LIMITS } from "@voiceloc/contracts";
import { createRouter } from "../http/router.ts";
import { deleteRoute, getRoute, listRoute } from "../http/resource-routes.ts";

const TAGS = ["Uploads"];
const json = <T>(schema: T) => ({ "application/json": { schema } });
const errorContent = json(ErrorSchema);

/** What the gateway needs for uploads. */

export const UploadSchema = z
  .object({
    id: z.string().uuid().openapi({ description: "The upload's id (UUID v7).", example: "0190d6a4-6b7e-7c3a-9f00-1234567890ab" }),
    file: z.string().openapi({
      description: "The reference to pass in a `file` or `voice_clone_sample` field of this account's create operations.",
      example: "upload:0190d6a4-6b7e-7c3a-9f00-1234567890ab",
    }),
    filename: z.string().nullable().openapi({ description: "The name given (`?filename=` or the multipart part's file name), or null.", example: "book.txt" }),
    bytes: z.number().int().openapi({ description: "Size in bytes.", example: 5120 }),
    content_type: z.string().openapi({
      description: "Sniffed from the bytes, never taken from the request: `text/plain` (UTF-8 text) or an `audio/*` / `video/*` type.",
      example: "text/plain",
    }),
    expires_at: z.string().openapi({ description: "When it stops being usable and is deleted (UPLOAD_TTL_SECONDS after creation).", example: "2026-11-28T07:00:00.000Z" }),
    date_created: z.string().openapi({ description: "When it was made.", example: "2026-11-27T07:00:00.000Z" }),
  })
  .openapi("Upload");

export function presentUpload(doc: UploadDoc): z.infer<typeof UploadSchema> {
  return {
    id: doc.id,
    file: `upload:${doc.id}`,
    filename: doc.filename,
    bytes: doc.bytes,
    content_type: doc.content_type,
    expires_at: doc.expires_at,
    date_created: doc.date_created,
  };
}

const FilenameQuery = z.object({
  filename: pyStr({ min: 1, max: 255 })
    .optional()
    .openapi({ description: "The file's name, kept with the upload and shown back (raw bodies; a multipart part carries its own).", example: "book.txt" }),
});

const UploadListQuery = PageQuerySchema;
const IdParam = uuidParam("upload_id");

const RAW_TYPES = ["application/octet-stream", "text/plain", "audio/*", "video/*"] as const;
const binary = { type: "string" as const, format: "binary" };

export function createUploadRoute(maxBytes: number) {
  return createRoute({
    method: "post",
    path: "/v1/uploads",
    operationId: "create_upload",
    summary: "Create Upload (extension)",
    description:
      "Extension to the contract: stores a file for later use as `file: \"upload:<id>\"` (or `voice_clone_sample`) by this account only, " +
      "so inputs need no public URL and no access to MEDIA_ROOT. Send the bytes as the raw body (any `Content-Type`, optional `?filename=`) " +
      "or as `multipart/form-data` with exactly one file part named `file` (other fields are ignored). The body is streamed to the blob store, " +
      `never held whole, up to UPLOAD_MAX_BYTES (here ${maxBytes} bytes; 1 GiB by default): 413 above it and nothing is kept. ` +
      "The type is sniffed from the bytes, not taken from the request: UTF-8 text without NUL (`text/plain`), audio or video; anything else is a 415. " +
      "An empty body is a 422. The upload expires after UPLOAD_TTL_SECONDS (24 h by default) and is then deleted.",
    tags: TAGS,
    security: SECURITY,
    request: {
      query: FilenameQuery,
      body: {
        required: true,
        description: "The file: raw bytes, or multipart/form-data with one part named `file`.",
        content: {
          ...Object.fromEntries(RAW_TYPES.map((type) => [type, { schema: binary, example: type === "text/plain" ? "Chapter one. It was a bright cold day." : undefined }])),
          "multipart/form-data": {
            schema: { type: "object", properties: { file: binary }, required: ["file"] },
            example: { file: "Chapter one. It was a bright cold day." },
          },
        } as never,
      },
    },
    responses: {
      201: {
        description: "Stored. `Location: /v1/uploads/<id>`.",
        headers: { Location: { description: "The upload's URL.", schema: { type: "string" } } },
        content: json(UploadSchema),
      },
      ...errorResponses,
      413: { description: "The upload is larger than UPLOAD_MAX_BYTES; nothing was kept.", content: errorContent },
      415: { description: "The bytes are neither UTF-8 text nor a recognised audio or video format.", content: errorContent },
    },
  });
}

const listUploads = listRoute({
  path: "/v1/uploads",
  operationId: "list_uploads",
  summary: "List Uploads (extension)",
  description: "The caller's uploads that have not expired, newest first, paged like the other lists (`limit`, `cursor`, `Link`).",
  tags: TAGS,
  query: UploadListQuery,
  item: UploadSchema,
  page: "A page of uploads.",
});

const getUpload = getRoute({
  path: "/v1/uploads/{upload_id}",
  operationId: "get_upload",
  summary: "Get Upload (extension)",
  description: "One of the caller's uploads. 404 for an unknown, expired or another account's id.",
  tags: TAGS,
  params: IdParam,
  item: UploadSchema,
  found: "The upload.",
});

const deleteUpload = deleteRoute({
  path: "/v1/uploads/{upload_id}",
  operationId: "delete_upload",
  summary: "Delete Upload (extension)",
  description:
    "Deletes one of the caller's uploads (record and bytes) before it expires. Tasks already created from it keep their own copy once started; " +
    "a task still queued fails with `file not available`. 404 for an unknown, expired or another account's id.",
  tags: TAGS,
  params: IdParam,
  deleted: "Deleted.",
});

/** Paths whose POST body the upload route reads itself (exempt from the JSON body limit and parser). */
export function isUploadBodyPath(path: string): boolean {
  return path === "/v1/uploads" || path === "/v1/uploads/";
}

export function uploadRoutes(deps: GatewayDeps, uploads: UploadDeps): GatewayApp {
  const app = createRouter();
  const now = () => (deps.now ? deps.now() : new Date());
  const route = createUploadRoute(uploads.maxBytes);
  app.openAPIRegistry.registerPath(route);

  // Not `app.openapi`: its validator would read (buffer) a multipart body. The body is streamed here.
  app.post("/v1/uploads", async (c) => {
    const owner = c.get("principal").accountId;
    const query = FilenameQuery.safeParse({ filename: c.req.query("filename") });
    if (!query.success) throw new ValueError422(["query", "filename"], "filename must be 1 to 255 characters", c.req.query("filename") ?? null);
    const length = requestHeader(c, "content-length");
    if (length !== undefined && /^\d+$/.test(length) && Number(length) > uploads.maxBytes) throw uploadTooLarge(uploads.maxBytes);

    const id = deps.newId ? deps.newId() : uuidv7();
    const key = uploadBlobKey(owner, id);
    const contentType = requestHeader(c, "content-type") ?? "";
    let stored: Stored;
    let filename: string | null;
    if (/^multipart\/form-data\s*(;|$)/i.test(contentType)) {
      const result = await storeMultipart(c.req.raw.body, contentType, { blobs: uploads.blobs, key, maxBytes: uploads.maxBytes });
      stored = result;
      filename = result.filename;
    } else {
      stored = await storeUpload(webChunks(c.req.raw.body), { blobs: uploads.blobs, key, maxBytes: uploads.maxBytes, emptyLoc: ["body"] });
      filename = cleanFilename(query.data.filename);
    }
    const created = now();
    const doc: UploadDoc = {
      id,
      owner,
      blob_key: key,
      bytes: stored.bytes,
      content_type: stored.contentType,
      kind: stored.kind,
      filename,
      expires_at: new Date(created.getTime() + uploads.ttlSeconds * 1000).toISOString(),
      date_created: created.toISOString(),
    };
    try {
      await uploads.repo.create(doc);
    } catch (error) {
      await uploads.blobs.delete(key).catch(() => undefined);
      throw error;
    }
    requestLog(c, deps.logger).info({ upload: id, bytes: doc.bytes, contentType: doc.content_type }, "upload stored");
    return respond(c, 201, presentUpload(doc), { Location: `/v1/uploads/${id}` });
  });

  app.openapi(listUploads, async (c) => {
    const query = c.req.valid("query");
    const limit = query.limit ?? LIMITS.listDefault;
    let page;
    try {
      page = await uploads.repo.list(c.get("principal").accountId, { limit, cursor: query.cursor }, now());
    } catch (error) {
      if (error instanceof InvalidCursorError) {
        throw new ValueError422(["query", "cursor"], "invalid cursor: pass the cursor of a previous page's Link header unchanged", query.cursor);
      }
      throw error;
    }
    if (page.nextCursor) {
      headerFields(c).Link = nextPageLink(deps.publicBaseUrl, "/v1/uploads", { limit, cursor: page.nextCursor });
    }
    return respond(c, 200, page.items.map(presentUpload));
  });

  app.openapi(getUpload, async (c) => {
    const { upload_id: id } = c.req.valid("param");
    const doc = await uploads.repo.getUsable(c.get("principal").accountId, id, now());
    if (!doc) throw new NotFoundError("Upload not found");
    return respond(c, 200, presentUpload(doc));
  });

  app.openapi(deleteUpload, async (c) => {
    const { upload_id: id } = c.req.valid("param");
    const owner = c.get("principal").accountId;
    const doc = await uploads.repo.getUsable(owner, id, now());
    if (!doc) throw new NotFoundError("Upload not found");
    await uploads.blobs.delete(doc.blob_key);
    await uploads.repo.deleteOwned(owner, id);
    return c.body(null, 204);
  });
  return app;
}
