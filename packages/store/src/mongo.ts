/**
 * The MongoDB adapter, on the official driver. Documents are stored as
 * `{ _id: id, ...doc }` (the document keeps its own `id` too, so it comes
 * back with its keys in the original order); `_id` is projected away on every
 * read and never reaches callers. Filters on `id`, sorts on `id` and index
 * fields named `id` use `_id`.
 *
 * Documents and updates are written in their JSON form (as the embedded store
 * does), so both adapters return the same values.
 *
 * What the adapter needs from the server: MongoDB 5.0+ (single operations
 * only: no multi-document transactions, no change streams). A replica set
 * (one node is enough) is recommended, not required: it is what makes the
 * driver's retryable writes and reads work, so a primary step-down does not
 * fail a request; on a standalone server the adapter logs a warning at open.
 */
import { BSON, MongoClient, MongoServerError } from "mongodb";
import type {
  Collection as MongoCollection,
  Db,
  Document,
  Filter as MongoFilter,
  IndexDescription,
  IndexDescriptionInfo,
  MongoClientOptions,
  WithId,
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
  /**
   * How long `ping()` waits for the server (2000 ms by default). The driver
   * would otherwise wait for server selection (30 s by default), and so would
   * `/readyz`.
   */
  pingTimeoutMs?: number;
  /**
   * Round-trip to the server before returning (default true): an unreachable
   * server fails the open with StoreError `open_failed`. With false the first
   * operation connects (for tools and tests).
   */
  verifyOnOpen?: boolean;
}

export interface MongoStore extends Store {
  readonly kind: "mongodb";
  readonly dbName: string;
  collection<T extends { id: string }>(spec: CollectionSpec): Promise<MongoStoreCollection<T>>;
}

export interface MongoStoreCollection<T extends { id: string }> extends Collection<T> {
  /**
   * The stages of the server's winning plan for each query `find(filter,
   * options)` would run (a keyset page may run several), e.g.
   * `["LIMIT", "FETCH", "IXSCAN"]`. For tests and diagnosis.
   */
  explain(filter: Filter, options?: FindOptions): Promise<string[][]>;
}

interface RawDoc {
  _id: string;
  [field: string]: unknown;
}

const DEFAULT_DB_NAME = "voiceloc";
const DEFAULT_PING_TIMEOUT_MS = 2000;
/** createIndexes attempts while other processes change the same index. */
const INDEX_ATTEMPTS = 8;
const NO_ID = { _id: 0 } as const;
/** MongoDB's BSON document limit (maxBsonObjectSize). */
const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;

/** Connects to MongoDB and checks the server answers. */
export async function openMongoStore(options: MongoStoreOptions): Promise<MongoStore> {
  const logger = (options.logger ?? silentLogger()).child({ component: "store", store: "mongodb" });
  const dbName = options.dbName ?? dbNameFromUrl(options.url) ?? DEFAULT_DB_NAME;
  const pingTimeoutMs = options.pingTimeoutMs ?? DEFAULT_PING_TIMEOUT_MS;
  let client: MongoClient;
  try {
    // retryWrites/retryReads are the driver's defaults (true); a URL may turn them off.
    client = new MongoClient(options.url, { ignoreUndefined: true, appName: "voiceloc", ...options.clientOptions });
  } catch (err) {
    // The driver's parse errors do not echo the URL, so no credentials leak.
    throw new StoreError("open_failed", `Invalid MongoDB connection string: ${messageOf(err)}`, { cause: err });
  }
  watchConnectivity(client, logger);
  if (options.verifyOnOpen !== false) {
    let hello: Document;
    try {
      await client.connect();
      hello = await client.db(dbName).command({ hello: 1 });
    } catch (err) {
      await client.close().catch(() => undefined);
      throw new StoreError("open_failed", `Could not connect to MongoDB: ${messageOf(err)}`, { cause: err });
    }
    const topology = topologyOf(hello);
    if (topology === "standalone") {
      logger.warn(
        { dbName, topology },
        "MongoDB is a standalone server: retryable writes are off, so a restart fails requests in flight; run a replica set (one node is enough)",
      );
    } else {
      logger.info({ dbName, topology }, "mongodb store opened");
    }
  }
  return new MongoStoreImpl(() => client.close(), client.db(dbName), dbName, logger, pingTimeoutMs);
}

/**
 * The adapter over a database handle that is already there, with no
 * connection of its own: for tests that run the adapter's logic over a model
 * of the server (see testing/mongo-model.ts). Production code uses openMongoStore.
 */
