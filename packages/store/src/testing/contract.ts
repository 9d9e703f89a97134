/**
 * The behaviour every Store adapter must have, as one vitest suite. Each
 * adapter's test file calls `describeStoreContract` with a factory that
 * returns a fresh, empty store and a cleanup function (which also closes it).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DuplicateKeyError, StoreError } from "../collection.ts";
import type { Collection, Filter, FindOptions, Scalar, SortDirection, Store } from "../collection.ts";

export type MakeStore = () => Promise<{ store: Store; cleanup: () => Promise<void> }>;

type Item = { id: string } & Record<string, unknown>;
type Sort = Array<[string, SortDirection]>;

/** Values of many kinds in one field `v`, to pin down filter semantics. */
const MIXED: Item[] = [
  { id: "m01", v: 1 },
  { id: "m02", v: 2.5 },
  { id: "m03", v: -3 },
  { id: "m04", v: 0 },
  { id: "m05", v: true },
  { id: "m06", v: false },
  { id: "m07", v: null },
  { id: "m08" },
  { id: "m09", v: "1" },
  { id: "m10", v: "apple" },
  { id: "m11", v: "" },
  { id: "m12", v: "Zebra" },
  { id: "m13", v: "éclair" },
];
const ALL_MIXED = MIXED.map((d) => d.id);
const except = (...ids: string[]) => ALL_MIXED.filter((id) => !ids.includes(id));

const RICH: Item = {
  id: "rich-1",
  title: "Grüße aus Köln — 日本語 — العربية — 🎙️🎧 — e\u0301",
  empty: "",
  zero: 0,
  negative: -42,
  float: 3.14159,
  tiny: 1e-7,
  big: 2 ** 40,
  maxSafe: Number.MAX_SAFE_INTEGER,
  yes: true,
  no: false,
  nothing: null,
  list: [1, "two", { three: 3 }, [4, [5]], null, false],
  nested: { a: { b: { c: { d: "deep", n: 1.5 } } }, emptyObj: {}, emptyArr: [] },
  ключ: "значение",
  "emoji🔑": "🗝️",
  quotes: `it's "quoted" \\ back\\slash\n\ttab \u0000 nul \u2028`,
  sqlish: "'); DROP TABLE rich; --",
};

function ids(docs: Array<{ id: string }>): string[] {
  return docs.map((d) => d.id).sort();
}

/** MongoDB's order for the scalars used here: null/missing, numbers, strings (UTF-8 bytes). */
function compareScalar(a: unknown, b: unknown): number {
  const rank = (v: unknown) => (v === null || v === undefined ? 0 : typeof v === "number" ? 1 : 2);
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 0) return 0;
  if (ra === 1) return (a as number) - (b as number);
  return Buffer.compare(Buffer.from(a as string), Buffer.from(b as string));
}

function sortLike(docs: Item[], sort: Sort): Item[] {
  return [...docs].sort((x, y) => {
    for (const [field, direction] of sort) {
      const c = compareScalar(x[field], y[field]);
      if (c !== 0) return c * direction;
    }
    return 0;
  });
}

async function pageAll(col: Collection<Item>, filter: Filter, sort: Sort, size: number): Promise<string[]> {
  const out: string[] = [];
  let after: Scalar[] | undefined;
  for (let guard = 0; guard < 10_000; guard++) {
    const page = await col.find(filter, after ? { sort, limit: size, after } : { sort, limit: size });
    out.push(...page.map((d) => d.id));
    if (page.length < size) return out;
    const last = page[page.length - 1] as Item;
    after = sort.map(([field]) => (last[field] ?? null) as Scalar);
  }
  throw new Error("paging did not end");
}

async function rejectsWith(promise: Promise<unknown>, code: string): Promise<StoreError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, `expected a StoreError with code '${code}'`).toBeInstanceOf(StoreError);
  expect((err as StoreError).code).toBe(code);
  return err as StoreError;
}

