import type { Collection, Filter, FindOptions, Store, StoredText } from "@voiceloc/store";
import type { TaskStatus } from "@voiceloc/contracts";
import { decodeCursor, encodeCursor } from "./cursor.ts";

/** Fields every task record (audio book, voice stream, subtitle job) carries in the store. */
export interface TaskDoc {
  id: string;
  account_id: string;
  task_status: TaskStatus;
  task_progress: number;
  task_error: string | null;
  /** Blob key of the result, turned into a signed URL when the record is read. */
  result_key: string | null;
  /** Highest progress-event sequence applied; stale events never move a record backwards. */
  seq: number;
  /** False until the work message is on the bus (outbox flag for the re-publish sweep). */
  published: boolean;
  /**
   * The webhook outbox: set by the very update that moves the record to `completed` or `failed`, and
   * cleared once its webhook deliveries are on the queue; a record still marked after a crash is found
   * by the outbox sweep (`pendingWebhooks`). Missing on records that never finished.
   */
  webhooks_pending?: boolean;
  date_created: string;
  date_updated: string;
}

export interface ListQuery {
  limit: number;
  cursor?: string | undefined;
  taskStatus?: TaskStatus | undefined;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export class InvalidCursorError extends Error {
  readonly code = "invalid_cursor";
  constructor() {
    super("invalid cursor");
    this.name = "InvalidCursorError";
  }
}

/** The order of every list: newest first (`date_created`, then `id`). */
const NEWEST_FIRST: FindOptions["sort"] = [
  ["date_created", -1],
  ["id", -1],
];

/** The store query for one page after the opaque `cursor` (one row more than the page, to tell whether another follows). */
function newestFirstQuery(limit: number, cursor: string | undefined): FindOptions {
  let after: [string, string] | undefined;
  if (cursor !== undefined) {
    const decoded = decodeCursor(cursor);
    if (!decoded) throw new InvalidCursorError();
    after = decoded;
  }
  return { sort: NEWEST_FIRST, ...(after ? { after } : {}), limit: limit + 1 };
}

/** The page of `rows` (found by `newestFirstQuery`), with the cursor of the next page made from the last row's document. */
function pageOf<R>(rows: R[], limit: number, docOf: (row: R) => { id: string; date_created: string }): Page<R> {
  const items = rows.length > limit ? rows.slice(0, limit) : rows;
  const last = items[items.length - 1];
  if (rows.length <= limit || last === undefined) return { items, nextCursor: null };
  const doc = docOf(last);
  return { items, nextCursor: encodeCursor(doc.date_created, doc.id) };
}

/**
 * One page of `filter`'s documents, newest first (`date_created`, then `id`), after the opaque
 * `cursor` of the previous page: the keyset paging every list of the API shares.
 */
export async function newestFirstPage<T extends { id: string; date_created: string }>(
  collection: Collection<T>,
  filter: Filter,
  limit: number,
  cursor: string | undefined,
): Promise<Page<T>> {
  return pageOf(await collection.find(filter, newestFirstQuery(limit, cursor)), limit, (doc) => doc);
}

export const TASK_INDEXES = [
  { fields: [["account_id", 1], ["date_created", -1], ["id", -1]] as Array<[string, 1 | -1]> },
  { fields: [["account_id", 1], ["task_status", 1], ["date_created", -1], ["id", -1]] as Array<[string, 1 | -1]> },
  { fields: [["published", 1], ["date_created", 1]] as Array<[string, 1 | -1]> },
  // the scheduler's walk over accounts with waiting work, oldest first within an account
  { fields: [["published", 1], ["account_id", 1], ["date_created", 1]] as Array<[string, 1 | -1]> },
  // the webhook outbox sweep: finished records whose deliveries are not on the queue yet
  { fields: [["webhooks_pending", 1], ["date_updated", 1]] as Array<[string, 1 | -1]> },
];

/** The owner's records, of one status if asked. */
function listFilter(accountId: string, query: ListQuery): Filter {
  const filter: Filter = { account_id: accountId };
  if (query.taskStatus) filter.task_status = query.taskStatus;
  return filter;
}

/** Statuses after which a task takes no more work. */
export const FINISHED_STATUSES: readonly TaskStatus[] = ["completed", "failed"];

/** One repository for every kind of task record; each record belongs to one account. */
export class TaskRepository<T extends TaskDoc> {
  private constructor(private readonly collection: Collection<T>) {}

  static async open<T extends TaskDoc>(store: Store, name: string): Promise<TaskRepository<T>> {
    return new TaskRepository(await store.collection<T>({ name, indexes: TASK_INDEXES }));
  }

  async create(doc: T): Promise<T> {
    await this.collection.insert(doc);
    return doc;
  }

  /** The record by id, whoever owns it (internal use: projection, scheduler). */
  async get(id: string): Promise<T | null> {
    return this.collection.get(id);
  }

  /**
   * The record (whoever owns it) as the JSON text the store keeps, read synchronously; null when there
   * is none, undefined when the store keeps no text (see `Collection.getTextSync`).
   */
  getTextSync(id: string): string | null | undefined {
    return this.collection.getTextSync?.(id);
  }

  /** The record if it exists and belongs to the account; null otherwise (callers answer 404 either way). */
  async getOwned(accountId: string, id: string): Promise<T | null> {
    const doc = await this.collection.get(id);
    return doc && doc.account_id === accountId ? doc : null;
  }

  async list(accountId: string, query: ListQuery): Promise<Page<T>> {
    return newestFirstPage(this.collection, listFilter(accountId, query), query.limit, query.cursor);
  }

