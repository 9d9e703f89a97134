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
const OTHERS = ["carol", "dave", "erin"].map((name, i) => ({ name, key: `fair-key-${name}-${i + 3}` }));
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
      VOICELOC_API_KEYS: [`alice:${ALICE}`, `bob:${BOB}`, ...OTHERS.map((o) => `${o.name}:${o.key}`)].join(","),
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

type Book = { id: string; task_status: string; task_error: string | null; date_updated: string };

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

  it("with one account submitting twelve books and then four other accounts one each, each of the four finishes before the first account's third", async () => {
    const aliceBooks: string[] = [];
    for (let i = 0; i < 12; i += 1) aliceBooks.push(await create(ALICE, `alice twelve ${i}`));
    const others = [{ name: "bob", key: BOB }, ...OTHERS];
    const otherBooks = await Promise.all(others.map(async (o) => ({ ...o, id: await create(o.key, `${o.name} one`) })));

    const finishedAt = (b: Book | undefined) => (b?.task_status === "completed" ? Date.parse(b.date_updated) : undefined);
    const deadline = Date.now() + 300_000;
    let aliceDone: number[];
    let theirsDone: Array<number | undefined>;
    for (;;) {
      const alice = (await list(ALICE)).filter((b) => aliceBooks.includes(b.id));
      const theirs = await Promise.all(otherBooks.map(async (o) => (await list(o.key)).find((b) => b.id === o.id)));
      expect([...alice, ...theirs].filter((b) => b?.task_status === "failed").map((b) => b?.task_error)).toEqual([]);
      aliceDone = alice.map(finishedAt).filter((at): at is number => at !== undefined).sort((a, b) => a - b);
      theirsDone = theirs.map(finishedAt);
      if (aliceDone.length >= 3 && theirsDone.every((at) => at !== undefined)) break;
      if (Date.now() > deadline) throw new Error(`not finished: alice done ${aliceDone.length}, others ${JSON.stringify(theirsDone)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // first in, first out, the four would wait for alice's first four (her places in flight)
    const alicesThird = aliceDone[2]!;
    expect(others.filter((_, i) => theirsDone[i]! > alicesThird).map((o) => o.name)).toEqual([]);
  });
});
