/**
 * Route declarations of the caller's own resources (lexicons, cloned voices, uploads, webhooks): a paged list, one
 * by id, a delete. Each says what its operation is; the security, the `Link` header, the shared error responses
 * and the JSON content come from here, so the four resources document their reads and deletes alike.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { SECURITY, errorResponses, notFoundResponse } from "./responses.ts";

/** A JSON body of `schema`, for a response or a request. */
export const jsonContent = <T>(schema: T) => ({ "application/json": { schema } });

/** The `Link` header of a list page. */
export const linkHeader = {
  Link: { description: "Next page, RFC 8288: `<url>; rel=\"next\"`. Absent on the last page.", schema: { type: "string" as const } },
};

/** What every operation states of itself. */
interface OperationText {
  readonly path: string;
  /** The 404's description, when the generic one would say less. */
  readonly missing?: string;
  readonly operationId: string;
  readonly summary: string;
  readonly description: string;
  readonly tags: string[];
}

type Params = z.ZodObject<z.ZodRawShape>;

const notFound = (missing: string | undefined) => ({ 404: { ...notFoundResponse[404], description: missing ?? notFoundResponse[404].description } });

/** `GET` a page of the caller's resources, newest first (`limit`, `cursor`, `Link`); with `params`, of one parent's. */
export function listRoute<Q extends Params, I extends z.ZodType, P extends Params | undefined = undefined>(
  op: OperationText & { readonly query: Q; readonly item: I; readonly page: string; readonly params?: P },
) {
  return createRoute({
    method: "get",
    path: op.path,
    operationId: op.operationId,
    summary: op.summary,
    description: op.description,
    tags: op.tags,
    security: SECURITY,
    request: { query: op.query, params: op.params as P },
    responses: {
      200: { description: op.page, headers: linkHeader, content: jsonContent(z.array(op.item)) },
      ...errorResponses,
      ...(op.params ? notFound(op.missing) : {}),
    },
  });
}

/** `GET` one of the caller's resources; another account's id is the same 404 as an unknown one. */
export function getRoute<P extends Params, I extends z.ZodType>(op: OperationText & { readonly params: P; readonly item: I; readonly found: string }) {
  return createRoute({
    method: "get",
    path: op.path,
    operationId: op.operationId,
    summary: op.summary,
    description: op.description,
    tags: op.tags,
    security: SECURITY,
    request: { params: op.params },
    responses: {
      200: { description: op.found, content: jsonContent(op.item) },
      ...errorResponses,
      ...notFound(op.missing),
    },
  });
}

type Failures = Record<number, { readonly description: string; readonly content: ReturnType<typeof jsonContent<z.ZodType>> }>;

/** `DELETE` one of the caller's resources: 204, or the 404 of an unknown or foreign id; `failures` adds what else it can answer. */
export function deleteRoute<P extends Params, F extends Failures = Record<never, never>>(
  op: OperationText & { readonly params: P; readonly deleted: string; readonly failures?: F },
) {
  return createRoute({
    method: "delete",
    path: op.path,
    operationId: op.operationId,
    summary: op.summary,
    description: op.description,
    tags: op.tags,
    security: SECURITY,
    request: { params: op.params },
    responses: {
      204: { description: op.deleted },
      ...errorResponses,
      ...notFound(op.missing),
      ...((op.failures ?? {}) as F),
    },
  });
}
