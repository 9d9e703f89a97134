/**
 * The store contract on MongoDB: against MONGODB_URL when set, else a
 * throwaway container when a Docker engine answers, else skipped (with the
 * reason printed once).
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import type { Server, Socket } from "node:net";
import { Writable } from "node:stream";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createLogger } from "@voiceloc/log";
import { StoreError } from "./collection.ts";
import type { IndexSpec } from "./collection.ts";
import { openMongoStore } from "./mongo.ts";
import { openStore } from "./index.ts";
import { describeStoreContract } from "./testing/contract.ts";
import { directConnectionUrl } from "./testing/mongo-url.ts";

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
        // The container's replica set was initiated with its own host name, which
        // only resolves inside Docker: talk to the mapped port directly.
        url = directConnectionUrl(container.getConnectionString());
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

    it("answers the record list, lookups by id and by unique fields, and idempotency keys from indexes (explain)", async () => {
      const dbName = `voiceloc_test_${randomUUID().replaceAll("-", "")}`;
      const store = await openMongoStore({ url, dbName });
      const scans = (plans: string[][]) => plans.flat();
      try {
        // The gateway's task record indexes (services/gateway/src/records/repository.ts).
        const TASK_INDEXES: IndexSpec[] = [
          { fields: [["account_id", 1], ["date_created", -1], ["id", -1]] },
          { fields: [["account_id", 1], ["task_status", 1], ["date_created", -1], ["id", -1]] },
          { fields: [["published", 1], ["date_created", 1]] },
          { fields: [["published", 1], ["account_id", 1], ["date_created", 1]] },
        ];
        const records = await store.collection<{ id: string; account_id: string; task_status: string; date_created: string; published: boolean }>({
          name: "audio_books",
          indexes: TASK_INDEXES,
        });
        await records.insertMany(
          Array.from({ length: 300 }, (_, i) => ({
            id: `r${String(i).padStart(4, "0")}`,
            account_id: `acct-${i % 5}`,
            task_status: i % 3 === 0 ? "completed" : "queued",
            date_created: `2026-01-${String(1 + (i % 28)).padStart(2, "0")}T00:00:00.000Z`,
            published: i % 2 === 0,
          })),
        );
        const sort: Array<[string, 1 | -1]> = [
          ["date_created", -1],
          ["id", -1],
        ];
        const listing = [
          await records.explain({ account_id: "acct-1" }, { sort, limit: 51 }),
          await records.explain({ account_id: "acct-1" }, { sort, limit: 51, after: ["2026-01-10T00:00:00.000Z", "r0100"] }),
          await records.explain({ account_id: "acct-1", task_status: "queued" }, { sort, limit: 51 }),
        ];
        for (const plans of listing) {
          expect(scans(plans)).toContain("IXSCAN");
          expect(scans(plans)).not.toContain("COLLSCAN");
          expect(scans(plans)).not.toContain("SORT"); // the index gives the order
        }
        // The scheduler's walk (sorted by id within a day, so a small in-memory sort may follow).
        const waiting = scans(await records.explain({ published: false, account_id: "acct-2", task_status: "queued" }, { sort: [["date_created", 1], ["id", 1]], limit: 10 }));
        expect(waiting).toContain("IXSCAN");
        expect(waiting).not.toContain("COLLSCAN");
        const byId = scans(await records.explain({ id: "r0042" }));
        expect(byId.some((s) => ["IDHACK", "EXPRESS_IXSCAN", "IXSCAN"].includes(s))).toBe(true);
        expect(byId).not.toContain("COLLSCAN");
        // Dispatch slots: a lookup by the unique task_id uses the partial unique index.
        const slots = await store.collection<{ id: string; task_id: string }>({ name: "dispatch_slots", indexes: [{ fields: [["task_id", 1]], unique: true }] });
        await slots.insertMany(Array.from({ length: 50 }, (_, i) => ({ id: `s${i}`, task_id: `t${i}` })));
        expect(scans(await slots.explain({ task_id: "t7" }))).toContain("IXSCAN");
        // Idempotency keys: looked up by id, purged by expiry.
        const keys = await store.collection<{ id: string; expires_at: string }>({ name: "idempotency_keys", indexes: [{ fields: [["expires_at", 1]] }] });
        await keys.insertMany(Array.from({ length: 50 }, (_, i) => ({ id: `h${i}`, expires_at: `2026-02-${String(1 + (i % 28)).padStart(2, "0")}` })));
        expect(scans(await keys.explain({ id: "h3" }))).not.toContain("COLLSCAN");
        expect(scans(await keys.explain({ expires_at: { $lt: "2026-02-05" } }))).toContain("IXSCAN");
      } finally {
        await store.close();
        await admin.db(dbName).dropDatabase();
      }
    });

    it("replaces a unique index an older release made with $exists (explicit nulls collided under it)", async () => {
      const dbName = `voiceloc_test_${randomUUID().replaceAll("-", "")}`;
      await admin
        .db(dbName)
        .collection("legacy")
        .createIndex({ email: 1 }, { name: "email_a", unique: true, partialFilterExpression: { email: { $exists: true } } });
      const store = await openMongoStore({ url, dbName });
      try {
        const col = await store.collection<{ id: string; email: string | null }>({ name: "legacy", indexes: [{ fields: [["email", 1]], unique: true }] });
        await col.insert({ id: "a", email: null });
        await col.insert({ id: "b", email: null });
        const indexes = await admin.db(dbName).collection("legacy").listIndexes().toArray();
        expect(indexes.find((i) => i.name === "email_a")?.partialFilterExpression).toEqual({ email: { $type: ["string", "number", "bool"] } });
      } finally {
        await store.close();
        await admin.db(dbName).dropDatabase();
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

/** A port where nothing listens (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as { port: number };
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/** A server that accepts connections and never answers: a hung MongoDB. */
async function silentServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as { port: number };
  return {
    port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

function memoryLogger(): { logger: ReturnType<typeof createLogger>; lines: () => Array<Record<string, unknown>> } {
  const out: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      out.push(chunk.toString());
      done();
    },
  });
  return {
    logger: createLogger({ level: "debug", destination }),
    lines: () => out.map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

describe("MongoDB connection failures", () => {
  // The driver alone would wait for server selection, 30 s by default; these
  // tests time out at 15 s (the vitest timeout), so passing means ping gave up first.
  it("ping() fails within its bound when nothing listens, and the reconnecting is logged", { timeout: 15_000 }, async () => {
    const port = await closedPort();
    const { logger, lines } = memoryLogger();
    const store = await openMongoStore({ url: `mongodb://127.0.0.1:${port}/?directConnection=true`, verifyOnOpen: false, logger });
    try {
      const err = await store.ping().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).message).toMatch(/MongoDB/);
      await vi.waitFor(() => expect(lines().some((l) => l.msg === "mongodb server unreachable; the driver keeps reconnecting")).toBe(true), {
        timeout: 10_000,
      });
    } finally {
      await store.close();
    }
  });

  it("ping() fails within its bound when the server accepts connections and never answers", { timeout: 15_000 }, async () => {
    const silent = await silentServer();
    const store = await openMongoStore({
      url: `mongodb://127.0.0.1:${silent.port}/?directConnection=true`,
      verifyOnOpen: false,
      pingTimeoutMs: 1000,
    });
    try {
      const err = await store.ping().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).code).toBe("unavailable");
      expect((err as StoreError).message).toBe("MongoDB did not answer a ping within 1000 ms");
    } finally {
      await store.close();
      await silent.close();
    }
  });

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
