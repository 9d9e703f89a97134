import { afterEach, describe, expect, it } from "vitest";
import { SignJWT } from "jose";
import { silentLogger } from "@voiceloc/log";
import { openEmbeddedStore, openMongoStore, type Collection, type Store } from "@voiceloc/store";
import { tempDir } from "@voiceloc/testing";
import { createFsBlobStore } from "@voiceloc/blobs";
import { ALICE_KEY, BOB_KEY, JWT_SECRET, startTestGateway, type TestGateway } from "../testing/harness.ts";
import { RateLimiter } from "./rate-limit.ts";

const T0 = Date.parse("2026-11-23T12:00:00Z");

/** A clock the test moves by hand. */
function manualClock() {
  let now = T0;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

const open: TestGateway[] = [];
async function gateway(
  env: Record<string, string>,
  clock = manualClock(),
  dataDir?: string,
  options: Parameters<typeof startTestGateway>[1] = {},
): Promise<TestGateway> {
  const gw = await startTestGateway(env, { rateLimitClock: clock.now, ...options }, dataDir);
  open.unshift(gw);
  return gw;
}
afterEach(async () => {
  for (const gw of open.splice(0)) await gw.close();
});

/** 60 per minute (one a second), bursts of 3: the policy is 3 requests per 3 seconds. */
const SMALL = { RATE_LIMIT_PER_MINUTE: "60", RATE_LIMIT_BURST: "3" };

const book = (name: string) => ({ file: "https://example.com/book.txt", name, source_language: "English", target_language: "French" });

async function statuses(gw: TestGateway, n: number, key = ALICE_KEY): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i += 1) out.push((await gw.request("GET", "/v1/audio_books/", { key })).status);
  return out;
}

