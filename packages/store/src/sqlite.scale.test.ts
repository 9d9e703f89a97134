/**
 * Scale: 100,000 records through insertMany, then indexed filtered pages
 * checked against the same data sorted in memory.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Collection, Scalar, SortDirection } from "./collection.ts";
import { openEmbeddedStore } from "./sqlite.ts";
import type { EmbeddedCollection, EmbeddedStore } from "./sqlite.ts";

interface Rec {
  id: string;
  account: string;
  date_created: string;
  status: "queued" | "running" | "done";
  duration: number;
}

const TOTAL = 100_000;
const ACCOUNTS = 100;
const BASE = Date.UTC(2024, 0, 1);

/** Seven records share each timestamp, so the first sort key has many ties. */
function record(i: number): Rec {
  return {
    id: `rec_${String((i * 7_919) % TOTAL).padStart(6, "0")}`,
    account: `acct_${String(i % ACCOUNTS).padStart(3, "0")}`,
    date_created: new Date(BASE + Math.floor(i / 7) * 60_000).toISOString(),
    status: (["queued", "running", "done"] as const)[i % 3] as Rec["status"],
    duration: i % 1_000,
  };
}

const SORT: Array<[string, SortDirection]> = [
  ["date_created", -1],
  ["id", -1],
];

function byDateDescIdDesc(a: Rec, b: Rec): number {
  if (a.date_created !== b.date_created) return a.date_created < b.date_created ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

describe("embedded store at 100,000 records", () => {
  let dir: string;
  let store: EmbeddedStore;
  let col: EmbeddedCollection<Rec>;
  const all: Rec[] = Array.from({ length: TOTAL }, (_, i) => record(i));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "voiceloc-scale-"));
    store = await openEmbeddedStore({ dir });
    col = await store.collection<Rec>({
      name: "recordings",
      indexes: [
        { fields: [["account", 1], ["date_created", -1], ["id", -1]], name: "by_account_date" },
        { fields: [["status", 1], ["date_created", -1]], name: "by_status_date" },
      ],
    });
    for (let i = 0; i < TOTAL; i += 10_000) await col.insertMany(all.slice(i, i + 10_000));
  }, 120_000);

  afterAll(async () => {
    await store?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("holds every record", async () => {
    expect(await col.count({})).toBe(TOTAL);
    expect(await col.count({ account: "acct_042" })).toBe(TOTAL / ACCOUNTS);
    const sample = all[54_321] as Rec;
    expect(await col.get(sample.id)).toEqual(sample);
  });

  it("returns the right filtered page from the index", async () => {
    const filter = { account: "acct_007", status: "done" } as const;
    const expected = all
      .filter((r) => r.account === filter.account && r.status === filter.status)
      .sort(byDateDescIdDesc)
      .slice(0, 50);
    expect(expected).toHaveLength(50);
    const page = await col.find(filter, { sort: SORT, limit: 50 });
    expect(page).toEqual(expected);
    const plan = col.explain(filter, { sort: SORT, limit: 50 }).flat().join(" | ");
    expect(plan).toMatch(/^SEARCH recordings USING INDEX recordings__by_account_date /);
    expect(plan).not.toMatch(/TEMP B-TREE/);
  });

  it("pages through one account with `after` in index order", async () => {
    const expected = all.filter((r) => r.account === "acct_013").sort(byDateDescIdDesc);
    const seen: Rec[] = [];
    let after: Scalar[] | undefined;
    for (;;) {
      const page = await (col as Collection<Rec>).find(
        { account: "acct_013" },
        after ? { sort: SORT, limit: 50, after } : { sort: SORT, limit: 50 },
      );
      seen.push(...page);
      if (page.length < 50) break;
      const last = page[page.length - 1] as Rec;
      after = [last.date_created, last.id];
    }
    expect(seen).toEqual(expected);
    const deep = col.explain({ account: "acct_013" }, { sort: SORT, limit: 50, after: ["2024-01-05T00:00:00.000Z", "rec_5"] });
    for (const plan of deep) expect(plan.join(" | ")).toMatch(/^SEARCH recordings USING INDEX recordings__by_account_date /);
  });

  it("answers a range filter and count from an index", async () => {
    const from = "2024-01-20T00:00:00.000Z";
    const to = "2024-01-21T00:00:00.000Z";
    const expected = all.filter((r) => r.status === "running" && r.date_created >= from && r.date_created < to);
    expect(await col.count({ status: "running", date_created: { $gte: from, $lt: to } })).toBe(expected.length);
    const plan = col.explain({ status: "running", date_created: { $gte: from, $lt: to } }).flat().join(" ");
    expect(plan).toMatch(/USING (COVERING )?INDEX recordings__by_status_date/);
  });
});
