/**
 * The MongoDB adapter, on the official driver. Documents are stored as
 * `{ _id: id, ...doc }` (the document keeps its own `id` too, so it comes
 * back with its keys in the original order); `_id` is projected away on every
 * read and never reaches callers. Filters on `id`, sorts on `id` and index
 * fields named `id` use `_id`.
 *
 * Documents and updates are written in their JSON form (as the embedded store
 * does), so both adapters return the same values.
 */
import { MongoClient, MongoServerError } from "mongodb";
import type {
  Collection as MongoCollection,
  Db,
  Document,
  Filter as MongoFilter,
  IndexDescription,
  MongoClientOptions,
} from "mongodb";
import { silentLogger } from "@voiceloc/log";
import type { Logger } from "@voiceloc/log";
import { DuplicateKeyError, StoreError } from "./collection.ts";
import type {
  Collection,
  CollectionSpec,
  Filter,
  FindOptions,
  IndexSpec,
  Scalar,
  SortDirection,
  Store,
} from "./collection.ts";
import {
  assertCollectionName,
  assertDocument,
  normalizeFilter,
  normalizeFind,
  normalizeIndex,
  normalizeSet,
} from "./validate.ts";

export interface MongoStoreOptions {
  /** A MongoDB connection string (credentials in it are never logged). */
  url: string;
  /** Database name; otherwise the one in the URL path, else `voiceloc`. */
  dbName?: string;
  logger?: Logger;
  /** Extra driver options (e.g. a short serverSelectionTimeoutMS in tests). */
  clientOptions?: MongoClientOptions;
}

export interface MongoStore extends Store {
  readonly kind: "mongodb";
  readonly dbName: string;
}

interface RawDoc {
  _id: string;
  [field: string]: unknown;
}

const DEFAULT_DB_NAME = "voiceloc";
const NO_ID = { _id: 0 } as const;

/** Connects to MongoDB and checks the server answers. */
export async function openMongoStore(options: MongoStoreOptions): Promise<MongoStore> {
  const logger = (options.logger ?? silentLogger()).child({ component: "store", store: "mongodb" });
  const dbName = options.dbName ?? dbNameFromUrl(options.url) ?? DEFAULT_DB_NAME;
  let client: MongoClient;
  try {
    client = new MongoClient(options.url, { ignoreUndefined: true, ...options.clientOptions });
  } catch (err) {
    // The driver's parse errors do not echo the URL, so no credentials leak.
    throw new StoreError("open_failed", `Invalid MongoDB connection string: ${messageOf(err)}`, { cause: err });
  }
  try {
    await client.connect();
    await client.db(dbName).command({ ping: 1 });
  } catch (err) {
    await client.close().catch(() => undefined);
    throw new StoreError("open_failed", `Could not connect to MongoDB: ${messageOf(err)}`, { cause: err });
  }
  logger.debug({ dbName }, "mongodb store opened");
  return new MongoStoreImpl(client, client.db(dbName), dbName, logger);
}

function dbNameFromUrl(url: string): string | undefined {
  const match = /^mongodb(?:\+srv)?:\/\/[^/?]*\/([^?]+)/.exec(url);
  if (!match?.[1]) return undefined;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return undefined;
  }
}

class MongoStoreImpl implements MongoStore {
  readonly kind = "mongodb" as const;
  #closed = false;

  constructor(
    readonly client: MongoClient,
    readonly db: Db,
    readonly dbName: string,
    readonly logger: Logger,
  ) {}