export function mongoStoreOver(db: Db, options: { logger?: Logger; pingTimeoutMs?: number } = {}): MongoStore {
  const logger = (options.logger ?? silentLogger()).child({ component: "store", store: "mongodb" });
  return new MongoStoreImpl(async () => undefined, db, db.databaseName, logger, options.pingTimeoutMs ?? DEFAULT_PING_TIMEOUT_MS);
}

/** What a `hello` reply says about the deployment. */
export function topologyOf(hello: Document): "replica set" | "sharded" | "standalone" {
  if (typeof hello.setName === "string") return "replica set";
  if (hello.msg === "isdbgrid") return "sharded";
  return "standalone";
}

/**
 * Logs when a server stops answering and when it answers again. The driver
 * reconnects by itself (its monitor checks every heartbeatFrequencyMS, more
 * often while an operation waits for a server); failures are logged at the
 * 1st, 2nd, 4th, 8th... consecutive one so a long outage does not flood the log.
 */
function watchConnectivity(client: MongoClient, logger: Logger): void {
  const down = new Map<string, { since: number; failures: number }>();
  client.on("serverHeartbeatFailed", (event) => {
    const address = event.connectionId;
    const state = down.get(address) ?? { since: Date.now(), failures: 0 };
    state.failures += 1;
    down.set(address, state);
    if ((state.failures & (state.failures - 1)) === 0) {
      logger.warn(
        { server: address, failures: state.failures, downForMs: Date.now() - state.since, err: messageOf(event.failure) },
        "mongodb server unreachable; the driver keeps reconnecting",
      );
    }
  });
  client.on("serverHeartbeatSucceeded", (event) => {
    const state = down.get(event.connectionId);
    if (!state) return;
    down.delete(event.connectionId);
    logger.info(
      { server: event.connectionId, failures: state.failures, downForMs: Date.now() - state.since },
      "mongodb server reachable again",
    );
  });
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
    readonly closeClient: () => Promise<void>,
    readonly db: Db,
    readonly dbName: string,
    readonly logger: Logger,
    readonly pingTimeoutMs: number,
  ) {}

  assertOpen(): void {
    if (this.#closed) throw new StoreError("closed", "The MongoDB store is closed");
  }

  async collection<T extends { id: string }>(spec: CollectionSpec): Promise<MongoStoreCollection<T>> {
    this.assertOpen();
    assertCollectionName(spec.name);
    const indexes = (spec.indexes ?? []).map(normalizeIndex);
    const collection = this.db.collection<RawDoc>(spec.name);
    const uniqueFields = new Set<string>();
    for (const index of indexes) {
      const description = toMongoIndex(index);
      if (!description) continue;
      if (index.unique) for (const [field] of index.fields) if (field !== "id") uniqueFields.add(field);
      await this.#ensureIndex(collection, spec.name, description);
    }
    return new MongoCollectionImpl<T>(this, collection, spec.name, uniqueFields);
  }

  /**
   * Creates one index, idempotently and safely when several processes start
   * at once (the server treats an identical createIndexes as a no-op, and
   * waits for an identical build in progress). On a conflict:
   * - an index with the same key exists under another name: it is kept and
   *   used (the server already holds an equivalent index);
   * - an index with this name has another definition (an older release's):
   *   it is replaced. Dropping an index never touches documents; when the new
   *   one cannot be built (e.g. existing duplicates for a new unique index)
   *   the old definition is put back and the error is thrown.
   */
  async #ensureIndex(collection: MongoCollection<RawDoc>, name: string, wanted: IndexDescription): Promise<void> {
    const log = { collection: name, index: wanted.name };
    for (let attempt = 1; ; attempt += 1) {
      try {
        await collection.createIndexes([wanted]);
        return;
      } catch (err) {
        if (!isIndexConflict(err) || attempt >= INDEX_ATTEMPTS) throw mapError(err, name);
      }
      let existing: IndexDescriptionInfo[];
      try {
        existing = await collection.listIndexes().toArray();
      } catch (err) {
        throw mapError(err, name);
      }
      const decision = resolveIndexConflict(wanted, existing);
      if (decision.kind === "keep") {
        this.logger.info({ ...log, existing: decision.name }, "index exists under another name; keeping it");
        return;
      }
      if (decision.kind === "replace") {
        this.logger.info({ ...log, old: describeIndex(decision.old), new: describeIndex(wanted) }, "index definition changed; replacing it");
        if (await this.#replaceIndex(collection, name, wanted, decision.old)) return;
      }
      // Another process is changing the same index: look again shortly.
      await new Promise((done) => setTimeout(done, 50 * attempt));
    }
  }

  /** True when replaced; false when another process got in the way (the caller looks again). */
  async #replaceIndex(
    collection: MongoCollection<RawDoc>,
    name: string,
    wanted: IndexDescription,
    old: IndexDescriptionInfo,
  ): Promise<boolean> {
    try {
      await collection.dropIndex(old.name as string);
    } catch (err) {
      // Another process replacing it at the same time dropped it first.
      if (!(err instanceof MongoServerError && (err.code === 27 || err.codeName === "IndexNotFound"))) {
        throw mapError(err, name);
      }
    }
    try {
      await collection.createIndexes([wanted]);
      return true;
    } catch (err) {
      if (isIndexConflict(err)) return false;
      try {
        await collection.createIndexes([restorableIndex(old)]);
      } catch (restoreErr) {
        this.logger.error(
          { collection: name, index: old.name, err: messageOf(restoreErr) },
          "could not restore the previous index definition",
        );
      }
      throw mapError(err, name);
    }
  }

  async ping(): Promise<void> {
    this.assertOpen();
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new StoreError("unavailable", `MongoDB did not answer a ping within ${this.pingTimeoutMs} ms`);
        controller.abort(err);
        reject(err);
      }, this.pingTimeoutMs);
    });
    try {
      // The signal ends server selection and the command; the race is the bound whatever the driver does.
      await Promise.race([this.db.command({ ping: 1 }, { signal: controller.signal }), timeout]);
    } catch (err) {
      throw mapError(err, "");
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.closeClient();
    this.logger.debug("mongodb store closed");
  }
}

