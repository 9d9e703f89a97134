export {
  registry,
  scrape,
  enableProcessMetrics,
  httpRequestDuration,
  tasksTotal,
  tasksInProgress,
  taskDuration,
  taskStageDuration,
  engineDuration,
  queuePending,
  queueAckPending,
  queueRedelivered,
} from "./metrics.ts";
export { httpMetrics, httpRequestObserver, matchedRoute, metricsHandler, UNMATCHED_ROUTE, type MetricsEndpointOptions } from "./http.ts";
export { refreshQueueStats, watchQueues, type QueueStat, type QueueStatSource } from "./queues.ts";
export { stageLabel, startTaskTelemetry, type TaskStatus, type TaskTelemetry, type TaskTelemetryOptions } from "./tasks.ts";
export { timeEngine } from "./engines.ts";
export {
  SpanKind,
  SpanStatusCode,
  TRACE_HEADERS,
  contextFromHeaders,
  endSpan,
  setupTracing,
  startPublish,
  startSpan,
  traceFields,
  traceIdOf,
  tracingEnabled,
  withSpan,
  type PublishTrace,
  type Span,
  type TracingOptions,
} from "./trace.ts";
/** For tests: collects finished spans in memory (`setupTracing({ exporter })`). */
export { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-node";
