/**
 * The one base of every coded error family: speech synthesis, translation and recognition
 * (`@voiceloc/engines`), media, fetch, blobs, the bus and the task worker. Each family declares its
 * closed union of codes and extends `CodedError<ItsCode>`, so a code outside the union fails to compile,
 * and a `Record<ItsCode, …>` table (the worker's failure policy) fails to compile until a new code is in it.
 *
 * A package of its own with no dependencies: every family can import it without an import circle and
 * without loading anything else (the API schemas of `@voiceloc/contracts` are no business of media).
 */

export interface CodedErrorOptions {
  cause?: unknown;
}

/**
 * An error with a stable machine-readable `code` from its family's closed union; `message` is plain
 * words. What a code means for a task (input, retryable, bug) is decided by the worker's failure
 * policy alone, never by the error.
 */
export class CodedError<Code extends string> extends Error {
  override name = "CodedError";
  readonly code: Code;

  constructor(code: Code, message: string, options: CodedErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}
