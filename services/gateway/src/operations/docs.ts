/**
 * GET /docs: Swagger UI served entirely from this process, so the page works where the public
 * internet is out of reach (air-gapped and self-hosted installs).
 *
 * Why `swagger-ui-dist` (not Scalar's standalone bundle): one plain script and one stylesheet that
 * fetch nothing else (we turn the online validator badge off), a page that works under a CSP of
 * `'self'` without `unsafe-inline`/`unsafe-eval`, Apache-2.0, and the UI most API users already know.
 * Scalar's bundle loads its fonts from a CDN unless told otherwise and evaluates inline styles.
 *
 * - The page is a static HTML document with no inline script or style: its initializer is a served
 *   file (`init.js`) that reads the document's URL from a `data-` attribute.
 * - Assets live under `/docs/assets/<version>/…`, where the version is swagger-ui-dist's plus a hash of
 *   our own files: they are cached for a year (`immutable`); an upgrade changes the path. Another
 *   version in the path is a 404, never stale content. The page itself is `no-cache`.
 * - Every response here carries a Content-Security-Policy that allows only our own origin
 *   (`data:` images besides: Swagger UI's stylesheet draws its icons as inline SVG data URIs, which
 *   never leave the page), and no framing.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Context } from "hono";
import type { GatewayApp, GatewayEnv } from "../http/context.ts";
import { respond } from "../http/respond.ts";
import { createRouter } from "../http/router.ts";

export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS = {
  "Content-Security-Policy": DOCS_CSP,
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Resource-Policy": "same-origin",
  "X-Frame-Options": "DENY",
};

const IMMUTABLE = "public, max-age=31536000, immutable";

/** swagger-ui-dist's files we serve (and their source maps, for a browser's developer tools). */
const DIST_FILES: Record<string, string> = {
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui-bundle.js.map": "application/json",
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui.css.map": "application/json",
  "favicon-32x32.png": "image/png",
  "favicon-16x16.png": "image/png",
};

/** Our initializer: no inline script, so the page's settings come from data- attributes. */
const INIT_JS = `"use strict";
// Swagger UI's initializer for /docs (a served file: the page's CSP allows no inline script).
window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-openapi-url"),
    dom_id: "#swagger-ui",
    deepLinking: true,
    layout: "BaseLayout",
    presets: [SwaggerUIBundle.presets.apis],
    // no badge image from the public validator: nothing leaves the origin
    validatorUrl: null,
    displayOperationId: true,
    displayRequestDuration: true,
    tryItOutEnabled: false,
    persistAuthorization: false,
    withCredentials: false,
  });
});
`;

/** A little room around the UI; a served stylesheet (no inline style either). */
const DOCS_CSS = `body { margin: 0; background: #fafafa; }
#swagger-ui { max-width: 1460px; margin: 0 auto; }
`;

const OWN_FILES: Record<string, { type: string; body: string }> = {
  "init.js": { type: "text/javascript; charset=utf-8", body: INIT_JS },
  "docs.css": { type: "text/css; charset=utf-8", body: DOCS_CSS },
};

/** Where swagger-ui-dist is installed, and its version (read once at start: a missing package fails the start, not the first visit). */
function locateDist(): { dir: string; version: string } {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve("swagger-ui-dist/package.json");
  const { version } = JSON.parse(readFileSync(manifest, "utf8")) as { version: string };
  return { dir: dirname(manifest), version };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

export interface DocsOptions {
  title: string;
  /** The OpenAPI document the page shows. */
  openapiUrl: string;
}

export function docsRoutes(options: DocsOptions): GatewayApp {
  const app = createRouter();
  const dist = locateDist();
  const ownHash = createHash("sha256").update(INIT_JS).update(DOCS_CSS).digest("hex").slice(0, 10);
  const version = `${dist.version}-${ownHash}`;
  const base = `/docs/assets/${version}`;
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)}</title>
<link rel="stylesheet" href="${base}/swagger-ui.css">
<link rel="stylesheet" href="${base}/docs.css">
<link rel="icon" type="image/png" sizes="32x32" href="${base}/favicon-32x32.png">
<link rel="icon" type="image/png" sizes="16x16" href="${base}/favicon-16x16.png">
</head>
<body>
<div id="swagger-ui" data-openapi-url="${escapeHtml(options.openapiUrl)}"></div>
<script src="${base}/swagger-ui-bundle.js"></script>
<script src="${base}/init.js"></script>
</body>
</html>
`;
  // swagger-ui-dist's files are read on first request and kept (about 2 MB for the bundle and CSS).
  const cache = new Map<string, Promise<Uint8Array<ArrayBuffer>>>();
  const distFile = (name: string) => {
    let bytes = cache.get(name);
    if (!bytes) {
      bytes = readFile(join(dist.dir, name)).then((b) => new Uint8Array(b));
      bytes.catch(() => cache.delete(name));
      cache.set(name, bytes);
    }
    return bytes;
  };

  const notFound = (c: Context<GatewayEnv>) => respond(c, 404, { detail: "Not Found" }, SECURITY_HEADERS);

  app.get("/docs", (c) => c.body(page, 200, { ...SECURITY_HEADERS, "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-cache" }));
  app.get("/docs/", (c) => c.redirect("/docs", 308));
  app.get("/docs/assets/:version/:file", async (c) => {
    const file = c.req.param("file");
    if (c.req.param("version") !== version) return notFound(c);
    const own = Object.hasOwn(OWN_FILES, file) ? OWN_FILES[file] : undefined;
    if (own) return c.body(own.body, 200, { ...SECURITY_HEADERS, "Content-Type": own.type, "Cache-Control": IMMUTABLE });
    const type = Object.hasOwn(DIST_FILES, file) ? DIST_FILES[file] : undefined;
    if (!type) return notFound(c);
    const bytes = await distFile(file);
    return c.body(bytes, 200, { ...SECURITY_HEADERS, "Content-Type": type, "Cache-Control": IMMUTABLE });
  });
  return app;
}
