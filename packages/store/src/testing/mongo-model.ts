/**
 * A model of the part of MongoDB the adapter relies on, in memory, written
 * from the server's documented semantics:
 * - comparison operators match values of the query value's type only (type
 *   bracketing); `{f: null}` matches null or missing; `$ne` is the negation of
 *   `$eq`; `$in` is any `$eq`; `$type` by alias; `$and` / `$or`;
 * - sort order across types: null/missing, numbers, strings, booleans;
 *   strings by UTF-8 bytes (the simple collation);
 * - `$set` changes existing fields in place and appends new ones in
 *   lexicographic order (5.0+);
 * - unique indexes with a partialFilterExpression hold only the documents the
 *   filter matches; a duplicate is error 11000;
 * - createIndexes: an identical index is a no-op, an index with the same name
 *   and another definition is error 86 (IndexKeySpecsConflict), the same key
 *   and options under another name error 85 (IndexOptionsConflict); a unique
 *   index existing documents violate is error 11000 and is not created;
 *   dropIndex of an unknown name is error 27 (IndexNotFound).
 *
 * It lets the adapter's logic (filter, keyset and index translation, conflict
 * handling) run through the whole store contract without a server. It is not
 * a substitute for the contract run against a real MongoDB (MONGODB_URL).
 */
import { MongoServerError } from "mongodb";
import type { Db, Document } from "mongodb";

type Doc = Record<string, unknown>;

function serverError(code: number, codeName: string, message: string): MongoServerError {
  return new MongoServerError({ message, errmsg: message, code, codeName });
}

/** MongoDB's canonical type order, for the scalar types the store uses. */
function typeRank(v: unknown): number {
  if (v === null || v === undefined) return 1;
  if (typeof v === "number") return 2;
  if (typeof v === "string") return 3;
  if (Array.isArray(v)) return 5;
  if (typeof v === "object") return 4;
  if (typeof v === "boolean") return 9;
  return 10;
}

function compareValues(a: unknown, b: unknown): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 2) return (a as number) - (b as number);
  if (ra === 3) return Buffer.compare(Buffer.from(a as string), Buffer.from(b as string));
  if (ra === 9) return Number(a) - Number(b);
  if (ra === 4 || ra === 5) return JSON.stringify(a) < JSON.stringify(b) ? -1 : JSON.stringify(a) > JSON.stringify(b) ? 1 : 0;
  return 0;
}

function equalValues(a: unknown, b: unknown): boolean {
  return typeRank(a) === typeRank(b) && compareValues(a, b) === 0;
}

/** The values a path offers to a predicate: the value itself and, for an array, its elements. */
function candidates(value: unknown): unknown[] {
  return Array.isArray(value) ? [value, ...value] : [value];
}

const TYPE_ALIASES: Record<string, (v: unknown) => boolean> = {
  string: (v) => typeof v === "string",
  number: (v) => typeof v === "number",
  double: (v) => typeof v === "number",
  int: (v) => typeof v === "number" && Number.isInteger(v),
  bool: (v) => typeof v === "boolean",
  null: (v) => v === null,
  object: (v) => v !== null && typeof v === "object" && !Array.isArray(v),
  array: (v) => Array.isArray(v),
};

function matchOperator(value: unknown, op: string, arg: unknown): boolean {
  switch (op) {
    case "$eq":
      if (arg === null) return value === null || value === undefined || (Array.isArray(value) && value.includes(null));
      return candidates(value).some((v) => equalValues(v, arg));
    case "$ne":
      return !matchOperator(value, "$eq", arg);
    case "$in":
      return (arg as unknown[]).some((a) => matchOperator(value, "$eq", a));
    case "$exists":
      return (value !== undefined) === arg;
    case "$type": {
      const aliases = Array.isArray(arg) ? (arg as string[]) : [arg as string];
      return aliases.some((alias) => {
        const test = TYPE_ALIASES[alias];
        if (!test) throw serverError(2, "BadValue", `unknown type name alias: ${alias}`);
        return test(value) || (Array.isArray(value) && value.some(test));
      });
    }
    case "$lt":
    case "$lte":
    case "$gt":
    case "$gte": {
      if (arg === null) return op === "$lte" || op === "$gte" ? matchOperator(value, "$eq", null) : false;
      return candidates(value).some((v) => {
        if (typeRank(v) !== typeRank(arg)) return false; // type bracketing
        const c = compareValues(v, arg);
        return op === "$lt" ? c < 0 : op === "$lte" ? c <= 0 : op === "$gt" ? c > 0 : c >= 0;
      });
    }
    default:
      throw serverError(2, "BadValue", `unknown operator: ${op}`);
  }
}

