/**
 * Many users at once (`pnpm bench:load`, or `pnpm --filter @voiceloc/standalone bench`).
 *
 * Starts the shipped process as the README does (`pnpm start` at the repository root, default
 * configuration and log level, output to a file; only PORT, DATA_DIR and VOICELOC_API_KEYS with
 * five seeded accounts set), then submits 20 short audio books at once: 4 per account, 300–400
 * characters each, per account two in English and two translated (to Spanish and to French).
 * While they run, a reader in its own `node` process (reader.mjs) sends authenticated
 * GET /v1/audio_books/{id} at a fixed overall rate (READ_RATE, default 25 requests/s: 5 per
 * account, round robin, open loop), and this process polls each account's list once a second;
 * after the run the same reads go on for 8 s with the workers idle, for comparison.
 * Both stay under the default rate limit (600 per minute per key).
 *
 * Prints each book's completion time (the record's date_updated − date_created, both set by the
 * server), each account's mean and max, the spread between the accounts, the total time, and the
 * reads' p50/p99 during the run (target p99 < 100 ms). Exits 1 if a book fails or a read is not 2xx.
 */
import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, tempDir } from "@voiceloc/testing";
import { api, machine, runBench, sleep, startShipped, type BookRecord, type Shipped } from "../../gateway/bench/shipped.ts";

const ACCOUNTS = 5;
const BOOKS_PER_ACCOUNT = 4;
const READ_RATE = Number(process.env.READ_RATE ?? 25);
const TIMEOUT_MS = 45 * 60_000;
const IDLE_READ_MS = 8_000;
const readerScript = join(dirname(fileURLToPath(import.meta.url)), "reader.mjs");

const SENTENCES = [
  "The morning train left the valley before the sun had cleared the hills.",
  "Anna counted the passengers twice, because the conductor never trusted a single count.",
  "Outside the window, the river followed the tracks for many miles.",
  "A farmer waved from his field, and a dog ran beside the train until it grew tired.",
  "At the first station, a woman climbed aboard with a basket of bread.",
  "She offered a piece to every child in the carriage.",
  "The old clock above the platform was ten minutes slow, as it had been for years.",
  "Nobody in the village wanted it repaired, since everyone knew the real time anyway.",
  "By noon the train reached the coast, where the air smelled of salt and rain.",
  "The travellers stepped onto the platform and went their separate ways.",
  "Some of them would return that evening, tired and happy.",
  "Others would not come back to the valley for a very long time.",
];

/** Book n: five consecutive sentences of the pool, starting at a different one for each book. */
function bookText(n: number): string {
  return Array.from({ length: 5 }, (_, i) => SENTENCES[(n + i) % SENTENCES.length]).join(" ");
}

/** Per account: two books in English, one translated to Spanish, one to French. */
const TARGETS = ["English", "Spanish", "English", "French"] as const;

interface Book {
  account: number;
  key: string;
  n: number;
  chars: number;
  target: string;
  id: string;
  record?: BookRecord;
}

interface ReadSummary {
  seconds: number;
  sent: number;
  answered: number;
  non2xx: number;
  errors: number;
  errorCodes: Record<string, number>;
  unanswered: number;
  statuses: Record<string, number>;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const millis = (ms: number | null) => (ms === null ? "–" : `${ms.toFixed(1)} ms`);

/** Starts the reader process; `stop()` ends it and returns its figures. */
function startReader(base: string, targets: { key: string; id: string }[]): { stop: () => Promise<ReadSummary> } {
  const args = [readerScript, base, String(READ_RATE), ...targets.flatMap((t) => [t.key, t.id])];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => (out += chunk));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  process.once("exit", () => child.kill("SIGKILL"));
  return {
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
      return JSON.parse(out) as ReadSummary;
    },
  };
}

