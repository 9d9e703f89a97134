/**
 * With tracing on, a work message carries the publisher's trace: the bus's producer span (a child of
 * the span active at publishWork) travels as `traceparent` in the message headers, over both adapters.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "@voiceloc/log";
import { InMemorySpanExporter, SpanKind, endSpan, setupTracing, startSpan, withSpan } from "@voiceloc/telemetry";
import { startNatsServer, type NatsServerHandle } from "@voiceloc/testing";
import { createInProcessBus } from "./inprocess.ts";
import { createNatsBus } from "./nats.ts";
import { JobSchema, waitFor, workTopology } from "./testing/contract.ts";
import type { Bus } from "./types.ts";

const exporter = new InMemorySpanExporter();
let stopTracing: () => Promise<void>;
let server: NatsServerHandle;

beforeAll(async () => {
  stopTracing = setupTracing({ serviceName: "bus-test", exporter });
  server = await startNatsServer();
});

afterAll(async () => {
  await stopTracing?.();
  await server?.stop();
});

async function carriesTrace(bus: Bus): Promise<void> {
  const t = workTopology();
  await bus.provision(t.topology);
  const received: Array<Readonly<Record<string, string>>> = [];
  const sub = await bus.consumeWork(t.queue, JobSchema, async (ctx) => {
    received.push(ctx.headers);
    return { kind: "ack" };
  });
  const request = startSpan("request", { kind: SpanKind.SERVER })!;
  await withSpan(request, () => bus.publishWork(t.subject, { n: 1 }, { msgId: `${t.id}-1` }));
  endSpan(request);
  await bus.publishWork(t.subject, { n: 2 }, { msgId: `${t.id}-2` }); // no active span: a trace of its own
  await waitFor(() => received.length === 2, "both deliveries");
  await sub.stop();

  const publish = exporter
    .getFinishedSpans()
    .find((s) => s.kind === SpanKind.PRODUCER && s.parentSpanContext?.spanId === request.spanContext().spanId);
  expect(publish?.name).toBe(`publish ${t.subject}`);
  const traceparent = received[0]?.traceparent;
  expect(traceparent).toBe(`00-${request.spanContext().traceId}-${publish!.spanContext().spanId}-01`);
  expect(received[1]?.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  expect(received[1]?.traceparent?.slice(3, 35)).not.toBe(request.spanContext().traceId);
}

describe("trace context in work messages", () => {
  it("in process", async () => {
    const bus = createInProcessBus({ logger: silentLogger() });
    await carriesTrace(bus);
    await bus.close();
  });

  it("over nats-server, as NATS message headers", async () => {
    const bus = await createNatsBus({ url: server.url, logger: silentLogger(), name: "bus-trace" });
    await carriesTrace(bus);
    await bus.close();
  });
});
