/**
 * Live progress of task records over Server-Sent Events.
 *
 * One `RecordEvents` per gateway process fans changes out to the open streams (a map record → streams):
 * changes this process projects come from `TaskMesh.onChange` and are pushed at once; they are also
 * announced with a small core notice on the bus (`notices.record.<kind>.<id>`, never stored), and the one
 * notice subscription of every other gateway process re-reads the record from the shared store and
 * pushes it to its own streams. With the in-process bus (single machine) the same path runs in one
 * process; a process ignores its own notices. Notices are at most once, so every watched record is
 * also re-read once per heartbeat period: a lost notice delays a stream by at most that long.
 *
 * Event ids are derived from the record alone (progress in hundredths and a status rank), so they rise
 * with the record whichever gateway serves the stream, and `Last-Event-ID` resumes on any gateway
 * without repeating what the client has: a stream only ever sends a state whose id is higher than the
 * last one sent (or than the client's `Last-Event-ID`).
 */
import { randomUUID } from "node:crypto";
import type { Context } from "hono";
import type { Bus, BusSubscription } from "@voiceloc/bus";
import { RecordNoticeSchema, SUBJECTS, type RecordNotice, type TaskKind, type TaskStatus } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import type { RecordReaders } from "./read.ts";
import type { StreamPlaces } from "../mesh/places.ts";
import type { RecordChange } from "../mesh/tasks.ts";
import { TASK_KINDS } from "./kinds.ts";
import { FINISHED_STATUSES, type TaskDoc, type TaskRepository } from "./repository.ts";
import type { GatewayEnv } from "../http/context.ts";
import { NotFoundError, ServiceUnavailableError, TooManyRequestsError } from "../http/errors.ts";
import { requestLog } from "../http/context.ts";
import { requestHeader } from "../http/respond.ts";

/** Rank of a status in an event id: a later status of the same progress gets the higher id. */
const STATUS_RANK: Record<TaskStatus, number> = { queued: 0, processing: 1, failed: 2, completed: 3 };

/**
 * The event id of a record's state: `progress in hundredths × 4 + status rank`. Progress never falls
 * and a status never goes back at the same progress, so the id rises with every change a client can
 * see, and every gateway computes the same id for the same state.
 */
export function eventIdOf(record: Pick<TaskDoc, "task_status" | "task_progress">): number {
  const hundredths = Math.round(Math.min(100, Math.max(0, record.task_progress)) * 100);
  return hundredths * 4 + STATUS_RANK[record.task_status];
}

/** A `Last-Event-ID` as sent by a client: a whole number up to the highest id, or undefined (ignored). */
export function parseLastEventId(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = raw.trim();
  if (!/^\d{1,6}$/.test(value)) return undefined;
  return Number(value);
}

/** What the client reconnects after when a stream drops (SSE `retry:`), in ms. */
export const SSE_RETRY_MS = 2_000;
/** A client that lets this many bytes pile up unread is cut off (it reconnects with Last-Event-ID). */
const MAX_BUFFERED_BYTES = 1024 * 1024;

/** One open stream, as the fan-out sees it. */
interface Watcher {
  ownerId: string;
  deliver(record: TaskDoc): void;
  /** Ends the stream (server shutdown). */
  close(): void;
}

export interface RecordEventsOptions {
  repos: Record<TaskKind, Pick<TaskRepository<TaskDoc>, "get">>;
  /** The bus to the other gateways; without it only this process's changes reach its streams. */
  bus?: Bus | undefined;
  logger: Logger;
  heartbeatMs: number;
  /** Open streams per owner across every gateway sharing the store (their places: `places`). */
  maxStreamsPerAccount: number;
  places: StreamPlaces;
}

