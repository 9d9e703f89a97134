/**
 * The small collection interface every repository is written against.
 * Two adapters implement it: the embedded SQLite store and MongoDB.
 * Documents are plain JSON objects with a string `id`; field values used in
 * filters, sorts and indexes are strings, numbers, booleans or null.
 */

import { CodedError } from "@voiceloc/errors";

export type Scalar = string | number | boolean | null;

/** A document as the embedded store keeps it: its id and its JSON text. */
export type StoredText = readonly [id: string, text: string];

/** A condition on one top-level field. A bare scalar means equality. */
export type FieldCondition =
  | Scalar
  | {
      $eq?: Scalar;
      $ne?: Scalar;
      $lt?: Scalar;
      $lte?: Scalar;
      $gt?: Scalar;
      $gte?: Scalar;
      $in?: Scalar[];
      /** true: the field is present and not null; false: missing or null. */
      $exists?: boolean;
    };

/** All conditions must hold (AND). Keys are top-level field names. */
export type Filter = Record<string, FieldCondition>;

export type SortDirection = 1 | -1;

export interface FindOptions {
  /** Sort keys in priority order, e.g. [["date_created", -1], ["id", -1]]. */
  sort?: Array<[field: string, direction: SortDirection]>;
  /**
   * Keyset pagination: return only documents strictly after this position in
   * the given sort order. Holds one value per sort field, in the same order.
   */
  after?: Scalar[];
  limit?: number;
}

export interface IndexSpec {
  /** Fields of a compound index, in order, with direction. */
  fields: Array<[field: string, direction: SortDirection]>;
  unique?: boolean;
  /** Optional name; adapters derive one from the fields otherwise. */
  name?: string;
}

export interface Collection<T extends { id: string }> {
  readonly name: string;
  /** Inserts a new document. Throws DuplicateKeyError when `id` or a unique index collides. */
  insert(doc: T): Promise<void>;
  /**
   * Inserts documents in order (added for bulk loads; the embedded store
   * commits them in batched transactions). Stops at the first failure, which
   * it throws (DuplicateKeyError on a collision): documents before the failing
   * one stay inserted, the failing one and those after it are not. This is
   * the same on both adapters (MongoDB's ordered insertMany).
   */
  insertMany(docs: T[]): Promise<void>;
  /** Returns the document with this id, or null. */
  get(id: string): Promise<T | null>;
  /**
   * The document with this id as the JSON text the store keeps, or null, read synchronously; only where
   * documents are kept as text in this process's own database (the embedded store, whose reads never
   * wait on I/O; MongoDB's adapter has none). The text is the same until the document changes, so a
   * reader may keep what it derives from a document for as long as the text is unchanged, reading the
   * text (not parsing it) on every request.
   */
  getTextSync?(id: string): string | null;
  findOne(filter: Filter): Promise<T | null>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  /**
   * `find`'s documents as `[id, JSON text]` pairs, in the same order, read synchronously; only where
   * `getTextSync` is (the embedded store). Each text is the one `getTextSync` gives for its id.
   */
  findTextSync?(filter: Filter, options?: FindOptions): StoredText[];
  /**
   * A number that changes whenever the collection's documents may have changed (every write through
   * this store, and every commit by another connection to the same database), read synchronously;
   * only where `findTextSync` is (the embedded store). While it is unchanged, what a reader derived
   * from the collection's documents, read after the mark was taken, still holds. A write through this
   * store changes it at once; a commit by another connection within `EXTERNAL_CHANGES_MS`.
   */
  changeMarkSync?(): number;
  count(filter: Filter): Promise<number>;
  /**
   * Atomically sets the given top-level fields on the one document matching
   * `filter` (which should include `id` or a unique key) and returns the
   * document after the update, or null when nothing matched.
   */
  updateOne(filter: Filter, set: Partial<T>): Promise<T | null>;
  /** Deletes every matching document; returns how many were deleted. */
  deleteMany(filter: Filter): Promise<number>;
}

export interface CollectionSpec {
  name: string;
  indexes?: IndexSpec[];
}

/** A store opens collections by spec and creates their indexes on open. */
export interface Store {
  readonly kind: "embedded" | "mongodb";
  collection<T extends { id: string }>(spec: CollectionSpec): Promise<Collection<T>>;
  /** Cheap liveness check used by /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Machine-readable reason carried by every error the store throws. */
export type StoreErrorCode =
  | "open_failed"
  | "closed"
  | "unavailable"
  | "backend_error"
  | "duplicate_key"
  | "document_too_large"
  | "invalid_argument"
  | "invalid_collection"
  | "invalid_document"
  | "invalid_field"
  | "invalid_filter"
  | "invalid_index"
  | "invalid_update";

/** Base class of every error the store throws; `code` is stable, `message` is for humans. */
export class StoreError extends CodedError<StoreErrorCode> {
  override name = "StoreError";
}

export class DuplicateKeyError extends StoreError {
  constructor(collection: string, options?: { cause?: unknown }) {
    super("duplicate_key", `A document with the same key already exists in '${collection}'`, options);
    this.name = "DuplicateKeyError";
  }
}