export function describeStoreContract(name: string, makeStore: MakeStore): void {
  describe(`store contract: ${name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await makeStore());
    });
    afterEach(async () => {
      await cleanup();
    });

    const open = (collection = "items", indexes: Parameters<Store["collection"]>[0]["indexes"] = []) =>
      store.collection<Item>({ name: collection, indexes });

    async function mixed(): Promise<Collection<Item>> {
      const col = await open("mixed", [{ fields: [["v", 1]] }]);
      await col.insertMany(MIXED);
      return col;
    }

    describe("insert and get", () => {
      it("round-trips documents unchanged: nested objects, arrays, unicode, numbers, key order", async () => {
        const col = await open();
        const input = structuredClone(RICH);
        await col.insert(input);
        expect(input).toEqual(RICH); // the input is not mutated (no _id added)
        const got = await col.get("rich-1");
        expect(got).toEqual(RICH);
        expect(JSON.stringify(got)).toBe(JSON.stringify(RICH));
        const [found] = await col.find({ title: RICH.title as string });
        expect(JSON.stringify(found)).toBe(JSON.stringify(RICH));
        expect(await col.findOne({ sqlish: "'); DROP TABLE rich; --" })).toEqual(RICH);
      });

      it("returns null for an unknown id and never leaks _id", async () => {
        const col = await open();
        expect(await col.get("nope")).toBeNull();
        await col.insert({ id: "a", x: 1 });
        const docs = [
          await col.get("a"),
          await col.findOne({ x: 1 }),
          ...(await col.find({})),
          await col.updateOne({ id: "a" }, { x: 2 }),
        ];
        for (const doc of docs) {
          expect(doc).not.toBeNull();
          expect(Object.keys(doc as object)).not.toContain("_id");
        }
      });

      it("gives the stored text, where it keeps any, the same until the document changes", async () => {
        const col = await open();
        if (col.getTextSync === undefined) return; // MongoDB keeps no JSON text
        expect(col.getTextSync("nope")).toBeNull();
        await col.insert(structuredClone(RICH));
        const text = col.getTextSync("rich-1");
        expect(JSON.parse(text as string)).toEqual(RICH);
        expect(col.getTextSync("rich-1")).toBe(text);
        await col.updateOne({ id: "rich-1" }, { title: "changed" });
        const changed = col.getTextSync("rich-1");
        expect(changed).not.toBe(text);
        expect(JSON.parse(changed as string)).toEqual(await col.get("rich-1"));
      });

      it("changes its change mark, where it keeps one, on every write to the collection and on no read", async () => {
        const col = await open();
        if (col.changeMarkSync === undefined) return; // MongoDB keeps none
        const other = await store.collection<{ id: string; v: number }>({ name: "other_things" });
        const marks = new Set<number>();
        const mark = () => {
          const m = (col.changeMarkSync as () => number)();
          marks.add(m);
          return m;
        };
        let last = mark();
        const changed = async (what: string, write: () => Promise<unknown>) => {
          await write();
          const now = mark();
          expect(now, what).not.toBe(last);
          last = now;
        };
        await changed("insert", () => col.insert({ id: "m1", x: 1 }));
        await changed("insertMany", () => col.insertMany([{ id: "m2", x: 2 }, { id: "m3", x: 3 }]));
        await changed("updateOne", () => col.updateOne({ id: "m1" }, { x: 5 }));
        await changed("deleteMany", () => col.deleteMany({ id: "m3" }));
        expect(marks.size).toBe(5); // never back to an earlier value
        await col.get("m1");
        await col.find({ x: { $gte: 0 } });
        await col.count({});
        await other.insert({ id: "elsewhere", v: 1 });
        expect(mark()).toBe(last); // reads, and writes to another collection, leave it
      });

      it("rejects a duplicate id with DuplicateKeyError and keeps the original", async () => {
        const col = await open();
        await col.insert({ id: "dup", v: "first" });
        const err = await col.insert({ id: "dup", v: "second" }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(DuplicateKeyError);
        expect(err).toBeInstanceOf(StoreError);
        expect((err as DuplicateKeyError).name).toBe("DuplicateKeyError");
        expect((err as DuplicateKeyError).code).toBe("duplicate_key");
        expect((err as DuplicateKeyError).cause).toBeDefined();
        expect(await col.get("dup")).toEqual({ id: "dup", v: "first" });
        expect(await col.count({})).toBe(1);
      });

      it("rejects a unique-index collision, single and compound; documents lacking the field do not collide", async () => {
        const col = await open("users", [
          { fields: [["email", 1]], unique: true },
          { fields: [["account", 1], ["key", 1]], unique: true, name: "account_key" },
        ]);
        await col.insert({ id: "u1", email: "a@example.com", account: "acc1", key: "k1" });
        await expect(col.insert({ id: "u2", email: "a@example.com" })).rejects.toBeInstanceOf(DuplicateKeyError);
        await expect(col.insert({ id: "u3", account: "acc1", key: "k1" })).rejects.toBeInstanceOf(DuplicateKeyError);
        await col.insert({ id: "u4", account: "acc2", key: "k1" });
        await col.insert({ id: "u5", account: "acc1", key: "k2" });
        // No email, no key: nothing to collide on.
        await col.insert({ id: "u6", account: "acc1" });
        await col.insert({ id: "u7", account: "acc1" });
        expect(ids(await col.find({}))).toEqual(["u1", "u4", "u5", "u6", "u7"]);
      });

      it("never collides on an explicit null in a unique field, as on a missing one; values still collide", async () => {
        const col = await open("uniq_null", [
          { fields: [["email", 1]], unique: true },
          { fields: [["account", 1], ["key", 1]], unique: true, name: "account_key" },
        ]);
        await col.insert({ id: "n1", email: null, account: "a", key: null });
        await col.insert({ id: "n2", email: null, account: "a", key: null });
        await col.insert({ id: "n3", account: "a" });
        await col.insert({ id: "n4", email: null, account: null, key: "k" });
        await col.insert({ id: "n5", email: null, account: null, key: "k" });
        await col.insert({ id: "e1", email: "x@example.com", account: "a", key: "k" });
        await expect(col.insert({ id: "e2", email: "x@example.com" })).rejects.toBeInstanceOf(DuplicateKeyError);
        await expect(col.insert({ id: "e3", email: null, account: "a", key: "k" })).rejects.toBeInstanceOf(DuplicateKeyError);
        await col.insert({ id: "num1", email: 7 });
        await expect(col.insert({ id: "num2", email: 7 })).rejects.toBeInstanceOf(DuplicateKeyError);
        // Setting a unique field to null frees its value and collides with nothing.
        expect(await col.updateOne({ id: "e1" }, { email: null, key: null })).toMatchObject({ id: "e1", email: null, key: null });
        await col.insert({ id: "e4", email: "x@example.com", account: "a", key: "k" });
        expect(await col.findOne({ email: "x@example.com" })).toMatchObject({ id: "e4" });
        expect(await col.findOne({ account: "a", key: "k" })).toMatchObject({ id: "e4" });
        expect(ids(await col.find({ email: null }))).toEqual(["e1", "n1", "n2", "n3", "n4", "n5"]);
        expect(ids(await col.find({ email: { $in: ["x@example.com", 7] } }))).toEqual(["e4", "num1"]);
        expect(await col.deleteMany({ id: "e4", email: "x@example.com" })).toBe(1);
      });

      it("validates documents", async () => {
        const col = await open();
        await rejectsWith(col.insert({ v: 1 } as unknown as Item), "invalid_document");
        await rejectsWith(col.insert({ id: "" }), "invalid_document");
        await rejectsWith(col.insert({ id: "x", _id: "y" }), "invalid_document");
        expect(await col.count({})).toBe(0);
      });
    });

    describe("insertMany", () => {
      it("inserts all documents; an empty list is a no-op", async () => {
        const col = await open();
        await col.insertMany([]);
        const docs = Array.from({ length: 2500 }, (_, i) => ({ id: `d${String(i).padStart(5, "0")}`, i }));
        await col.insertMany(docs);
        expect(await col.count({})).toBe(2500);
        expect(await col.get("d01234")).toEqual({ id: "d01234", i: 1234 });
      });

      it("is ordered: stops at the first duplicate, keeping the documents before it", async () => {
        const col = await open("items", [{ fields: [["email", 1]], unique: true }]);
        await col.insert({ id: "b", email: "b@x" });
        const err = await col
          .insertMany([
            { id: "a", email: "a@x" },
            { id: "b", email: "other@x" },
            { id: "c", email: "c@x" },
          ])
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        expect(err).toBeInstanceOf(DuplicateKeyError);
        expect(ids(await col.find({}))).toEqual(["a", "b"]);
        expect(await col.get("b")).toEqual({ id: "b", email: "b@x" });
        await expect(
          col.insertMany([
            { id: "d", email: "d@x" },
            { id: "e", email: "a@x" },
          ]),
        ).rejects.toBeInstanceOf(DuplicateKeyError);
        expect(ids(await col.find({}))).toEqual(["a", "b", "d"]);
      });

      it("writes nothing when a document is invalid", async () => {
        const col = await open();
        await rejectsWith(col.insertMany([{ id: "ok" }, { id: 5 } as unknown as Item]), "invalid_document");
        expect(await col.count({})).toBe(0);
      });
    });

    describe("filters", () => {
      const cases: Array<[string, Filter, string[]]> = [
        ["number equality does not match true or '1'", { v: 1 }, ["m01"]],
        ["$eq is equality", { v: { $eq: 2.5 } }, ["m02"]],
        ["zero is not false", { v: 0 }, ["m04"]],
        ["true is not 1", { v: true }, ["m05"]],
        ["false is not 0", { v: false }, ["m06"]],
        ["null matches null and missing", { v: null }, ["m07", "m08"]],
        ["string '1' is not 1", { v: "1" }, ["m09"]],
        ["empty string", { v: "" }, ["m11"]],
        ["$ne value includes missing and null", { v: { $ne: 1 } }, except("m01")],
        ["$ne null is present and not null", { v: { $ne: null } }, except("m07", "m08")],
        ["$ne true keeps 1", { v: { $ne: true } }, except("m05")],
        ["$ne string", { v: { $ne: "apple" } }, except("m10")],
        ["$lt number: numbers only", { v: { $lt: 1 } }, ["m03", "m04"]],
        ["$lte number", { v: { $lte: 1 } }, ["m01", "m03", "m04"]],
        ["$gt number: no booleans, no strings", { v: { $gt: 0 } }, ["m01", "m02"]],
        ["$gte and $lt together", { v: { $gte: 0, $lt: 2 } }, ["m01", "m04"]],
        ["$gt string: UTF-8 byte order", { v: { $gt: "a" } }, ["m10", "m13"]],
        ["$lt string: strings only", { v: { $lt: "a" } }, ["m09", "m11", "m12"]],
        ["$gte '' is every string", { v: { $gte: "" } }, ["m09", "m10", "m11", "m12", "m13"]],
        ["$gt false", { v: { $gt: false } }, ["m05"]],
        ["$lt true", { v: { $lt: true } }, ["m06"]],
        ["$lt null matches nothing", { v: { $lt: null } }, []],
        ["$gt null matches nothing", { v: { $gt: null } }, []],
        ["$lte null matches null and missing", { v: { $lte: null } }, ["m07", "m08"]],
        ["$gte null matches null and missing", { v: { $gte: null } }, ["m07", "m08"]],
        ["$in mixed with null", { v: { $in: [1, "apple", null] } }, ["m01", "m07", "m08", "m10"]],
        ["$in booleans and numbers stay apart", { v: { $in: [true, 0] } }, ["m04", "m05"]],
        ["$in strings", { v: { $in: ["Zebra", "éclair", "nope"] } }, ["m12", "m13"]],
        ["$in empty matches nothing", { v: { $in: [] } }, []],
        ["$exists true: present and not null", { v: { $exists: true } }, except("m07", "m08")],
        ["$exists false: missing or null", { v: { $exists: false } }, ["m07", "m08"]],
        ["fields are ANDed", { v: { $gte: 0 }, id: { $in: ["m01", "m02", "m04", "m10"] } }, ["m01", "m02", "m04"]],
        ["empty filter matches all", {}, ALL_MIXED],
        ["undefined operator values are ignored", { v: { $gt: undefined } }, ALL_MIXED],
        ["id equality", { id: "m03" }, ["m03"]],
        ["id range", { id: { $gt: "m10" } }, ["m11", "m12", "m13"]],
        ["id $ne", { id: { $ne: "m01" } }, except("m01")],
        ["id null matches nothing", { id: null }, []],
        ["id compared with a number matches nothing", { id: { $lt: 5 } }, []],
        ["id $exists", { id: { $exists: true } }, ALL_MIXED],
      ];
      it.each(cases)("%s", async (_title, filter, expected) => {
        const col = await mixed();
        expect(ids(await col.find(filter))).toEqual([...expected].sort());
        expect(await col.count(filter)).toBe(expected.length);
      });

      it("findOne returns a match or null", async () => {
        const col = await mixed();
        expect(await col.findOne({ v: "apple" })).toEqual({ id: "m10", v: "apple" });
        expect(await col.findOne({ v: "missing" })).toBeNull();
      });

      it("rejects invalid field names, operators and values", async () => {
        const col = await mixed();
        for (const field of ["a.b", "a-b", "$where", "_id", "", "a'b", 'a"b', "x) OR 1=1 --"]) {
          await rejectsWith(col.find({ [field]: 1 }), "invalid_field");
        }
        await rejectsWith(col.find({ v: { $regex: "a" } as unknown as Scalar }), "invalid_filter");
        await rejectsWith(col.find({ v: { a: 1 } as unknown as Scalar }), "invalid_filter");
        await rejectsWith(col.find({ v: [1, 2] as unknown as Scalar }), "invalid_filter");
        await rejectsWith(col.find({ v: undefined as unknown as Scalar }), "invalid_filter");
        await rejectsWith(col.find({ v: Number.NaN }), "invalid_filter");
        await rejectsWith(col.find({ v: { $in: "a" as unknown as Scalar[] } }), "invalid_filter");
        await rejectsWith(col.count({ v: { $exists: 1 as unknown as boolean } }), "invalid_filter");
        await rejectsWith(col.deleteMany({ "a;b": 1 }), "invalid_field");
        await rejectsWith(col.updateOne({ "a b": 1 }, { v: 1 }), "invalid_field");
        expect(await col.count({})).toBe(MIXED.length);
      });
    });

    describe("sort, limit and keyset paging", () => {
      const PEOPLE: Item[] = [
        { id: "p1", group: "b", n: 3 },
        { id: "p2", group: "a", n: 1 },
        { id: "p3", group: "b", n: 1 },
        { id: "p4", group: "a", n: 2 },
        { id: "p5", group: "c", n: 2 },
        { id: "p6", group: "a", n: 2 },
        { id: "p7", group: "c" },
      ];

      it("sorts by several keys in mixed directions, missing values first ascending", async () => {
        const col = await open();
        await col.insertMany(PEOPLE);
        const order = async (sort: Sort) => (await col.find({}, { sort })).map((d) => d.id);
        expect(await order([["group", 1], ["n", -1], ["id", 1]])).toEqual(["p4", "p6", "p2", "p1", "p3", "p5", "p7"]);
        expect(await order([["n", 1], ["id", -1]])).toEqual(["p7", "p3", "p2", "p6", "p5", "p4", "p1"]);
        expect(await order([["n", -1], ["id", 1]])).toEqual(["p1", "p4", "p5", "p6", "p2", "p3", "p7"]);
        expect(await order([["id", -1]])).toEqual(["p7", "p6", "p5", "p4", "p3", "p2", "p1"]);
      });

      it("limits, including limit 0", async () => {
        const col = await open();
        await col.insertMany(PEOPLE);
        const sort: Sort = [["n", -1], ["id", 1]];
        expect((await col.find({}, { sort, limit: 2 })).map((d) => d.id)).toEqual(["p1", "p4"]);
        expect(await col.find({}, { sort, limit: 0 })).toEqual([]);
        expect(await col.find({ group: "a" }, { limit: 10 })).toHaveLength(3);
        await rejectsWith(col.find({}, { limit: -1 }), "invalid_argument");
        await rejectsWith(col.find({}, { limit: 1.5 }), "invalid_argument");
        await rejectsWith(col.find({}, { sort: [["n", 2 as SortDirection]] }), "invalid_argument");
        await rejectsWith(col.find({}, { sort: [["n.x", 1]] }), "invalid_field");
        await rejectsWith(col.find({}, { sort: [["n", 1]], after: [1, "x"] }), "invalid_argument");
        await rejectsWith(col.find({}, { after: [1] }), "invalid_argument");
      });

      // Ties on the first key, missing and null values in it, and a filter.
      const DAYS = ["2024-05-01", "2024-05-02", "2024-05-03", "2024-05-04", null];
      const PAGED: Item[] = Array.from({ length: 61 }, (_, i) => {
        const doc: Item = { id: `k${String((i * 37) % 61).padStart(2, "0")}`, rank: i % 3, acct: i % 4 === 0 ? "x" : "y" };
        const day = DAYS[i % 5];
        if (day !== null || i % 2 === 0) doc.day = day; // some null, some missing
        return doc;
      });
      const sorts: Sort[] = [
        [["day", -1], ["id", 1]],
        [["day", 1], ["id", -1]],
        [["day", -1], ["id", -1]],
        [["day", 1], ["rank", -1], ["id", 1]],
        [["rank", -1], ["day", -1], ["id", -1]],
        [["rank", 1], ["day", 1], ["id", 1]],
        [["id", -1]],
      ];

      it.each(sorts.map((s) => [JSON.stringify(s), s] as const))(
        "pages a whole collection with `after` without gaps or repeats: %s",
        async (_title, sort) => {
          const col = await open("paged", [
            { fields: [["day", -1], ["id", 1]] },
            { fields: [["acct", 1], ["day", -1], ["id", -1]] },
          ]);
          await col.insertMany(PAGED);
          const expected = sortLike(PAGED, sort).map((d) => d.id);
          expect(await pageAll(col, {}, sort, 7)).toEqual(expected);
          expect(await pageAll(col, {}, sort, 1)).toEqual(expected);
          expect(await pageAll(col, {}, sort, 61)).toEqual(expected);
          const filtered = sortLike(
            PAGED.filter((d) => d.acct === "y"),
            sort,
          ).map((d) => d.id);
          expect(await pageAll(col, { acct: "y" }, sort, 4)).toEqual(filtered);
        },
      );

      it("starts after a position that is not a document", async () => {
        const col = await open();
        await col.insertMany(PAGED);
        const sort: Sort = [["day", -1], ["id", 1]];
        const expected = sortLike(PAGED, sort).filter(
          (d) => d.day === null || d.day === undefined || (d.day as string) < "2024-05-03" || (d.day === "2024-05-03" && d.id > "k30"),
        );
        const page = await col.find({}, { sort, after: ["2024-05-03", "k30"] });
        expect(page.map((d) => d.id)).toEqual(expected.map((d) => d.id));
        expect(await col.find({}, { sort: [["day", -1]], after: [null] })).toEqual([]);
        expect((await col.find({}, { sort: [["day", 1]], after: [null], limit: 3 })).every((d) => typeof d.day === "string")).toBe(true);
      });

      // One key holding numbers, strings, null and nothing: pages must not stop where the type changes.
      const KINDS: Array<Scalar | undefined> = [3, "b", null, -1.5, "", undefined, 10, "10", 0, "a", 3, "b", 2.25, "Z", -7];
      const MIXED_PAGED: Item[] = Array.from({ length: 45 }, (_, i) => {
        const doc: Item = { id: `x${String((i * 7) % 45).padStart(2, "0")}`, g: i % 3 };
        const v = KINDS[i % KINDS.length];
        if (v !== undefined) doc.v = v;
        return doc;
      });
      const mixedSorts: Sort[] = [
        [["v", 1], ["id", 1]],
        [["v", -1], ["id", 1]],
        [["v", -1], ["id", -1]],
        [["v", 1], ["id", -1]],
        [["g", 1], ["v", 1], ["id", -1]],
        [["g", -1], ["v", -1], ["id", 1]],
      ];

      it.each(mixedSorts.map((s) => [JSON.stringify(s), s] as const))(
        "pages a key of mixed types (null < numbers < strings) to the end, in the same order on every store: %s",
        async (_title, sort) => {
          const col = await open("mixed_paged", [{ fields: [["v", 1], ["id", 1]] }, { fields: [["g", 1], ["v", -1]] }]);
          await col.insertMany(MIXED_PAGED);
          const expected = sortLike(MIXED_PAGED, sort).map((d) => d.id);
          expect((await col.find({}, { sort })).map((d) => d.id)).toEqual(expected);
          expect(await pageAll(col, {}, sort, 1)).toEqual(expected);
          expect(await pageAll(col, {}, sort, 4)).toEqual(expected);
          const filtered = sortLike(
            MIXED_PAGED.filter((d) => d.g !== 1),
            sort,
          ).map((d) => d.id);
          expect(await pageAll(col, { g: { $ne: 1 } }, sort, 3)).toEqual(filtered);
        },
      );

      it("gives found documents' stored text, where it keeps any, in find's order and with getTextSync's text", async () => {
        const col = await open("mixed_paged", [{ fields: [["v", 1], ["id", 1]] }, { fields: [["g", 1], ["v", -1]] }]);
        if (col.findTextSync === undefined) return; // MongoDB keeps no JSON text
        await col.insertMany(MIXED_PAGED);
        const queries: Array<[Filter, FindOptions]> = [
          [{}, {}],
          [{ g: { $ne: 1 } }, { sort: [["v", -1], ["id", 1]], limit: 7 }],
          [{}, { sort: [["v", 1], ["id", 1]], after: [3, "x20"], limit: 5 }],
          [{ g: 2 }, { sort: [["g", 1], ["v", 1], ["id", -1]] }],
          [{}, { limit: 0 }],
        ];
        for (const [filter, options] of queries) {
          const docs = await col.find(filter, options);
          const texts = col.findTextSync(filter, options);
          expect(texts.map(([id]) => id)).toEqual(docs.map((d) => d.id));
          expect(texts.map(([, text]) => JSON.parse(text) as unknown)).toEqual(docs);
          for (const [id, text] of texts) expect(col.getTextSync?.(id)).toBe(text);
        }
      });

      it("starts after a number and goes on into the strings (and back, descending)", async () => {
        const col = await open("mixed_paged", [{ fields: [["v", 1], ["id", 1]] }]);
        await col.insertMany(MIXED_PAGED);
        const asc: Sort = [["v", 1], ["id", 1]];
        const afterNumber = sortLike(MIXED_PAGED, asc).filter(
          (d) => typeof d.v === "string" || (typeof d.v === "number" && d.v > 3) || (d.v === 3 && d.id > "x20"),
        );
        expect((await col.find({}, { sort: asc, after: [3, "x20"] })).map((d) => d.id)).toEqual(afterNumber.map((d) => d.id));
        const desc: Sort = [["v", -1], ["id", 1]];
        const afterString = sortLike(MIXED_PAGED, desc).filter(
          (d) => typeof d.v !== "string" || d.v < "a" || (d.v === "a" && d.id > "x20"),
        );
        expect((await col.find({}, { sort: desc, after: ["a", "x20"] })).map((d) => d.id)).toEqual(afterString.map((d) => d.id));
      });

      it("pages a key that also holds booleans: every document exactly once, the others in the common order", async () => {
        // Booleans are the one scalar whose place differs: MongoDB sorts them after strings, the
        // embedded store as 0/1 among the numbers. Paging stays total on both.
        const docs: Item[] = [...MIXED_PAGED, { id: "t1", v: true }, { id: "t2", v: false }, { id: "t3", v: true }, { id: "t4", v: 1 }];
        const col = await open("mixed_paged", [{ fields: [["v", 1], ["id", 1]] }]);
        await col.insertMany(docs);
        for (const sort of [mixedSorts[0], mixedSorts[1], mixedSorts[4]] as Sort[]) {
          for (const size of [1, 3]) {
            const paged = await pageAll(col, {}, sort, size);
            expect([...paged].sort()).toEqual(ids(docs));
            const scalarsOnly = paged.filter((id) => !id.startsWith("t") || id === "t4");
            expect(scalarsOnly).toEqual(sortLike(docs.filter((d) => typeof d.v !== "boolean"), sort).map((d) => d.id));
          }
        }
      });
    });

    describe("count", () => {
      it("counts matches", async () => {
        const col = await mixed();
        expect(await col.count({})).toBe(13);
        expect(await col.count({ v: { $gte: 0 } })).toBe(3);
        expect(await col.count({ v: "nothing" })).toBe(0);
        const empty = await open("empty");
        expect(await empty.count({})).toBe(0);
      });
    });

    describe("updateOne", () => {
      it("sets top-level fields atomically and returns the document after the update", async () => {
        const col = await open();
        await col.insert({ id: "j1", status: "queued", seq: 0, meta: { a: 1, keep: true }, tags: ["x"] });
        const after = await col.updateOne({ id: "j1" }, { status: "running", progress: 0.5, meta: { b: 2 }, tags: null });
        const expected = { id: "j1", status: "running", seq: 0, meta: { b: 2 }, tags: null, progress: 0.5 };
        expect(after).toEqual(expected);
        expect(JSON.stringify(after)).toBe(JSON.stringify(expected)); // existing keys keep their place
        expect(await col.get("j1")).toEqual(expected);
      });

      it("applies a condition (ignores stale progress events)", async () => {
        const col = await open();
        await col.insert({ id: "j1", seq: 0, progress: 0 });
        expect(await col.updateOne({ id: "j1", seq: { $lt: 5 } }, { seq: 5, progress: 50 })).toEqual({
          id: "j1",
          seq: 5,
          progress: 50,
        });
        expect(await col.updateOne({ id: "j1", seq: { $lt: 3 } }, { seq: 3, progress: 30 })).toBeNull();
        expect(await col.get("j1")).toEqual({ id: "j1", seq: 5, progress: 50 });
      });

      it("keeps the highest seq when many conditional updates race", async () => {
        const col = await open();
        await col.insert({ id: "j1", seq: 0, progress: 0 });
        const seqs = Array.from({ length: 40 }, (_, i) => ((i * 17) % 40) + 1); // 1..40, shuffled
        const results = await Promise.all(
          seqs.map((seq) => col.updateOne({ id: "j1", seq: { $lt: seq } }, { seq, progress: seq * 10 })),
        );
        seqs.forEach((seq, i) => {
          const result = results[i];
          if (result !== null) expect(result).toMatchObject({ seq, progress: seq * 10 });
        });
        expect(results.some((r) => r !== null)).toBe(true);
        expect(await col.get("j1")).toEqual({ id: "j1", seq: 40, progress: 400 });
      });

      it("is a compare-and-set on a large integer: of many updates expecting one value, exactly one wins", async () => {
        // The gateway's rate limiter keeps a microsecond timestamp per credential and relies on this.
        const col = await open();
        const t0 = 1_795_000_000_000_000;
        await col.insert({ id: "bucket", tat: t0 });
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => col.updateOne({ id: "bucket", tat: t0 }, { tat: t0 + (i + 1) * 100_000 })),
        );
        const winners = results.filter((r): r is NonNullable<typeof r> => r !== null);
        expect(winners).toHaveLength(1);
        expect(await col.get("bucket")).toEqual(winners[0]);
        expect(await col.updateOne({ id: "bucket", tat: t0 }, { tat: t0 + 1 })).toBeNull();
      });

      it("returns null and changes nothing when no document matches", async () => {
        const col = await open();
        await col.insert({ id: "j1", status: "done" });
        expect(await col.updateOne({ id: "nope" }, { status: "x" })).toBeNull();
        expect(await col.updateOne({ id: "j1", status: "queued" }, { status: "x" })).toBeNull();
        expect(await col.get("j1")).toEqual({ id: "j1", status: "done" });
        expect(await col.count({})).toBe(1);
      });

      it("updates exactly one document when several match", async () => {
        const col = await open();
        await col.insertMany([
          { id: "a", group: "g" },
          { id: "b", group: "g" },
          { id: "c", group: "g" },
        ]);
        const updated = await col.updateOne({ group: "g" }, { picked: true });
        expect(updated).toMatchObject({ group: "g", picked: true });
        expect(await col.count({ picked: true })).toBe(1);
      });

      it("handles empty updates, undefined values, and rejects changing id", async () => {
        const col = await open();
        await col.insert({ id: "j1", status: "queued" });
        expect(await col.updateOne({ id: "j1" }, {})).toEqual({ id: "j1", status: "queued" });
        expect(await col.updateOne({ id: "j1" }, { status: undefined })).toEqual({ id: "j1", status: "queued" });
        expect(await col.updateOne({ id: "x" }, {})).toBeNull();
        await rejectsWith(col.updateOne({ id: "j1" }, { id: "j2" }), "invalid_update");
        await rejectsWith(col.updateOne({ id: "j1" }, { "a.b": 1 } as Partial<Item>), "invalid_field");
        await rejectsWith(col.updateOne({ id: "j1" }, { $set: 1 } as Partial<Item>), "invalid_field");
        expect(await col.get("j1")).toEqual({ id: "j1", status: "queued" });
      });

      it("rejects an update that collides on a unique index and keeps the document", async () => {
        const col = await open("users", [{ fields: [["email", 1]], unique: true }]);
        await col.insertMany([
          { id: "u1", email: "a@x" },
          { id: "u2", email: "b@x" },
        ]);
        await expect(col.updateOne({ id: "u2" }, { email: "a@x" })).rejects.toBeInstanceOf(DuplicateKeyError);
        expect(await col.get("u2")).toEqual({ id: "u2", email: "b@x" });
        expect(await col.updateOne({ id: "u2" }, { email: "c@x" })).toEqual({ id: "u2", email: "c@x" });
      });
    });

    describe("deleteMany", () => {
      it("deletes the matching documents and returns how many", async () => {
        const col = await mixed();
        expect(await col.deleteMany({ v: { $in: ["apple", "Zebra"] } })).toBe(2);
        expect(await col.deleteMany({ v: "apple" })).toBe(0);
        expect(await col.get("m10")).toBeNull();
        expect(await col.count({})).toBe(11);
        expect(await col.deleteMany({ v: null })).toBe(2);
        expect(await col.deleteMany({})).toBe(9);
        expect(await col.count({})).toBe(0);
      });
    });

    describe("collections and the store", () => {
      it("keeps collections apart", async () => {
        const a = await open("alpha");
        const b = await open("beta");
        await a.insert({ id: "same", from: "alpha" });
        await b.insert({ id: "same", from: "beta" });
        await b.insert({ id: "only-beta" });
        expect(await a.get("same")).toEqual({ id: "same", from: "alpha" });
        expect(await b.get("same")).toEqual({ id: "same", from: "beta" });
        expect(await a.get("only-beta")).toBeNull();
        expect(await a.deleteMany({})).toBe(1);
        expect(await b.count({})).toBe(2);
        expect(a.name).toBe("alpha");
      });

      it("opens a collection again with the same spec and sees its data", async () => {
        const spec = { name: "again", indexes: [{ fields: [["k", 1]] as Sort, unique: true }] };
        const first = await store.collection<Item>(spec);
        await first.insert({ id: "1", k: "v" });
        const second = await store.collection<Item>(spec);
        expect(await second.get("1")).toEqual({ id: "1", k: "v" });
        await expect(second.insert({ id: "2", k: "v" })).rejects.toBeInstanceOf(DuplicateKeyError);
      });

      it("keeps an index whose key already exists under another name, with its data and its uniqueness", async () => {
        const legacy = await store.collection<Item>({ name: "renamed", indexes: [{ fields: [["k", 1]], unique: true, name: "legacy_k" }] });
        await legacy.insertMany([
          { id: "1", k: "a" },
          { id: "2", k: "b" },
        ]);
        const spec = { name: "renamed", indexes: [{ fields: [["k", 1]] as Sort, unique: true }] };
        const current = await store.collection<Item>(spec);
        expect(await current.count({})).toBe(2);
        expect(await current.findOne({ k: "b" })).toEqual({ id: "2", k: "b" });
        await expect(current.insert({ id: "3", k: "a" })).rejects.toBeInstanceOf(DuplicateKeyError);
        // Idempotent, also when several processes open it at the same moment.
        const again = await Promise.all(Array.from({ length: 4 }, () => store.collection<Item>(spec)));
        await expect((again[3] as Collection<Item>).insert({ id: "4", k: "b" })).rejects.toBeInstanceOf(DuplicateKeyError);
        expect(await current.count({})).toBe(2);
      });

      it("replaces an index whose definition changed, never losing documents; a unique index the data violates is refused", async () => {
        const v1 = await store.collection<Item>({ name: "evolve", indexes: [{ fields: [["k", 1]], name: "by_k" }] });
        await v1.insertMany([
          { id: "1", k: "a" },
          { id: "2", k: "a" },
          { id: "3", k: "b" },
        ]);
        const uniqueSpec = { name: "evolve", indexes: [{ fields: [["k", 1]] as Sort, name: "by_k", unique: true }] };
        const err = await store.collection<Item>(uniqueSpec).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(StoreError);
        expect(ids(await v1.find({}))).toEqual(["1", "2", "3"]);
        // The old definition is still in place: opening with it is a no-op, duplicates still allowed.
        const back = await store.collection<Item>({ name: "evolve", indexes: [{ fields: [["k", 1]], name: "by_k" }] });
        await back.insert({ id: "4", k: "b" });
        expect(await back.deleteMany({ id: { $in: ["2", "4"] } })).toBe(2);
        // Without the duplicates the new definition builds, from several openers at once.
        const opened = await Promise.all(Array.from({ length: 3 }, () => store.collection<Item>(uniqueSpec)));
        await expect((opened[0] as Collection<Item>).insert({ id: "5", k: "a" })).rejects.toBeInstanceOf(DuplicateKeyError);
        expect(ids(await back.find({}))).toEqual(["1", "3"]);
        expect(await back.find({ k: "a" })).toEqual([{ id: "1", k: "a" }]);
      });

      it("rejects invalid collection and index names", async () => {
        await rejectsWith(store.collection({ name: "bad-name" }), "invalid_collection");
        await rejectsWith(store.collection({ name: "" }), "invalid_collection");
        await rejectsWith(store.collection({ name: "x; DROP" }), "invalid_collection");
        await rejectsWith(store.collection({ name: "ok", indexes: [{ fields: [["a.b", 1]] }] }), "invalid_field");
        await rejectsWith(store.collection({ name: "ok", indexes: [{ fields: [] }] }), "invalid_index");
        await rejectsWith(store.collection({ name: "ok", indexes: [{ fields: [["a", 1]], name: "x y" }] }), "invalid_index");
      });

      it("pings, and fails calls with StoreError 'closed' after close", async () => {
        await store.ping();
        const col = await open();
        await col.insert({ id: "a" });
        await store.close();
        await store.close(); // idempotent
        await rejectsWith(col.get("a"), "closed");
        await rejectsWith(col.insert({ id: "b" }), "closed");
        await rejectsWith(store.collection({ name: "other" }), "closed");
      });
    });
  });
}