  assertOpen(): void {
    if (this.#closed) throw new StoreError("closed", "The MongoDB store is closed");
  }

  async collection<T extends { id: string }>(spec: CollectionSpec): Promise<Collection<T>> {
    this.assertOpen();
    assertCollectionName(spec.name);
    const indexes = (spec.indexes ?? []).map(normalizeIndex);
    const collection = this.db.collection<RawDoc>(spec.name);
    for (const index of indexes) {
      const description = toMongoIndex(index);
      if (!description) continue;
      try {
        await collection.createIndexes([description]);
      } catch (err) {
        // 85 IndexOptionsConflict, 86 IndexKeySpecsConflict: same name, new definition.
        if (err instanceof MongoServerError && (err.code === 85 || err.code === 86)) {
          this.logger.info({ collection: spec.name, index: index.name }, "index definition changed; rebuilding");
          try {
            await collection.dropIndex(index.name);
            await collection.createIndexes([description]);
            continue;
          } catch (retryErr) {
            throw mapError(retryErr, spec.name);
          }
        }
        throw mapError(err, spec.name);
      }
    }
    return new MongoCollectionImpl<T>(this, collection, spec.name);
  }

  async ping(): Promise<void> {
    this.assertOpen();
    try {
      await this.db.command({ ping: 1 });
    } catch (err) {
      throw mapError(err, "");
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.client.close();
    this.logger.debug("mongodb store closed");
  }
}

class MongoCollectionImpl<T extends { id: string }> implements Collection<T> {
  constructor(
    readonly store: MongoStoreImpl,
    readonly raw: MongoCollection<RawDoc>,
    readonly name: string,
  ) {}

  async insert(doc: T): Promise<void> {
    const row = toRaw(doc);
    this.store.assertOpen();
    try {
      await this.raw.insertOne(row);
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  async insertMany(docs: T[]): Promise<void> {
    if (!Array.isArray(docs)) throw new StoreError("invalid_argument", "insertMany takes an array of documents");
    const rows = docs.map(toRaw);
    this.store.assertOpen();
    if (rows.length === 0) return;
    try {
      await this.raw.insertMany(rows, { ordered: true });
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  async get(id: string): Promise<T | null> {
    if (typeof id !== "string") throw new StoreError("invalid_argument", "get takes a string id");
    this.store.assertOpen();
    try {
      return (await this.raw.findOne({ _id: id }, { projection: NO_ID })) as T | null;
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  async findOne(filter: Filter): Promise<T | null> {
    const [first] = await this.find(filter, { limit: 1 });
    return first ?? null;
  }

  async find(filter: Filter, options?: FindOptions): Promise<T[]> {
    const { plans, limit } = toMongoFind(filter, options);
    this.store.assertOpen();
    if (limit === 0) return [];
    try {
      const out: T[] = [];
      for (const plan of plans) {
        const remaining = limit === undefined ? undefined : limit - out.length;
        if (remaining === 0) break;
        let cursor = this.raw.find(plan.query as MongoFilter<RawDoc>, { projection: NO_ID });
        if (plan.sort.length > 0) cursor = cursor.sort(plan.sort);
        if (remaining !== undefined) cursor = cursor.limit(remaining);
        for (const doc of await cursor.toArray()) out.push(doc as unknown as T);
      }
      return out;
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  async count(filter: Filter): Promise<number> {
    const query = toMongoQuery(filter);
    this.store.assertOpen();
    try {
      return await this.raw.countDocuments(query as MongoFilter<RawDoc>);
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  async updateOne(filter: Filter, set: Partial<T>): Promise<T | null> {
    const query = toMongoQuery(filter) as MongoFilter<RawDoc>;
    const fields = jsonForm(normalizeSet(set)) as Record<string, unknown>;
    this.store.assertOpen();
    try {
      if (Object.keys(fields).length === 0) {
        return (await this.raw.findOne(query, { projection: NO_ID })) as T | null;
      }
      const after = await this.raw.findOneAndUpdate(
        query,
        { $set: fields },
        { returnDocument: "after", projection: NO_ID, includeResultMetadata: false },
      );
      return after as T | null;
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  async deleteMany(filter: Filter): Promise<number> {
    const query = toMongoQuery(filter);
    this.store.assertOpen();
    try {
      const result = await this.raw.deleteMany(query as MongoFilter<RawDoc>);
      return result.deletedCount;
    } catch (err) {
      throw mapError(err, this.name);
    }
  }
}

// ---------------------------------------------------------------------------
// Translation, exported for tests that need no server.

function mongoField(field: string): string {
  return field === "id" ? "_id" : field;
}

/** The MongoDB query for a filter (validated like the embedded store's). */
export function toMongoQuery(filter: Filter): Document {
  const clauses = normalizeFilter(filter);
  const byField = new Map<string, Record<string, unknown>>();
  const extra: Document[] = [];
  for (const clause of clauses) {
    const key = mongoField(clause.field);
    // `$exists` here means "present and not null" (false: missing or null).
    const [op, value]: [string, unknown] =
      clause.op === "$exists" ? [clause.value ? "$ne" : "$eq", null] : [clause.op, clause.value];
    const ops = byField.get(key) ?? {};
    if (Object.hasOwn(ops, op)) {
      extra.push({ [key]: { [op]: value } });
    } else {
      ops[op] = value;
      byField.set(key, ops);
    }
  }
  const query: Document = {};
  for (const [key, ops] of byField) query[key] = ops;
  if (extra.length > 0) query.$and = extra;
  return query;
}

export interface MongoPlan {
  query: Document;
  sort: Array<[string, SortDirection]>;
}

/**
 * The query (or, for some keyset pages, two queries run in turn) for a
 * `find`. Keyset `after` becomes an `$or` chain over the sort keys, plus a
 * plain range bound on the first key so the server scans an index range;
 * documents whose first key is null/missing are read by a second query,
 * exactly as the embedded store does.
 */
export function toMongoFind(filter: Filter, options?: FindOptions): { plans: MongoPlan[]; limit?: number } {
  const base = toMongoQuery(filter);
  const { sort, after, limit } = normalizeFind(options);
  const mongoSort = sort.map(([field, direction]): [string, SortDirection] => [mongoField(field), direction]);
  const withBase = (clauses: Document[]): Document => {
    const all = Object.keys(base).length > 0 ? [base, ...clauses] : clauses;
    return all.length === 1 ? (all[0] as Document) : { $and: all };
  };
  const result: { plans: MongoPlan[]; limit?: number } = { plans: [] };
  if (limit !== undefined) result.limit = limit;
  if (after === undefined) {
    result.plans.push({ query: base, sort: mongoSort });
    return result;
  }
  const [field, direction] = mongoSort[0] as [string, SortDirection];
  const v0 = after[0] as Scalar;
  const rest = chain(mongoSort, after, 1);
  if (v0 === null) {
    // Ties on a null first key, then (ascending only) every non-null value.
    if (rest) result.plans.push({ query: withBase([{ [field]: null }, rest]), sort: mongoSort });
    if (direction === 1) result.plans.push({ query: withBase([{ [field]: { $ne: null } }]), sort: mongoSort });
    if (result.plans.length === 0) result.plans.push({ query: withBase([NOTHING]), sort: mongoSort });
    return result;
  }
  const bound = { [field]: direction === 1 ? { $gte: v0 } : { $lte: v0 } };
  result.plans.push({ query: withBase([bound, chain(mongoSort, after, 0) ?? NOTHING]), sort: mongoSort });
  if (direction === -1 && field !== "_id") {
    result.plans.push({ query: withBase([{ [field]: null }]), sort: mongoSort });
  }
  return result;
}

/** Matches no document (every document has an `_id`). */
const NOTHING: Document = { _id: { $exists: false } };

/** "Strictly after v" for one key in MongoDB's order (null/missing first). */
function beyond(field: string, direction: SortDirection, v: Scalar): Document | undefined {
  if (direction === 1) return v === null ? { [field]: { $ne: null } } : { [field]: { $gt: v } };
  if (v === null) return undefined;
  // `_id` is never null or missing.
  return field === "_id" ? { _id: { $lt: v } } : { $or: [{ [field]: { $lt: v } }, { [field]: null }] };
}

function chain(sort: Array<[string, SortDirection]>, after: Scalar[], from: number): Document | undefined {
  if (from >= sort.length) return undefined;
  const [field, direction] = sort[from] as [string, SortDirection];
  const v = after[from] as Scalar;
  const rest = chain(sort, after, from + 1);
  const here = beyond(field, direction, v);
  const tied = rest ? { $and: [{ [field]: v === null ? null : { $eq: v } }, rest] } : undefined;
  if (here && tied) return { $or: [here, tied] };
  return here ?? tied;
}

/** The createIndexes description for a spec; undefined for a lone `id` (the `_id` index). */
export function toMongoIndex(spec: IndexSpec): IndexDescription | undefined {
  const index = normalizeIndex(spec);
  if (index.fields.length === 1 && index.fields[0]?.[0] === "id") return undefined;
  const key = new Map(index.fields.map(([field, direction]) => [mongoField(field), direction]));
  const description: IndexDescription = { key, name: index.name };
  if (index.unique) {
    description.unique = true;
    // Like SQLite (and SQL generally), documents lacking a unique field do not
    // collide with each other: they are left out of the unique index. (An
    // explicit `null` is still indexed by MongoDB, so two explicit nulls do
    // collide there but not in SQLite: leave unique fields out rather than null.)
    const partial: Document = {};
    for (const [field] of index.fields) if (field !== "id") partial[field] = { $exists: true };
    description.partialFilterExpression = partial;
  }
  return description;
}

// ---------------------------------------------------------------------------

/** The value as JSON would carry it (Dates become strings, undefined goes). */
function jsonForm(value: unknown): unknown {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    throw new StoreError("invalid_document", `Document is not JSON-serialisable: ${messageOf(err)}`, { cause: err });
  }
  return json === undefined ? undefined : JSON.parse(json);
}

function toRaw(doc: unknown): RawDoc {
  const id = assertDocument(doc);
  return { _id: id, ...(jsonForm(doc) as Record<string, unknown>) };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function isDuplicateKey(err: unknown): boolean {
  if (!(err instanceof MongoServerError)) return false;
  if (err.code === 11000 || err.code === 11001) return true;
  const writeErrors = (err as { writeErrors?: unknown }).writeErrors;
  if (Array.isArray(writeErrors)) {
    return writeErrors.some((e: unknown) => (e as { code?: unknown } | null)?.code === 11000);
  }
  return false;
}

function mapError(err: unknown, collection: string): Error {
  if (err instanceof StoreError) return err;
  if (isDuplicateKey(err)) return new DuplicateKeyError(collection, { cause: err });
  return new StoreError("backend_error", `MongoDB error: ${messageOf(err)}`, { cause: err });
}