describe("per-credential request rate limit", () => {
  it("sends the policy and the remaining budget on successful responses", async () => {
    const gw = await gateway(SMALL);
    const first = await gw.request("GET", "/v1/audio_books/");
    expect(first.status).toBe(200);
    expect(first.headers.get("RateLimit-Policy")).toBe('"per-key";q=3;w=3');
    expect(first.headers.get("RateLimit")).toBe('"per-key";r=2;t=1');
    const second = await gw.request("GET", "/v1/audio_books/");
    expect(second.headers.get("RateLimit")).toBe('"per-key";r=1;t=2');
    // Errors of the client count too and carry the fields (a 404 here).
    const missing = await gw.request("GET", "/v1/audio_books/00000000-0000-0000-0000-000000000000");
    expect(missing.status).toBe(404);
    expect(missing.headers.get("RateLimit")).toBe('"per-key";r=0;t=3');
  });

  it("answers 429 with a plain detail, Retry-After and the RateLimit fields once the burst is spent", async () => {
    const gw = await gateway(SMALL);
    expect(await statuses(gw, 3)).toEqual([200, 200, 200]);
    const limited = await gw.request("GET", "/v1/audio_books/");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("Retry-After")).toBe("1");
    expect(limited.headers.get("RateLimit")).toBe('"per-key";r=0;t=1');
    expect(limited.headers.get("RateLimit-Policy")).toBe('"per-key";q=3;w=3');
    expect(limited.headers.get("Content-Type")).toMatch(/^application\/json/);
    const body = (await limited.json()) as { detail: unknown };
    expect(Object.keys(body)).toEqual(["detail"]);
    expect(body.detail).toBe(
      "Too many requests for this credential: the limit is 60 requests per minute, with bursts of up to 3. Try again in 1 second.",
    );
  });

  it("gives the budget back as time passes (one request per interval, the whole burst after the window)", async () => {
    const clock = manualClock();
    const gw = await gateway(SMALL, clock);
    expect(await statuses(gw, 4)).toEqual([200, 200, 200, 429]);
    clock.advance(999);
    expect(await statuses(gw, 1)).toEqual([429]);
    clock.advance(1);
    expect(await statuses(gw, 2)).toEqual([200, 429]);
    clock.advance(10_000);
    expect(await statuses(gw, 4)).toEqual([200, 200, 200, 429]);
    const limited = await gw.request("GET", "/v1/audio_books/");
    expect(limited.headers.get("Retry-After")).toBe("1");
  });

  it("keeps one credential's budget apart from another's", async () => {
    const gw = await gateway(SMALL);
    expect(await statuses(gw, 4, ALICE_KEY)).toEqual([200, 200, 200, 429]);
    const bob = await gw.request("GET", "/v1/audio_books/", { key: BOB_KEY });
    expect(bob.status).toBe(200);
    expect(bob.headers.get("RateLimit")).toBe('"per-key";r=2;t=1');
  });

  it("meters access tokens by subject: two tokens of one subject share a budget", async () => {
    const gw = await gateway(SMALL);
    const token = (jti: string) =>
      new SignJWT({ jti }).setProtectedHeader({ alg: "HS256" }).setSubject("carol").setIssuedAt().setExpirationTime("1h").sign(new TextEncoder().encode(JWT_SECRET));
    const [a, b] = [await token("one"), await token("two")];
    const codes: number[] = [];
    for (const t of [a, b, a, b]) {
      codes.push((await gw.request("GET", "/v1/audio_books/", { key: null, headers: { Authorization: `Bearer ${t}` } })).status);
    }
    expect(codes).toEqual([200, 200, 200, 429]);
    // Alice's API key is another credential.
    expect(await statuses(gw, 1)).toEqual([200]);
  });

  it("does no work for a limited request: the record is not created", async () => {
    const clock = manualClock();
    const gw = await gateway(SMALL, clock);
    expect((await gw.request("POST", "/v1/audio_books/", { body: book("first") })).status).toBe(201);
    expect(await statuses(gw, 2)).toEqual([200, 200]);
    const refused = await gw.request("POST", "/v1/audio_books/", { body: book("refused") });
    expect(refused.status).toBe(429);
    clock.advance(60_000);
    const list = await gw.request("GET", "/v1/audio_books/");
    expect(list.status).toBe(200);
    const names = ((await list.json()) as Array<{ name: string }>).map((r) => r.name);
    expect(names).toEqual(["first"]);
  });

  it("leaves health, readiness, the OpenAPI document and signed downloads unmetered", async () => {
    const blobDir = await tempDir("voiceloc-rl-blobs-");
    try {
      const blobs = createFsBlobStore({ root: blobDir.path });
      await blobs.put("results/a.mp3", Buffer.from("ID3 not really an mp3"));
      const gw = await gateway(SMALL, manualClock(), undefined, { blobs });
      expect(await statuses(gw, 4)).toEqual([200, 200, 200, 429]);
      const signed = new URL(gw.gateway.deps.signer.sign("results/a.mp3"));
      for (const path of ["/healthz", "/readyz", "/openapi.json", `${signed.pathname}${signed.search}`]) {
        const res = await gw.request("GET", path);
        expect(res.status, path).toBe(200);
        expect(res.headers.get("RateLimit"), path).toBeNull();
      }
    } finally {
      await blobDir.cleanup();
    }
  });

  it("is off with RATE_LIMIT_PER_MINUTE=off: no fields, never 429", async () => {
    const gw = await gateway({ RATE_LIMIT_PER_MINUTE: "off", RATE_LIMIT_BURST: "1" });
    expect(await statuses(gw, 5)).toEqual([200, 200, 200, 200, 200]);
    expect((await gw.request("GET", "/v1/audio_books/")).headers.get("RateLimit")).toBeNull();
  });

  it("serves concurrent requests of one credential from one budget", async () => {
    const gw = await gateway({ RATE_LIMIT_PER_MINUTE: "60", RATE_LIMIT_BURST: "5" });
    const codes = await Promise.all(Array.from({ length: 12 }, () => gw.request("GET", "/v1/audio_books/").then((r) => r.status)));
    expect(codes.filter((c) => c === 200)).toHaveLength(5);
    expect(codes.filter((c) => c === 429)).toHaveLength(7);
  });

  it("shares one budget between two gateways on the same store", async () => {
    const clock = manualClock();
    const one = await gateway(SMALL, clock);
    const two = await gateway(SMALL, clock, one.dataDir);
    expect(await statuses(one, 2)).toEqual([200, 200]);
    expect(await statuses(two, 2)).toEqual([200, 429]);
    expect(await statuses(one, 1)).toEqual([429]);
    clock.advance(1_000);
    expect(await statuses(two, 1)).toEqual([200]);
    expect(await statuses(one, 1)).toEqual([429]);
  });

  it("shares one budget between two gateways even while each holds a lease of several tokens", async () => {
    const clock = manualClock();
    const env = { RATE_LIMIT_PER_MINUTE: "60", RATE_LIMIT_BURST: "40" };
    const one = await gateway(env, clock);
    const two = await gateway(env, clock, one.dataDir);
    let served = 0;
    for (let i = 0; i < 60; i += 1) {
      const gw = i % 3 === 0 ? two : one;
      if ((await gw.request("GET", "/v1/audio_books/")).status === 200) served += 1;
    }
    // Never more than the burst; at most a lease's remainder (3 tokens) stranded on each gateway.
    expect(served).toBeLessThanOrEqual(40);
    expect(served).toBeGreaterThanOrEqual(34);
  });

  it("documents 429 on every metered operation in /openapi.json", async () => {
    const gw = await gateway(SMALL);
    const doc = (await (await gw.request("GET", "/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses?: Record<string, { headers?: Record<string, unknown> }> }>>;
    };
    const operations = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith("/v1/") && !path.startsWith("/v1/files"))
      .flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ name: `${method} ${path}`, op })));
    expect(operations.length).toBeGreaterThan(8);
    for (const { name, op } of operations) {
      expect(Object.keys(op.responses?.["429"]?.headers ?? {}), name).toEqual(["Retry-After", "RateLimit", "RateLimit-Policy"]);
    }
  });
});

