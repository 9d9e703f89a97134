/**
 * Why a book file could not be read. A BookTextError (so the pipeline's mapping of a text it cannot
 * use to a failed task holds for every format), with a finer `reason`; the message is for the user.
 */
import { BookTextError } from "../text.ts";

export type BookInputReason =
  /** Not a format we read (binary data, a ZIP that is no EPUB, an encoding we do not decode). */
  | "not_text"
  /** Nothing to speak in it. */
  | "empty"
  /** More text than `maxCharacters`. */
  | "too_long"
  /** An archive that unpacks to more than `maxUnpackedBytes`, or holds more entries than allowed. */
  | "too_large"
  /** A damaged or inconsistent archive or package (missing container, sizes that lie, bad ZIP). */
  | "damaged"
  /** An EPUB whose text is encrypted (DRM). */
  | "protected";

export class BookInputError extends BookTextError {
  override name = "BookInputError";
  readonly reason: BookInputReason;
  constructor(reason: BookInputReason, message: string) {
    super(reason === "empty" ? "empty" : "not_text", message);
    this.reason = reason;
  }
}

/** Counts the characters (code points) of text to speak as it is produced; refuses past the bound. */
export class TextBudget {
  private used = 0;
  constructor(
    readonly maxCharacters: number,
    private readonly signal?: AbortSignal,
  ) {}

  /** Adds `text` to the count; throws a BookInputError once the book is over the bound. */
  add(text: string): void {
    this.signal?.throwIfAborted();
    let n = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0xdc00 || c > 0xdfff) n++;
    }
    this.used += n;
    if (this.used > this.maxCharacters) {
      throw new BookInputError(
        "too_long",
        `The book is too long: it has more than ${this.maxCharacters.toLocaleString("en")} characters of text to speak.`,
      );
    }
  }

  get characters(): number {
    return this.used;
  }
}
