/**
 * The service as the dashboard's browser tests use it: every service in this process on a temp data dir
 * with a media root, its responses checked against its OpenAPI document, a dashboard account made with
 * the accounts CLI, and a headless Chromium page that may reach only this origin.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { loadConfig } from "@voiceloc/config";
import { runAccountsCli } from "@voiceloc/gateway";
import { silentLogger } from "@voiceloc/log";
import { checkResponsesOf, freePort, launchBrowser, offlinePage, tempDir, type Browser, type OfflinePage } from "@voiceloc/testing";
import { startRuntime } from "../runtime.ts";

export interface DashboardService {
  base: string;
  /** MEDIA_ROOT: files a book names by path go here. */
  media: string;
  tab: OfflinePage;
  close(): Promise<void>;
}

export async function startDashboardService(options: {
  prefix: string;
  /** Settings beside the data dir, media root, log level and public URL (e.g. the sandbox's book limit). */
  env: Record<string, string>;
  email: string;
  password: string;
}): Promise<DashboardService> {
  const dir = await tempDir(options.prefix);
  const media = join(dir.path, "media");
  await mkdir(media, { recursive: true });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  checkResponsesOf(base);
  const env = { DATA_DIR: dir.path, MEDIA_ROOT: media, LOG_LEVEL: "silent", PUBLIC_BASE_URL: base, ...options.env };
  const runtime = await startRuntime(loadConfig({ ...env, PORT: String(port), HOST: "127.0.0.1" }), silentLogger());
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    await runtime.stop();
    await dir.cleanup();
  };
  try {
    const out: string[] = [];
    const code = await runAccountsCli(["create", options.email, "--password-stdin"], (l) => out.push(l), env, (async function* () {
      yield `${options.password}\n`;
    })());
    if (code !== 0) throw new Error(`the dashboard account could not be made (exit ${code}): ${out.join("\n")}`);
    browser = await launchBrowser();
    return { base, media, tab: await offlinePage(browser, base), close };
  } catch (error) {
    await close();
    throw error;
  }
}