export function matches(doc: Doc, query: Document): boolean {
  for (const [key, condition] of Object.entries(query)) {
    if (key === "$and") {
      if (!(condition as Document[]).every((q) => matches(doc, q))) return false;
      continue;
    }
    if (key === "$or") {
      if (!(condition as Document[]).some((q) => matches(doc, q))) return false;
      continue;
    }
    if (key.startsWith("$")) throw serverError(2, "BadValue", `unknown top level operator: ${key}`);
    const value = doc[key];
    const isOperatorObject =
      condition !== null &&
      typeof condition === "object" &&
      !Array.isArray(condition) &&
      Object.keys(condition).length > 0 &&
      Object.keys(condition).every((k) => k.startsWith("$"));
    if (isOperatorObject) {
      for (const [op, arg] of Object.entries(condition as Document)) if (!matchOperator(value, op, arg)) return false;
    } else if (!matchOperator(value, "$eq", condition)) {
      return false;
    }
  }
  return true;
}

function sortDocs(docs: Doc[], sort: Array<[string, 1 | -1]>): Doc[] {
  return [...docs].sort((a, b) => {
    for (const [field, direction] of sort) {
      const c = compareValues(a[field] ?? null, b[field] ?? null);
      if (c !== 0) return c * direction;
    }
    return 0;
  });
}

function project(doc: Doc, projection?: Document): Doc {
  const copy = structuredClone(doc);
  if (projection && projection._id === 0) delete copy._id;
  return copy;
}

interface ModelIndex {
  name: string;
  key: Array<[string, number]>;
  unique: boolean;
  partialFilterExpression?: Document;
}

function keyEntries(key: unknown): Array<[string, number]> {
  return (key instanceof Map ? [...key.entries()] : Object.entries(key as Document)) as Array<[string, number]>;
}

function sameIndexOptions(a: ModelIndex, b: ModelIndex): boolean {
  return a.unique === b.unique && JSON.stringify(a.partialFilterExpression ?? null) === JSON.stringify(b.partialFilterExpression ?? null);
}

function sameKey(a: ModelIndex, b: ModelIndex): boolean {
  return JSON.stringify(a.key) === JSON.stringify(b.key);
}

class ModelCursor {
  #sort: Array<[string, 1 | -1]> = [];
  #limit = 0;
  constructor(
    private readonly collection: ModelCollection,
    private readonly query: Document,
    private readonly projection?: Document,
  ) {}
  sort(sort: Array<[string, 1 | -1]>): this {
    this.#sort = sort;
    return this;
  }
  limit(limit: number): this {
    this.#limit = limit;
    return this;
  }
  async toArray(): Promise<Doc[]> {
    let docs = this.collection.docs.filter((doc) => matches(doc, this.query));
    if (this.#sort.length > 0) docs = sortDocs(docs, this.#sort);
    if (this.#limit > 0) docs = docs.slice(0, this.#limit);
    return docs.map((doc) => project(doc, this.projection));
  }
  async explain(): Promise<Document> {
    return { queryPlanner: { winningPlan: { stage: "MODEL" } } };
  }
}

class ModelCollection {
  docs: Doc[] = [];
  indexes: ModelIndex[] = [{ name: "_id_", key: [["_id", 1]], unique: true }];

  constructor(readonly collectionName: string) {}

  #violation(candidate: Doc, ignore?: Doc, indexes = this.indexes): ModelIndex | undefined {
    for (const index of indexes) {
      if (!index.unique) continue;
      if (index.partialFilterExpression && !matches(candidate, index.partialFilterExpression)) continue;
      const clash = this.docs.some(
        (other) =>
          other !== ignore &&
          other !== candidate &&
          (!index.partialFilterExpression || matches(other, index.partialFilterExpression)) &&
          index.key.every(([field]) => equalValues(other[field] ?? null, candidate[field] ?? null)),
      );
      if (clash) return index;
    }
    return undefined;
  }

  #insert(doc: Doc): void {
    const copy = structuredClone(doc);
    const index = this.#violation(copy);
    if (index) throw serverError(11000, "DuplicateKey", `E11000 duplicate key error collection: ${this.collectionName} index: ${index.name}`);
    this.docs.push(copy);
  }

  async insertOne(doc: Doc): Promise<Document> {
    this.#insert(doc);
    return { acknowledged: true, insertedId: doc._id };
  }

