/**
 * One Prometheus registry per process and every series the services write to. Names follow the
 * Prometheus conventions (`_seconds`, `_total`); label values are bounded sets (route patterns,
 * task kinds, stage names from the code, engine ids), never ids or user input.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { FastHistogram } from "./histogram.ts";

export const registry = new Registry();

/** Seconds; from a fast GET (sub-millisecond) to a slow synthesis request. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Seconds; tasks and their stages run from a second to hours. */
const TASK_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200];
/** Seconds; one engine call (a chunk of speech, a translation, a recognition). */
const ENGINE_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** On every request's path: a histogram whose children observe without building a label key. */
export const httpRequestDuration = new FastHistogram(
  "voiceloc_http_request_duration_seconds",
  "HTTP requests by method, matched route pattern and status, and their latency (the _count is the number of requests).",
  ["method", "route", "status"],
  HTTP_BUCKETS,
  [registry],
);

export const tasksTotal = new Counter({
  name: "voiceloc_tasks_total",
  help: "Task deliveries by kind and status: started, completed, failed (for good), retried (handed back to the queue).",
  labelNames: ["kind", "status"] as const,
  registers: [registry],
});

export const tasksInProgress = new Gauge({
  name: "voiceloc_tasks_in_progress",
  help: "Tasks this process is working on, by kind.",
  labelNames: ["kind"] as const,
  registers: [registry],
});

export const taskDuration = new Histogram({
  name: "voiceloc_task_duration_seconds",
  help: "Duration of one task delivery, by kind and status (completed, failed, retried).",
  labelNames: ["kind", "status"] as const,
  buckets: TASK_BUCKETS,
  registers: [registry],
});

export const taskStageDuration = new Histogram({
  name: "voiceloc_task_stage_duration_seconds",
  help: "Duration of one stage of a task (fetch, translate, synthesize, encode, recognize, render…), by kind and stage.",
  labelNames: ["kind", "stage"] as const,
  buckets: TASK_BUCKETS,
  registers: [registry],
});

export const engineDuration = new Histogram({
  name: "voiceloc_engine_duration_seconds",
  help: "Duration of one speech engine call, by engine, operation (synthesize, translate, transcribe) and outcome (ok, error).",
  labelNames: ["engine", "operation", "outcome"] as const,
  buckets: ENGINE_BUCKETS,
  registers: [registry],
});

export const queuePending = new Gauge({
  name: "voiceloc_queue_pending_messages",
  help: "Work messages waiting in a queue, not yet delivered to any worker (JetStream consumer num_pending).",
  labelNames: ["queue"] as const,
  registers: [registry],
});

export const queueAckPending = new Gauge({
  name: "voiceloc_queue_ack_pending_messages",
  help: "Work messages delivered to a worker and not yet settled (JetStream consumer num_ack_pending).",
  labelNames: ["queue"] as const,
  registers: [registry],
});

export const queueRedelivered = new Gauge({
  name: "voiceloc_queue_redelivered_messages",
  help: "Work messages delivered more than once and not yet settled (JetStream consumer num_redelivered).",
  labelNames: ["queue"] as const,
  registers: [registry],
});

let processMetrics = false;

/** Default Node.js process metrics (CPU, memory, event loop lag, handles, GC); once per process. */
export function enableProcessMetrics(): void {
  if (processMetrics) return;
  processMetrics = true;
  collectDefaultMetrics({ register: registry });
}

/** The registry in the Prometheus text format. */
export async function scrape(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}
