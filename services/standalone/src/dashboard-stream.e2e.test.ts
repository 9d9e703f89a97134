/**
 * The dashboard's audio book page plays the book's HLS stream while it renders (Chromium through
 * playwright-core, no network beyond the gateway): hls.js, served by the gateway, loads a part of the
 * open playlist under the page's strict CSP, with no blocked request, console error or violation.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { silentLogger } from "@voiceloc/log";
import { runAccountsCli } from "@voiceloc/gateway";
import { browserUnavailable, checkResponsesOf, freePort, launchBrowser, offlinePage, tempDir, type OfflinePage } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";

const EMAIL = "listener@example.com";
const PASSWORD = "a long enough passphrase";
const PARAGRAPH =
  "The lighthouse keeper climbed the stairs every evening before the sun went down. He polished the great lens, trimmed the wick, and wrote the weather in a small book. ";

const unavailable = browserUnavailable();
if (unavailable) process.stderr.write(`dashboard stream browser test skipped: ${unavailable}\n`);

describe.skipIf(unavailable !== null)("the dashboard plays an audio book while it renders", () => {
  let runtime: Runtime;
  let base: string;
  let dir: { path: string; cleanup: () => Promise<void> };
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  let tab: OfflinePage;

  beforeAll(async () => {
    dir = await tempDir("voiceloc-dashboard-stream-");
    const media = join(dir.path, "media");
    await mkdir(media, { recursive: true });
    await writeFile(join(media, "book.txt"), PARAGRAPH.repeat(Math.ceil(30_000 / PARAGRAPH.length)));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    checkResponsesOf(base);
    // The dashboard's new keys are sandbox keys: their book limit is raised to take the 30,000-character book.
    const env = { DATA_DIR: dir.path, MEDIA_ROOT: media, LOG_LEVEL: "silent", PUBLIC_BASE_URL: base, SANDBOX_MAX_BOOK_CHARACTERS: "40000" };
    runtime = await startRuntime(loadConfig({ ...env, PORT: String(port), HOST: "127.0.0.1" }), silentLogger());
    const out: string[] = [];
    const code = await runAccountsCli(["create", EMAIL, "--password-stdin"], (l) => out.push(l), env, (async function* () {
      yield `${PASSWORD}\n`;
    })());
    expect(code, out.join("\n")).toBe(0);
    browser = await launchBrowser();
    tab = await offlinePage(browser, base);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await runtime?.stop();
    await dir?.cleanup();
  });

  it("loads a part of the open stream with hls.js on the record page", async () => {
    const { page } = tab;
    page.setDefaultTimeout(120_000);
    await page.goto(`${base}/dashboard/login`);
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${base}/dashboard/keys`);
    await page.getByLabel("Label").fill("stream test");
    await page.getByRole("button", { name: "Create key" }).click();
    const key = await page.locator("#new-key").inputValue();
    const headers = { "API-KEY": key, "Content-Type": "application/json" };

    const created = await fetch(`${base}/v1/audio_books/`, {
      method: "POST",
      headers,
      body: JSON.stringify({ file: "book.txt", name: "The keeper", source_language: "English", target_language: "English" }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const space = key.startsWith("vl_test_") ? "sandbox" : "live";

    // Until the stream lists a first part (polled as a client would, under a generous deadline).
    await expect
      .poll(
        async () => {
          const record = (await (await fetch(`${base}/v1/audio_books/${id}`, { headers })).json()) as { stream_url: string | null; task_status: string; task_error: string | null };
          if (record.task_status === "failed") return `failed: ${record.task_error}`;
          if (record.stream_url === null) return record.task_status;
          return /#EXTINF/.test(await (await fetch(record.stream_url)).text()) ? "listed" : record.task_status;
        },
        { timeout: 300_000, interval: 200 },
      )
      .toBe("listed");

    await page.goto(`${base}/dashboard/audio-books/${id}?space=${space}`);
    const player = page.locator("#stream-player");
    await expect.poll(() => player.count()).toBe(1);
    // hls.js reports a loaded fragment (the page's CSP forbids eval: polled from here).
    await expect.poll(async () => Number((await player.getAttribute("data-fragments")) ?? 0), { timeout: 120_000 }).toBeGreaterThan(0);
    expect(tab.blocked).toEqual([]);
    expect(tab.failed).toEqual([]);
    expect(tab.cspViolations).toEqual([]);
    expect(tab.consoleErrors).toEqual([]);
  }, 600_000);
});