/** The fan-out of record changes to this process's open streams (one per gateway process). */
export class RecordEvents {
  readonly heartbeatMs: number;
  readonly maxStreamsPerAccount: number;
  readonly #options: RecordEventsOptions;
  readonly #logger: Logger;
  /** `<kind>:<id>` → the open streams of that record. */
  readonly #watchers = new Map<string, Set<Watcher>>();
  /** Owner → its open streams in this process. */
  readonly #owners = new Map<string, number>();
  /** Places being freed (stop waits for them). */
  readonly #releases = new Set<Promise<void>>();
  /** Re-reads in flight after a notice, per record; `again` when another notice came meanwhile. */
  readonly #rereads = new Map<string, { again: boolean; done: Promise<void> }>();
  /** This process, in the notices it publishes (it skips its own). */
  readonly #origin = randomUUID();
  #subscription: BusSubscription | undefined;
  #unhook: (() => void) | undefined;
  #sweepTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: RecordEventsOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: "record-events" });
    this.heartbeatMs = options.heartbeatMs;
    this.maxStreamsPerAccount = options.maxStreamsPerAccount;
  }

  /** Listens to the changes a `TaskMesh` of this process projects. */
  attach(mesh: { onChange(listener: (change: RecordChange) => void): () => void }): void {
    this.#unhook?.();
    this.#unhook = mesh.onChange((change) => this.#projected(change));
  }

  /** The one notice subscription of this process, and the periodic re-read of watched records. */
  async start(): Promise<void> {
    const bus = this.#options.bus;
    if (this.#closed) return;
    await this.#options.places.renew();
    if (!this.#sweepTimer) {
      this.#sweepTimer = setInterval(() => {
        this.#sweep();
        this.#options.places.renew().catch((error: unknown) => this.#logger.warn({ err: error }, "could not renew this gateway's lease on its stream places"));
      }, this.heartbeatMs);
      this.#sweepTimer.unref();
    }
    if (!bus || this.#subscription) return;
    this.#subscription = await bus.subscribeNotices(SUBJECTS.allRecordNotices, RecordNoticeSchema, ({ data }) => this.#notice(data));
  }

  /** Ends every open stream (their clients reconnect elsewhere), refuses new ones, stops listening. */
  async stop(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweepTimer);
    this.#sweepTimer = undefined;
    this.#unhook?.();
    this.#unhook = undefined;
    for (const watchers of [...this.#watchers.values()]) for (const watcher of [...watchers]) watcher.close();
    await this.#subscription?.stop({ graceMs: 2_000 });
    this.#subscription = undefined;
    await Promise.allSettled([...this.#rereads.values()].map((r) => r.done));
    await Promise.allSettled([...this.#releases]);
    await this.#options.places.stop().catch((error: unknown) => this.#logger.warn({ err: error }, "could not free this gateway's stream places; they are freed when its lease expires"));
  }

  /** Open streams, records watched and owners with a stream, in this process (tests check for leaks). */
  stats(): { streams: number; records: number; owners: number } {
    let streams = 0;
    for (const set of this.#watchers.values()) streams += set.size;
    return { streams, records: this.#watchers.size, owners: this.#owners.size };
  }

  /**
   * Registers a stream of a record; returns its release, or why not: `limit` (the owner holds
   * `maxStreamsPerAccount` streams across the mesh already) or `closed` (the gateway is stopping).
   */
  async watch(kind: TaskKind, id: string, watcher: Watcher): Promise<(() => void) | "limit" | "closed"> {
    if (this.#closed) return "closed";
    const place = await this.#options.places.claim(watcher.ownerId, this.maxStreamsPerAccount);
    if (place === null) return "limit";
    if (this.#closed) {
      this.#free(place);
      return "closed";
    }
    this.#owners.set(watcher.ownerId, (this.#owners.get(watcher.ownerId) ?? 0) + 1);
    const key = `${kind}:${id}`;
    let set = this.#watchers.get(key);
    if (!set) this.#watchers.set(key, (set = new Set()));
    set.add(watcher);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const current = this.#watchers.get(key);
      if (current?.delete(watcher) && current.size === 0) this.#watchers.delete(key);
      const left = (this.#owners.get(watcher.ownerId) ?? 1) - 1;
      if (left > 0) this.#owners.set(watcher.ownerId, left);
      else this.#owners.delete(watcher.ownerId);
      this.#free(place);
    };
  }

  #free(place: string): void {
    const release: Promise<void> = this.#options.places
      .release(place)
      .catch((error: unknown) => this.#logger.warn({ err: error, place }, "could not free a stream's place; it is freed when this gateway's lease expires"))
      .finally(() => this.#releases.delete(release));
    this.#releases.add(release);
  }

  #deliver(key: string, record: TaskDoc): void {
    const watchers = this.#watchers.get(key);
    if (!watchers) return;
    for (const watcher of [...watchers]) {
      try {
        watcher.deliver(record);
      } catch (error) {
        this.#logger.error({ err: error, taskId: record.id }, "live progress stream failed to take a change");
      }
    }
  }

  /** A change this process projected: to its own streams now, to the other gateways by notice. */
  #projected(change: RecordChange): void {
    this.#deliver(`${change.kind}:${change.record.id}`, change.record);
    const bus = this.#options.bus;
    if (!bus || this.#closed) return;
    const notice: RecordNotice = { kind: change.kind, id: change.record.id, origin: this.#origin };
    bus.notify(SUBJECTS.recordNotice(change.kind, change.record.id), notice).catch((error: unknown) => {
      // a hint only: streams elsewhere catch up with the next change (and the final state is re-read on reconnect)
      this.#logger.warn({ err: error, taskId: change.record.id }, "could not announce a record change to the other gateways");
    });
  }

  /** Another gateway changed a record: re-read it for the streams here. */
  #notice(notice: RecordNotice): void {
    if (notice.origin === this.#origin || this.#closed) return;
    this.#reread(notice.kind, notice.id);
  }

  /**
   * Every watched record read again once per heartbeat period: notices are at most once (one published
   * while NATS reconnects is gone), so a stream whose notice was lost still gets the change, and the
   * final event, within a period. One read per record, whatever the number of its streams.
   */
  #sweep(): void {
    for (const key of this.#watchers.keys()) {
      const at = key.indexOf(":");
      this.#reread(key.slice(0, at) as TaskKind, key.slice(at + 1));
    }
  }

  /** Reads the record for the streams here; one read at a time per record, again if asked meanwhile. */
  #reread(kind: TaskKind, id: string): void {
    const key = `${kind}:${id}`;
    if (this.#closed || !this.#watchers.has(key)) return;
    const running = this.#rereads.get(key);
    if (running) {
      running.again = true;
      return;
    }
    const entry = { again: true, done: Promise.resolve() };
    entry.done = (async () => {
      try {
        while (entry.again && !this.#closed && this.#watchers.has(key)) {
          entry.again = false;
          const record = await this.#options.repos[kind].get(id);
          if (record) this.#deliver(key, record);
        }
      } catch (error) {
        this.#logger.warn({ err: error, taskId: id }, "could not re-read a record for its live progress streams");
      } finally {
        this.#rereads.delete(key);
      }
    })();
    this.#rereads.set(key, entry);
  }
}

function frame(event: string, id: number, data: string): string {
  return `event: ${event}\nid: ${id}\ndata: ${data}\n\n`;
}

function isFinished(doc: TaskDoc): boolean {
  return FINISHED_STATUSES.includes(doc.task_status);
}

const STREAM_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  // nginx and compatible proxies: pass frames through as they come
  "x-accel-buffering": "no",
};

/**
 * The live progress stream of one record of `ownerId` (the caller resolved and authorised the owner):
 * 404 (JSON) when the record does not exist or is another owner's, 429 when the owner holds too many
 * streams here, 204 when `Last-Event-ID` shows the client has the final event already; otherwise 200
 * `text/event-stream`: `retry:`, the current state (unless `Last-Event-ID` covers it), every later
 * change, the final `completed`/`failed` event with the record as GET returns it, then the end.
 */
/** What a stream needs of the gateway. */
export interface EventStreamDeps {
  reads: RecordReaders;
  events: RecordEvents;
  logger: Logger;
}

export async function recordEventStream(c: Context<GatewayEnv>, deps: EventStreamDeps, target: { kind: TaskKind; ownerId: string; id: string }): Promise<Response> {
  const spec = TASK_KINDS[target.kind];
  const reader = deps.reads[target.kind];
  const repo = reader.docs;
  const hub = deps.events;
  const found = await repo.getOwned(target.ownerId, target.id);
  if (!found) throw new NotFoundError(spec.notFound);
  const lastEventId = parseLastEventId(requestHeader(c, "last-event-id"));
  const headers = { ...c.get("headerFields"), ...STREAM_HEADERS };
  const answer = (res: Response) => {
    c.set("respondedWith", res);
    return res;
  };
  // The client has the final event already: 204 tells an EventSource to stop reconnecting.
  if (lastEventId !== undefined && isFinished(found) && eventIdOf(found) <= lastEventId) {
    return answer(new Response(null, { status: 204, headers: { ...c.get("headerFields") } }));
  }
  // HEAD: the headers a GET would get, no stream.
  if (c.req.method === "HEAD") return answer(new Response(null, { status: 200, headers }));

  const log = requestLog(c, deps.logger);
  const encoder = new TextEncoder();
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  let lastSent = lastEventId ?? -1;
  let ended = false;
  let heartbeat: NodeJS.Timeout | undefined;
  let release: (() => void) | undefined = undefined;

  const cleanup = () => {
    if (ended) return;
    ended = true;
    clearInterval(heartbeat);
    release?.();
    log.debug({ taskId: target.id, kind: target.kind, lastEventId: lastSent }, "live progress stream ended");
  };
  const end = () => {
    if (ended) return;
    cleanup();
    try {
      controller?.close();
    } catch {
      // already closed or errored
    }
  };
  const write = (text: string) => {
    if (ended || !controller) return;
    controller.enqueue(encoder.encode(text));
    if ((controller.desiredSize ?? 0) < -MAX_BUFFERED_BYTES) {
      log.warn({ taskId: target.id }, "live progress stream closed: the client does not read");
      end();
    }
  };
  const send = (record: TaskDoc) => {
    if (ended) return;
    const id = eventIdOf(record);
    if (id <= lastSent) return;
    lastSent = id;
    if (isFinished(record)) {
      // the record exactly as GET answers it (a final record changes no more)
      reader.presented(record.id).then(
        (presented) => {
          write(frame(record.task_status, id, JSON.stringify(presented)));
          end();
        },
        (error: unknown) => {
          log.warn({ err: error, taskId: target.id }, "live progress stream closed: the finished record could not be read");
          end();
        },
      );
      return;
    }
    const data = { id: record.id, task_status: record.task_status, task_progress: record.task_progress, date_updated: record.date_updated };
    write(frame("progress", id, JSON.stringify(data)));
  };

  const body = new ReadableStream<Uint8Array>(
    {
      start: (ctrl) => {
        controller = ctrl;
      },
      // the client went away (or the response was dropped)
      cancel: () => cleanup(),
    },
    { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
  );

  const watched = await hub.watch(target.kind, target.id, { ownerId: target.ownerId, deliver: send, close: end });
  if (watched === "limit") {
    throw new TooManyRequestsError(`Too many open event streams: at most ${hub.maxStreamsPerAccount} per account at once; close one first`, 5);
  }
  if (watched === "closed") throw new ServiceUnavailableError("The gateway is shutting down; reconnect", 1);
  release = watched;
  try {
    write(`retry: ${SSE_RETRY_MS}\n\n`);
    // read again now that changes reach this stream: nothing between the first read and the watch is lost
    const current = await repo.get(target.id);
    if (current) send(current);
    else end();
  } catch (error) {
    end();
    throw error;
  }
  if (!ended) {
    heartbeat = setInterval(() => write(": heartbeat\n\n"), hub.heartbeatMs);
    heartbeat.unref();
  }
  log.debug({ taskId: target.id, kind: target.kind, lastEventId }, "live progress stream opened");
  return answer(new Response(body, { status: 200, headers }));
}