function isIndexConflict(err: unknown): boolean {
  if (!(err instanceof MongoServerError)) return false;
  // 85 IndexOptionsConflict, 86 IndexKeySpecsConflict, and a conflicting build in flight.
  return (
    err.code === 85 ||
    err.code === 86 ||
    ["IndexOptionsConflict", "IndexKeySpecsConflict", "IndexBuildAlreadyInProgress", "IndexBuildAborted"].includes(
      err.codeName ?? "",
    )
  );
}

export type IndexConflictDecision =
  | { kind: "keep"; name: string }
  | { kind: "replace"; old: IndexDescriptionInfo }
  | { kind: "retry" };

/**
 * What to do after createIndexes reported a conflict, given the indexes the
 * collection has now: an index holding the wanted name is an older definition
 * (replace it); otherwise an index with the same key under another name is the
 * server's equivalent (keep it); otherwise the conflict is gone (retry).
 */
export function resolveIndexConflict(wanted: IndexDescription, existing: IndexDescriptionInfo[]): IndexConflictDecision {
  const sameName = existing.find((index) => index.name === wanted.name);
  if (sameName) return { kind: "replace", old: sameName };
  const wantedKey = keyEntries(wanted.key);
  const sameKey = existing.find((index) => sameEntries(keyEntries(index.key), wantedKey));
  if (sameKey?.name) return { kind: "keep", name: sameKey.name };
  return { kind: "retry" };
}

function keyEntries(key: IndexDescription["key"] | IndexDescriptionInfo["key"]): Array<[string, unknown]> {
  return key instanceof Map ? [...key.entries()] : Object.entries(key);
}

function sameEntries(a: Array<[string, unknown]>, b: Array<[string, unknown]>): boolean {
  return a.length === b.length && a.every(([field, direction], i) => b[i]?.[0] === field && b[i]?.[1] === direction);
}

/** The createIndexes spec that rebuilds an index as listIndexes described it. */
export function restorableIndex(info: IndexDescriptionInfo): IndexDescription {
  const { v: _version, ns: _ns, key, ...options } = info as IndexDescriptionInfo & { ns?: unknown };
  return { ...options, key } as IndexDescription;
}

function describeIndex(index: IndexDescription | IndexDescriptionInfo): Document {
  const out: Document = { key: Object.fromEntries(keyEntries(index.key)) };
  if (index.unique) out.unique = true;
  if (index.partialFilterExpression) out.partialFilterExpression = index.partialFilterExpression;
  return out;
}

