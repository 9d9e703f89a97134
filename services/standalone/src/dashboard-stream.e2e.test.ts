/**
 * The dashboard's audio book page plays the book's HLS stream while it renders (Chromium through
 * playwright-core, no network beyond the gateway): hls.js, served by the gateway, loads a part of the
 * open playlist under the page's strict CSP and the player plays it (its clock moves), with no blocked
 * request, console error or violation. The book is long (150,000 characters: minutes of rendering even
 * on a quick machine), so the page is checked while the book renders; the service stops after the test.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserUnavailable, type OfflinePage } from "@voiceloc/testing";
import { startDashboardService, type DashboardService } from "./testing/dashboard.ts";

/** The parts of the page's audio element the test reads (no DOM types in this project). */
interface Player {
  muted: boolean;
  paused: boolean;
  currentTime: number;
  src: string;
  error: { message: string } | null;
  play(): Promise<void>;
  getAttribute(name: string): string | null;
}

const EMAIL = "listener@example.com";
const PASSWORD = "a long enough passphrase";
const PARAGRAPH =
  "The lighthouse keeper climbed the stairs every evening before the sun went down. He polished the great lens, trimmed the wick, and wrote the weather in a small book. ";

const unavailable = browserUnavailable();
if (unavailable) process.stderr.write(`dashboard stream browser test skipped: ${unavailable}\n`);

describe.skipIf(unavailable !== null)("the dashboard plays an audio book while it renders", () => {
  let service: DashboardService;
  let base: string;
  let tab: OfflinePage;

  beforeAll(async () => {
    // The dashboard's new keys are sandbox keys: their book limit is raised to take the 150,000-character book.
    service = await startDashboardService({ prefix: "voiceloc-dashboard-stream-", env: { SANDBOX_MAX_BOOK_CHARACTERS: "200000" }, email: EMAIL, password: PASSWORD });
    ({ base, tab } = service);
    await writeFile(join(service.media, "book.txt"), PARAGRAPH.repeat(Math.ceil(150_000 / PARAGRAPH.length)));
  }, 180_000);

  afterAll(async () => {
    await service?.close();
  });

  it("plays the open stream on the record page: with the browser's own HLS, and with hls.js where the browser has none", async () => {
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
    // A listener presses play (muted here: a headless page may only autoplay muted): the clock moves.
    // Chromium plays HLS itself where it can (the page then sets the playlist as the source), else hls.js loads it.
    await player.evaluate((audio: Player) => {
      audio.muted = true;
      return audio.play();
    });
    await expect.poll(() => player.evaluate((audio: Player) => audio.currentTime), { timeout: 120_000 }).toBeGreaterThan(1);
    const state = await player.evaluate((audio: Player) => ({ paused: audio.paused, error: audio.error?.message ?? null, native: audio.src !== "", fragments: audio.getAttribute("data-fragments") }));
    expect(state.error).toBeNull();
    expect(state.paused).toBe(false);
    // Either way the stream's own parts were what played: hls.js counted them, or the browser played the playlist itself.
    expect(state.native || Number(state.fragments ?? 0) > 0, JSON.stringify(state)).toBe(true);

    // A browser without HLS of its own (Firefox, older Chromium): the page is told so, and hls.js plays the stream.
    await page.addInitScript({
      content: `(() => {
        const own = HTMLMediaElement.prototype.canPlayType;
        HTMLMediaElement.prototype.canPlayType = function (type) { return /mpegurl/i.test(type) ? "" : own.call(this, type); };
      })();`,
    });
    await page.goto(`${base}/dashboard/audio-books/${id}?space=${space}`);
    await expect.poll(async () => Number((await player.getAttribute("data-fragments")) ?? 0), { timeout: 120_000 }).toBeGreaterThan(0);
    await player.evaluate((audio: Player) => {
      audio.muted = true;
      return audio.play();
    });
    await expect.poll(() => player.evaluate((audio: Player) => audio.currentTime), { timeout: 120_000 }).toBeGreaterThan(1);
    const viaHls = await player.evaluate((audio: Player) => ({ paused: audio.paused, error: audio.error?.message ?? null, src: audio.src }));
    expect(viaHls.error).toBeNull();
    expect(viaHls.paused).toBe(false);
    // hls.js feeds the element through Media Source Extensions (a blob: source), not the playlist's URL.
    expect(viaHls.src).toMatch(/^blob:/);

    const record = (await (await fetch(`${base}/v1/audio_books/${id}`, { headers })).json()) as { task_status: string };
    expect(record.task_status, "the book was still rendering while it played").toBe("processing");
    expect(tab.blocked).toEqual([]);
    // A media element cancels a part request it no longer needs (it asked again, or for a range), and
    // leaving a page closes its live progress stream: Chromium reports both as ERR_ABORTED. Any other
    // failure, or an aborted request of anything else, counts.
    const expectedAborts = /^net::ERR_ABORTED GET http:\/\/127\.0\.0\.1:\d+\/(v1\/files\/streams\/audiobook\/[^ ]+\.ts|dashboard\/events\/audiobook\/[^ ]+)\?/;
    expect(tab.failed.filter((f) => !expectedAborts.test(f))).toEqual([]);
    expect(tab.cspViolations).toEqual([]);
    expect(tab.consoleErrors).toEqual([]);
  }, 600_000);
});
