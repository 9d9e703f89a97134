import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Logger } from "@voiceloc/log";
import type { Principal } from "../auth/authenticator.ts";

export interface GatewayEnv {
  Variables: {
    requestId: string;
    log: Logger;
    principal: Principal;
    /** The parsed JSON body of a POST/PUT/PATCH request (set by the body middleware). */
    jsonBody: unknown;
  };
}

export type GatewayApp = OpenAPIHono<GatewayEnv>;
