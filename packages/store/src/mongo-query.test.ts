/**
 * The MongoDB adapter's translation of filters, keyset pages and indexes.
 * Pure functions: these run without a server (the behaviour on a server is
 * the contract suite in mongo.test.ts).
 */
import { describe, expect, it } from "vitest";
import { StoreError } from "./collection.ts";
import { toMongoFind, toMongoIndex, toMongoQuery } from "./mongo.ts";

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

  it("builds a keyset page as an $or chain with a range bound on the first key", () => {
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
                { $or: [{ date_created: { $lt: "2024-01-02" } }, { date_created: null }] },
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
      // Descending, so documents with no date come last: read them after.
      {
        query: { $and: [{ account: { $eq: "x" } }, { date_created: null }] },
        sort: [
          ["date_created", -1],
          ["_id", -1],
        ],
      },
    ]);
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

  it("makes unique indexes partial so documents lacking a field do not collide", () => {
    const unique = toMongoIndex({ fields: [["account", 1], ["key", -1]], unique: true });
    expect(unique?.name).toBe("account_a_key_d");
    expect(unique?.unique).toBe(true);
    expect([...(unique?.key as Map<string, number>)]).toEqual([
      ["account", 1],
      ["key", -1],
    ]);
    expect(unique?.partialFilterExpression).toEqual({ account: { $exists: true }, key: { $exists: true } });
    const plain = toMongoIndex({ fields: [["account", 1], ["id", -1]], name: "by_account" });
    expect(plain).toEqual({ key: new Map([["account", 1], ["_id", -1]]), name: "by_account" });
    expect(toMongoIndex({ fields: [["id", 1]], unique: true })).toBeUndefined();
  });
});
