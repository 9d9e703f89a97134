/**
 * `waitFor`: follows a task over Server-Sent Events (`GET …/{id}/events`) and falls back to polling
 * the record when the server has no events route (404/405), refuses the stream, or the stream
 * breaks off before its final event.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { createParser } from "eventsource-parser";
import type { components } from "./generated/api.ts";
import { ConnectionError, TaskFailedError, WaitTimeoutError, errorFromFetchResponse } from "./errors.ts";

export type TaskStatus = components["schemas"]["TaskStatus"];
/** The three kinds of long-running task. */
export type TaskKind = "audio_book" | "voice_stream" | "subtitle";

/** What every task record has (AudioBook, VoiceStream, SubtitleJob). */
export interface TaskRecord {
  id: string;
  task_status: TaskStatus;
  task_progress: number;
  task_error?: string | null;
  date_updated?: string;
}

export interface ProgressUpdate {
  id: string;
  status: TaskStatus;
  /** Percent, 0–100, never moving backwards. */
  progress: number;
  dateUpdated: string | undefined;
  /** How this update arrived. */
  via: "events" | "polling";
}

export interface WaitOptions<R extends TaskRecord = TaskRecord> {
  /** The record's kind; guessed from its fields when absent (`mode` → subtitle, `name` → audio book, else voice stream). */
  kind?: TaskKind;
  /** Called on every progress change (and once at the start with the record's current state). */
  onProgress?: (update: ProgressUpdate) => void;
  /** Abort the wait (the task goes on on the server). */
  signal?: AbortSignal;
  /** Give up after this long with a WaitTimeoutError (no limit by default). */
  timeoutMs?: number;
  /** Polling period when events are not available (default 1000 ms). */
  pollIntervalMs?: number;
  /** `false`: poll only, never open the events stream. */
  events?: boolean;
  /** Called with the final record just before `waitFor` settles (tests, logging). */
  onFinal?: (record: R, via: "events" | "polling") => void;
}

const BASE_PATH: Record<TaskKind, string> = {
  audio_book: "/v1/audio_books/",
  voice_stream: "/v1/voices/streams/",
  subtitle: "/v1/videos/subtitle/",
};

export function kindOf(record: object): TaskKind {
  if ("mode" in record || "subtitle_format" in record) return "subtitle";
  if ("name" in record) return "audio_book";
  return "voice_stream";
}

export function recordPath(kind: TaskKind, id: string): string {
  return `${BASE_PATH[kind]}${encodeURIComponent(id)}`;
}

type Raw = (path: string, init?: RequestInit) => Promise<Response>;
const FINISHED = new Set<TaskStatus>(["completed", "failed"]);

export async function waitFor<R extends TaskRecord>(raw: Raw, record: R, options: WaitOptions<R> = {}): Promise<R> {
  const kind = options.kind ?? kindOf(record);
  const path = recordPath(kind, record.id);
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(options.signal?.reason);
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) onAbort();
  let timedOut = false;
  const timer =
    options.timeoutMs !== undefined
      ? setTimeout(() => {
          timedOut = true;
          controller.abort();
        }, options.timeoutMs)
      : undefined;
  let last: { status: TaskStatus; progress: number } | undefined;
  const report = (update: Omit<ProgressUpdate, "id">): void => {
    if (last && last.status === update.status && last.progress === update.progress) return;
    last = { status: update.status, progress: update.progress };
    options.onProgress?.({ id: record.id, ...update });
  };
  const finish = (final: R, via: "events" | "polling"): R => {
    report({ status: final.task_status, progress: final.task_progress, dateUpdated: final.date_updated, via });
    options.onFinal?.(final, via);
    if (final.task_status === "failed") throw new TaskFailedError(final);
    return final;
  };
  try {
    report({ status: record.task_status, progress: record.task_progress, dateUpdated: record.date_updated, via: "polling" });
    if (FINISHED.has(record.task_status)) return finish(record, "polling");
    if (options.events !== false) {
      const final = await followEvents<R>(raw, `${path}/events`, controller.signal, report);
      if (final) return finish(final, "events");
    }
    return finish(await poll<R>(raw, path, controller.signal, options.pollIntervalMs ?? 1000, report), "polling");
  } catch (error) {
    if (timedOut) throw new WaitTimeoutError(record.id, options.timeoutMs ?? 0);
    if (controller.signal.aborted && options.signal?.aborted) throw options.signal.reason ?? error;
    throw error;
  } finally {
    if (timer) clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
  }
}

/** The final record from the events stream, or undefined when the caller should poll instead. */
async function followEvents<R extends TaskRecord>(
  raw: Raw,
  path: string,
  signal: AbortSignal,
  report: (update: Omit<ProgressUpdate, "id">) => void,
): Promise<R | undefined> {
  let response: Response;
  try {
    response = await raw(path, { headers: { Accept: "text/event-stream" }, signal });
  } catch (error) {
    if (signal.aborted) throw error;
    return undefined; // cannot reach the stream: polling will tell whether the service is there at all
  }
  if (response.status === 401 || response.status === 403) throw await errorFromFetchResponse(response, "GET");
  const type = response.headers.get("content-type") ?? "";
  if (!response.ok || !response.body || !type.startsWith("text/event-stream")) {
    // 404/405 (no events route on this server, or an unknown id: polling answers that), 429 (too many
    // streams), anything unexpected: poll.
    await response.body?.cancel().catch(() => undefined);
    return undefined;
  }
  let final: R | undefined;
  const parser = createParser({
    onEvent: (event) => {
      if (final) return;
      try {
        const data = JSON.parse(event.data) as Partial<TaskRecord> & Record<string, unknown>;
        if (event.event === "progress" && typeof data.task_progress === "number" && typeof data.task_status === "string") {
          report({ status: data.task_status, progress: data.task_progress, dateUpdated: typeof data.date_updated === "string" ? data.date_updated : undefined, via: "events" });
        } else if (event.event === "completed" || event.event === "failed") {
          final = data as unknown as R;
        }
      } catch {
        // a frame that is not JSON: ignore it, the final record still comes (or polling takes over)
      }
    },
  });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  try {
    while (!final) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } catch (error) {
    if (signal.aborted) throw error;
    return undefined; // the stream broke off: poll
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return final;
}

async function poll<R extends TaskRecord>(
  raw: Raw,
  path: string,
  signal: AbortSignal,
  intervalMs: number,
  report: (update: Omit<ProgressUpdate, "id">) => void,
): Promise<R> {
  let failures = 0;
  for (;;) {
    let response: Response;
    try {
      response = await raw(path, { signal });
    } catch (error) {
      if (signal.aborted || !(error instanceof ConnectionError) || failures >= 5) throw error;
      failures += 1;
      await sleep(intervalMs * 2 ** failures, undefined, { signal });
      continue;
    }
    failures = 0;
    if (!response.ok) throw await errorFromFetchResponse(response, "GET");
    const current = (await response.json()) as R;
    if (FINISHED.has(current.task_status)) return current;
    report({ status: current.task_status, progress: current.task_progress, dateUpdated: current.date_updated, via: "polling" });
    await sleep(intervalMs, undefined, { signal });
  }
}
