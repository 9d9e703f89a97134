import { Readable } from "node:stream";
import {
  BlobNotFoundError,
  contentRange,
  contentTypeFor,
  isValidBlobKey,
  parseRange,
  verifyBlobSignature,
  type BlobStore,
  type SigningSecrets,
} from "@voiceloc/blobs";
import type { GatewayApp } from "../http/context.ts";
import { HttpProblem, NotFoundError } from "../http/errors.ts";
import { createRouter } from "../http/router.ts";

/**
 * Signed downloads: `GET /v1/files/<key>?expires=<unix>&signature=<hmac>`. No credential
 * header is needed (the signature is the credential); a tampered or expired link → 403.
 * Supports HEAD and single byte ranges (206, 416).
 */
export function fileRoutes(blobs: BlobStore, secret: SigningSecrets): GatewayApp {
  const app = createRouter();
  app.on(["GET", "HEAD"], "/v1/files/*", async (c) => {
    const key = blobKeyOf(c.req.url);
    if (key === undefined || !isValidBlobKey(key)) throw new NotFoundError("File not found");
    const verdict = verifyBlobSignature({ key, expires: c.req.query("expires"), signature: c.req.query("signature"), secret });
    if (!verdict.ok) {
      const detail =
        verdict.reason === "expired"
          ? "This download link has expired; read the record again for a fresh link"
          : "This download link is not valid";
      throw new HttpProblem(403, "forbidden", detail);
    }
    let stat;
    try {
      stat = await blobs.stat(key);
    } catch (error) {
      if (error instanceof BlobNotFoundError) throw new NotFoundError("File not found");
      throw error;
    }
    const headers: Record<string, string> = {
      "Content-Type": stat.contentType ?? contentTypeFor(key),
      "Accept-Ranges": "bytes",
      "Cache-Control": "private, max-age=3600",
      "Content-Disposition": `inline; filename="${key.split("/").pop() ?? "file"}"`,
      "Last-Modified": stat.modified.toUTCString(),
    };
    const range = parseRange(c.req.header("range"), stat.size);
    if (range.kind === "unsatisfiable") {
      return c.body(null, 416, { ...headers, "Content-Range": contentRange("unsatisfiable", stat.size) });
    }
    const [status, start, end] = range.kind === "range" ? [206 as const, range.start, range.end] : [200 as const, 0, stat.size - 1];
    const length = stat.size === 0 ? 0 : end - start + 1;
    headers["Content-Length"] = String(length);
    if (status === 206) headers["Content-Range"] = contentRange({ start, end }, stat.size);
    if (c.req.method === "HEAD" || length === 0) return c.body(null, status, headers);
    const stream = await blobs.createReadStream(key, { start, end });
    return c.body(Readable.toWeb(stream) as ReadableStream, status, headers);
  });
  return app;
}

const FILES_PREFIX = "/v1/files/";

/**
 * The blob key named by a request URL: its raw (still percent-encoded) path after `/v1/files/`,
 * decoded exactly once. `undefined` when the encoding is malformed (`%`, `%E0%A4%A`, an encoded
 * lone surrogate…), which is a 404 like any other unknown key, never a URIError.
 */
export function blobKeyOf(requestUrl: string): string | undefined {
  let raw: string;
  try {
    raw = new URL(requestUrl).pathname;
  } catch {
    return undefined;
  }
  if (!raw.startsWith(FILES_PREFIX)) return undefined;
  try {
    return decodeURIComponent(raw.slice(FILES_PREFIX.length));
  } catch {
    return undefined;
  }
}
