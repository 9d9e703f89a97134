import type { Collection, Filter, Store } from "@voiceloc/store";
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

export const TASK_INDEXES = [
  { fields: [["account_id", 1], ["date_created", -1], ["id", -1]] as Array<[string, 1 | -1]> },
  { fields: [["account_id", 1], ["task_status", 1], ["date_created", -1], ["id", -1]] as Array<[string, 1 | -1]> },
  { fields: [["published", 1], ["date_created", 1]] as Array<[string, 1 | -1]> },
];

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

  /** The record if it exists and belongs to the account; null otherwise (callers answer 404 either way). */
  async getOwned(accountId: string, id: string): Promise<T | null> {
    const doc = await this.collection.get(id);
    return doc && doc.account_id === accountId ? doc : null;
  }

  async list(accountId: string, query: ListQuery): Promise<Page<T>> {
    const filter: Filter = { account_id: accountId };
    if (query.taskStatus) filter.task_status = query.taskStatus;
    let after: [string, string] | undefined;
    if (query.cursor !== undefined) {
      const decoded = decodeCursor(query.cursor);
      if (!decoded) throw new InvalidCursorError();
      after = decoded;
    }
    const rows = await this.collection.find(filter, {
      sort: [
        ["date_created", -1],
        ["id", -1],
      ],
      ...(after ? { after } : {}),
      limit: query.limit + 1,
    });
    const items = rows.slice(0, query.limit);
    const last = items[items.length - 1];
    const nextCursor = rows.length > query.limit && last ? encodeCursor(last.date_created, last.id) : null;
    return { items, nextCursor };
  }

  /** Updates an owned record's fields; null when it does not exist or is another account's. */
  async updateOwned(accountId: string, id: string, set: Partial<T>): Promise<T | null> {
    return this.collection.updateOne({ id, account_id: accountId }, set);
  }

  /** Applies a progress update only if its sequence number is newer than the record's. */
  async applyIfNewer(id: string, seq: number, set: Partial<T>): Promise<T | null> {
    return this.collection.updateOne({ id, seq: { $lt: seq } }, { ...set, seq } as Partial<T>);
  }

  /** Marks a task failed unless it already finished (dead letters arrive at least once). */
  async failIfUnfinished(id: string, reason: string, at: string): Promise<boolean> {
    const doc = await this.collection.updateOne(
      { id, task_status: { $in: ["queued", "processing"] } },
      { task_status: "failed", task_error: reason, date_updated: at, seq: Number.MAX_SAFE_INTEGER } as Partial<T>,
    );
    return doc !== null;
  }

  async markPublished(id: string): Promise<void> {
    await this.collection.updateOne({ id }, { published: true } as Partial<T>);
  }

  /** Records whose work message may never have been published (oldest first). */
  async unpublished(olderThan: string, limit: number): Promise<T[]> {
    return this.collection.find(
      { published: false, date_created: { $lt: olderThan } },
      { sort: [["date_created", 1]], limit },
    );
  }
}
