import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-node";
import { timeEngine } from "./engines.ts";
import { registry } from "./metrics.ts";
import { refreshQueueStats, watchQueues } from "./queues.ts";
import { stageLabel, startTaskTelemetry } from "./tasks.ts";
import { SpanKind, setupTracing, startPublish, traceIdOf } from "./trace.ts";

async function sample(name: string, labels: Record<string, string>): Promise<number> {
  const metric = await registry.getSingleMetric(name.replace(/_(count|sum|bucket)$/, ""))!.get();
  const row = metric.values.find(
    (v) => ((v as { metricName?: string }).metricName ?? metric.name) === name && Object.entries(labels).every(([k, want]) => v.labels[k] === want),
  );
  return row?.value ?? 0;
}

const exporter = new InMemorySpanExporter();
let stopTracing: () => Promise<void>;
beforeAll(() => {
  stopTracing = setupTracing({ serviceName: "test", exporter });
});
afterAll(async () => {
  await stopTracing();
});

describe("task telemetry", () => {
  it("names the workers' stages with short labels; milestones end a stage", () => {
    expect(stageLabel("fetching the text")).toBe("fetch");
    expect(stageLabel("speaking")).toBe("synthesize");
    expect(stageLabel("joining")).toBe("encode");
    expect(stageLabel("text ready")).toBeNull();
    expect(stageLabel("Writing the SRT file!")).toBe("writing_the_srt_file");
  });

  it("counts started and completed tasks, times each stage once, and continues the publisher's trace", async () => {
    const publish = startPublish("work.book");
    expect(publish?.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    publish!.end();
    const before = { started: await sample("voiceloc_tasks_total", { kind: "book", status: "started" }) };
    const t = startTaskTelemetry({ kind: "book", taskId: "t-1", deliveryCount: 1, headers: publish!.headers });
    expect(t.logFields.traceId).toBe(traceIdOf(publish!.headers).traceId);
    expect(await sample("voiceloc_tasks_in_progress", { kind: "book" })).toBe(1);
    t.stage("fetching the text");
    t.stage("fetching the text"); // the same stage again: still one
    t.stage("text ready");
    t.run(() => t.stage("speaking"));
    t.stage("joining");
    t.end("completed");
    t.end("failed"); // ended once only
    expect(await sample("voiceloc_tasks_total", { kind: "book", status: "started" })).toBe(before.started + 1);
    expect(await sample("voiceloc_tasks_total", { kind: "book", status: "completed" })).toBe(1);
    expect(await sample("voiceloc_tasks_total", { kind: "book", status: "failed" })).toBe(0);
    expect(await sample("voiceloc_tasks_in_progress", { kind: "book" })).toBe(0);
    for (const stage of ["fetch", "synthesize", "encode"]) {
      expect(await sample("voiceloc_task_stage_duration_seconds_count", { kind: "book", stage })).toBe(1);
    }
    expect(await sample("voiceloc_task_duration_seconds_count", { kind: "book", status: "completed" })).toBe(1);

    const spans = exporter.getFinishedSpans();
    const producer = spans.find((s) => s.kind === SpanKind.PRODUCER)!;
    const task = spans.find((s) => s.name === "task book")!;
    expect(task.spanContext().traceId).toBe(producer.spanContext().traceId);
    expect(task.parentSpanContext?.spanId).toBe(producer.spanContext().spanId);
    const stages = spans.filter((s) => s.parentSpanContext?.spanId === task.spanContext().spanId).map((s) => s.name);
    expect(stages).toEqual(["stage fetch", "stage synthesize", "stage encode"]);
  });

  it("a retried delivery counts as retried, not failed", async () => {
    const t = startTaskTelemetry({ kind: "retry-kind", taskId: "t-2", deliveryCount: 1 });
    t.end("retried", new Error("engine busy"));
    expect(await sample("voiceloc_tasks_total", { kind: "retry-kind", status: "retried" })).toBe(1);
    expect(await sample("voiceloc_tasks_total", { kind: "retry-kind", status: "failed" })).toBe(0);
  });
});

class Engine {
  readonly id = "fake-tts";
  #calls = 0;
  async synthesize(text: string): Promise<string> {
    this.#calls += 1;
    if (text === "") throw new Error("empty");
    return `spoken:${text}`;
  }
  calls(): number {
    return this.#calls;
  }
}

describe("engine timing", () => {
  it("times the named operations by engine and outcome, in place: the same engine, its private state intact", async () => {
    const raw = new Engine();
    const engine = timeEngine(raw, ["synthesize"]);
    expect(engine).toBe(raw);
    expect(timeEngine(engine, ["synthesize"])).toBe(engine);
    expect(await engine.synthesize("hello")).toBe("spoken:hello");
    await expect(engine.synthesize("")).rejects.toThrow("empty");
    expect(engine.calls()).toBe(2);
    expect(engine.id).toBe("fake-tts");
    expect(await sample("voiceloc_engine_duration_seconds_count", { engine: "fake-tts", operation: "synthesize", outcome: "ok" })).toBe(1);
    expect(await sample("voiceloc_engine_duration_seconds_count", { engine: "fake-tts", operation: "synthesize", outcome: "error" })).toBe(1);
  });
});

describe("queue backlog", () => {
  it("reads the queues at scrape time; a source that does not answer leaves the last values", async () => {
    let pending = 3;
    const stop = watchQueues(async () => [{ queue: "q1", pending, ackPending: 1, redelivered: 0 }]);
    const stuck = watchQueues(() => new Promise(() => undefined));
    await refreshQueueStats();
    const text = await registry.metrics();
    expect(text).toContain('voiceloc_queue_pending_messages{queue="q1"} 3');
    expect(text).toContain('voiceloc_queue_ack_pending_messages{queue="q1"} 1');
    pending = 0;
    stuck();
    stop();
    const failing = watchQueues(async () => {
      throw new Error("nats down");
    });
    await refreshQueueStats();
    expect(await registry.metrics()).toContain('voiceloc_queue_pending_messages{queue="q1"} 3');
    failing();
  });
});
