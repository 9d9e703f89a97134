/**
 * Task and stage timing for the worker runtime: one `TaskTelemetry` per delivery counts the task
 * (started, then completed / failed / retried), times it and its stages, and, with tracing on, is a
 * consumer span continuing the trace carried by the work message, with a child span per stage.
 */
import type { Span } from "@opentelemetry/api";
import { taskDuration, taskStageDuration, tasksInProgress, tasksTotal } from "./metrics.ts";
import { SpanKind, contextFromHeaders, endSpan, startSpan, traceFields, withSpan } from "./trace.ts";

/** How a delivery ended: done, failed for good, or handed back to the queue for another delivery. */
export type TaskStatus = "completed" | "failed" | "retried";

/**
 * Stage names as the workers report them (`ctx.progress(percent, stage)`) → the short stage label.
 * `null` marks a milestone ("text ready"): it ends the running stage without starting another.
 */
const STAGES: Record<string, string | null> = {
  "fetching the text": "fetch",
  "fetching the audio": "fetch",
  "fetching the video": "fetch",
  "text ready": null,
  "inspecting the video": "probe",
  "decoding the audio": "decode",
  "extracting the sound": "decode",
  "recognising speech": "recognize",
  translating: "translate",
  translated: null,
  "building the cues": "cues",
  speaking: "synthesize",
  "placing the speech on the track": "mix",
  joining: "encode",
  "rendering the video": "render",
};

/**
 * The stage label of a reported stage: the table above, else the words themselves made a label
 * (`"Writing the file"` → `writing_the_file`, at most 40 characters). Stages are literals in the
 * workers' code, so the set stays small.
 */
export function stageLabel(stage: string): string | null {
  const known = STAGES[stage];
  if (known !== undefined) return known;
  return (
    stage
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "_")
      .replace(/^_+|_+$/g, "")
      .slice(0, 40) || "other"
  );
}

export interface TaskTelemetryOptions {
  kind: string;
  taskId: string;
  deliveryCount: number;
  /** The work message's headers (W3C trace context). */
  headers?: Readonly<Record<string, string>> | undefined;
}

export interface TaskTelemetry {
  /** Runs `fn` with the task span active (engine calls and publishes inside become its children). */
  run<T>(fn: () => T): T;
  /** A stage reported by the handler; a new label ends the running stage and starts this one. */
  stage(stage: string): void;
  /** Ends the running stage and the task; idempotent. */
  end(status: TaskStatus, error?: unknown): void;
  /** Trace and span id of the task, for its log lines (empty while tracing is off). */
  readonly logFields: { traceId?: string; spanId?: string };
}

export function startTaskTelemetry(options: TaskTelemetryOptions): TaskTelemetry {
  const { kind } = options;
  const started = performance.now();
  tasksTotal.inc({ kind, status: "started" });
  tasksInProgress.inc({ kind });
  const span = startSpan(`task ${kind}`, {
    kind: SpanKind.CONSUMER,
    parent: contextFromHeaders(options.headers),
    attributes: { "voiceloc.task.kind": kind, "voiceloc.task.id": options.taskId, "messaging.system": "nats", "messaging.operation.type": "process", "voiceloc.task.delivery": options.deliveryCount },
  });
  let current: { label: string; at: number; span: Span | undefined } | undefined;
  let ended = false;

  const endStage = () => {
    if (current === undefined) return;
    taskStageDuration.observe({ kind, stage: current.label }, (performance.now() - current.at) / 1_000);
    endSpan(current.span);
    current = undefined;
  };

  return {
    run: (fn) => withSpan(span, fn),
    stage(stage) {
      if (ended) return;
      const label = stageLabel(stage);
      if (label === current?.label) return;
      endStage();
      if (label === null) return;
      current = { label, at: performance.now(), span: withSpan(span, () => startSpan(`stage ${label}`, { attributes: { "voiceloc.task.stage": label } })) };
    },
    end(status, error) {
      if (ended) return;
      ended = true;
      endStage();
      tasksTotal.inc({ kind, status });
      tasksInProgress.dec({ kind });
      taskDuration.observe({ kind, status }, (performance.now() - started) / 1_000);
      if (span !== undefined) {
        span.setAttribute("voiceloc.task.status", status);
        endSpan(span, status === "completed" ? undefined : (error ?? new Error(`task ${status}`)));
      }
    },
    logFields: span === undefined ? {} : traceFields(span),
  };
}
