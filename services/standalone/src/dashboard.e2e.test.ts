/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core, no network beyond the
 * gateway) against the whole service in one process (gateway + workers + engines): sign in, make a
 * sandbox key, use it with `API-KEY` to create audio books, watch a bar reach 100% without reloading,
 * play the result, see a failed task's reason, try a voice, revoke the key and see the API refuse it,
 * sign out. Screenshots of the main pages go to `test-artifacts/dashboard/` (gitignored).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserUnavailable, type OfflinePage } from "@voiceloc/testing";
import { startDashboardService, type DashboardService } from "./testing/dashboard.ts";

const ARTIFACTS = fileURLToPath(new URL("../../../test-artifacts/dashboard/", import.meta.url));
const EMAIL = "producer@example.com";
const PASSWORD = "a long enough passphrase";
/** Revoked keys are refused within KEY_CACHE_TTL_MS (5 s) on every gateway; at once on this one. */
const KEY_CACHE_BOUND_MS = 5_000;
const BOOK = "The lighthouse keeper climbed the stairs every evening. He polished the lens and wrote the weather in a small book.";

const unavailable = browserUnavailable();
if (unavailable) process.stderr.write(`dashboard browser test skipped: ${unavailable}\n`);

describe.skipIf(unavailable !== null)("dashboard in a browser", () => {
  let service: DashboardService;
  let base: string;
  let media: string;
  let tab: OfflinePage;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    service = await startDashboardService({ prefix: "voiceloc-dashboard-", env: { SANDBOX_MAX_BOOK_CHARACTERS: "300" }, email: EMAIL, password: PASSWORD });
    ({ base, media, tab } = service);
    process.stderr.write(`dashboard screenshots: ${ARTIFACTS}\n`);
  }, 180_000);

  afterAll(async () => {
    await service?.close();
  });

  const shot = (name: string) => tab.page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

  const api = (path: string, key: string, body?: unknown) =>
    fetch(`${base}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { "API-KEY": key, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it("signs in, makes a sandbox key, follows its audio book to a playable result, revokes the key and signs out", async () => {
    const { page } = tab;
    page.setDefaultTimeout(60_000);
    await page.setViewportSize({ width: 1100, height: 800 });

    // sign in
    await page.goto(`${base}/dashboard/login`);
    await shot("sign-in");
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${base}/dashboard/keys`);

    // a sandbox key, shown once
    await page.getByLabel("Label").fill("browser test");
    await page.getByLabel(/^Sandbox/).check();
    await page.getByRole("button", { name: "Create key" }).click();
    const key = await page.locator("#new-key").inputValue();
    expect(key).toMatch(/^vl_test_/);
    await page.getByRole("button", { name: "Copy" }).click();
    await expect.poll(() => page.locator("#new-key-status").textContent()).not.toBe("");
    await shot("api-keys");

    // the key at work: a book that fits the sandbox, and one over its 300 characters
    await writeFile(join(media, "short.txt"), BOOK);
    await writeFile(join(media, "long.txt"), `${BOOK} `.repeat(4));
    const book = { source_language: "English", target_language: "English" };
    const created = await api("/v1/audio_books/", key, { ...book, file: "short.txt", name: "Lighthouse" });
    expect(created.status).toBe(201);
    expect(created.headers.get("voiceloc-mode")).toBe("sandbox");
    const { id } = (await created.json()) as { id: string };
    const tooLong = await api("/v1/audio_books/", key, { ...book, file: "long.txt", name: "Too long for the sandbox" });
    expect(tooLong.status).toBe(201);
    const { id: failedId } = (await tooLong.json()) as { id: string };

    // the list: the record appears and its bar reaches 100% without a reload
    await page.goto(`${base}/dashboard/audio-books?space=sandbox`);
    // a marker on the document: still there at the end means no reload happened
    await page.evaluate(() => ((globalThis as { __sameDocument?: boolean }).__sameDocument = true));
    const row = page.locator(`tr[data-record="${id}"]`);
    await expect.poll(() => row.count()).toBe(1);
    // (the page's CSP forbids eval, so conditions are polled from here, not with waitForFunction strings)
    const seen: number[] = [];
    await expect
      .poll(
        async () => {
          const value = Number(await row.locator("progress").getAttribute("value"));
          if (seen.at(-1) !== value) seen.push(value);
          return `${value} ${await row.locator("[data-status]").textContent()}`;
        },
        { timeout: 240_000, interval: 250 },
      )
      .toBe("100 completed");
    expect(await page.evaluate(() => (globalThis as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
    process.stderr.write(`progress seen on the bar: ${seen.join(", ")}\n`);
    await expect.poll(() => page.locator(`tr[data-record="${failedId}"] [data-status]`).textContent(), { timeout: 240_000 }).toBe("failed");
    await shot("audio-books");

    // the record page plays the result
    await page.getByRole("link", { name: "Lighthouse" }).click();
    await page.waitForURL(new RegExp(`/dashboard/audio-books/${id}`));
    const durationOf = (selector: string) => page.locator(selector).evaluate((el) => (el as unknown as { duration: number }).duration || 0);
    await expect.poll(() => durationOf("audio"), { timeout: 60_000 }).toBeGreaterThan(0);
    const duration = await durationOf("audio");
    process.stderr.write(`the audio element reports ${duration} s\n`);
    expect(duration).toBeGreaterThan(1);
    await shot("audio-book");

    // a failed task shows its reason
    await page.goto(`${base}/dashboard/audio-books/${failedId}?space=sandbox`);
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("SANDBOX_MAX_BOOK_CHARACTERS");
    await shot("failed-task");

    // try a voice: a sentence in French, played in the page
    await page.goto(`${base}/dashboard/try`);
    await page.getByLabel("Sentence").fill("Bonjour et bienvenue.");
    await page.getByLabel("Language").selectOption("French");
    await page.getByRole("button", { name: "Speak" }).click();
    await expect.poll(() => durationOf("#try-audio"), { timeout: 120_000 }).toBeGreaterThan(0);
    await shot("try-it");

    // revoke with confirmation; the API refuses the key within the cache bound
    await page.goto(`${base}/dashboard/keys`);
    await page.getByRole("link", { name: /Revoke key vl_test_/ }).click();
    await page.getByRole("button", { name: "Revoke the key" }).click();
    await page.waitForURL(`${base}/dashboard/keys?revoked=1`);
    const revokedAt = Date.now();
    let status = 0;
    while (Date.now() - revokedAt < KEY_CACHE_BOUND_MS + 1_000) {
      status = (await api("/v1/audio_books/", key)).status;
      if (status === 401) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(status).toBe(401);

    // sign out: the session is gone
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${base}/dashboard/login`);
    await page.goto(`${base}/dashboard/keys`);
    expect(page.url()).toBe(`${base}/dashboard/login`);

    // everything came from the gateway, under its CSP, with no script errors
    expect(tab.blocked).toEqual([]);
    expect(tab.cspViolations).toEqual([]);
    expect(tab.consoleErrors).toEqual([]);
  }, 600_000);
});
