import type { TaskDoc } from "./repository.ts";

/** A JSON body and its length in bytes (the Content-Length field). */
export interface Reply {
  body: string;
  length: string;
}

export const replyOf = (value: unknown): Reply => {
  const body = JSON.stringify(value);
  return { body, length: String(Buffer.byteLength(body)) };
};

interface View<T extends TaskDoc> extends Reply {
  /** The stored JSON text the answer was made from. */
  text: string;
  /** The collection's change mark taken before `text` was read (undefined: none was given). */
  mark: number | undefined;
  doc: T;
  /** When the reply was made (its signed links change with the second they are signed in). */
  second: number;
}

/**
 * What the remembered views may weigh before the memo starts over, counted as three times each
 * record's stored text (the text, the parsed document and the answer are each about its size):
 * records can be large (names and file references of thousands of characters), so the bound is
 * by size, not by count.
 */
const VIEWS_MAX_WEIGHT = 48 * 1024 * 1024;

const weightOf = (text: string) => 3 * text.length;

/**
 * The API's JSON for records of one kind, made from the text the embedded store keeps for each
 * (`Collection.getTextSync`, `findTextSync`) and remembered with that text: while a record's text
 * is unchanged, its answer is reused (made anew each second, as its signed links are); once the
 * text changed, it is parsed and presented anew. So a read shows progress at once, and nothing but
 * the rendering is kept. Given the collection's change mark, a reader can tell that a record's text
 * is unchanged without reading it (`atMark`).
 */
export class RecordViews<T extends TaskDoc> {
  readonly #views = new Map<string, View<T>>();
  #weight = 0;

  constructor(
    private readonly present: (doc: T) => unknown,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The record's answer without reading its text: when its text was last read after the collection's
   * change mark was `mark` (`Collection.changeMarkSync`) and the mark is still that, the text cannot
   * have changed. Null when the record is not `owner`'s; undefined when the text must be read.
   */
  atMark(id: string, mark: number, owner: string): Reply | null | undefined {
    const view = this.#views.get(id);
    if (view === undefined || view.mark !== mark) return undefined;
    return this.#current(view, owner);
  }

  /**
   * The record's answer from its stored `text`, if it is `owner`'s; null otherwise. `mark`: the
   * collection's change mark taken before the text was read, for `atMark`.
   */
  fromText(id: string, text: string, owner: string, mark?: number): Reply | null {
    let view = this.#views.get(id);
    if (view === undefined || view.text !== text) {
      const doc = JSON.parse(text) as T;
      if (doc.account_id !== owner) return null;
      this.#weight += weightOf(text) - (view === undefined ? 0 : weightOf(view.text));
      if (this.#weight > VIEWS_MAX_WEIGHT) {
        this.#views.clear();
        this.#weight = weightOf(text);
      }
      view = { text, mark, doc, ...replyOf(this.present(doc)), second: Math.floor(this.now() / 1000) };
      this.#views.set(id, view);
      return view;
    }
    view.mark = mark;
    return this.#current(view, owner);
  }

  /** A remembered view's answer for `owner` (null when not theirs), made anew once its second is over. */
  #current(view: View<T>, owner: string): Reply | null {
    if (view.doc.account_id !== owner) return null;
    const second = Math.floor(this.now() / 1000);
    if (view.second !== second) {
      const reply = replyOf(this.present(view.doc));
      view.body = reply.body;
      view.length = reply.length;
      view.second = second;
    }
    return view;
  }
}
