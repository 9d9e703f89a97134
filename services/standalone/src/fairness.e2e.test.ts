/**
 * Fair scheduling across accounts with the real audio book worker: one account's many books
 * never hold up another account's single book.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { silentLogger } from "@voiceloc/log";
import { freePort, tempDir, checkResponsesOf } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";

const ALICE = "fair-key-alice-1";
const BOB = "fair-key-bob-2";
let runtime: Runtime;
let base: string;
let dir: { path: string; cleanup: () => Promise<void> };

beforeAll(async () => {
  dir = await tempDir("voiceloc-fair-");
  const media = join(dir.path, "media");
  await mkdir(media, { recursive: true });
  await writeFile(join(media, "short.txt"), "A short story. It ends here.");
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  checkResponsesOf(base);
  runtime = await startRuntime(
    loadConfig({
      SERVICES: "gateway,audiobook",
      DATA_DIR: dir.path,
      MEDIA_ROOT: media,
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_BASE_URL: base,
      VOICELOC_API_KEYS: `alice:${ALICE},bob:${BOB}`,
      ACCOUNT_MAX_TASKS_IN_FLIGHT: "2",
      WORKER_CONCURRENCY: "1",
      LOG_LEVEL: "silent",
    }),
    silentLogger(),
  );
});

afterAll(async () => {
  await runtime?.stop();
  await dir?.cleanup();
});

type Book = { id: string; task_status: string; task_error: string | null };

async function create(key: string, name: string): Promise<string> {
  const res = await fetch(`${base}/v1/audio_books/`, {
    method: "POST",
    headers: { "API-KEY": key, "Content-Type": "application/json" },
    body: JSON.stringify({ file: "short.txt", name, source_language: "English", target_language: "English" }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

async function list(key: string): Promise<Book[]> {
  return (await (await fetch(`${base}/v1/audio_books/?limit=100`, { headers: { "API-KEY": key } })).json()) as Book[];
}

describe("fair scheduling across accounts", () => {
  it("with one account submitting 30 books and another 1, the single book starts before most of the 30 finish, and all 31 complete", async () => {
    for (let i = 0; i < 30; i += 1) await create(ALICE, `alice ${i}`);
    const bobBook = await create(BOB, "bob");

    let aliceDoneWhenBobStarted: number | undefined;
    const deadline = Date.now() + 300_000;
    for (;;) {
      const [alice, bob] = await Promise.all([list(ALICE), list(BOB)]);
      const bobStatus = bob.find((b) => b.id === bobBook)?.task_status;
      const aliceDone = alice.filter((b) => b.task_status === "completed" || b.task_status === "failed").length;
      if (aliceDoneWhenBobStarted === undefined && bobStatus !== "queued") aliceDoneWhenBobStarted = aliceDone;
      if (bobStatus === "completed" && aliceDone === 30) {
        expect(alice.filter((b) => b.task_status !== "completed").map((b) => b.task_error)).toEqual([]);
        break;
      }
      if (Date.now() > deadline) throw new Error(`not finished: bob ${String(bobStatus)}, alice done ${aliceDone}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // without a limit bob's book would wait behind all 30 (one worker, first in first out)
    expect(aliceDoneWhenBobStarted).toBeLessThan(15);
  });
});
