import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { codePointIndex, parseJsonBody } from "@voiceloc/contracts";
import { HttpProblem } from "./errors.ts";
import type { GatewayEnv } from "./context.ts";
import { requestHeader, respond } from "./respond.ts";
import { MAX_JSON_DEPTH, boundedInput, excessNestingAt } from "./limits.ts";

const JSON_TYPE = /^application\/([a-z0-9.+-]*\+)?json(\s*;.*)?$/i;
/** The methods whose requests carry a body to read. */
export const METHODS_WITH_BODY = ["POST", "PUT", "PATCH"] as const;
const WITH_BODY = new Set<string>(METHODS_WITH_BODY);

/** 413 past the documented body size, streamed (a missing or lying Content-Length does not help). */
export function limitBody(maxBytes: number): MiddlewareHandler<GatewayEnv> {
  const limiter = bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new HttpProblem(413, "payload_too_large", `Request body is larger than the limit of ${maxBytes} bytes`);
    },
  });
  return async (c, next) => (WITH_BODY.has(c.req.method) ? limiter(c, next) : next());
}

/**
 * Reads a JSON request body once, answering FastAPI's 422 items for an empty body
 * (`missing` at `["body"]`), malformed JSON (`json_invalid` with Python's message
 * and position), JSON nested deeper than {@link MAX_JSON_DEPTH} levels (`json_invalid`
 * at the first bracket too deep, checked before parsing) and a non-object
 * (`model_attributes_type`, its input bounded). Other content types are left to the
 * route, which answers 415.
 */
export function parseJson(): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    if (!WITH_BODY.has(c.req.method)) return next();
    const contentType = requestHeader(c, "content-type");
    if (contentType === undefined || !JSON_TYPE.test(contentType)) return next();
    const text = await c.req.text();
    if (text.trim() === "") {
      return respond(c, 422, { detail: [{ type: "missing", loc: ["body"], msg: "Field required", input: null }] });
    }
    const tooDeep = excessNestingAt(text, MAX_JSON_DEPTH);
    if (tooDeep !== undefined) {
      return respond(c, 422, { detail: [jsonTooDeepItem(codePointIndex(text, tooDeep))] });
    }
    const parsed = parseJsonBody(text);
    if (!parsed.ok) return respond(c, 422, { detail: [parsed.item] });
    const value = parsed.value;
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      return respond(c, 422, {
        detail: [
          {
            type: "model_attributes_type",
            loc: ["body"],
            msg: "Input should be a valid dictionary or object to extract fields from",
            input: boundedInput(value),
          },
        ],
      });
    }
    c.set("jsonBody", value);
    return next();
  };
}

/** The 422 item for a body nested deeper than {@link MAX_JSON_DEPTH}, in FastAPI's `json_invalid` shape. */
export function jsonTooDeepItem(pos: number): { type: string; loc: Array<string | number>; msg: string; input: object; ctx: { error: string } } {
  return {
    type: "json_invalid",
    loc: ["body", pos],
    msg: "JSON decode error",
    input: {},
    ctx: { error: `Nesting deeper than ${MAX_JSON_DEPTH} levels` },
  };
}
