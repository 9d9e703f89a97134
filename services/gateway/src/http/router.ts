import { OpenAPIHono } from "@hono/zod-openapi";
import { toValidationDetail } from "@voiceloc/contracts";
import type { GatewayApp, GatewayEnv } from "./context.ts";
import { boundedItems } from "./limits.ts";
import { respond } from "./respond.ts";

const LOCATION: Record<string, "body" | "query" | "path" | "header"> = {
  json: "body",
  form: "body",
  query: "query",
  param: "path",
  header: "header",
  cookie: "header",
};

/**
 * A Hono app of the gateway's operations: the root app, and each feature's routes, mounted on it with
 * `app.route("/", …)` (Hono's sub-apps; a route module never imports the root). A request that fails
 * its schema is the FastAPI-shaped 422.
 */
export function createRouter(): GatewayApp {
  return new OpenAPIHono<GatewayEnv>({
    defaultHook: (result, c) => {
      if (!result.success) {
        const location = LOCATION[result.target] ?? "body";
        // @hono/zod-validator hands the hook the validated input as `data`; the type omits it.
        const data = (result as { data?: unknown }).data;
        // Inputs are echoed bounded (depth, length, items): a huge body is not sent back in full.
        return respond(c, 422, { detail: boundedItems(toValidationDetail(result.error, data, location)) });
      }
      return undefined;
    },
  });
}
