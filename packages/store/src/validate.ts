/**
 * Validation and normalisation shared by both adapters, so that a filter,
 * sort or update is accepted or rejected the same way whatever the backend.
 */
import { StoreError } from "./collection.ts";
import type { Filter, FindOptions, IndexSpec, Scalar, SortDirection } from "./collection.ts";

const FIELD_RE = /^[A-Za-z0-9_]{1,64}$/;
const COLLECTION_RE = /^[A-Za-z][A-Za-z0-9_]{0,62}$/;
const INDEX_RE = /^[A-Za-z0-9_]{1,63}$/;

/** Field names reach SQL text and MongoDB keys: letters, digits and `_` only. */
export function assertFieldName(field: string): void {
  if (typeof field !== "string" || !FIELD_RE.test(field)) {
    throw new StoreError("invalid_field", `Invalid field name ${JSON.stringify(field)}: use letters, digits and '_' only`);
  }
  if (field === "_id") {
    throw new StoreError("invalid_field", "The field name '_id' is reserved; documents are keyed by 'id'");
  }
}

/**
 * Collection names become SQLite table names, which are case-insensitive:
 * do not use two names that differ only by case.
 */
export function assertCollectionName(name: string): void {
  if (typeof name !== "string" || !COLLECTION_RE.test(name) || /^(sqlite_|system)/i.test(name)) {
    throw new StoreError(
      "invalid_collection",
      `Invalid collection name ${JSON.stringify(name)}: start with a letter, then letters, digits and '_' (at most 63), not 'sqlite_'/'system'`,
    );
  }
}

export function assertIndexName(name: string): void {
  if (typeof name !== "string" || !INDEX_RE.test(name)) {
    throw new StoreError("invalid_index", `Invalid index name ${JSON.stringify(name)}`);
  }
}

function isScalar(value: unknown): value is Scalar {
  return (
    value === null ||
    typeof value === "string" ||
    typeof value === "boolean" ||
    (typeof value === "number" && Number.isFinite(value))
  );
}

function assertScalar(value: unknown, where: string): asserts value is Scalar {
  if (!isScalar(value)) {
    throw new StoreError(
      "invalid_filter",
      `${where}: expected a string, a finite number, a boolean or null, got ${value === undefined ? "undefined" : JSON.stringify(value) ?? typeof value}`,
    );
  }
}

export type ComparisonOp = "$eq" | "$ne" | "$lt" | "$lte" | "$gt" | "$gte";

export type Clause =
  | { field: string; op: ComparisonOp; value: Scalar }
  | { field: string; op: "$in"; value: Scalar[] }
  | { field: string; op: "$exists"; value: boolean };

const COMPARISON_OPS: ReadonlySet<string> = new Set(["$eq", "$ne", "$lt", "$lte", "$gt", "$gte"]);

/**
 * Turns a filter into a flat list of clauses (all must hold). A bare scalar is
 * `$eq`. Operators whose value is `undefined` are ignored, so optional bounds
 * can be passed straight through; a bare `undefined` field value is rejected,
 * because silently matching "missing" there would widen a query.
 */
export function normalizeFilter(filter: Filter): Clause[] {
  if (filter === null || typeof filter !== "object" || Array.isArray(filter)) {
    throw new StoreError("invalid_filter", "A filter must be an object");
  }
  const clauses: Clause[] = [];
  for (const [field, condition] of Object.entries(filter)) {
    assertFieldName(field);
    if (condition === null || typeof condition !== "object") {
      assertScalar(condition, `Filter on '${field}'`);
      clauses.push({ field, op: "$eq", value: condition });
      continue;
    }
    if (Array.isArray(condition)) {
      throw new StoreError("invalid_filter", `Filter on '${field}': arrays are not values; use {$in: [...]}`);
    }
    for (const [op, value] of Object.entries(condition) as Array<[string, unknown]>) {
      if (value === undefined) continue;
      if (COMPARISON_OPS.has(op)) {
        assertScalar(value, `Filter on '${field}' ${op}`);
        clauses.push({ field, op: op as ComparisonOp, value });
      } else if (op === "$in") {
        if (!Array.isArray(value)) {
          throw new StoreError("invalid_filter", `Filter on '${field}' $in: expected an array`);
        }
        for (const v of value) assertScalar(v, `Filter on '${field}' $in`);
        clauses.push({ field, op: "$in", value: value as Scalar[] });
      } else if (op === "$exists") {
        if (typeof value !== "boolean") {
          throw new StoreError("invalid_filter", `Filter on '${field}' $exists: expected a boolean`);
        }
        clauses.push({ field, op: "$exists", value });
      } else {
        throw new StoreError("invalid_filter", `Filter on '${field}': unknown operator ${JSON.stringify(op)}`);
      }
    }
  }
  return clauses;
}

