/**
 * A Server-Sent Events reader for tests: parses a `text/event-stream` response (eventsource-parser, the
 * WHATWG parsing rules) and hands out its events, comments and `retry:` values as they arrive.
 */
import { createParser } from "eventsource-parser";

export interface SseEvent {
  /** `event:` (default `message`). */
  event: string;
  /** `id:`, when the event set one. */
  id: string | undefined;
  data: string;
}

export class SseReader {
  /** Every event received so far, in order. */
  readonly events: SseEvent[] = [];
  /** Every comment line received so far (without the leading colon and space, e.g. `heartbeat`). */
  readonly comments: string[] = [];
  /** `retry:` values received. */
  readonly retries: number[] = [];
  /** Resolves when the server ended the stream (or the reader was closed, or reading failed). */
  readonly ended: Promise<void>;
  /** Whether the stream has ended. */
  done = false;
  /** Why reading failed, if it did (not set when the server closed the stream or close() was called). */
  error: unknown;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  #cursor = 0;
  readonly #waiters = new Set<() => void>();

  constructor(readonly response: Response) {
    if (!response.body) throw new Error(`no body to read events from (status ${response.status})`);
    const reader = response.body.getReader();
    this.#reader = reader;
    const parser = createParser({
      onEvent: (e) => {
        this.events.push({ event: e.event ?? "message", id: e.id, data: e.data });
        this.#wake();
      },
      onComment: (comment) => {
        this.comments.push(comment.trim());
        this.#wake();
      },
      onRetry: (ms) => {
        this.retries.push(ms);
        this.#wake();
      },
    });
    const decoder = new TextDecoder();
    this.ended = (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          parser.feed(decoder.decode(value, { stream: true }));
        }
      } catch (error) {
        if (!this.done) this.error = error;
      } finally {
        this.done = true;
        this.#wake();
      }
    })();
  }

  /** GETs `url` with `headers` and reads its events (throws unless the answer is a 200 event stream). */
  static async open(url: string, headers: Record<string, string> = {}, init: RequestInit = {}): Promise<SseReader> {
    const res = await fetch(url, { ...init, headers: { Accept: "text/event-stream", ...headers } });
    if (res.status !== 200 || !(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      throw new Error(`expected a 200 event stream from ${url}, got ${res.status} ${res.headers.get("content-type")}: ${await res.text()}`);
    }
    return new SseReader(res);
  }

  #wake(): void {
    for (const wake of [...this.#waiters]) wake();
  }

  /** Resolves once `condition()` holds (checked on every event, comment and the end); rejects after timeoutMs. */
  async until(condition: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
    if (condition()) return;
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (condition()) finish(resolve);
        else if (this.done) finish(() => reject(new Error(`the stream ended before ${what} (events: ${JSON.stringify(this.events).slice(0, 2_000)})`)));
      };
      const timer = setTimeout(() => finish(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`))), timeoutMs);
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        settle();
      };
      this.#waiters.add(check);
      check();
    });
  }

  /** The next event not yet taken by `next()`, or null when the stream ended without one. */
  async next(timeoutMs = 60_000): Promise<SseEvent | null> {
    await this.until(() => this.events.length > this.#cursor || this.done, "the next event", timeoutMs);
    const event = this.events[this.#cursor];
    if (event === undefined) return null;
    this.#cursor += 1;
    return event;
  }

  /** Waits for the server to end the stream; returns every event received. */
  async untilEnd(timeoutMs = 120_000): Promise<SseEvent[]> {
    await this.until(() => this.done, "the end of the stream", timeoutMs);
    await this.ended;
    return this.events;
  }

  /** Stops reading (the client goes away: the server sees the connection close). */
  async close(): Promise<void> {
    if (!this.done) {
      this.done = true;
      await this.#reader.cancel().catch(() => undefined);
    }
    await this.ended;
  }
}