class MongoCollectionImpl<T extends { id: string }> implements MongoStoreCollection<T> {
  constructor(
    readonly store: MongoStoreImpl,
    readonly raw: MongoCollection<RawDoc>,
    readonly name: string,
    /** Fields of unique indexes (partial on their type): queries on them say so, see toMongoQuery. */
    readonly uniqueFields: ReadonlySet<string>,
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
    const { plans, limit } = toMongoFind(filter, options, this.uniqueFields);
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

  async explain(filter: Filter, options?: FindOptions): Promise<string[][]> {
    const { plans, limit } = toMongoFind(filter, options, this.uniqueFields);
    this.store.assertOpen();
    try {
      const out: string[][] = [];
      for (const plan of plans) {
        let cursor = this.raw.find(plan.query as MongoFilter<RawDoc>, { projection: NO_ID });
        if (plan.sort.length > 0) cursor = cursor.sort(plan.sort);
        if (limit !== undefined) cursor = cursor.limit(limit);
        const explained = await cursor.explain("queryPlanner");
        out.push(planStages((explained.queryPlanner as Document | undefined)?.winningPlan));
      }
      return out;
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  async count(filter: Filter): Promise<number> {
    const query = toMongoQuery(filter, this.uniqueFields);
    this.store.assertOpen();
    try {
      return await this.raw.countDocuments(query as MongoFilter<RawDoc>);
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  async updateOne(filter: Filter, set: Partial<T>): Promise<T | null> {
    const query = toMongoQuery(filter, this.uniqueFields) as MongoFilter<RawDoc>;
    const fields = jsonForm(normalizeSet(set)) as Record<string, unknown>;
    this.store.assertOpen();
    try {
      if (Object.keys(fields).length === 0) {
        return (await this.raw.findOne(query, { projection: NO_ID })) as T | null;
      }
      // Driver 6+: with includeResultMetadata false (the default) the document itself, or null;
      // typed so that a driver returning the ModifyResult wrapper again fails the typecheck.
      const after: WithId<RawDoc> | null = await this.raw.findOneAndUpdate(
        query,
        { $set: fields },
        { returnDocument: "after", projection: NO_ID, includeResultMetadata: false },
      );
      return after as unknown as T | null;
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  async deleteMany(filter: Filter): Promise<number> {
    const query = toMongoQuery(filter, this.uniqueFields);
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

/**
 * The BSON types a unique index holds (its partial filter): every scalar but
 * null. Documents whose unique field is missing or null are left out of the
 * index, so they never collide, as in SQL (and the embedded store).
 */
export const UNIQUE_INDEX_TYPES = ["string", "number", "bool"] as const;

/**
 * The MongoDB query for a filter (validated like the embedded store's).
 * `uniqueFields` are fields of unique indexes: a condition on one that only
 * non-null values meet also states the index's `$type` filter (which it
 * implies), because the planner only uses a partial index for a query that
 * contains its filter expression.
 */
export function toMongoQuery(filter: Filter, uniqueFields?: ReadonlySet<string>): Document {
  const clauses = normalizeFilter(filter);
  const byField = new Map<string, Record<string, unknown>>();
  const extra: Document[] = [];
  const typed = new Set<string>();
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
    if (uniqueFields?.has(clause.field) && impliesScalar(clause)) typed.add(key);
  }
  const query: Document = {};
  for (const [key, ops] of byField) query[key] = ops;
  for (const key of typed) extra.push({ [key]: { $type: [...UNIQUE_INDEX_TYPES] } });
  if (extra.length > 0) query.$and = extra;
  return query;
}

/** True when only a non-null scalar can meet the clause. */
function impliesScalar(clause: ReturnType<typeof normalizeFilter>[number]): boolean {
  switch (clause.op) {
    case "$eq":
    case "$lt":
    case "$lte":
    case "$gt":
    case "$gte":
      return clause.value !== null;
    case "$in":
      return clause.value.length > 0 && !clause.value.includes(null);
    default:
      return false;
  }
}

export interface MongoPlan {
  query: Document;
  sort: Array<[string, SortDirection]>;
}

/**
 * Sort keys are ordered as MongoDB orders scalars: null/missing, then numbers,
 * then strings, then booleans. The embedded store orders null, numbers and
 * strings the same way (booleans sort there as 0/1 among the numbers).
 * A comparison operator only matches its own type, so "after" a value is
 * "greater within its type, or any value of a later type".
 */
type Bracket = 0 | 1 | 2 | 3;
const BRACKETS: readonly Bracket[] = [0, 1, 2, 3];

function bracketOf(v: Scalar): Bracket {
  if (v === null) return 0;
  if (typeof v === "number") return 1;
  if (typeof v === "string") return 2;
  return 3;
}

/** Every document whose field holds a value of this type (each an index range). */
function wholeBracket(field: string, bracket: Bracket): Document {
  switch (bracket) {
    case 0:
      return { [field]: null };
    case 1:
      return { [field]: { $gte: -Infinity } };
    case 2:
      return { [field]: { $gte: "" } };
    case 3:
      return { [field]: { $gte: false } };
  }
}

/**
 * The query (or, for keyset pages, several queries run in turn) for a
 * `find`. Keyset `after` becomes an `$or` chain over the sort keys, plus a
 * plain range bound on the first key so the server scans an index range;
 * documents whose first key is of another type (null/missing, numbers,
 * strings, booleans) are read by one more query per type, in sort order.
 */
export function toMongoFind(
  filter: Filter,
  options?: FindOptions,
  uniqueFields?: ReadonlySet<string>,
): { plans: MongoPlan[]; limit?: number } {
  const base = toMongoQuery(filter, uniqueFields);
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
  const b0 = bracketOf(v0);
  const rest = chain(mongoSort, after, 1);
  const push = (clauses: Document[]) => result.plans.push({ query: withBase(clauses), sort: mongoSort });
  if (v0 === null) {
    // Ties on a null first key, then (ascending only) every non-null value.
    if (rest) push([{ [field]: null }, rest]);
    if (direction === 1) push([{ [field]: { $ne: null } }]);
    if (result.plans.length === 0) push([NOTHING]);
    return result;
  }
  const bound = { [field]: direction === 1 ? { $gte: v0 } : { $lte: v0 } };
  push([bound, chain(mongoSort, after, 0) ?? NOTHING]);
  // Then the other types after this one in the sort order (for `_id`, always a string, they are empty).
  const later = direction === 1 ? BRACKETS.filter((b) => b > b0) : BRACKETS.filter((b) => b < b0).reverse();
  for (const bracket of later) {
    if (field === "_id" && bracket !== 2) continue;
    push([wholeBracket(field, bracket)]);
  }
  return result;
}

/** Matches no document (every document has an `_id`). */
const NOTHING: Document = { _id: { $exists: false } };

/**
 * "Strictly after v" for one key in MongoDB's order. For the first key the
 * page's first query is bounded to v's type (the other types have queries of
 * their own); later keys include the later types here.
 */
function beyond(field: string, direction: SortDirection, v: Scalar, first: boolean): Document | undefined {
  const b = bracketOf(v);
  const parts: Document[] = [];
  if (v !== null) parts.push({ [field]: direction === 1 ? { $gt: v } : { $lt: v } });
  if (!first) {
    const others = BRACKETS.filter((x) => (direction === 1 ? x > b : x < b));
    if (direction === 1 && v === null) {
      parts.push({ [field]: { $ne: null } });
    } else {
      for (const x of others) if (field !== "_id" || x === 2) parts.push(wholeBracket(field, x));
    }
  }
  if (parts.length === 0) return undefined;
  return parts.length === 1 ? parts[0] : { $or: parts };
}

function chain(sort: Array<[string, SortDirection]>, after: Scalar[], from: number): Document | undefined {
  if (from >= sort.length) return undefined;
  const [field, direction] = sort[from] as [string, SortDirection];
  const v = after[from] as Scalar;
  const rest = chain(sort, after, from + 1);
  const here = beyond(field, direction, v, from === 0);
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
    // Like SQL (and the embedded store), documents whose unique field is
    // missing or null are left out of the unique index, so they never
    // collide. (`$exists: true` would keep explicit nulls in, and two of
    // them would collide.)
    const partial: Document = {};
    for (const [field] of index.fields) if (field !== "id") partial[field] = { $type: [...UNIQUE_INDEX_TYPES] };
    description.partialFilterExpression = partial;
  }
  return description;
}

/** Stage names of an explain plan tree, outermost first (classic and SBE shapes). */
export function planStages(plan: unknown): string[] {
  const out: string[] = [];
  const walk = (node: unknown): void => {
    if (node === null || typeof node !== "object") return;
    const n = node as Record<string, unknown>;
    if (typeof n.stage === "string") out.push(n.stage);
    walk(n.queryPlan);
    walk(n.inputStage);
    if (Array.isArray(n.inputStages)) for (const child of n.inputStages) walk(child);
  };
  walk(plan);
  return out;
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
  const row: RawDoc = { _id: id, ...(jsonForm(doc) as Record<string, unknown>) };
  const size = BSON.calculateObjectSize(row);
  if (size > MAX_DOCUMENT_BYTES) {
    throw new StoreError("document_too_large", `The document is ${size} bytes as BSON; MongoDB stores at most 16 MiB`);
  }
  return row;
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
  // 10334 BSONObjectTooLarge, 17419/17420: an update would make the document exceed 16 MiB.
  if (err instanceof MongoServerError && [10334, 17419, 17420].includes(Number(err.code))) {
    return new StoreError("document_too_large", `MongoDB error: ${messageOf(err)}`, { cause: err });
  }
  return new StoreError("backend_error", `MongoDB error: ${messageOf(err)}`, { cause: err });
}
