import type { Logger } from "@voiceloc/log";
import type { Store } from "./collection.ts";
import { openEmbeddedStore } from "./sqlite.ts";
import { openMongoStore } from "./mongo.ts";

export type {
  Collection,
  CollectionSpec,
  FieldCondition,
  Filter,
  FindOptions,
  IndexSpec,
  Scalar,
  SortDirection,
  Store,
  StoredText,
} from "./collection.ts";
export { DuplicateKeyError, StoreError, type StoreErrorCode } from "./collection.ts";
export { EMBEDDED_DB_FILENAME, EXTERNAL_CHANGES_MS, openEmbeddedStore } from "./sqlite.ts";
export type { EmbeddedCollection, EmbeddedStore, EmbeddedStoreOptions } from "./sqlite.ts";
export { openMongoStore } from "./mongo.ts";
export type { MongoStore, MongoStoreOptions } from "./mongo.ts";

export interface OpenStoreOptions {
  /** When set (and not empty), the store is MongoDB at this URL. */
  mongodbUrl?: string;
  /** Otherwise the embedded store lives in this directory. */
  dataDir: string;
  logger?: Logger;
}

/** MongoDB when a URL is given, else the embedded SQLite store under `dataDir`. */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  const url = options.mongodbUrl?.trim();
  if (url) {
    return openMongoStore(options.logger ? { url, logger: options.logger } : { url });
  }
  return openEmbeddedStore(options.logger ? { dir: options.dataDir, logger: options.logger } : { dir: options.dataDir });
}