async function main(): Promise<void> {
  const dir = await tempDir("voiceloc-bench-load-");
  const dataDir = join(dir.path, "data");
  await mkdir(join(dataDir, "media"), { recursive: true });
  const keys = Array.from({ length: ACCOUNTS }, (_, a) => `load-key-account-${a + 1}`);
  const env = { VOICELOC_API_KEYS: keys.map((k, a) => `account${a + 1}:${k}`).join(",") };
  const logFile = join(dir.path, "service.log");
  let service: Shipped | undefined;
  let failed = false;
  try {
    const books: Omit<Book, "id">[] = [];
    for (let a = 0; a < ACCOUNTS; a += 1) {
      for (let b = 0; b < BOOKS_PER_ACCOUNT; b += 1) {
        const n = a * BOOKS_PER_ACCOUNT + b;
        const text = bookText(n);
        await writeFile(join(dataDir, "media", `book-${n}.txt`), `${text}\n`);
        books.push({ account: a + 1, key: keys[a] as string, n, chars: text.length, target: TARGETS[b] as string });
      }
    }

    say(`pnpm start (all services), ${machine()}`);
    const booting = Date.now();
    service = await startShipped({ port: await freePort(), dataDir, logFile, env });
    say(`  ready in ${secs(Date.now() - booting)}`);
    const base = service.url;

    // All 20 at once.
    const submitted = Date.now();
    const created: Book[] = await Promise.all(
      books.map(async (book) => {
        const body = { file: `book-${book.n}.txt`, name: `Load book ${book.n + 1}`, source_language: "English", target_language: book.target };
        const record = await api<BookRecord>(base, book.key, "POST", "/v1/audio_books/", body, [201]);
        return { ...book, id: record.id };
      }),
    );
    say(`  ${created.length} audio books submitted by ${ACCOUNTS} accounts in ${secs(Date.now() - submitted)}; reads at ${READ_RATE}/s during the run`);

    const firstOf = Array.from({ length: ACCOUNTS }, (_, a) => created.find((b) => b.account === a + 1) as Book);
    const reader = startReader(base, firstOf.map((b) => ({ key: b.key, id: b.id })));
    let reads: ReadSummary;
    try {
      // Poll each account's list once a second until every book has finished.
      const deadline = Date.now() + TIMEOUT_MS;
      for (;;) {
        const lists = await Promise.all(keys.map((key) => api<BookRecord[]>(base, key, "GET", "/v1/audio_books/?limit=50")));
        const byId = new Map(lists.flat().map((r) => [r.id, r]));
        for (const book of created) book.record = byId.get(book.id);
        const open = created.filter((b) => b.record?.task_status !== "completed" && b.record?.task_status !== "failed");
        if (open.length === 0) break;
        if (Date.now() > deadline) throw new Error(`${open.length} audio books still unfinished after ${TIMEOUT_MS / 60_000} minutes`);
        await sleep(1_000);
      }
    } finally {
      reads = await reader.stop();
    }
    const total = Date.now() - submitted;
    // The same reads for a few seconds with the workers idle, for comparison.
    const idleReader = startReader(base, firstOf.map((b) => ({ key: b.key, id: b.id })));
    await sleep(IDLE_READ_MS);
    const idleReads = await idleReader.stop();

    const took = (b: Book) => Date.parse(b.record?.date_updated ?? "") - Date.parse(b.record?.date_created ?? "");
    say(`\n| account | book | characters | language | status | completed after |`);
    say(`|---|---|---:|---|---|---:|`);
    for (const b of [...created].sort((x, y) => took(x) - took(y))) {
      say(`| ${b.account} | ${b.n + 1} | ${b.chars} | English → ${b.target} | ${b.record?.task_status} | ${secs(took(b))} |`);
    }
    const bad = created.filter((b) => b.record?.task_status !== "completed");
    for (const b of bad) say(`book ${b.n + 1} (account ${b.account}) failed: ${b.record?.task_error}`);

    say(`\n| account | mean | max |`);
    say(`|---|---:|---:|`);
    const means: number[] = [];
    const maxes: number[] = [];
    for (let a = 1; a <= ACCOUNTS; a += 1) {
      const times = created.filter((b) => b.account === a).map(took);
      means.push(mean(times));
      maxes.push(Math.max(...times));
      say(`| ${a} | ${secs(mean(times))} | ${secs(Math.max(...times))} |`);
    }
    say(`\n| Figure | Value |`);
    say(`|---|---:|`);
    say(`| per-account mean completion, fastest – slowest account | ${secs(Math.min(...means))} – ${secs(Math.max(...means))} |`);
    say(`| per-account last book, fastest – slowest account | ${secs(Math.min(...maxes))} – ${secs(Math.max(...maxes))} |`);
    say(`| total (submission to last completion) | ${secs(total)} |`);
    say(`| reads during the run: p50 / p99 (target p99 < 100 ms) | ${millis(reads.p50)} / ${millis(reads.p99)} |`);
    say(`| reads after the run, workers idle: p50 / p99 | ${millis(idleReads.p50)} / ${millis(idleReads.p99)} |`);
    say(
      `\nreads: ${reads.answered} answered in ${reads.seconds.toFixed(0)} s, p90 ${millis(reads.p90)}, max ${millis(reads.max)}, ` +
        `non-2xx ${reads.non2xx}, errors ${reads.errors} ${JSON.stringify(reads.errorCodes)}, unanswered ${reads.unanswered}`,
    );
    say(machine());
    const readFaults = [reads, idleReads].reduce((n, r) => n + r.non2xx + r.errors + r.unanswered, 0);
    if (bad.length > 0 || readFaults > 0) {
      say(`FAILED (service log: ${logFile})`);
      failed = true;
    }
  } finally {
    await service?.stop();
    if (!failed) await dir.cleanup();
  }
  if (failed) process.exit(1);
}

runBench(main);
