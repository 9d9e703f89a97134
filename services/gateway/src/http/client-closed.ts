import type { IncomingMessage } from "node:http";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { GatewayEnv } from "./context.ts";
import { HttpProblem } from "./errors.ts";

/**
 * The status a request its client abandoned is counted and logged under: the client closed the
 * connection before the request was read or answered (nginx's "client closed request"). Never sent:
 * nobody is left to read it.
 */
export const CLIENT_CLOSED_REQUEST = 499;

const ABORT_CODES = new Set(["ECONNRESET", "ECONNABORTED", "EPIPE", "ERR_STREAM_PREMATURE_CLOSE", "ABORT_ERR"]);

/**
 * Whether `error` ended the request because its client went away: the client's connection closed
 * before the request was complete (Node then destroys the request with an `aborted` error, and every
 * read of the body fails), and the error is what reading it gave (anywhere in its `cause` chain: a
 * blob store wraps it) or a refusal drawn from the part that arrived (a multipart body cut short is
 * malformed). Any other error stays a server error, even when the client left meanwhile.
 */
export function clientClosedRequest(c: Context<GatewayEnv>, error: unknown): boolean {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  // Node destroys a request whose client closed its connection early with an error ("aborted"); a request this
  // gateway stopped reading itself (an upload over its limit, cut short after the 413) is destroyed without one.
  const gone = incoming !== undefined ? (incoming.errored ?? undefined) : c.req.raw.signal.aborted ? c.req.raw.signal.reason : undefined;
  if (gone === undefined || gone === null) return false;
  if (error instanceof HttpProblem || error instanceof HTTPException) return true;
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    if (current === gone || current.name === "AbortError") return true;
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && ABORT_CODES.has(code)) return true;
    current = current.cause;
  }
  return false;
}
