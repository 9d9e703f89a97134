import type { Collection, Filter, Store } from "@voiceloc/store";
import { newestFirstPage, type Page } from "../records/repository.ts";

/** What an upload holds, as the create operations check it. */
export type UploadKind = "text" | "audio" | "video";

/** An upload as stored: its blob is `uploadBlobKey(owner, id)`. */
export interface UploadDoc {
  id: string;
  /** The account that made it (`Principal.accountId`); only that account can read or use it. */
  owner: string;
  blob_key: string;
  bytes: number;
  /** Sniffed from the bytes, never taken from the request. */
  content_type: string;
  kind: UploadKind;
  filename: string | null;
  /** ISO time after which it is unusable and swept. */
  expires_at: string;
  date_created: string;
}

export const UPLOADS_COLLECTION = "uploads";

const INDEXES = [
  { fields: [["owner", 1], ["date_created", -1], ["id", -1]] as Array<[string, 1 | -1]> },
  { fields: [["expires_at", 1]] as Array<[string, 1 | -1]> },
];

export class UploadRepository {
  private constructor(private readonly collection: Collection<UploadDoc>) {}

  static async open(store: Store): Promise<UploadRepository> {
    return new UploadRepository(await store.collection<UploadDoc>({ name: UPLOADS_COLLECTION, indexes: INDEXES }));
  }

  async create(doc: UploadDoc): Promise<void> {
    await this.collection.insert(doc);
  }

  /** The upload when it is the owner's and has not expired at `now`; null otherwise (one answer for all three). */
  async getUsable(owner: string, id: string, now: Date): Promise<UploadDoc | null> {
    const doc = await this.collection.get(id);
    if (!doc || doc.owner !== owner || doc.expires_at <= now.toISOString()) return null;
    return doc;
  }

  /** The owner's uploads not expired at `now`, newest first, keyset-paged like the task records. */
  async list(owner: string, query: { limit: number; cursor?: string | undefined }, now: Date): Promise<Page<UploadDoc>> {
    const filter: Filter = { owner, expires_at: { $gt: now.toISOString() } };
    return newestFirstPage(this.collection, filter, query.limit, query.cursor);
  }

  /** Removes the owner's record; false when there was none. */
  async deleteOwned(owner: string, id: string): Promise<boolean> {
    return (await this.collection.deleteMany({ id, owner })) > 0;
  }

  /** Up to `limit` records expired at `now`, oldest expiry first (for the sweep). */
  async expired(now: Date, limit: number): Promise<UploadDoc[]> {
    return this.collection.find({ expires_at: { $lte: now.toISOString() } }, { sort: [["expires_at", 1]], limit });
  }

  async delete(id: string): Promise<void> {
    await this.collection.deleteMany({ id });
  }
}