  async insertMany(docs: Doc[]): Promise<Document> {
    for (const doc of docs) this.#insert(doc);
    return { acknowledged: true, insertedCount: docs.length };
  }

  async findOne(query: Document, options?: { projection?: Document }): Promise<Doc | null> {
    const doc = this.docs.find((d) => matches(d, query));
    return doc ? project(doc, options?.projection) : null;
  }

  find(query: Document, options?: { projection?: Document }): ModelCursor {
    return new ModelCursor(this, query, options?.projection);
  }

  async countDocuments(query: Document): Promise<number> {
    return this.docs.filter((d) => matches(d, query)).length;
  }

  async findOneAndUpdate(
    query: Document,
    update: { $set: Doc },
    options: { returnDocument?: string; projection?: Document },
  ): Promise<Doc | null> {
    const doc = this.docs.find((d) => matches(d, query));
    if (!doc) return null;
    const updated: Doc = structuredClone(doc);
    for (const field of Object.keys(update.$set).sort()) updated[field] = structuredClone(update.$set[field]);
    const index = this.#violation(updated, doc);
    if (index) throw serverError(11000, "DuplicateKey", `E11000 duplicate key error collection: ${this.collectionName} index: ${index.name}`);
    this.docs[this.docs.indexOf(doc)] = updated;
    return project(options.returnDocument === "after" ? updated : doc, options.projection);
  }

  async deleteMany(query: Document): Promise<{ deletedCount: number }> {
    const before = this.docs.length;
    this.docs = this.docs.filter((d) => !matches(d, query));
    return { deletedCount: before - this.docs.length };
  }

  async createIndexes(specs: Document[]): Promise<string[]> {
    for (const spec of specs) {
      const wanted: ModelIndex = { name: spec.name as string, key: keyEntries(spec.key), unique: spec.unique === true };
      if (spec.partialFilterExpression) wanted.partialFilterExpression = structuredClone(spec.partialFilterExpression as Document);
      const sameName = this.indexes.find((i) => i.name === wanted.name);
      if (sameName) {
        if (sameKey(sameName, wanted) && sameIndexOptions(sameName, wanted)) continue;
        throw serverError(86, "IndexKeySpecsConflict", `An existing index has the same name as the requested index: ${wanted.name}`);
      }
      const equivalent = this.indexes.find((i) => sameKey(i, wanted) && sameIndexOptions(i, wanted));
      if (equivalent) throw serverError(85, "IndexOptionsConflict", `Index already exists with a different name: ${equivalent.name}`);
      for (const doc of this.docs) {
        if (this.#violation(doc, undefined, [wanted])) throw serverError(11000, "DuplicateKey", `E11000 duplicate key error index: ${wanted.name}`);
      }
      // A build takes time: let other callers run meanwhile, as they would against a server.
      await new Promise((done) => setImmediate(done));
      if (this.indexes.some((i) => i.name === wanted.name)) continue;
      this.indexes.push(wanted);
    }
    return specs.map((s) => s.name as string);
  }

  listIndexes(): { toArray: () => Promise<Document[]> } {
    return {
      toArray: async () =>
        this.indexes.map((i) => {
          const out: Document = { v: 2, key: Object.fromEntries(i.key), name: i.name };
          if (i.unique && i.name !== "_id_") out.unique = true;
          if (i.partialFilterExpression) out.partialFilterExpression = structuredClone(i.partialFilterExpression);
          return out;
        }),
    };
  }

  async dropIndex(name: string): Promise<Document> {
    const at = this.indexes.findIndex((i) => i.name === name);
    if (at < 0 || name === "_id_") throw serverError(27, "IndexNotFound", `index not found with name [${name}]`);
    this.indexes.splice(at, 1);
    return { ok: 1 };
  }
}

/** A database of the model: hand it to `mongoStoreOver`. */
export function modelDb(databaseName = "model"): Db {
  const collections = new Map<string, ModelCollection>();
  const db = {
    databaseName,
    collection(name: string): ModelCollection {
      let collection = collections.get(name);
      if (!collection) {
        collection = new ModelCollection(name);
        collections.set(name, collection);
      }
      return collection;
    },
    async command(command: Document): Promise<Document> {
      if (command.ping === 1 || command.hello === 1) return { ok: 1 };
      throw serverError(59, "CommandNotFound", `no such command: ${Object.keys(command)[0] ?? ""}`);
    },
  };
  return db as unknown as Db;
}
