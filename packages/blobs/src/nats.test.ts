import { Readable } from "node:stream";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/transport-node";
import { createLogger } from "@voiceloc/log";
import { startNatsServer } from "@voiceloc/testing";
import type { NatsServerHandle } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlobChangedError } from "./errors.ts";
import { createNatsBlobStore } from "./nats.ts";
import { describeBlobContract, patternBytes, readAll } from "./testing/contract.ts";

let server: NatsServerHandle;
let bucketCount = 0;
const nextBucket = () => `blobs_test_${++bucketCount}`;

beforeAll(async () => {
  server = await startNatsServer();
});

afterAll(async () => {
  await server?.stop();
});

describeBlobContract("nats", async () => ({
  store: await createNatsBlobStore({ url: server.url, bucket: nextBucket() }),
}));

/** A logger writing JSON lines into an array. */
function memoryLogger(): { lines: () => Array<{ msg?: string }>; logger: ReturnType<typeof createLogger> } {
  const raw: string[] = [];
  const logger = createLogger({ level: "debug", destination: { write: (line: string) => void raw.push(line) } });
  return { logger, lines: () => raw.map((l) => JSON.parse(l) as { msg?: string }) };
}

describe("nats blob store specifics", () => {
  let nc: NatsConnection;

  beforeAll(async () => {
    nc = await connect({ servers: server.url });
  });

  afterAll(async () => {
    await nc?.close();
  });

  it("shares blobs and content types between stores on the same bucket", async () => {
    const bucket = nextBucket();
    const a = await createNatsBlobStore({ nc, bucket });
    const b = await createNatsBlobStore({ url: server.url, bucket });
    await a.put("shared/x.bin", Buffer.from("hello"), { contentType: "audio/x-shared" });
    expect(await b.stat("shared/x.bin")).toMatchObject({ size: 5, contentType: "audio/x-shared" });
    expect(await readAll(await b.createReadStream("shared/x.bin"))).toEqual(Buffer.from("hello"));
    await a.close();
    await b.close();
    await b.close(); // idempotent
    expect(nc.isClosed()).toBe(false); // a given connection is left open
  });

  it("serves a range by jumping to its chunk when the chunks are contiguous", async () => {
    const { logger, lines } = memoryLogger();
    const store = await createNatsBlobStore({ nc, bucket: nextBucket(), logger });
    const data = patternBytes(2_000_000, 3);
    await store.put("r/contiguous.bin", data);
    expect(await readAll(await store.createReadStream("r/contiguous.bin", { start: 1_999_000 }))).toEqual(data.subarray(1_999_000));
    const messages = lines().map((l) => l.msg);
    expect(messages).toContain("range starts in chunk 15, fetched directly");
    expect(messages).not.toContain("chunks not contiguous, reading from the first chunk to reach the range");
    await store.close();
  });

  it("serves a range correctly when another put interleaved its chunks", async () => {
    const { logger, lines } = memoryLogger();
    const store = await createNatsBlobStore({ nc, bucket: nextBucket(), logger });
    const first = patternBytes(300_000, 4);
    const second = patternBytes(300_000, 5);
    let paused!: () => void;
    const reachedPause = new Promise<void>((resolve) => {
      paused = resolve;
    });
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => {
      resume = resolve;
    });
    async function* interrupted(): AsyncGenerator<Buffer> {
      yield first.subarray(0, 200_000);
      yield first.subarray(200_000, 250_000); // the first 128 KiB chunk is published before this is asked for
      paused();
      await resumed;
      yield first.subarray(250_000);
    }
    const pending = store.put("r/interleaved.bin", Readable.from(interrupted()));
    await reachedPause;
    await store.put("r/other.bin", second); // its chunks land between ours
    resume();
    await pending;

    expect(await readAll(await store.createReadStream("r/interleaved.bin", { start: 290_000 }))).toEqual(first.subarray(290_000));
    expect(await readAll(await store.createReadStream("r/interleaved.bin"))).toEqual(first);
    expect(await readAll(await store.createReadStream("r/other.bin", { start: 131_072, end: 131_073 }))).toEqual(second.subarray(131_072, 131_074));
    expect(lines().map((l) => l.msg)).toContain("chunks not contiguous, reading from the first chunk to reach the range");
    await store.close();
  });

  it("fails a read whose blob is deleted mid-stream instead of hanging", async () => {
    const store = await createNatsBlobStore({ nc, bucket: nextBucket() });
    await store.put("gone/x.bin", patternBytes(4 * 1024 * 1024, 6)); // 32 chunks, far more than a stream buffers
    const reader = await store.createReadStream("gone/x.bin");
    const iterator = reader[Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    await store.delete("gone/x.bin");
    const error = await (async () => {
      for (;;) {
        const next = await iterator.next();
        if (next.done) return undefined;
      }
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BlobChangedError);
    await store.close();
  });

  it("stops fetching when a reader is destroyed early", async () => {
    const store = await createNatsBlobStore({ nc, bucket: nextBucket() });
    const data = patternBytes(1_000_000, 7);
    await store.put("early/x.bin", data);
    const reader = await store.createReadStream("early/x.bin");
    const first = (await reader[Symbol.asyncIterator]().next()).value as Buffer;
    expect(first).toEqual(data.subarray(0, first.length));
    reader.destroy();
    // the store keeps working
    expect(await readAll(await store.createReadStream("early/x.bin", { start: 999_990 }))).toEqual(data.subarray(999_990));
    await store.close();
  });

  it("reports a bad bucket name as a BlobError", async () => {
    await expect(createNatsBlobStore({ nc, bucket: "bad.bucket" })).rejects.toMatchObject({ code: "blob_store_failed" });
  });
});
