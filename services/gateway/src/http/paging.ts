import type { Context } from "hono";
import { LIMITS } from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayEnv } from "./context.ts";
import { headerFields } from "./respond.ts";
import { ValueError422 } from "./errors.ts";
import { nextPageLink } from "../records/cursor.ts";
import { InvalidCursorError, type Page } from "../records/repository.ts";

/**
 * One page of a list that is not a task list (webhooks, their deliveries, cloned voices): `limit`
 * (default LIMITS.listDefault) and the opaque `cursor`, a bad cursor is a 422 at `query.cursor`, and the
 * next page's link goes in `Link`.
 */
export async function listed<T>(
  c: Context<GatewayEnv>,
  deps: GatewayDeps,
  path: string,
  query: { limit?: number | undefined; cursor?: string | undefined },
  load: (limit: number, cursor: string | undefined) => Promise<Page<T>>,
): Promise<T[]> {
  const limit = query.limit ?? LIMITS.listDefault;
  let page: Page<T>;
  try {
    page = await load(limit, query.cursor);
  } catch (error) {
    if (error instanceof InvalidCursorError) {
      throw new ValueError422(["query", "cursor"], "invalid cursor: pass the cursor of a previous page's Link header unchanged", query.cursor);
    }
    throw error;
  }
  if (page.nextCursor) {
    headerFields(c).Link = nextPageLink(deps.publicBaseUrl, path, { limit, cursor: page.nextCursor });
  }
  return page.items;
}
