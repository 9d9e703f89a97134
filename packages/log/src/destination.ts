import type { DestinationStream } from "pino";

/** What pino's own destination (sonic-boom) offers beyond `write`. */
export interface SonicDestination extends DestinationStream {
  flush(cb?: (err?: Error | null) => void): void;
  flushSync(): void;
}

export interface BufferOptions {
  /** Lines are handed on once this many characters are held. */
  minLength: number;
  /** …or once the oldest line held is this old. */
  flushMs: number;
}

/**
 * 64 KiB or a tenth of a second: a busy gateway writes a few hundred times a second, a quiet one at
 * once to the eye. Measured on a file here, a 270-character request line costs 0.21 µs of CPU in
 * 16 KiB writes and 0.09 µs in 64 KiB ones (a pipe holds 64 KiB, so a reader still takes each in one go).
 */
export const DEFAULT_BUFFER: BufferOptions = { minLength: 64 * 1024, flushMs: 100 };

const heldAtExit = new Set<BufferedDestination>();
let exitHooked = false;

/**
 * Standard output, written in chunks: lines are held until `minLength` characters are, or for at most
 * `flushMs`, then handed to pino's destination (sonic-boom, synchronous) as one write.
 *
 * Each write costs a system call, more than a request line itself, so a busy process makes far
 * fewer, larger ones. The writes are synchronous, as pino's default destination's: nothing is ever in
 * flight, so whatever is held is written, in order, when the process exits (`process.exit`, a
 * graceful stop after SIGTERM, the end of the event loop, and an uncaught exception or unhandled
 * rejection: Node emits `exit` for both), and a reader slower than the process holds it back instead
 * of letting lines pile up in memory. sonic-boom's own `minLength` is not used: it measures the byte
 * length of everything still held on every line. Only a kill that runs no JavaScript (SIGKILL, an
 * abort) loses what is held: at most the last tenth of a second.
 */
export class BufferedDestination implements DestinationStream {
  #lines: string[] = [];
  #held = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly sink: SonicDestination,
    private readonly options: BufferOptions = DEFAULT_BUFFER,
  ) {
    heldAtExit.add(this);
    if (!exitHooked) {
      exitHooked = true;
      process.once("exit", () => {
        for (const destination of heldAtExit) destination.flushSync();
      });
    }
  }

  write(line: string): void {
    this.#lines.push(line);
    this.#held += line.length;
    if (this.#held >= this.options.minLength) this.#handOn();
    else this.#timer ??= setTimeout(this.#handOn, this.options.flushMs).unref();
  }

  readonly #handOn = (): void => {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#lines.length === 0) return;
    const text = this.#lines.length === 1 ? (this.#lines[0] as string) : this.#lines.join("");
    this.#lines = [];
    this.#held = 0;
    this.sink.write(text);
  };

  /** pino's `logger.flush(cb)`: everything held is handed on, then written. */
  flush(cb?: (err?: Error | null) => void): void {
    this.#handOn();
    this.sink.flush(cb);
  }

  flushSync(): void {
    this.#handOn();
    this.sink.flushSync();
  }
}