export interface NormalizedFind {
  sort: Array<[field: string, direction: SortDirection]>;
  after?: Scalar[];
  limit?: number;
}

export function normalizeFind(options: FindOptions | undefined): NormalizedFind {
  const sort = options?.sort ?? [];
  if (!Array.isArray(sort)) throw new StoreError("invalid_argument", "sort must be an array of [field, 1 | -1]");
  const seen = new Set<string>();
  for (const entry of sort) {
    if (!Array.isArray(entry) || entry.length !== 2) {
      throw new StoreError("invalid_argument", "sort must be an array of [field, 1 | -1]");
    }
    const [field, direction] = entry;
    assertFieldName(field);
    if (direction !== 1 && direction !== -1) {
      throw new StoreError("invalid_argument", `Sort direction for '${field}' must be 1 or -1`);
    }
    if (seen.has(field)) throw new StoreError("invalid_argument", `Sort field '${field}' is repeated`);
    seen.add(field);
  }
  const result: NormalizedFind = { sort };
  const after = options?.after;
  if (after !== undefined) {
    if (!Array.isArray(after) || after.length !== sort.length || sort.length === 0) {
      throw new StoreError("invalid_argument", "after must hold exactly one value per sort field (and needs a sort)");
    }
    for (const v of after) assertScalar(v, "after");
    result.after = after;
  }
  const limit = options?.limit;
  if (limit !== undefined) {
    if (!Number.isSafeInteger(limit) || limit < 0) {
      throw new StoreError("invalid_argument", "limit must be a non-negative integer");
    }
    result.limit = limit;
  }
  return result;
}

export function normalizeIndex(spec: IndexSpec): Required<IndexSpec> {
  if (!spec || !Array.isArray(spec.fields) || spec.fields.length === 0) {
    throw new StoreError("invalid_index", "An index needs at least one field");
  }
  const seen = new Set<string>();
  for (const entry of spec.fields) {
    if (!Array.isArray(entry) || entry.length !== 2) {
      throw new StoreError("invalid_index", "Index fields must be [field, 1 | -1]");
    }
    const [field, direction] = entry;
    assertFieldName(field);
    if (direction !== 1 && direction !== -1) {
      throw new StoreError("invalid_index", `Index direction for '${field}' must be 1 or -1`);
    }
    if (seen.has(field)) throw new StoreError("invalid_index", `Index field '${field}' is repeated`);
    seen.add(field);
  }
  const name = spec.name ?? spec.fields.map(([f, d]) => `${f}_${d === 1 ? "a" : "d"}`).join("_").slice(0, 63);
  assertIndexName(name);
  return { fields: spec.fields, unique: spec.unique ?? false, name };
}

/** Checks a document before it is written; returns its id. */
export function assertDocument(doc: unknown): string {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) {
    throw new StoreError("invalid_document", "A document must be a plain object");
  }
  const id = (doc as { id?: unknown }).id;
  if (typeof id !== "string" || id.length === 0) {
    throw new StoreError("invalid_document", "A document needs a non-empty string 'id'");
  }
  if (Object.hasOwn(doc, "_id")) {
    throw new StoreError("invalid_document", "Documents must not carry '_id'; the store keys them by 'id'");
  }
  return id;
}

/**
 * Checks the fields of an update and drops those set to `undefined` (they
 * are "not given", as JSON would drop them). `id` cannot be changed.
 */
export function normalizeSet(set: object): Record<string, unknown> {
  if (set === null || typeof set !== "object" || Array.isArray(set)) {
    throw new StoreError("invalid_update", "An update must be an object of fields to set");
  }
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(set)) {
    if (value === undefined) continue;
    assertFieldName(field);
    if (field === "id") throw new StoreError("invalid_update", "updateOne cannot change 'id'");
    out[field] = value;
  }
  return out;
}
