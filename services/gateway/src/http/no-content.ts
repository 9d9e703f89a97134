import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** Statuses that carry no content, so no Content-Type (RFC 9110 §15.3.5, §15.4.5). */
const NO_CONTENT = new Set([204, 304]);

/**
 * @hono/node-server gives every response without a Content-Type a `text/plain` one, a 204 too; a
 * response without content has nothing to type, and the document says none. Takes the field off those.
 */
export function withoutTypeOnEmptyAnswers(listener: Listener): Listener {
  return (req, res) => {
    const writeHead = res.writeHead.bind(res) as (status: number, headers?: OutgoingHttpHeaders) => ServerResponse;
    (res as { writeHead: unknown }).writeHead = (status: number, headers?: OutgoingHttpHeaders) => {
      if (NO_CONTENT.has(status)) {
        res.removeHeader("content-type");
        if (headers !== undefined && typeof headers === "object" && !Array.isArray(headers)) {
          for (const name of Object.keys(headers)) if (name.toLowerCase() === "content-type") delete headers[name];
        }
      }
      return writeHead(status, headers);
    };
    listener(req, res);
  };
}