describe("RateLimiter leases", () => {
  /** The embedded store, with its writes counted (a wrapper around our own port). */
  async function countingStore() {
    const dir = await tempDir("voiceloc-rl-");
    const store = await openEmbeddedStore({ dir: dir.path });
    const writes = { count: 0 };
    const counting: Store = {
      kind: store.kind,
      ping: () => store.ping(),
      close: () => store.close(),
      collection: async <T extends { id: string }>(spec: Parameters<Store["collection"]>[0]) => {
        const inner: Collection<T> = await store.collection<T>(spec);
        return {
          ...inner,
          name: inner.name,
          insert: (doc: T) => ((writes.count += 1), inner.insert(doc)),
          updateOne: (filter: Parameters<Collection<T>["updateOne"]>[0], set: Partial<T>) => ((writes.count += 1), inner.updateOne(filter, set)),
          get: (id: string) => inner.get(id),
          deleteMany: (filter: Parameters<Collection<T>["deleteMany"]>[0]) => inner.deleteMany(filter),
        } as Collection<T>;
      },
    };
    return { store: counting, writes, close: async () => (await store.close(), await dir.cleanup()) };
  }

  it("writes the shared state once per lease, not once per request, for a busy credential", async () => {
    const { store, writes, close } = await countingStore();
    try {
      const clock = manualClock();
      const limiter = await RateLimiter.open(store, { perMinute: 60_000, burst: 1_000 }, { logger: silentLogger(), now: clock.now });
      const decisions = [];
      for (let i = 0; i < 500; i += 1) {
        decisions.push(await limiter.take("key:k1"));
        clock.advance(1);
      }
      expect(decisions.every((d) => d.kind === "allowed")).toBe(true);
      // Leases double up to 64 tokens: 1+2+4+8+16+32 then 64 at a time.
      expect(writes.count).toBeLessThan(20);
    } finally {
      await close();
    }
  });

  it("keeps a busy credential with a large budget to a few writes a second, however many requests it sends", async () => {
    const { store, writes, close } = await countingStore();
    try {
      const clock = manualClock();
      // The budget of a bulk client: a million a minute, all of it at once.
      const limiter = await RateLimiter.open(store, { perMinute: 1_000_000, burst: 1_000_000 }, { logger: silentLogger(), now: clock.now });
      // 40,000 requests a second for two seconds (a busy gateway's record reads)
      for (let i = 0; i < 80_000; i += 1) {
        const leased = limiter.takeLeased("key:bulk");
        const decision = leased ?? (await limiter.take("key:bulk"));
        if (decision.kind !== "allowed") throw new Error(`request ${i} was ${decision.kind}`);
        if (i % 40 === 39) clock.advance(1);
      }
      // Doubling from 1 to 65,536 takes 17 leases; a fixed cap of 256 tokens would have taken over 300.
      expect(writes.count).toBeLessThan(25);
    } finally {
      await close();
    }
  });

  it("forfeits leased tokens after the lease's lifetime, so no credential can save up past its burst", async () => {
    const { store, close } = await countingStore();
    try {
      const clock = manualClock();
      const limiter = await RateLimiter.open(store, { perMinute: 600, burst: 100 }, { logger: silentLogger(), now: clock.now });
      // Warm the lease up to its largest size (10 tokens), leaving part of the last lease unspent.
      for (let i = 0; i < 23; i += 1) await limiter.take("key:k2");
      // Long enough for the shared bucket to be full again.
      clock.advance(60_000);
      let allowed = 0;
      for (let i = 0; i < 150; i += 1) if ((await limiter.take("key:k2")).kind === "allowed") allowed += 1;
      expect(allowed).toBe(100);
    } finally {
      await close();
    }
  });
});

