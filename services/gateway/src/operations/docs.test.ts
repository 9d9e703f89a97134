/**
 * /docs in a real headless Chromium with no network: the gateway listens on a free port, the page
 * may reach only that origin, and Swagger UI must render every operation and webhook of the OpenAPI
 * document (every operation of the contract among them) with no failed request, console error or CSP
 * violation. Plus the page's headers: a CSP of 'self' only, versioned assets cached for a year.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, launchBrowser, offlinePage, type Browser } from "@voiceloc/testing";
import { startTestGateway, type TestGateway } from "../testing/harness.ts";

/** The contract's operations (docs/spec): the page must list each. */
const CONTRACT = [
  "GET /v1/audio_books/",
  "POST /v1/audio_books/",
  "GET /v1/audio_books/{audio_book_id}",
  "PATCH /v1/audio_books/{audio_book_id}",
  "GET /v1/voices/streams",
  "POST /v1/voices/streams",
  "GET /v1/voices/streams/{voice_id}",
  "POST /v1/videos/subtitle",
  "GET /v1/videos/subtitle",
  "GET /v1/videos/subtitle/{subtitle_id}",
];

let t: TestGateway;
let origin: string;
let browser: Browser;
let documented: string[];

beforeAll(async () => {
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  t = await startTestGateway({ PORT: String(port), HOST: "127.0.0.1", PUBLIC_BASE_URL: origin });
  await t.gateway.start();
  const doc = (await (await fetch(`${origin}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, unknown>>;
    webhooks?: Record<string, Record<string, unknown>>;
  };
  // operations, and the webhook payloads (OpenAPI 3.1 `webhooks`: Swagger UI lists them by event name)
  documented = [...Object.entries(doc.paths), ...Object.entries(doc.webhooks ?? {})].flatMap(([path, item]) =>
    Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
  );
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("/docs in a browser with no network", () => {
  it("renders every operation of the OpenAPI document with nothing failing or leaving the origin", async () => {
    const seen = await offlinePage(browser, origin);
    const response = await seen.page.goto(`${origin}/docs`, { waitUntil: "load", timeout: 60_000 });
    expect(response?.status()).toBe(200);
    // Swagger UI has rendered once the operations are in the page
    await seen.page.waitForSelector(".opblock .opblock-summary-method", { timeout: 60_000 });
    await seen.page.waitForLoadState("networkidle", { timeout: 60_000 });
    const listed: string[] = await seen.page.$$eval(".opblock", (blocks) =>
      blocks.map((block) => {
        const method = block.querySelector(".opblock-summary-method")?.textContent?.trim() ?? "";
        const path = block.querySelector(".opblock-summary-path")?.getAttribute("data-path") ?? "";
        return `${method.toUpperCase()} ${path}`;
      }),
    );
    const unique = [...new Set(listed)].sort();
    expect(unique).toEqual([...new Set(documented)].sort());
    for (const op of CONTRACT) expect(unique, op).toContain(op);
    expect(await seen.page.locator(".info .title").first().textContent()).toContain("Voice Localization Service");

    expect(seen.blocked).toEqual([]);
    expect(seen.failed).toEqual([]);
    expect(seen.consoleErrors).toEqual([]);
    expect(seen.cspViolations).toEqual([]);
    await seen.page.close();
  });
});

describe("/docs responses", () => {
  it("the page: HTML with no inline script or style, a CSP allowing only its own origin, not cached", async () => {
    const res = await fetch(`${origin}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // every script is a served file
    expect(html).not.toMatch(/<style|style=/);
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).toContain('data-openapi-url="/openapi.json"');
  });

  it("assets: under a versioned path, cached for a year; another version or an unknown file is a 404", async () => {
    const html = await (await fetch(`${origin}/docs`)).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(4);
    for (const path of assets) {
      const res = await fetch(`${origin}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("cache-control"), path).toBe("public, max-age=31536000, immutable");
      expect(res.headers.get("content-security-policy"), path).toContain("default-src 'none'");
      expect((await res.arrayBuffer()).byteLength, path).toBeGreaterThan(0);
    }
    const bundle = assets.find((p) => p.endsWith("/swagger-ui-bundle.js"))!;
    expect(bundle).toMatch(/^\/docs\/assets\/\d+\.\d+\.\d+-[0-9a-f]{10}\/swagger-ui-bundle\.js$/);
    expect((await fetch(`${origin}${bundle.replace(/assets\/[^/]+\//, "assets/0.0.1-0000000000/")}`)).status).toBe(404);
    expect((await fetch(`${origin}${bundle.replace("swagger-ui-bundle.js", "package.json")}`)).status).toBe(404);
    expect((await fetch(`${origin}${bundle.replace("swagger-ui-bundle.js", "..%2Fpackage.json")}`)).status).toBe(404);
    // the source map a browser's developer tools ask for is served too
    expect((await fetch(`${origin}${bundle}.map`)).status).toBe(200);
  });
});
