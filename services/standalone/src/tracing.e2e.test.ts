/**
 * One trace from the HTTP request into the worker, over a real nats-server: creating an audio book
 * gives the gateway's server span, the publish span of the work message (its child) and the audio book
 * worker's task span (the publish span's child, through the W3C `traceparent` header of the NATS
 * message), with the task's stages and engine calls below it.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@voiceloc/config";
import { silentLogger } from "@voiceloc/log";
import { InMemorySpanExporter, SpanKind, setupTracing, type ReadableSpan } from "@voiceloc/telemetry";
import { freePort, startNatsServer, tempDir, checkResponsesOf } from "@voiceloc/testing";
import { startRuntime, type Runtime } from "./runtime.ts";

const KEY = "trace-key-alice-1";
const exporter = new InMemorySpanExporter();
let stopTracing: () => Promise<void>;
let nats: Awaited<ReturnType<typeof startNatsServer>>;
let dir: { path: string; cleanup: () => Promise<void> };
let runtime: Runtime;
let base: string;

beforeAll(async () => {
  stopTracing = setupTracing({ serviceName: "voiceloc-test", exporter });
  nats = await startNatsServer();
  dir = await tempDir("voiceloc-trace-");
  const media = join(dir.path, "media");
  await mkdir(media, { recursive: true });
  await writeFile(join(media, "short.txt"), "The keeper lit the lamp. Ships saw the light and stayed off the rocks.");
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  checkResponsesOf(base);
  runtime = await startRuntime(
    loadConfig({
      NATS_URL: nats.url,
      SERVICES: "gateway,audiobook",
      DATA_DIR: dir.path,
      MEDIA_ROOT: media,
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_BASE_URL: base,
      VOICELOC_API_KEYS: `alice:${KEY}`,
      LOG_LEVEL: "silent",
    }),
    silentLogger(),
  );
});

afterAll(async () => {
  await runtime?.stop();
  await stopTracing?.();
  await nats?.stop();
  await dir?.cleanup();
});

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe("tracing across the bus", () => {
  it("follows a created audio book from the gateway's request span into the worker's task span", async () => {
    const headers = { "API-KEY": KEY, "Content-Type": "application/json" };
    const res = await fetch(`${base}/v1/audio_books/`, {
      method: "POST",
      headers,
      body: JSON.stringify({ file: "short.txt", name: "Short", source_language: "English", target_language: "English" }),
    });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const deadline = Date.now() + 150_000;
    for (;;) {
      const record = (await (await fetch(`${base}/v1/audio_books/${id}`, { headers })).json()) as { task_status: string; task_error: unknown };
      if (record.task_status === "completed" || record.task_status === "failed") {
        expect(record.task_status, String(record.task_error)).toBe("completed");
        break;
      }
      if (Date.now() > deadline) throw new Error("the audio book did not finish");
      await new Promise((r) => setTimeout(r, 250));
    }
    // The task span ends right after the completed event is published; give it a moment to be exported.
    let task: ReadableSpan | undefined;
    for (let i = 0; i < 100 && task === undefined; i += 1) {
      task = exporter.getFinishedSpans().find((s) => s.name === "task audiobook" && s.attributes["voiceloc.task.id"] === id);
      if (task === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    const spans = exporter.getFinishedSpans();
    const request = spans.find((s) => s.kind === SpanKind.SERVER && s.name === "POST /v1/audio_books/");
    expect(request, spans.map((s) => s.name).join(", ")).toBeDefined();
    const publish = spans.find((s) => s.kind === SpanKind.PRODUCER && s.name === "publish work.audiobook" && parentOf(s) === request!.spanContext().spanId);
    expect(publish, "the work message's publish span is a child of the request span").toBeDefined();

    expect(task, "the worker's task span").toBeDefined();
    expect(task!.kind).toBe(SpanKind.CONSUMER);
    expect(task!.spanContext().traceId).toBe(request!.spanContext().traceId);
    expect(parentOf(task!)).toBe(publish!.spanContext().spanId);
    expect(task!.attributes["voiceloc.task.status"]).toBe("completed");

    const below = spans.filter((s) => parentOf(s) === task!.spanContext().spanId);
    const names = below.map((s) => s.name);
    expect(names).toContain("stage fetch");
    expect(names).toContain("stage synthesize");
    expect(names.some((n) => n.endsWith(" synthesize") && !n.startsWith("stage")), names.join(", ")).toBe(true);
    for (const span of below) expect(span.spanContext().traceId).toBe(request!.spanContext().traceId);
  });
});
