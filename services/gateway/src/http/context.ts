import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Logger } from "@voiceloc/log";
import type { Principal } from "../auth/authenticator.ts";

export interface GatewayEnv {
  Variables: {
    requestId: string;
    /** The request's logger child, made on first use: read it through {@link requestLog}. */
    log: Logger | undefined;
    principal: Principal;
    /** Response header fields every response of this request carries: see `headerFields` in respond.ts. */
    headerFields: Record<string, string> | undefined;
    /** The last response `respond` built (it carries the header fields already). */
    respondedWith: Response | undefined;
    /** The parsed JSON body of a POST/PUT/PATCH request (set by the body middleware). */
    jsonBody: unknown;
  };
}

/** The request's logger (a child carrying its request id), made the first time a request logs something. */
export function requestLog(c: Context<GatewayEnv>, logger: Logger): Logger {
  let log = c.get("log");
  if (log === undefined) {
    log = logger.child({ requestId: c.get("requestId") });
    c.set("log", log);
  }
  return log;
}

export type GatewayApp = OpenAPIHono<GatewayEnv>;