describe("RateLimiter when the store fails", () => {
  it("lets the request through unmetered instead of failing it", async () => {
    const dir = await tempDir("voiceloc-rl-broken-");
    const store = await openEmbeddedStore({ dir: dir.path });
    try {
      const limiter = await RateLimiter.open(store, { perMinute: 60, burst: 1 }, { logger: silentLogger() });
      await store.close();
      expect(await limiter.take("key:k3")).toEqual({ kind: "unmetered" });
      expect(await limiter.take("key:k3")).toEqual({ kind: "unmetered" });
    } finally {
      await dir.cleanup();
    }
  });
});

/** Two connections to one store, as two gateways have: the embedded store always, MongoDB when MONGODB_URL is set. */
const SHARED_STORES: Array<{ name: string; skip?: string; open: () => Promise<{ stores: [Store, Store]; close: () => Promise<void> }> }> = [
  {
    name: "embedded store",
    open: async () => {
      const dir = await tempDir("voiceloc-rl-shared-");
      const stores: [Store, Store] = [await openEmbeddedStore({ dir: dir.path }), await openEmbeddedStore({ dir: dir.path })];
      return { stores, close: async () => (await Promise.all(stores.map((s) => s.close())), await dir.cleanup()) };
    },
  },
  {
    name: "MongoDB",
    ...(process.env.MONGODB_URL ? {} : { skip: "MONGODB_URL is not set" }),
    open: async () => {
      const url = process.env.MONGODB_URL ?? "";
      const dbName = `voiceloc_rl_${Date.now().toString(36)}`;
      const stores: [Store, Store] = [await openMongoStore({ url, dbName }), await openMongoStore({ url, dbName })];
      return { stores, close: async () => void (await Promise.all(stores.map((s) => s.close()))) };
    },
  },
];

describe.each(SHARED_STORES)("RateLimiter on two connections to one $name", ({ name, skip, open: openShared }) => {
  if (skip) {
    process.stdout.write(`rate-limit tests on ${name} skipped: ${skip}\n`);
  }

  it.skipIf(skip !== undefined)("never admits more than the burst when two gateways race for one credential", async () => {
    const { stores, close } = await openShared();
    try {
      const clock = manualClock();
      const policy = { perMinute: 60, burst: 10 };
      const limiters = await Promise.all(stores.map((s) => RateLimiter.open(s, policy, { logger: silentLogger(), now: clock.now })));
      const partition = `key:race-${name}`;
      const decisions = await Promise.all(Array.from({ length: 60 }, (_, i) => limiters[i % 2]!.take(partition)));
      expect(decisions.filter((d) => d.kind === "allowed")).toHaveLength(10);
      expect(decisions.filter((d) => d.kind === "limited")).toHaveLength(50);
      // A second later exactly one more is due, on either gateway.
      clock.advance(1_000);
      const later = await Promise.all(Array.from({ length: 10 }, (_, i) => limiters[i % 2]!.take(partition)));
      expect(later.filter((d) => d.kind === "allowed")).toHaveLength(1);
    } finally {
      await close();
    }
  });
});
