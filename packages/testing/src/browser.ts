/**
 * Headless Chromium for browser tests, with no network: Debian's `chromium` (installed for tests
 * only by scripts/setup.mjs, never in the images) driven through `playwright-core` (which downloads
 * no browser of its own). A page made by `offlinePage` may reach only the origin under test: any
 * other request is aborted and recorded, and failed requests, console errors, page errors and CSP
 * violations are collected for the test to assert on.
 */
import { existsSync } from "node:fs";
import type { Browser, Page } from "playwright-core";

/** playwright-core's types, so a test needs no dependency of its own on it. */
export type { Browser, Page };

/** Where Debian's package puts the browser. */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/** Flags that keep Chromium from reaching out on its own (updates, sync, field trials) or needing a GPU. */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-gpu",
  "--disable-quic",
  "--disable-default-apps",
  "--disable-domain-reliability",
  "--disable-breakpad",
  "--metrics-recording-only",
  "--no-default-browser-check",
  "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
] as const;

/** Why a browser test cannot run here (no Chromium), or null when it can. */
export function browserUnavailable(): string | null {
  return existsSync(CHROMIUM_PATH) ? null : `${CHROMIUM_PATH} not found (run scripts/setup.mjs as root, or apt-get install chromium)`;
}

/**
 * A running headless Chromium (playwright's `chromium.launch`: a fresh, empty user-data directory
 * of its own, removed again by `browser.close()`).
 */
export async function launchBrowser(options: { executablePath?: string; timeoutMs?: number } = {}): Promise<Browser> {
  const executablePath = options.executablePath ?? CHROMIUM_PATH;
  const missing = options.executablePath === undefined ? browserUnavailable() : existsSync(executablePath) ? null : `${executablePath} not found`;
  if (missing) throw new Error(missing);
  // Loaded on first use: importing @voiceloc/testing stays cheap for the many tests with no browser.
  const { chromium } = await import("playwright-core");
  return chromium.launch({ executablePath, headless: true, args: [...CHROMIUM_ARGS], timeout: options.timeoutMs ?? 60_000 });
}

/** What an offline page saw: everything a test should find empty on a page that works offline. */
export interface OfflinePage {
  page: Page;
  /** Requests to anything but the origin, aborted before they left (method and URL). */
  blocked: string[];
  /** Requests that failed (network error or abort) or answered 4xx/5xx: "<status|error> <method> <url>". */
  failed: string[];
  /** Console messages of type error, and uncaught page errors. */
  consoleErrors: string[];
  /** Content-Security-Policy violations reported by the page (directive and blocked URI). */
  cspViolations: string[];
}

/**
 * A new page that may only talk to `origin` (e.g. `http://127.0.0.1:1234`): requests anywhere else
 * are aborted and recorded in `blocked` (data: and blob: URLs, which never leave the page, pass).
 */
export async function offlinePage(browser: Browser, origin: string): Promise<OfflinePage> {
  const allowed = new URL(origin).origin;
  // A context of its own per page: no cookies or cache shared with another test's page.
  const context = await browser.newContext({ serviceWorkers: "block" });
  const page = await context.newPage();
  page.on("close", () => void context.close().catch(() => undefined));
  const result: OfflinePage = { page, blocked: [], failed: [], consoleErrors: [], cspViolations: [] };
  await page.route("**/*", async (route) => {
    const request = route.request();
    const url = request.url();
    if (url.startsWith("data:") || url.startsWith("blob:") || new URL(url).origin === allowed) {
      await route.continue();
    } else {
      result.blocked.push(`${request.method()} ${url}`);
      await route.abort("blockedbyclient");
    }
  });
  page.on("requestfailed", (request) => {
    result.failed.push(`${request.failure()?.errorText ?? "failed"} ${request.method()} ${request.url()}`);
  });
  page.on("response", (response) => {
    if (response.status() >= 400) result.failed.push(`${response.status()} ${response.request().method()} ${response.url()}`);
  });
  page.on("console", (message) => {
    if (message.type() === "error") result.consoleErrors.push(message.text());
  });
  page.on("pageerror", (error) => result.consoleErrors.push(`uncaught: ${error.message}`));
  // CSP violations reach the page as `securitypolicyviolation` events; a binding reports them here.
  await page.exposeBinding("__voicelocCspViolation", (_source, text: string) => {
    result.cspViolations.push(text);
  });
  // (a string, run in the page: this package is compiled without the DOM's types)
  await page.addInitScript({
    content: `document.addEventListener("securitypolicyviolation", (e) => window.__voicelocCspViolation(e.violatedDirective + " " + e.blockedURI));`,
  });
  return result;
}
