/** Test harness: a real bus (in-process or NATS), a real fs blob store in a temp dir, and an event log. */
import { createCatalogBus, createInProcessBus, type Bus, type Schema, type WorkContract, type WorkOutcome, type WorkQueueSpec } from "@voiceloc/bus";
import { createFsBlobStore, type BlobStore } from "@voiceloc/blobs";
import { BUS_CATALOG, STREAMS, type TaskEvent } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { tempDir } from "@voiceloc/testing";

export interface TestTask {
  task_id: string;
  n?: number;
}

export const TestTaskSchema: Schema<TestTask> = {
  parse(input: unknown): TestTask {
    const o = input as { task_id?: unknown; n?: unknown } | null;
    if (typeof o !== "object" || o === null || typeof o.task_id !== "string") throw new Error("not a test task");
    return typeof o.n === "number" ? { task_id: o.task_id, n: o.n } : { task_id: o.task_id };
  },
};

export function testQueue(overrides: Partial<WorkQueueSpec> = {}): WorkQueueSpec {
  return { stream: "WORK", name: "test-q", subject: "work.test", ackWaitMs: 5_000, maxDeliver: 3, backoffMs: [100], ...overrides };
}

/**
 * A bus catalogue for tests: every task kind's work queue is `queue`, carrying TestTask; task events
 * are the real family of BUS_CATALOG.
 */
export function testCatalog(queue: WorkQueueSpec) {
  const work: WorkContract<TestTask> = { queue, payload: TestTaskSchema, messageId: (task) => task.task_id };
  return { work: { audiobook: work, "voice-stream": work, subtitle: work }, events: { task: BUS_CATALOG.events.task }, requests: {} } as const;
}

export type TestCatalog = ReturnType<typeof testCatalog>;

export interface Harness {
  bus: Bus;
  blobs: BlobStore;
  queue: WorkQueueSpec;
  /** The test catalogue over `queue` (give it to createTaskWorker). */
  catalog: TestCatalog;
  /** Every task event seen, in arrival order. */
  events: TaskEvent[];
  eventsOf(taskId: string): TaskEvent[];
  publish(task: TestTask): Promise<void>;
  cleanup(): Promise<void>;
}

export async function createHarness(options: { bus?: Bus; queue?: Partial<WorkQueueSpec> } = {}): Promise<Harness> {
  const dir = await tempDir("voiceloc-worker-test-");
  const bus = options.bus ?? createInProcessBus({ logger: silentLogger() });
  const blobs = createFsBlobStore({ root: dir.path, fsync: false });
  const queue = testQueue(options.queue);
  const catalog = testCatalog(queue);
  const typed = createCatalogBus(bus, catalog);
  await bus.provision({ streams: [STREAMS.work, STREAMS.events], queues: [queue] });
  const events: TaskEvent[] = [];
  await typed.subscribeEvents("task", (e) => void events.push(e.data));
  return {
    bus,
    blobs,
    queue,
    catalog,
    events,
    eventsOf: (taskId) => events.filter((e) => e.task_id === taskId),
    async publish(task) {
      await typed.publishWork("subtitle", task);
    },
    async cleanup() {
      await bus.close({ graceMs: 5_000 });
      await blobs.close();
      await dir.cleanup();
    },
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function waitFor(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

export interface SettledDelivery {
  msgId: string | undefined;
  deliveryCount: number;
  outcome: WorkOutcome;
}

/**
 * The bus, recording how the worker settled each delivery (ack, retry, term): a task acked once is
 * never delivered again, which tests can await instead of sleeping and checking nothing else came.
 */
export function recordingSettlements(bus: Bus): { bus: Bus; settled: SettledDelivery[] } {
  const settled: SettledDelivery[] = [];
  const proxy: Bus = {
    ...bus,
    consumeWork: (queue, schema, handler, options) =>
      bus.consumeWork(
        queue,
        schema,
        async (ctx) => {
          const outcome = await handler(ctx);
          settled.push({ msgId: ctx.msgId, deliveryCount: ctx.deliveryCount, outcome });
          return outcome;
        },
        options,
      ),
  };
  return { bus: proxy, settled };
}
