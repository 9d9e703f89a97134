/**
 * Tracing with the OpenTelemetry API. The SDK is set up only when asked (`OTEL_EXPORTER_OTLP_ENDPOINT`,
 * or a test's in-memory exporter); until then every helper here is a cheap no-op: no spans, no
 * context propagation, nothing allocated on the hot path.
 *
 * W3C trace context (`traceparent`, `tracestate`) travels in NATS message headers: the bus injects
 * the publish span's context into the work message, the worker extracts it, so a request's trace
 * continues into the task that does the work.
 */
import {
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Span,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-node";

export { SpanKind, SpanStatusCode, type Span } from "@opentelemetry/api";

const TRACER_NAME = "voiceloc";
let provider: NodeTracerProvider | undefined;

export interface TracingOptions {
  /** `service.name` of the spans (e.g. `voiceloc-gateway`). */
  serviceName: string;
  /** OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`); spans go to `<endpoint>/v1/traces`. */
  endpoint?: string | undefined;
  /** Extra OTLP request headers (`OTEL_EXPORTER_OTLP_HEADERS`), e.g. an API key of the collector. */
  headers?: Record<string, string> | undefined;
  /** Tests: export to this exporter, span by span (an InMemorySpanExporter). */
  exporter?: SpanExporter | undefined;
}

/** True once setupTracing ran: spans are recorded and trace context is propagated. */
export function tracingEnabled(): boolean {
  return provider !== undefined;
}

/**
 * Registers the SDK globally (tracer provider, AsyncLocalStorage context manager, W3C trace context
 * propagator) exporting over OTLP/HTTP in batches, or to the given exporter. Does nothing without an
 * endpoint or exporter. Returns the function that flushes and unregisters it.
 */
export function setupTracing(options: TracingOptions): () => Promise<void> {
  if (provider !== undefined) throw new Error("tracing is already set up in this process");
  const processor = options.exporter
    ? new SimpleSpanProcessor(options.exporter)
    : options.endpoint
      ? new BatchSpanProcessor(
          new OTLPTraceExporter({ url: `${options.endpoint.replace(/\/+$/, "")}/v1/traces`, ...(options.headers ? { headers: options.headers } : {}) }),
        )
      : undefined;
  if (processor === undefined) return async () => undefined;
  const current = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": options.serviceName }),
    spanProcessors: [processor],
  });
  current.register({ propagator: new W3CTraceContextPropagator() });
  provider = current;
  return async () => {
    if (provider !== current) return;
    provider = undefined;
    try {
      await current.shutdown();
    } finally {
      trace.disable();
      context.disable();
      propagation.disable();
    }
  };
}

function tracer() {
  return trace.getTracer(TRACER_NAME);
}

/** Ends a span, marking it failed when `error` is given. */
export function endSpan(span: Span | undefined, error?: unknown): void {
  if (span === undefined) return;
  if (error !== undefined) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  }
  span.end();
}

/** Starts a span (child of `parent`, or of the active context); undefined while tracing is off. */
export function startSpan(name: string, options: { kind?: SpanKind; attributes?: Attributes; parent?: Context } = {}): Span | undefined {
  if (provider === undefined) return undefined;
  return tracer().startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, ...(options.attributes ? { attributes: options.attributes } : {}) }, options.parent ?? context.active());
}

/** Runs `fn` with `span` as the active span (so spans and publishes inside it are its children). */
export function withSpan<T>(span: Span | undefined, fn: () => T): T {
  if (span === undefined) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** Trace and span id of the active span, for log lines; empty while tracing is off. */
export function traceFields(span?: Span): { traceId?: string; spanId?: string } {
  if (provider === undefined) return {};
  const active = span ?? trace.getActiveSpan();
  if (active === undefined) return {};
  const { traceId, spanId } = active.spanContext();
  return { traceId, spanId };
}

// ------------------------------------------------------------------ NATS headers

/** A message being published with its trace context; end it once the publish settled. */
export interface PublishTrace {
  /** `traceparent` (and `tracestate`) to send as message headers. */
  headers: Record<string, string>;
  end(error?: unknown): void;
}

/**
 * A producer span for publishing to `subject` (child of the active span), and its W3C context as
 * message headers. Undefined while tracing is off: nothing is added to the message.
 */
export function startPublish(subject: string, attributes: Attributes = {}): PublishTrace | undefined {
  const span = startSpan(`publish ${subject}`, {
    kind: SpanKind.PRODUCER,
    attributes: { "messaging.system": "nats", "messaging.operation.type": "send", "messaging.destination.name": subject, ...attributes },
  });
  if (span === undefined) return undefined;
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), headers);
  return { headers, end: (error) => endSpan(span, error) };
}

/** The trace context carried by a message's headers (the active context when there is none). */
export function contextFromHeaders(headers: Readonly<Record<string, string>> | undefined): Context {
  if (provider === undefined || headers === undefined || headers.traceparent === undefined) return context.active();
  return propagation.extract(context.active(), headers);
}

/** The header names trace context travels in (the bus copies only these from a message). */
export const TRACE_HEADERS = ["traceparent", "tracestate"] as const;

/**
 * The trace id of a message's `traceparent` (`00-<trace id>-<span id>-<flags>`) for its log lines,
 * read from the header itself: it works whether or not this process records spans.
 */
export function traceIdOf(headers: Readonly<Record<string, string>> | undefined): { traceId?: string } {
  const traceparent = headers?.traceparent;
  if (traceparent === undefined || traceparent.length < 55 || traceparent[2] !== "-") return {};
  return { traceId: traceparent.slice(3, 35) };
}
