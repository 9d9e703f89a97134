/**
 * The store contract on MongoDB: against MONGODB_URL when set, else a
 * throwaway container when a Docker engine answers, else skipped (with the
 * reason printed once).
 */
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreError } from "./collection.ts";
import { openMongoStore } from "./mongo.ts";
import { openStore } from "./index.ts";
import { describeStoreContract } from "./testing/contract.ts";

type Target = { kind: "url"; url: string } | { kind: "docker" } | { kind: "skip"; reason: string };

async function findTarget(): Promise<Target> {
  const url = process.env.MONGODB_URL?.trim();
  if (url) return { kind: "url", url };
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("no answer from the container runtime in 20 s")), 20_000);
    });
    try {
      await Promise.race([getContainerRuntimeClient(), timeout]);
    } finally {
      clearTimeout(timer);
    }
    return { kind: "docker" };
  } catch (err) {
    return {
      kind: "skip",
      reason: `MONGODB_URL is not set and no Docker engine is reachable (${err instanceof Error ? err.message : String(err)})`,
    };
  }
}

const target = await findTarget();

if (target.kind === "skip") {
  process.stdout.write(`[@voiceloc/store] MongoDB contract skipped: ${target.reason}\n`);
  describe.skip(`store contract: MongoDB (skipped: ${target.reason})`, () => {
    it.skip(`needs MongoDB: ${target.reason}`, () => undefined);
  });
} else {
  describe("MongoDB", () => {
    let url = target.kind === "url" ? target.url : "";
    let stopContainer: (() => Promise<unknown>) | undefined;
    let admin: MongoClient;

    beforeAll(async () => {
      if (target.kind === "docker") {
        const { MongoDBContainer } = await import("@testcontainers/mongodb");
        const container = await new MongoDBContainer("mongo:8").start();
        stopContainer = () => container.stop();
        url = container.getConnectionString();
      }
      admin = new MongoClient(url, { serverSelectionTimeoutMS: 20_000 });
      await admin.connect();
    }, 300_000);

    afterAll(async () => {
      await admin?.close();
      await stopContainer?.();
    }, 120_000);

    describeStoreContract("MongoDB", async () => {
      const dbName = `voiceloc_test_${randomUUID().replaceAll("-", "")}`;
      const store = await openMongoStore({ url, dbName, clientOptions: { serverSelectionTimeoutMS: 20_000 } });
      return {
        store,
        cleanup: async () => {
          await store.close();
          await admin.db(dbName).dropDatabase();
        },
      };
    });

    it("openStore picks MongoDB when a URL is given", async () => {
      const store = await openStore({ mongodbUrl: url, dataDir: "/nonexistent-not-used" });
      try {
        expect(store.kind).toBe("mongodb");
        await store.ping();
      } finally {
        await store.close();
      }
    });

    it("keeps _id out of stored ids and uses it as the primary key", async () => {
      const dbName = `voiceloc_test_${randomUUID().replaceAll("-", "")}`;
      const store = await openMongoStore({ url, dbName });
      try {
        const col = await store.collection<{ id: string; n: number }>({ name: "raw" });
        await col.insert({ id: "abc", n: 1 });
        const raw = await admin.db(dbName).collection("raw").findOne({});
        expect(raw).toEqual({ _id: "abc", id: "abc", n: 1 });
      } finally {
        await store.close();
        await admin.db(dbName).dropDatabase();
      }
    });
  });
}

describe("MongoDB connection failures", () => {
  it("reports an unreachable server as StoreError open_failed, quickly", async () => {
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    const err = await openMongoStore({
      url: "mongodb://127.0.0.1:1/?directConnection=true",
      clientOptions: { serverSelectionTimeoutMS: 500, connectTimeoutMS: 500 },
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe("open_failed");
  });

  it("reports a malformed URL as StoreError open_failed without echoing it", async () => {
    const err = await openMongoStore({ url: "not-a-url-with-secret-s3cr3t" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe("open_failed");
    expect((err as StoreError).message).not.toContain("s3cr3t");
  });
});
