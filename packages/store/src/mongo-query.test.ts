/**
 * The MongoDB adapter's translation of filters, keyset pages and indexes.
 * Pure functions: these run without a server (the behaviour on a server is
 * the contract suite in mongo.test.ts).
 */
import { describe, expect, it } from "vitest";
import { StoreError } from "./collection.ts";
import type { Filter } from "./collection.ts";
import { planStages, resolveIndexConflict, restorableIndex, toMongoFind, toMongoIndex, toMongoQuery, topologyOf } from "./mongo.ts";

describe("MongoDB query translation", () => {
  it("maps id to _id and keeps native null/equality semantics", () => {
    expect(toMongoQuery({ id: "a", account: "x", done: true, parent: null })).toEqual({
      _id: { $eq: "a" },
      account: { $eq: "x" },
      done: { $eq: true },
      parent: { $eq: null },
    });
  });

  it("maps $exists to 'present and not null' and merges operators per field", () => {
    expect(toMongoQuery({ a: { $exists: true }, b: { $exists: false }, n: { $gte: 1, $lt: 5, $ne: null } })).toEqual({
      a: { $ne: null },
      b: { $eq: null },
      n: { $gte: 1, $lt: 5, $ne: null },
    });
    // Two conditions that become the same operator go to $and.
    expect(toMongoQuery({ a: { $exists: true, $ne: "x" } })).toEqual({ a: { $ne: null }, $and: [{ a: { $ne: "x" } }] });
  });

  it("rejects operators and field names MongoDB would interpret", () => {
    for (const filter of [{ $where: "1" }, { "a.b": 1 }, { _id: "x" }, { a: { $regex: "x" } }, { a: { $expr: 1 } }]) {
      expect(() => toMongoQuery(filter as never)).toThrow(StoreError);
    }
  });

  it("states a unique index's type filter beside conditions only non-null values meet, so the partial index is usable", () => {
    const unique = new Set(["task_id", "email"]);
    const typed = { $type: ["string", "number", "bool"] };
    expect(toMongoQuery({ task_id: "t1" }, unique)).toEqual({ task_id: { $eq: "t1" }, $and: [{ task_id: typed }] });
    expect(toMongoQuery({ id: "s1", task_id: { $in: ["a", "b"] } }, unique)).toEqual({
      _id: { $eq: "s1" },
      task_id: { $in: ["a", "b"] },
      $and: [{ task_id: typed }],
    });
    // Conditions a null or missing value can meet keep their meaning: no type filter.
    const open: Filter[] = [{ task_id: null }, { task_id: { $in: ["a", null] } }, { task_id: { $ne: "a" } }, { email: { $exists: true } }];
    for (const filter of open) {
      expect(JSON.stringify(toMongoQuery(filter, unique))).not.toContain("$type");
    }
    expect(toMongoQuery({ other: "x" }, unique)).toEqual({ other: { $eq: "x" } });
  });

  it("builds a keyset page as an $or chain with a range bound on the first key, then one query per later type", () => {
    const { plans, limit } = toMongoFind(
      { account: "x" },
      {
        sort: [
          ["date_created", -1],
          ["id", -1],
        ],
        after: ["2024-01-02", "r9"],
        limit: 50,
      },
    );
    expect(limit).toBe(50);
    expect(plans).toEqual([
      {
        query: {
          $and: [
            { account: { $eq: "x" } },
            { date_created: { $lte: "2024-01-02" } },
            {
              $or: [
                { date_created: { $lt: "2024-01-02" } },
                { $and: [{ date_created: { $eq: "2024-01-02" } }, { _id: { $lt: "r9" } }] },
              ],
            },
          ],
        },
        sort: [
          ["date_created", -1],
          ["_id", -1],
        ],
      },
      // Descending: documents whose date is a number come next, then those with no date.
      {
        query: { $and: [{ account: { $eq: "x" } }, { date_created: { $gte: -Infinity } }] },
        sort: [
          ["date_created", -1],
          ["_id", -1],
        ],
      },
      {
        query: { $and: [{ account: { $eq: "x" } }, { date_created: null }] },
        sort: [
          ["date_created", -1],
          ["_id", -1],
        ],
      },
    ]);
  });

  it("goes on past the first key's type, ascending and descending, and on later keys", () => {
    const asc = toMongoFind({}, { sort: [["v", 1], ["id", 1]], after: [3, "k1"] }).plans.map((p) => p.query);
    expect(asc).toEqual([
      { $and: [{ v: { $gte: 3 } }, { $or: [{ v: { $gt: 3 } }, { $and: [{ v: { $eq: 3 } }, { _id: { $gt: "k1" } }] }] }] },
      { v: { $gte: "" } },
      { v: { $gte: false } },
    ]);
    const desc = toMongoFind({}, { sort: [["v", -1]], after: [true] }).plans.map((p) => p.query);
    expect(desc).toEqual([
      { $and: [{ v: { $lte: true } }, { v: { $lt: true } }] },
      { v: { $gte: "" } },
      { v: { $gte: -Infinity } },
      { v: null },
    ]);
    const second = toMongoFind({}, { sort: [["g", 1], ["v", 1]], after: ["a", 3] }).plans[0]?.query;
    expect(second).toEqual({
      $and: [
        { g: { $gte: "a" } },
        {
          $or: [
            { g: { $gt: "a" } },
            { $and: [{ g: { $eq: "a" } }, { $or: [{ v: { $gt: 3 } }, { v: { $gte: "" } }, { v: { $gte: false } }] }] },
          ],
        },
      ],
    });
  });

  it("handles a null first key in both directions", () => {
    const asc = toMongoFind({}, { sort: [["day", 1], ["id", 1]], after: [null, "k1"] }).plans;
    expect(asc.map((p) => p.query)).toEqual([
      { $and: [{ day: null }, { _id: { $gt: "k1" } }] },
      { day: { $ne: null } },
    ]);
    const desc = toMongoFind({}, { sort: [["day", -1]], after: [null] }).plans;
    expect(desc.map((p) => p.query)).toEqual([{ _id: { $exists: false } }]);
  });

  it("uses a plain query and sort without `after`", () => {
    expect(toMongoFind({ a: 1 }, { sort: [["id", 1]] })).toEqual({
      plans: [{ query: { a: { $eq: 1 } }, sort: [["_id", 1]] }],
    });
  });

  it("makes unique indexes partial on the scalar types, so documents with a missing or null field do not collide", () => {
    const unique = toMongoIndex({ fields: [["account", 1], ["key", -1]], unique: true });
    expect(unique?.name).toBe("account_a_key_d");
    expect(unique?.unique).toBe(true);
    expect([...(unique?.key as Map<string, number>)]).toEqual([
      ["account", 1],
      ["key", -1],
    ]);
    const typed = { $type: ["string", "number", "bool"] };
    expect(unique?.partialFilterExpression).toEqual({ account: typed, key: typed });
    const plain = toMongoIndex({ fields: [["account", 1], ["id", -1]], name: "by_account" });
    expect(plain).toEqual({ key: new Map([["account", 1], ["_id", -1]]), name: "by_account" });
    expect(toMongoIndex({ fields: [["id", 1]], unique: true })).toBeUndefined();
  });

  it("decides what to do after an index conflict from the indexes the collection has", () => {
    const wanted = { key: new Map([["k", 1]]), name: "k_a", unique: true };
    const idIndex = { v: 2, key: { _id: 1 }, name: "_id_" };
    // An older definition under the wanted name: replace it.
    const older = { v: 2, key: { k: 1 }, name: "k_a", unique: true, partialFilterExpression: { k: { $exists: true } } };
    expect(resolveIndexConflict(wanted, [idIndex, older])).toEqual({ kind: "replace", old: older });
    // The same key under another name: the server's equivalent; keep it.
    expect(resolveIndexConflict(wanted, [idIndex, { v: 2, key: { k: 1 }, name: "legacy", unique: true }])).toEqual({ kind: "keep", name: "legacy" });
    // Another key order is another index; nothing left in the way: retry.
    expect(resolveIndexConflict({ key: new Map([["a", 1], ["b", 1]]), name: "ab" }, [idIndex, { v: 2, key: { b: 1, a: 1 }, name: "ba" }])).toEqual({
      kind: "retry",
    });
    expect(resolveIndexConflict(wanted, [idIndex])).toEqual({ kind: "retry" });
    // Rebuilding an old index from listIndexes keeps its options, not the version.
    expect(restorableIndex(older)).toEqual({ key: { k: 1 }, name: "k_a", unique: true, partialFilterExpression: { k: { $exists: true } } });
  });

  it("reads the deployment from hello and the stages from an explain plan", () => {
    expect(topologyOf({ isWritablePrimary: true, setName: "rs0" })).toBe("replica set");
    expect(topologyOf({ isWritablePrimary: true, msg: "isdbgrid" })).toBe("sharded");
    expect(topologyOf({ isWritablePrimary: true })).toBe("standalone");
    expect(planStages({ stage: "LIMIT", inputStage: { stage: "FETCH", inputStage: { stage: "IXSCAN" } } })).toEqual(["LIMIT", "FETCH", "IXSCAN"]);
    expect(planStages({ queryPlan: { stage: "SORT", inputStage: { stage: "COLLSCAN" } } })).toEqual(["SORT", "COLLSCAN"]);
    expect(planStages({ stage: "OR", inputStages: [{ stage: "IXSCAN" }, { stage: "IXSCAN" }] })).toEqual(["OR", "IXSCAN", "IXSCAN"]);
  });
});

describe("the URL for a testcontainers replica set", () => {
  it("adds directConnection=true once, keeping the path and the other options", async () => {
    const { directConnectionUrl } = await import("./testing/mongo-url.ts");
    expect(directConnectionUrl("mongodb://localhost:32768")).toBe("mongodb://localhost:32768/?directConnection=true");
    expect(directConnectionUrl("mongodb://localhost:32768/db")).toBe("mongodb://localhost:32768/db?directConnection=true");
    expect(directConnectionUrl("mongodb://u:p@localhost:32768?authSource=admin")).toBe(
      "mongodb://u:p@localhost:32768?authSource=admin&directConnection=true",
    );
    expect(directConnectionUrl("mongodb://h:1/?directConnection=false")).toBe("mongodb://h:1/?directConnection=false");
  });
});
