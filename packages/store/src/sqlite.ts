/**
 * The embedded store: one SQLite database file (better-sqlite3) holding one
 * table per collection, `(id TEXT PRIMARY KEY, doc TEXT NOT NULL)`, with the
 * document as JSON. Filters and sorts read top-level fields with
 * `json_extract(doc, '$."field"')`; every IndexSpec becomes an expression
 * index on exactly those expressions, so SQLite uses it for lookups, sorts
 * and keyset pages.
 *
 * Semantics follow MongoDB's for scalar fields: `{f: null}` matches a missing
 * or null field, comparisons only match values of the same type (booleans,
 * which json_extract turns into 1/0, never match numbers), `$ne` matches
 * documents where the field is missing. Strings compare by UTF-8 bytes.
 *
 * better-sqlite3 is synchronous; the methods return Promises only for parity
 * with the MongoDB adapter.
 *
 * Reads share one read transaction until the event loop moves on: the first
 * read opens it (BEGIN), a setImmediate closes it, and every write closes it
 * first. Starting a read transaction in WAL mode takes and releases a lock on
 * the shared-memory index (two system calls); sharing one across the reads of
 * a busy loop turn saves most of them. A read still sees everything this
 * process wrote before it (writes close the shared transaction, the next read
 * opens a fresh one) and other processes' commits from the next loop turn on
 * (a collection's change mark shows them within EXTERNAL_CHANGES_MS).
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import { silentLogger } from "@voiceloc/log";
import type { Logger } from "@voiceloc/log";
import { DuplicateKeyError, StoreError } from "./collection.ts";
import type {
  Collection,
  CollectionSpec,
  Filter,
  FindOptions,
  Scalar,
  SortDirection,
  Store,
  StoredText,
} from "./collection.ts";
import {
  assertCollectionName,
  assertDocument,
  normalizeFilter,
  normalizeFind,
  normalizeIndex,
  normalizeSet,
} from "./validate.ts";
import type { Clause } from "./validate.ts";

type DB = Database.Database;
type Statement = Database.Statement;

/**
 * How long a commit by another connection may go unseen by a collection's change mark
 * (`changeMarkSync`): reading SQLite's `data_version` takes a read transaction, which a busy reader
 * would otherwise open and close on every turn of the event loop just to learn that nothing changed.
 */
export const EXTERNAL_CHANGES_MS = 50;

/** The file name used under `dir` unless `filename` is given. */
export const EMBEDDED_DB_FILENAME = "store.db";

export interface EmbeddedStoreOptions {
  /** Directory holding the database file; created when missing. */
  dir: string;
  /** Database file name inside `dir`; `store.db` by default. */
  filename?: string;
  logger?: Logger;
  /** How long a write waits for another connection's lock; 5000 ms by default. */
  busyTimeoutMs?: number;
}

export interface EmbeddedCollection<T extends { id: string }> extends Collection<T> {
  /**
   * SQLite's EXPLAIN QUERY PLAN for the statement(s) `find(filter, options)`
   * would run (a keyset page may run two). For tests and diagnosis.
   */
  explain(filter: Filter, options?: FindOptions): string[][];
}

export interface EmbeddedStore extends Store {
  readonly kind: "embedded";
  /** Absolute path of the database file. */
  readonly file: string;
  /** The underlying connection, for diagnostics (pragmas, integrity checks). */
  readonly db: Database.Database;
  collection<T extends { id: string }>(spec: CollectionSpec): Promise<EmbeddedCollection<T>>;
}

/** Opens (creating if needed) the embedded store under `dir`. */
export async function openEmbeddedStore(options: EmbeddedStoreOptions): Promise<EmbeddedStore> {
  const logger = (options.logger ?? silentLogger()).child({ component: "store", store: "embedded" });
  const dir = resolve(options.dir);
  const file = join(dir, options.filename ?? EMBEDDED_DB_FILENAME);
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  let db: DB;
  try {
    mkdirSync(dir, { recursive: true });
    db = new Database(file, { timeout: busyTimeoutMs });
  } catch (err) {
    throw new StoreError("open_failed", `Could not open the embedded store at ${file}: ${messageOf(err)}`, {
      cause: err,
    });
  }
  try {
    const mode = db.pragma("journal_mode = WAL", { simple: true });
    if (String(mode).toLowerCase() !== "wal") {
      throw new Error(`journal_mode is '${String(mode)}', expected 'wal'`);
    }
    db.pragma("synchronous = NORMAL");
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
  } catch (err) {
    db.close();
    throw new StoreError("open_failed", `Could not configure the embedded store at ${file}: ${messageOf(err)}`, {
      cause: err,
    });
  }
  logger.debug({ file }, "embedded store opened");
  return new SqliteStore(db, file, logger);
}

