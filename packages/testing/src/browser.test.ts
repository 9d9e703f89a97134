/**
 * The browser harness itself: a real headless Chromium on a local page that tries to leave the
 * origin, logs an error, breaks its own CSP and asks for a missing file; each is caught.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, offlinePage, type Browser } from "./browser.ts";

const PAGE = `<!doctype html><html><head><title>t</title>
<link rel="icon" href="data:,">
<script src="/local.js"></script>
<script src="https://cdn.example.com/lib.js"></script>
<img src="/missing.png" alt="">
<script>document.title = "inline ran";</script>
</head><body><p id="ok">hello</p></body></html>`;

let server: Server;
let origin: string;
let browser: Browser;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/") {
      res.writeHead(200, { "content-type": "text/html", "content-security-policy": "default-src 'self'; img-src 'self' data:; script-src 'self' https://cdn.example.com" });
      res.end(PAGE);
    } else if (req.url === "/local.js") {
      res.writeHead(200, { "content-type": "text/javascript" });
      res.end('console.error("from local.js"); window.localRan = true;');
    } else {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("no");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => server?.close(resolve));
});

describe("launchBrowser + offlinePage", () => {
  it("runs the page's own script, aborts requests leaving the origin, and records 404s, console errors and CSP violations", async () => {
    const seen = await offlinePage(browser, origin);
    await seen.page.goto(`${origin}/`, { waitUntil: "load" });
    await seen.page.waitForFunction("window.localRan === true");
    expect(await seen.page.textContent("#ok")).toBe("hello");
    // the inline script is refused by the CSP, so the title stays
    expect(await seen.page.title()).toBe("t");
    expect(seen.blocked).toEqual(["GET https://cdn.example.com/lib.js"]);
    expect(seen.failed.some((line) => line.startsWith("404 GET") && line.endsWith("/missing.png"))).toBe(true);
    expect(seen.failed.some((line) => line.endsWith("https://cdn.example.com/lib.js"))).toBe(true);
    expect(seen.consoleErrors).toContain("from local.js");
    await expect.poll(() => seen.cspViolations.some((v) => v.startsWith("script-src"))).toBe(true);
    await seen.page.close();
  });
});
