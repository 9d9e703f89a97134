/**
 * The store contract through the MongoDB adapter's own code (query, keyset
 * and index translation, index conflict handling) over an in-memory model of
 * MongoDB's documented semantics (testing/mongo-model.ts). Runs everywhere;
 * the same contract against a real server is mongo.test.ts (MONGODB_URL).
 */
import { describe, expect, it } from "vitest";
import { mongoStoreOver } from "./mongo.ts";
import { matches, modelDb } from "./testing/mongo-model.ts";
import { describeStoreContract } from "./testing/contract.ts";

describeStoreContract("MongoDB adapter over a model of the server", async () => {
  const store = mongoStoreOver(modelDb());
  return { store, cleanup: () => store.close() };
});

describe("the MongoDB model itself", () => {
  it("brackets comparisons by type and matches null to missing, as the server documents", () => {
    const docs = [{ v: 1 }, { v: "1" }, { v: true }, { v: null }, {}, { v: "b" }];
    const hits = (q: Record<string, unknown>) => docs.filter((d) => matches(d, q)).map((d) => JSON.stringify(d));
    expect(hits({ v: { $gt: 0 } })).toEqual(['{"v":1}']);
    expect(hits({ v: { $gte: "" } })).toEqual(['{"v":"1"}', '{"v":"b"}']);
    expect(hits({ v: null })).toEqual(['{"v":null}', "{}"]);
    expect(hits({ v: { $ne: null } })).toHaveLength(4);
    expect(hits({ v: { $type: ["string", "number", "bool"] } })).toHaveLength(4);
  });
});