const STATEMENT_CACHE_SIZE = 256;
/** insertMany commits this many documents per transaction, yielding in between. */
const INSERT_BATCH = 1000;

class SqliteStore implements EmbeddedStore {
  readonly kind = "embedded" as const;
  #closed = false;
  readonly #statements = new Map<string, Statement>();
  readonly #begin: Statement;
  readonly #commit: Statement;
  /** Whether the shared read transaction (see the file's comment) is open. */
  #reading = false;
  /** Writes begun through this store, per table (see `changeMark`). */
  readonly #writes = new Map<string, number>();
  /** `PRAGMA data_version` as last read, and how many times it was seen to change (commits by other connections). */
  #dataVersion: Statement | undefined;
  #lastDataVersion = 0;
  /** When `data_version` was last read (performance.now()). */
  #dataVersionReadAt = -Infinity;
  #externalChanges = 0;

  constructor(
    readonly db: DB,
    readonly file: string,
    readonly logger: Logger,
  ) {
    this.#begin = db.prepare("BEGIN");
    this.#commit = db.prepare("COMMIT");
  }

  /** Before a read: joins the shared read transaction, opening it (and its closing setImmediate) if needed. */
  reading(): void {
    if (this.#reading || this.db.inTransaction) return;
    this.#begin.run();
    this.#reading = true;
    setImmediate(this.#endReading);
  }

  /**
   * Before a write (and on close): ends the shared read transaction, so the write is committed on its
   * own, and counts a write to `table` (writes run synchronously once begun, so no read sees the table
   * changed under an old mark).
   */
  writing(table?: string): void {
    this.#endReading();
    if (table !== undefined) this.#writes.set(table, (this.#writes.get(table) ?? 0) + 1);
  }

  /**
   * A number that changes whenever `table` may have changed: at once on every write to it through this
   * store, and within EXTERNAL_CHANGES_MS on every commit by another connection to the database (a CLI,
   * another process), which SQLite's `data_version` reveals. Both counts only rise, so their sum never
   * comes back to an earlier value.
   */
  changeMark(table: string): number {
    this.assertOpen();
    // `data_version` is read in the shared read transaction (opening it), so a change it shows is in
    // the data every read after it sees; between two readings a mark costs no statement.
    if (performance.now() - this.#dataVersionReadAt >= EXTERNAL_CHANGES_MS) {
      this.reading();
      const version = (this.#dataVersion ??= this.db.prepare("PRAGMA data_version").pluck()).get() as number;
      this.#dataVersionReadAt = performance.now();
      if (version !== this.#lastDataVersion) {
        this.#lastDataVersion = version;
        this.#externalChanges += 1;
      }
    }
    return (this.#writes.get(table) ?? 0) + this.#externalChanges;
  }

  readonly #endReading = (): void => {
    if (!this.#reading) return;
    this.#reading = false;
    if (this.db.open && this.db.inTransaction) this.#commit.run();
  };

  /** A prepared statement, cached by SQL text (least recently used evicted). */
  statement(sql: string): Statement {
    this.assertOpen();
    let stmt = this.#statements.get(sql);
    if (stmt) {
      this.#statements.delete(sql);
      this.#statements.set(sql, stmt);
      return stmt;
    }
    stmt = this.db.prepare(sql);
    this.#statements.set(sql, stmt);
    if (this.#statements.size > STATEMENT_CACHE_SIZE) {
      const oldest = this.#statements.keys().next();
      if (!oldest.done) this.#statements.delete(oldest.value);
    }
    return stmt;
  }

  assertOpen(): void {
    if (this.#closed) throw new StoreError("closed", "The embedded store is closed");
  }

  async collection<T extends { id: string }>(spec: CollectionSpec): Promise<EmbeddedCollection<T>> {
    this.assertOpen();
    assertCollectionName(spec.name);
    const indexes = (spec.indexes ?? []).map(normalizeIndex);
    const table = quoteIdent(spec.name);
    this.writing();
    try {
      this.db.transaction(() => {
        this.db.exec(`CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY NOT NULL, doc TEXT NOT NULL)`);
        for (const index of indexes) {
          const indexName = `${spec.name}__${index.name}`;
          const columns = index.fields
            .map(([field, direction]) => `${fieldExpr(field)} ${direction === 1 ? "ASC" : "DESC"}`)
            .join(", ");
          const sql = `CREATE ${index.unique ? "UNIQUE " : ""}INDEX ${quoteIdent(indexName)} ON ${table} (${columns})`;
          const existing = this.db
            .prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?")
            .get(indexName) as { sql: string | null } | undefined;
          if (existing?.sql === sql) continue;
          if (existing) {
            this.logger.info({ collection: spec.name, index: index.name }, "index definition changed; rebuilding");
            this.db.exec(`DROP INDEX ${quoteIdent(indexName)}`);
          }
          this.db.exec(sql);
          this.logger.debug({ collection: spec.name, index: index.name }, "index created");
        }
      }).immediate();
    } catch (err) {
      throw mapError(err, spec.name);
    }
    return new SqliteCollection<T>(this, spec.name);
  }

  async ping(): Promise<void> {
    try {
      this.statement("SELECT 1").get();
    } catch (err) {
      throw mapError(err, "");
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.writing();
    this.#closed = true;
    this.#statements.clear();
    try {
      this.db.pragma("optimize");
    } catch {
      // best effort only
    }
    this.db.close();
    this.logger.debug({ file: this.file }, "embedded store closed");
  }
}

interface Fragment {
  sql: string;
  params: unknown[];
}

interface Plan {
  where: Fragment;
  orderBy: string;
}

class SqliteCollection<T extends { id: string }> implements EmbeddedCollection<T> {
  readonly #table: string;

  constructor(
    readonly store: SqliteStore,
    readonly name: string,
  ) {
    this.#table = quoteIdent(name);
  }

  async insert(doc: T): Promise<void> {
    const id = assertDocument(doc);
    const json = serialize(doc);
    try {
      this.store.writing(this.#table);
      this.store.statement(`INSERT INTO ${this.#table} (id, doc) VALUES (?, ?)`).run(id, json);
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  async insertMany(docs: T[]): Promise<void> {
    if (!Array.isArray(docs)) throw new StoreError("invalid_argument", "insertMany takes an array of documents");
    const rows = docs.map((doc) => [assertDocument(doc), serialize(doc)] as const);
    for (let start = 0; start < rows.length; start += INSERT_BATCH) {
      if (start > 0) await new Promise<void>((done) => setImmediate(done));
      const stmt = this.store.statement(`INSERT INTO ${this.#table} (id, doc) VALUES (?, ?)`);
      let failure: unknown;
      try {
        this.store.writing(this.#table);
        this.store.db
          .transaction(() => {
            for (let i = start; i < Math.min(start + INSERT_BATCH, rows.length); i++) {
              const row = rows[i] as readonly [string, string];
              try {
                stmt.run(row[0], row[1]);
              } catch (err) {
                // Ordered semantics: keep what came before, stop here.
                failure = err;
                return;
              }
            }
          })
          .immediate();
      } catch (err) {
        throw mapError(err, this.name);
      }
      if (failure !== undefined) throw mapError(failure, this.name);
    }
  }

  async get(id: string): Promise<T | null> {
    const text = this.#text(id, "get");
    return text === null ? null : (JSON.parse(text) as T);
  }

  getTextSync(id: string): string | null {
    return this.#text(id, "getTextSync");
  }

  #text(id: string, method: string): string | null {
    if (typeof id !== "string") throw new StoreError("invalid_argument", `${method} takes a string id`);
    try {
      const stmt = this.#getStatement();
      this.store.reading();
      return (stmt.get(id) as string | undefined) ?? null;
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  /** `get`'s statement, prepared once (plucking the one column). */
  #get: Statement | undefined;
  #getStatement(): Statement {
    this.store.assertOpen();
    return (this.#get ??= this.store.db.prepare(`SELECT doc FROM ${this.#table} WHERE id = ?`).pluck());
  }

  async findOne(filter: Filter): Promise<T | null> {
    const [first] = await this.find(filter, { limit: 1 });
    return first ?? null;
  }

  async find(filter: Filter, options?: FindOptions): Promise<T[]> {
    return this.#select(filter, options, "doc", (stmt, params) => (stmt.pluck(true).all(...params) as string[]).map((text) => JSON.parse(text) as T));
  }

  changeMarkSync(): number {
    try {
      return this.store.changeMark(this.#table);
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  findTextSync(filter: Filter, options?: FindOptions): StoredText[] {
    return this.#select(filter, options, "id, doc", (stmt, params) => stmt.raw(true).all(...params) as StoredText[]);
  }

  /** `find`'s statements (one per plan) for `columns`, each run by `rows` (which sets the statement's mode). */
  #select<R>(filter: Filter, options: FindOptions | undefined, columns: string, rows: (stmt: Statement, params: unknown[]) => R[]): R[] {
    const { where, plans, limit } = this.#compileFind(filter, options);
    if (limit === 0) return [];
    try {
      const out: R[] = [];
      for (const plan of plans) {
        const remaining = limit === undefined ? undefined : limit - out.length;
        if (remaining === 0) break;
        const { sql, params } = this.#planStatement(columns, where, plan, remaining);
        const stmt = this.store.statement(sql);
        this.store.reading();
        const found = rows(stmt, params);
        if (plans.length === 1) return found;
        for (const row of found) out.push(row);
      }
      return out;
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  /** One plan's statement of `find`: `columns` of the documents matching `where` and the plan, at most `limit`. */
  #planStatement(columns: string, where: Fragment, plan: Plan, limit: number | undefined): Fragment {
    const sql =
      `SELECT ${columns} FROM ${this.#table} WHERE (${where.sql}) AND (${plan.where.sql})` +
      (plan.orderBy ? ` ORDER BY ${plan.orderBy}` : "") +
      (limit === undefined ? "" : " LIMIT ?");
    const params = [...where.params, ...plan.where.params];
    if (limit !== undefined) params.push(limit);
    return { sql, params };
  }

  explain(filter: Filter, options?: FindOptions): string[][] {
    const { where, plans, limit } = this.#compileFind(filter, options);
    return plans.map((plan) => {
      const { sql, params } = this.#planStatement("doc", where, plan, limit);
      const rows = this.store.statement(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>;
      return rows.map((row) => row.detail);
    });
  }

  async count(filter: Filter): Promise<number> {
    const where = compileFilter(normalizeFilter(filter));
    try {
      const stmt = this.store.statement(`SELECT count(*) AS n FROM ${this.#table} WHERE ${where.sql}`);
      this.store.reading();
      const row = stmt.get(...where.params) as { n: number };
      return row.n;
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  async updateOne(filter: Filter, set: Partial<T>): Promise<T | null> {
    const where = compileFilter(normalizeFilter(filter));
    const fields = normalizeSet(set);
    const select = `SELECT id, doc FROM ${this.#table} WHERE ${where.sql} LIMIT 1`;
    try {
      if (Object.keys(fields).length === 0) {
        const stmt = this.store.statement(select);
        this.store.reading();
        const row = stmt.get(...where.params) as { doc: string } | undefined;
        return row ? (JSON.parse(row.doc) as T) : null;
      }
      const selectStmt = this.store.statement(select);
      const updateStmt = this.store.statement(`UPDATE ${this.#table} SET doc = ? WHERE id = ?`);
      this.store.writing(this.#table);
      // BEGIN IMMEDIATE takes the write lock before reading, so no other
      // connection can change the row between the read and the write.
      return this.store.db
        .transaction((): T | null => {
          const row = selectStmt.get(...where.params) as { id: string; doc: string } | undefined;
          if (!row) return null;
          const doc = JSON.parse(row.doc) as Record<string, unknown>;
          // Existing fields change in place; new ones are appended in
          // lexicographic order, as MongoDB (5.0+) does for $set.
          for (const field of Object.keys(fields).sort()) doc[field] = fields[field];
          const json = serialize(doc);
          updateStmt.run(json, row.id);
          return JSON.parse(json) as T;
        })
        .immediate();
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  async deleteMany(filter: Filter): Promise<number> {
    const where = compileFilter(normalizeFilter(filter));
    try {
      this.store.writing(this.#table);
      return this.store.statement(`DELETE FROM ${this.#table} WHERE ${where.sql}`).run(...where.params).changes;
    } catch (err) {
      throw mapError(err, this.name);
    }
  }

  #compileFind(filter: Filter, options?: FindOptions): { where: Fragment; plans: Plan[]; limit: number | undefined } {
    const where = compileFilter(normalizeFilter(filter));
    const { sort, after, limit } = normalizeFind(options);
    const orderBy = orderByOf(sort);
    const plans = after === undefined ? [{ where: { sql: "1", params: [] }, orderBy }] : keysetPlans(sort, after);
    return { where, plans, limit };
  }
}

// ---------------------------------------------------------------------------
// SQL compilation. Field names are validated ([A-Za-z0-9_]) before they get
// here; values are always bound parameters.

/** The SQL expression for a top-level field: the same text in queries and indexes. */
function fieldExpr(field: string): string {
  return field === "id" ? "id" : `json_extract(doc, '$."${field}"')`;
}

function typeExpr(field: string): string {
  return `json_type(doc, '$."${field}"')`;
}

function quoteIdent(name: string): string {
  return `"${name}"`;
}

/** better-sqlite3 cannot bind booleans; json_extract yields 1/0 for them. */
function bind(value: Scalar): string | number | null {
  return typeof value === "boolean" ? (value ? 1 : 0) : value;
}

const NUMBER_TYPES = "('integer','real')";

function frag(sql: string, ...params: unknown[]): Fragment {
  return { sql, params };
}

const FALSE = frag("0");
const TRUE = frag("1");

function and(parts: Fragment[]): Fragment {
  if (parts.length === 0) return TRUE;
  if (parts.length === 1) return parts[0] as Fragment;
  return frag(parts.map((p) => `(${p.sql})`).join(" AND "), ...parts.flatMap((p) => p.params));
}

function or(parts: Fragment[]): Fragment {
  if (parts.length === 0) return FALSE;
  if (parts.length === 1) return parts[0] as Fragment;
  return frag(parts.map((p) => `(${p.sql})`).join(" OR "), ...parts.flatMap((p) => p.params));
}

function compileFilter(clauses: Clause[]): Fragment {
  return and(clauses.map(compileClause));
}

function compileClause(clause: Clause): Fragment {
  const { field } = clause;
  const isId = field === "id";
  const x = fieldExpr(field);
  const t = typeExpr(field);
  switch (clause.op) {
    case "$eq":
      return equals(field, clause.value);
    case "$ne": {
      const v = clause.value;
      if (v === null) return isId ? TRUE : frag(`${x} IS NOT NULL`);
      if (typeof v === "string") return frag(`${x} IS NOT ?`, v);
      if (isId) return TRUE;
      if (typeof v === "number") return frag(`${x} IS NOT ? OR ${t} NOT IN ${NUMBER_TYPES}`, v);
      return frag(`${t} IS NOT '${v ? "true" : "false"}'`);
    }
    case "$lt":
    case "$lte":
    case "$gt":
    case "$gte": {
      const v = clause.value;
      const op = { $lt: "<", $lte: "<=", $gt: ">", $gte: ">=" }[clause.op];
      if (v === null) return clause.op === "$lte" || clause.op === "$gte" ? equals(field, null) : FALSE;
      if (typeof v === "string") {
        // Text sorts after every number in SQLite; '' is the smallest text, so
        // this range holds only strings and stays a plain index range.
        if (isId || op === ">" || op === ">=") return frag(`${x} ${op} ?`, v);
        return frag(`${x} ${op} ? AND ${x} >= ''`, v);
      }
      if (isId) return FALSE;
      if (typeof v === "number") {
        // Numbers sort before every text; json_type drops booleans (1/0).
        const upper = op === ">" || op === ">=" ? ` AND ${x} < ''` : "";
        return frag(`${x} ${op} ?${upper} AND ${t} IN ${NUMBER_TYPES}`, v);
      }
      return frag(`${x} ${op} ? AND ${t} IN ('true','false')`, bind(v));
    }
    case "$in": {
      const strings: string[] = [];
      const numbers: number[] = [];
      const booleans: boolean[] = [];
      let hasNull = false;
      for (const v of clause.value) {
        if (v === null) hasNull = true;
        else if (typeof v === "string") strings.push(v);
        else if (typeof v === "number") numbers.push(v);
        else booleans.push(v);
      }
      const parts: Fragment[] = [];
      const marks = (n: number) => Array.from({ length: n }, () => "?").join(", ");
      if (strings.length > 0) parts.push(frag(`${x} IN (${marks(strings.length)})`, ...strings));
      if (!isId) {
        if (numbers.length > 0) {
          parts.push(frag(`${x} IN (${marks(numbers.length)}) AND ${t} IN ${NUMBER_TYPES}`, ...numbers));
        }
        for (const b of new Set(booleans)) parts.push(equals(field, b));
        if (hasNull) parts.push(frag(`${x} IS NULL`));
      }
      return or(parts);
    }
    case "$exists":
      if (isId) return clause.value ? TRUE : FALSE;
      return frag(clause.value ? `${x} IS NOT NULL` : `${x} IS NULL`);
  }
}

function equals(field: string, v: Scalar): Fragment {
  const isId = field === "id";
  const x = fieldExpr(field);
  if (v === null) return isId ? FALSE : frag(`${x} IS NULL`);
  if (typeof v === "string") return frag(`${x} = ?`, v);
  if (isId) return FALSE;
  if (typeof v === "number") return frag(`${x} = ? AND ${typeExpr(field)} IN ${NUMBER_TYPES}`, v);
  return frag(`${x} = ? AND ${typeExpr(field)} = '${v ? "true" : "false"}'`, bind(v));
}

function orderByOf(sort: Array<[string, SortDirection]>): string {
  return sort.map(([field, direction]) => `${fieldExpr(field)} ${direction === 1 ? "ASC" : "DESC"}`).join(", ");
}

/**
 * "Strictly after `v`" for one sort key, in SQLite's order (NULL first, then
 * numbers, then text): ascending wants greater values, descending smaller
 * values or NULL.
 */
function beyond(field: string, direction: SortDirection, v: Scalar): Fragment {
  const x = fieldExpr(field);
  if (direction === 1) return v === null ? frag(`${x} IS NOT NULL`) : frag(`${x} > ?`, bind(v));
  return v === null ? FALSE : frag(`${x} < ? OR ${x} IS NULL`, bind(v));
}

function tie(field: string, v: Scalar): Fragment {
  const x = fieldExpr(field);
  return v === null ? frag(`${x} IS NULL`) : frag(`${x} = ?`, bind(v));
}

/** Keys from `from` on: (k_from after) OR (k_from tie AND (k_from+1 after)) OR ... */
function chain(sort: Array<[string, SortDirection]>, after: Scalar[], from: number): Fragment {
  if (from >= sort.length) return FALSE;
  const [field, direction] = sort[from] as [string, SortDirection];
  const v = after[from] as Scalar;
  const rest = chain(sort, after, from + 1);
  if (rest === FALSE) return beyond(field, direction, v);
  return or([beyond(field, direction, v), and([tie(field, v), rest])]);
}

/**
 * A keyset page as one or two statements that SQLite can answer with an
 * index range scan: the first sort key gets a plain range bound, and the
 * rows whose first key is NULL (first when ascending, last when descending)
 * are read by a separate statement when the first one did not fill the page.
 */
function keysetPlans(sort: Array<[string, SortDirection]>, after: Scalar[]): Plan[] {
  const [field, direction] = sort[0] as [string, SortDirection];
  const v0 = after[0] as Scalar;
  const x = fieldExpr(field);
  const full = orderByOf(sort);
  const withoutFirst = orderByOf(sort.slice(1));
  const rest = chain(sort, after, 1);
  if (v0 === null) {
    const nullTail: Plan = { where: and([frag(`${x} IS NULL`), rest]), orderBy: withoutFirst };
    if (direction === -1) return [nullTail];
    return [nullTail, { where: frag(`${x} IS NOT NULL`), orderBy: full }];
  }
  const bound = direction === 1 ? `${x} >= ?` : `${x} <= ?`;
  // The bound is implied by the chain; it is there so SQLite scans a range.
  const main: Plan = { where: and([frag(bound, bind(v0)), chain(sort, after, 0)]), orderBy: full };
  if (direction === 1 || field === "id") return [main];
  return [main, { where: frag(`${x} IS NULL`), orderBy: withoutFirst }];
}

// ---------------------------------------------------------------------------

function serialize(doc: unknown): string {
  try {
    return JSON.stringify(doc);
  } catch (err) {
    throw new StoreError("invalid_document", `Document is not JSON-serialisable: ${messageOf(err)}`, { cause: err });
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function mapError(err: unknown, collection: string): Error {
  if (err instanceof StoreError) return err;
  if (err instanceof Database.SqliteError) {
    if (err.code === "SQLITE_CONSTRAINT_PRIMARYKEY" || err.code === "SQLITE_CONSTRAINT_UNIQUE") {
      return new DuplicateKeyError(collection, { cause: err });
    }
    return new StoreError("backend_error", `SQLite error (${err.code}): ${err.message}`, { cause: err });
  }
  return new StoreError("backend_error", `Embedded store error: ${messageOf(err)}`, { cause: err });
}
