/**
 * Embedded store benchmark at 100,000 records:
 *   pnpm --filter @voiceloc/store bench [-- --records 100000]
 * Prints insert throughput (batched and single), and p50/p99 latency of
 * `get` by id and of a filtered keyset page (account filter, sorted by
 * date_created desc, id desc, limit 50).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { openEmbeddedStore } from "../src/sqlite.ts";
import type { Scalar, SortDirection } from "../src/collection.ts";

interface Rec {
  id: string;
  account: string;
  date_created: string;
  status: string;
  title: string;
  duration_ms: number;
}

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? value : fallback;
};

const RECORDS = arg("records", 100_000);
const ACCOUNTS = 100;
const BATCH = 1_000;
const SINGLE_INSERTS = 5_000;
const GETS = 20_000;
const PAGES = 2_000;
const BASE = Date.UTC(2024, 0, 1);
const SORT: Array<[string, SortDirection]> = [
  ["date_created", -1],
  ["id", -1],
];

const out = (line: string) => process.stdout.write(`${line}\n`);

function record(i: number): Rec {
  return {
    id: `rec_${String(i).padStart(8, "0")}`,
    account: `acct_${String(i % ACCOUNTS).padStart(3, "0")}`,
    date_created: new Date(BASE + Math.floor(i / 3) * 1_000).toISOString(),
    status: i % 5 === 0 ? "failed" : "done",
    title: `Recording ${i} — episode ${i % 97}`,
    duration_ms: (i * 7_919) % 3_600_000,
  };
}

/** A small deterministic generator, so runs are comparable. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? Number.NaN;
}

const us = (ms: number) => `${(ms * 1_000).toFixed(1)} µs`;

const dir = await mkdtemp(join(tmpdir(), "voiceloc-bench-"));
const store = await openEmbeddedStore({ dir });
try {
  const col = await store.collection<Rec>({
    name: "recordings",
    indexes: [{ fields: [["account", 1], ["date_created", -1], ["id", -1]], name: "by_account_date" }],
  });

  out(`embedded store (SQLite ${String(store.db.prepare("SELECT sqlite_version() AS v").pluck().get())}), ${RECORDS} records, Node ${process.version}`);

  let t0 = performance.now();
  for (let i = 0; i < RECORDS; i += BATCH) {
    await col.insertMany(Array.from({ length: Math.min(BATCH, RECORDS - i) }, (_, j) => record(i + j)));
  }
  let elapsed = performance.now() - t0;
  out(`insertMany (batches of ${BATCH}): ${Math.round(RECORDS / (elapsed / 1_000)).toLocaleString("en-US")} docs/s (${(elapsed / 1_000).toFixed(2)} s)`);

  t0 = performance.now();
  for (let i = 0; i < SINGLE_INSERTS; i++) await col.insert(record(RECORDS + i));
  elapsed = performance.now() - t0;
  out(`insert (one per transaction):  ${Math.round(SINGLE_INSERTS / (elapsed / 1_000)).toLocaleString("en-US")} docs/s (${SINGLE_INSERTS} docs)`);

  const total = RECORDS + SINGLE_INSERTS;
  const random = rng(42);
  const getTimes: number[] = [];
  for (let i = 0; i < GETS; i++) {
    const id = record(Math.floor(random() * total)).id;
    const start = performance.now();
    const doc = await col.get(id);
    getTimes.push(performance.now() - start);
    if (!doc) throw new Error(`missing ${id}`);
  }
  getTimes.sort((a, b) => a - b);
  out(`get by id:      p50 ${us(percentile(getTimes, 50))}, p99 ${us(percentile(getTimes, 99))} (n=${GETS})`);

  // Keyset pages: walk each sampled account from a random depth, one page at a time.
  const pageTimes: number[] = [];
  let rows = 0;
  while (pageTimes.length < PAGES) {
    const account = `acct_${String(Math.floor(random() * ACCOUNTS)).padStart(3, "0")}`;
    const startAt = record(Math.floor(random() * total));
    let after: Scalar[] | undefined = random() < 0.2 ? undefined : [startAt.date_created, startAt.id];
    for (let step = 0; step < 5 && pageTimes.length < PAGES; step++) {
      const start = performance.now();
      const page = await col.find({ account }, after ? { sort: SORT, limit: 50, after } : { sort: SORT, limit: 50 });
      pageTimes.push(performance.now() - start);
      rows += page.length;
      const last = page[page.length - 1];
      if (!last || page.length < 50) break;
      after = [last.date_created, last.id];
    }
  }
  pageTimes.sort((a, b) => a - b);
  out(
    `keyset page (account filter, date_created desc, id desc, limit 50): p50 ${us(percentile(pageTimes, 50))}, p99 ${us(percentile(pageTimes, 99))} (n=${PAGES}, avg ${(rows / PAGES).toFixed(1)} rows)`,
  );
} finally {
  await store.close();
  await rm(dir, { recursive: true, force: true });
}