  /**
   * A number that changes whenever any record of this kind may have changed (see
   * `Collection.changeMarkSync`); undefined when the store keeps none.
   */
  changeMarkSync(): number | undefined {
    return this.collection.changeMarkSync?.();
  }

  /**
   * `list`'s page as the `[id, JSON text]` pairs the store keeps, read synchronously; undefined when
   * the store keeps no text (see `Collection.findTextSync`). InvalidCursorError as `list`.
   */
  listTextSync(accountId: string, query: ListQuery): Page<StoredText> | undefined {
    if (this.collection.findTextSync === undefined) return undefined;
    const rows = this.collection.findTextSync(listFilter(accountId, query), newestFirstQuery(query.limit, query.cursor));
    return pageOf(rows, query.limit, ([, text]) => JSON.parse(text) as TaskDoc);
  }

  /** How many of the owner's records are still queued or processing. */
  countUnfinished(accountId: string): Promise<number> {
    return this.collection.count({ account_id: accountId, task_status: { $in: ["queued", "processing"] } });
  }

  /** Updates an owned record's fields; null when it does not exist or is another account's. */
  async updateOwned(accountId: string, id: string, set: Partial<T>): Promise<T | null> {
    return this.collection.updateOne({ id, account_id: accountId }, set);
  }

  /**
   * Applies a progress event. Status, error and result follow the newest event (highest `seq`);
   * `task_progress` only ever rises, whatever the order or the number of deliveries: a retry's
   * opening event at 0 never lowers it. Each step is one conditional update, so two projections
   * racing on the same record keep both rules. Returns whether the event's status was applied.
   */
  async applyEvent(id: string, seq: number, set: Partial<T>, progress: number): Promise<boolean> {
    const fields = { ...set } as Partial<T> & { task_progress?: number; task_status?: TaskStatus; webhooks_pending?: boolean };
    delete fields.task_progress;
    // a finishing status writes its webhook outbox mark in the same update
    if (fields.task_status !== undefined && FINISHED_STATUSES.includes(fields.task_status)) fields.webhooks_pending = true;
    if (fields.task_status === "completed") {
      // Done once any delivery completed it, even one overtaken by a redelivery (at-least-once: a
      // delivery the server gave up on may still finish, and the redelivery may then find nothing left
      // to do). Final: no later event of any delivery moves it back.
      const done = await this.collection.updateOne(
        { id, task_status: { $in: ["queued", "processing"] } },
        { ...fields, task_progress: 100, seq: Number.MAX_SAFE_INTEGER } as Partial<T>,
      );
      return done !== null;
    }
    // newer and not lower: status and progress together
    if (await this.collection.updateOne({ id, seq: { $lt: seq }, task_progress: { $lte: progress } }, { ...fields, task_progress: progress, seq } as Partial<T>)) {
      return true;
    }
    // newer, but the record already shows more progress: status only
    if (await this.collection.updateOne({ id, seq: { $lt: seq } }, { ...fields, seq } as Partial<T>)) return true;
    // stale (an earlier event arriving late): it may still carry more progress than recorded
    await this.raiseProgress(id, progress);
    return false;
  }

  /** Raises `task_progress` to `progress` when that is higher; never lowers it. */
  async raiseProgress(id: string, progress: number): Promise<boolean> {
    return (await this.collection.updateOne({ id, task_progress: { $lt: progress } }, { task_progress: progress } as Partial<T>)) !== null;
  }

  /** Marks a task failed unless it already finished (dead letters arrive at least once). */
  async failIfUnfinished(id: string, reason: string, at: string): Promise<boolean> {
    const doc = await this.collection.updateOne(
      { id, task_status: { $in: ["queued", "processing"] } },
      { task_status: "failed", task_error: reason, date_updated: at, seq: Number.MAX_SAFE_INTEGER, webhooks_pending: true } as Partial<T>,
    );
    return doc !== null;
  }

  /** Records whose webhook outbox mark was set before `olderThan`, oldest first (the outbox sweep). */
  async pendingWebhooks(olderThan: string, limit: number): Promise<T[]> {
    return this.collection.find({ webhooks_pending: true, date_updated: { $lt: olderThan } }, { sort: [["date_updated", 1], ["id", 1]], limit });
  }

  /**
   * Clears the outbox mark once the deliveries of the record's state at `dateUpdated` are queued; a
   * record that changed since (finished again) keeps its mark for that change.
   */
  async clearWebhooksPending(id: string, dateUpdated: string): Promise<void> {
    await this.collection.updateOne({ id, webhooks_pending: true, date_updated: dateUpdated }, { webhooks_pending: false } as Partial<T>);
  }

  async markPublished(id: string): Promise<void> {
    await this.collection.updateOne({ id }, { published: true } as Partial<T>);
  }

  /** One account's records waiting to be published, oldest first. */
  async waiting(accountId: string, limit: number): Promise<T[]> {
    return this.collection.find(
      { published: false, account_id: accountId, task_status: "queued" },
      { sort: [["date_created", 1], ["id", 1]], limit },
    );
  }

  /**
   * The first account (in id order) after `afterAccount` that has a record waiting to be published;
   * undefined when none. Walks accounts without reading their records.
   */
  async nextWaitingAccount(afterAccount: string | undefined): Promise<string | undefined> {
    const [doc] = await this.collection.find(
      { published: false, account_id: { $gt: afterAccount } },
      { sort: [["account_id", 1], ["date_created", 1]], limit: 1 },
    );
    return doc?.account_id;
  }
}
