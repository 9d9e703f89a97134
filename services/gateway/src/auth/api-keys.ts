import { DuplicateKeyError, type Collection, type Store } from "@voiceloc/store";
import { displayPrefix, generateApiKey, hashApiKey, keyIdOf, keyMatches, type KeyMode } from "./keys.ts";

export interface ApiKeyDoc {
  /** The key id: public, used for lookup and revocation. */
  id: string;
  account_id: string;
  name: string;
  prefix: string;
  hash: string;
  source: "generated" | "seed";
  /** Missing on keys made before modes existed: those are live. */
  mode?: KeyMode;
  created_at: string;
  /** When the key last authenticated a request (updated at most once a minute); null when never. */
  last_used_at?: string | null;
  revoked_at: string | null;
}

export interface ApiKeyView {
  key_id: string;
  account: string;
  name: string;
  prefix: string;
  mode: KeyMode;
  source: "generated" | "seed";
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export type KeyCheck =
  | { ok: true; accountId: string; keyId: string; mode: KeyMode }
  | { ok: false; reason: "unknown" | "revoked" };

/** `last_used_at` is written when the stored value is older than this: at most one write a minute per key. */
const LAST_USED_RESOLUTION_MS = 60_000;

export class ApiKeyRepository {
  private constructor(private readonly keys: Collection<ApiKeyDoc>) {}

  static async open(store: Store): Promise<ApiKeyRepository> {
    return new ApiKeyRepository(
      await store.collection<ApiKeyDoc>({ name: "api_keys", indexes: [{ fields: [["account_id", 1], ["created_at", -1]] }] }),
    );
  }

  /** Creates a key for an account; the clear key is returned once and never stored. */
  async create(accountId: string, name: string, now = new Date(), mode: KeyMode = "live"): Promise<{ key: string; view: ApiKeyView }> {
    const generated = generateApiKey(mode);
    const doc: ApiKeyDoc = {
      id: generated.keyId,
      account_id: accountId,
      name,
      prefix: generated.prefix,
      hash: generated.hash,
      source: "generated",
      mode,
      created_at: now.toISOString(),
      last_used_at: null,
      revoked_at: null,
    };
    await this.keys.insert(doc);
    return { key: generated.key, view: toView(doc) };
  }

  /** Makes sure a development key from VOICELOC_API_KEYS exists (idempotent). */
  async seed(accountId: string, key: string, now = new Date()): Promise<void> {
    const id = keyIdOf(key);
    const existing = await this.keys.get(id);
    if (existing) {
      if (existing.account_id !== accountId || !keyMatches(key, existing.hash) || existing.revoked_at !== null) {
        await this.keys.updateOne({ id }, { account_id: accountId, hash: hashApiKey(key), revoked_at: null });
      }
      return;
    }
    try {
      await this.keys.insert({
        id,
        account_id: accountId,
        name: "seeded from VOICELOC_API_KEYS",
        prefix: displayPrefix(key),
        hash: hashApiKey(key),
        source: "seed",
        mode: "live",
        created_at: now.toISOString(),
        last_used_at: null,
        revoked_at: null,
      });
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error;
    }
  }

  async check(key: string, now = new Date()): Promise<KeyCheck> {
    const doc = await this.keys.get(keyIdOf(key));
    if (!doc || !keyMatches(key, doc.hash)) return { ok: false, reason: "unknown" };
    if (doc.revoked_at !== null) return { ok: false, reason: "revoked" };
    const last = doc.last_used_at ? Date.parse(doc.last_used_at) : 0;
    if (now.getTime() - last >= LAST_USED_RESOLUTION_MS) {
      await this.keys.updateOne({ id: doc.id }, { last_used_at: now.toISOString() });
    }
    return { ok: true, accountId: doc.account_id, keyId: doc.id, mode: doc.mode ?? "live" };
  }

  async list(accountId?: string): Promise<ApiKeyView[]> {
    const docs = await this.keys.find(accountId ? { account_id: accountId } : {}, { sort: [["created_at", -1], ["id", -1]] });
    return docs.map(toView);
  }

  /** One key of an account (null when unknown or another account's). */
  async getOwned(accountId: string, keyId: string): Promise<ApiKeyView | null> {
    const doc = await this.keys.get(keyId);
    return doc && doc.account_id === accountId ? toView(doc) : null;
  }

  /** Revokes a key by its id; false when there is no such key (or, with `accountId`, not that account's). */
  async revoke(keyId: string, now = new Date(), accountId?: string): Promise<boolean> {
    const filter: Record<string, string> = accountId === undefined ? { id: keyId } : { id: keyId, account_id: accountId };
    const doc = await this.keys.updateOne(filter, { revoked_at: now.toISOString() });
    return doc !== null;
  }
}

function toView(doc: ApiKeyDoc): ApiKeyView {
  return {
    key_id: doc.id,
    account: doc.account_id,
    name: doc.name,
    prefix: doc.prefix,
    mode: doc.mode ?? "live",
    source: doc.source,
    created_at: doc.created_at,
    last_used_at: doc.last_used_at ?? null,
    revoked_at: doc.revoked_at,
  };
}
