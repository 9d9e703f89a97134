import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { DuplicateKeyError, StoreError } from "./collection.ts";
import type { FindOptions, IndexSpec } from "./collection.ts";
import { EMBEDDED_DB_FILENAME, EXTERNAL_CHANGES_MS, openEmbeddedStore } from "./sqlite.ts";
import type { EmbeddedStore } from "./sqlite.ts";
import { openStore } from "./index.ts";
import { describeStoreContract } from "./testing/contract.ts";

async function tempDir(): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), "voiceloc-store-"));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

describeStoreContract("embedded (SQLite)", async () => {
  const dir = await tempDir();
  const store = await openEmbeddedStore({ dir: dir.path });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await dir.remove();
    },
  };
});

type Rec = { id: string; account: string; date_created: string; status: string; flag: boolean; email?: string };

describe("embedded store specifics", () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()?.();
  });

  async function openTemp(): Promise<{ store: EmbeddedStore; dir: string }> {
    const dir = await tempDir();
    const store = await openEmbeddedStore({ dir: dir.path });
    cleanups.push(async () => {
      await store.close();
      await dir.remove();
    });
    return { store, dir: dir.path };
  }

  const INDEXES: IndexSpec[] = [
    { fields: [["account", 1], ["date_created", -1], ["id", -1]], name: "by_account_date" },
    { fields: [["status", 1]], name: "by_status" },
    { fields: [["flag", 1]], name: "by_flag" },
    { fields: [["email", 1]], unique: true, name: "by_email" },
  ];

  async function recordings(store: EmbeddedStore) {
    const col = await store.collection<Rec>({ name: "recordings", indexes: INDEXES });
    const docs: Rec[] = Array.from({ length: 600 }, (_, i) => ({
      id: `r${String(i).padStart(4, "0")}`,
      account: `acct-${i % 6}`,
      date_created: `2024-06-${String(1 + (i % 28)).padStart(2, "0")}T00:00:00.000Z`,
      status: i % 3 === 0 ? "done" : "queued",
      flag: i % 2 === 0,
      ...(i % 10 === 0 ? { email: `u${i}@example.com` } : {}),
    }));
    await col.insertMany(docs);
    return col;
  }

  it("runs in WAL mode with synchronous=NORMAL and a busy timeout", async () => {
    const { store } = await openTemp();
    expect(store.kind).toBe("embedded");
    expect(store.file.endsWith(EMBEDDED_DB_FILENAME)).toBe(true);
    expect(store.db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(store.db.pragma("synchronous", { simple: true })).toBe(1); // NORMAL
    expect(store.db.pragma("busy_timeout", { simple: true })).toBe(5000);
  });

  it("answers filtered, sorted and keyset queries from the indexes, never a full scan or a sort", async () => {
    const { store } = await openTemp();
    const col = await recordings(store);
    const sort: FindOptions["sort"] = [
      ["date_created", -1],
      ["id", -1],
    ];
    const usesIndex = (plans: string[][], index: string) => {
      expect(plans.length).toBeGreaterThan(0);
      for (const plan of plans) {
        const text = plan.join(" | ");
        expect(text, text).toMatch(new RegExp(`^SEARCH recordings USING (COVERING )?INDEX recordings__${index} `));
        expect(text, text).not.toMatch(/\bSCAN\b|TEMP B-TREE/);
      }
    };
    usesIndex(col.explain({ account: "acct-1" }, { sort, limit: 50 }), "by_account_date");
    usesIndex(
      col.explain({ account: "acct-1" }, { sort, limit: 50, after: ["2024-06-10T00:00:00.000Z", "r0100"] }),
      "by_account_date",
    );
    usesIndex(col.explain({ account: "acct-1", date_created: { $lt: "2024-06-10" } }, { sort, limit: 50 }), "by_account_date");
    usesIndex(col.explain({ status: "done" }, {}), "by_status");
    usesIndex(col.explain({ flag: true }, {}), "by_flag");
    usesIndex(col.explain({ email: "u10@example.com" }, {}), "by_email");
    // The control: an unindexed field is a full scan, so the checks above mean something.
    expect(col.explain({ other: "x" }, {}).flat().join(" ")).toMatch(/\bSCAN recordings\b/);

    // And the indexed keyset pages are right.
    const all = (await col.find({ account: "acct-1" })).sort((a, b) =>
      a.date_created === b.date_created ? (a.id < b.id ? 1 : -1) : a.date_created < b.date_created ? 1 : -1,
    );
    const page1 = await col.find({ account: "acct-1" }, { sort, limit: 30 });
    const last = page1[29] as Rec;
    const page2 = await col.find({ account: "acct-1" }, { sort, limit: 30, after: [last.date_created, last.id] });
    expect([...page1, ...page2].map((d) => d.id)).toEqual(all.slice(0, 60).map((d) => d.id));
    expect(await col.count({ flag: true })).toBe(300);
  });

  it("keeps data across reopen and shares the file between connections", async () => {
    const dir = await tempDir();
    cleanups.push(dir.remove);
    const a = await openEmbeddedStore({ dir: dir.path });
    const b = await openEmbeddedStore({ dir: dir.path });
    const colA = await a.collection<{ id: string; seq: number }>({ name: "jobs" });
    const colB = await b.collection<{ id: string; seq: number }>({ name: "jobs" });
    await colA.insert({ id: "j1", seq: 1 });
    expect(await colB.get("j1")).toEqual({ id: "j1", seq: 1 });
    expect(await colB.updateOne({ id: "j1", seq: { $lt: 2 } }, { seq: 2 })).toEqual({ id: "j1", seq: 2 });
    expect(await colA.updateOne({ id: "j1", seq: { $lt: 2 } }, { seq: 2 })).toBeNull();
    await a.close();
    await b.close();
    const c = await openEmbeddedStore({ dir: dir.path });
    const colC = await c.collection<{ id: string; seq: number }>({ name: "jobs" });
    expect(await colC.get("j1")).toEqual({ id: "j1", seq: 2 });
    await c.close();
  });

  /** Two connections (stores) to one database file, each with its `jobs` collection; closed after the test. */
  async function twoConnections() {
    const dir = await tempDir();
    cleanups.push(dir.remove);
    const a = await openEmbeddedStore({ dir: dir.path });
    const b = await openEmbeddedStore({ dir: dir.path });
    cleanups.push(async () => {
      await a.close();
      await b.close();
    });
    const colA = await a.collection<{ id: string; seq: number }>({ name: "jobs" });
    const colB = await b.collection<{ id: string; seq: number }>({ name: "jobs" });
    return { a, b, colA, colB };
  }
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

  it("shares one read transaction per loop turn: own writes are read at once, other connections' from the next turn, and none is held after", async () => {
    const { a, b, colA, colB } = await twoConnections();
    await colA.insert({ id: "j1", seq: 1 });
    // reads, then a write on the same connection in the same turn: the write is read back at once...
    expect(await colA.get("j1")).toEqual({ id: "j1", seq: 1 });
    await colA.updateOne({ id: "j1" }, { seq: 2 });
    expect(await colA.get("j1")).toEqual({ id: "j1", seq: 2 });
    expect(await colA.find({ seq: 2 })).toEqual([{ id: "j1", seq: 2 }]);
    // ...and committed at once, not at the end of the turn: another connection sees it now
    expect(await colB.get("j1")).toEqual({ id: "j1", seq: 2 });
    await colA.updateOne({ id: "j1" }, { seq: 3 });
    await turn();
    expect(await colB.get("j1")).toEqual({ id: "j1", seq: 3 });
    expect(await colB.count({ seq: 3 })).toBe(1);
    // once the turn is over no read transaction is left open: a full checkpoint is not blocked
    await turn();
    expect(a.db.inTransaction).toBe(false);
    expect(b.db.inTransaction).toBe(false);
    expect(a.db.pragma("wal_checkpoint(TRUNCATE)")).toEqual([{ busy: 0, log: 0, checkpointed: 0 }]);
  });

  const sinceLastCheck = () => new Promise<void>((resolve) => setTimeout(resolve, EXTERNAL_CHANGES_MS + 5));

  it("changes a collection's change mark within EXTERNAL_CHANGES_MS when another connection commits to the database", async () => {
    const { colA, colB } = await twoConnections();
    const mark = () => (colA.changeMarkSync as () => number)();
    const before = mark();
    await sinceLastCheck();
    expect(mark()).toBe(before);
    await colB.insert({ id: "j1", seq: 1 });
    await sinceLastCheck();
    const after = mark();
    expect(after).not.toBe(before);
    expect(await colA.get("j1")).toEqual({ id: "j1", seq: 1 });
    await sinceLastCheck();
    expect(mark()).toBe(after);
  });

  it("never gives a change mark ahead of the data read after it, and changes it at once on its own writes", async () => {
    const { colA, colB } = await twoConnections();
    const mark = () => (colA.changeMarkSync as () => number)();
    await colB.insert({ id: "j1", seq: 1 });
    for (let seq = 2; seq <= 4; seq += 1) {
      await sinceLastCheck();
      const before = mark();
      await colB.updateOne({ id: "j1" }, { seq });
      // the same turn: the commit is not in the mark, nor in what this turn reads after it
      expect(mark()).toBe(before);
      expect(colA.getTextSync?.("j1")).toBe(JSON.stringify({ id: "j1", seq: seq - 1 }));
      await sinceLastCheck();
      // once the mark shows it, every read after the mark does too
      expect(mark()).not.toBe(before);
      expect(colA.getTextSync?.("j1")).toBe(JSON.stringify({ id: "j1", seq }));
    }
    const own = mark();
    await colA.updateOne({ id: "j1" }, { seq: 5 });
    expect(mark()).not.toBe(own);
    expect(colA.getTextSync?.("j1")).toBe(JSON.stringify({ id: "j1", seq: 5 }));
  });

  it("rebuilds an index whose definition changed", async () => {
    const { store } = await openTemp();
    const unique = await store.collection<{ id: string; k: string }>({
      name: "things",
      indexes: [{ fields: [["k", 1]], unique: true, name: "by_k" }],
    });
    await unique.insert({ id: "1", k: "same" });
    await expect(unique.insert({ id: "2", k: "same" })).rejects.toBeInstanceOf(DuplicateKeyError);
    const plain = await store.collection<{ id: string; k: string }>({
      name: "things",
      indexes: [{ fields: [["k", 1]], name: "by_k" }],
    });
    await plain.insert({ id: "2", k: "same" });
    expect(await plain.count({ k: "same" })).toBe(2);
    const sql = store.db.prepare("SELECT sql FROM sqlite_master WHERE name = 'things__by_k'").get() as { sql: string };
    expect(sql.sql).not.toContain("UNIQUE");
  });

  it("keeps working when more statement shapes are used than it caches", async () => {
    const { store } = await openTemp();
    const col = await store.collection<{ id: string; n: number }>({ name: "many" });
    await col.insertMany(Array.from({ length: 400 }, (_, i) => ({ id: `n${i}`, n: i })));
    for (let size = 1; size <= 300; size++) {
      const values = Array.from({ length: size }, (_, i) => i);
      expect(await col.count({ n: { $in: values } })).toBe(size);
    }
    expect(await col.count({ n: { $in: [0, 1, 2] } })).toBe(3);
  });

  it("stores hostile strings as data", async () => {
    const { store } = await openTemp();
    const col = await store.collection<{ id: string; v: string }>({ name: "hostile", indexes: [{ fields: [["v", 1]] }] });
    const nasty = [`'); DROP TABLE hostile; --`, `" OR 1=1 --`, "$.v", "\\", "%_", "\u0000"];
    await col.insertMany(nasty.map((v, i) => ({ id: `'${i}"`, v })));
    for (const [i, v] of nasty.entries()) {
      expect(await col.find({ v })).toEqual([{ id: `'${i}"`, v }]);
      expect(await col.get(`'${i}"`)).toEqual({ id: `'${i}"`, v });
    }
    expect(await col.count({})).toBe(nasty.length);
  });

  it("reports an unusable directory as StoreError open_failed", async () => {
    const dir = await tempDir();
    cleanups.push(dir.remove);
    const file = join(dir.path, "not-a-dir");
    await writeFile(file, "x");
    const err = await openEmbeddedStore({ dir: file }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe("open_failed");
  });

  it("openStore picks the embedded store without a MongoDB URL", async () => {
    const dir = await tempDir();
    cleanups.push(dir.remove);
    const store = await openStore({ dataDir: dir.path, mongodbUrl: "  " });
    expect(store.kind).toBe("embedded");
    await store.ping();
    await store.close();
    const check = new Database(join(dir.path, EMBEDDED_DB_FILENAME), { readonly: true });
    expect(check.pragma("integrity_check", { simple: true })).toBe("ok");
    check.close();
  });
});
