import { DuplicateKeyError, type Collection, type Store } from "@voiceloc/store";
import { displayPrefix, generateApiKey, hashApiKey, keyIdOf, keyMatches } from "./keys.ts";

export interface ApiKeyDoc {
  /** The key id: public, used for lookup and revocation. */
  id: string;
  account_id: string;
  name: string;
  prefix: string;
  hash: string;
  source: "generated" | "seed";
  created_at: string;
  revoked_at: string | null;
}

export interface ApiKeyView {
  key_id: string;
  account: string;
  name: string;
  prefix: string;
  source: "generated" | "seed";
  created_at: string;
  revoked_at: string | null;
}

export type KeyCheck =
  | { ok: true; accountId: string; keyId: string }
  | { ok: false; reason: "unknown" | "revoked" };

export class ApiKeyRepository {
  private constructor(private readonly keys: Collection<ApiKeyDoc>) {}

  static async open(store: Store): Promise<ApiKeyRepository> {
    return new ApiKeyRepository(
      await store.collection<ApiKeyDoc>({ name: "api_keys", indexes: [{ fields: [["account_id", 1], ["created_at", -1]] }] }),
    );
  }

  /** Creates a key for an account; the clear key is returned once and never stored. */
  async create(accountId: string, name: string, now = new Date()): Promise<{ key: string; view: ApiKeyView }> {
    const generated = generateApiKey();
    const doc: ApiKeyDoc = {
      id: generated.keyId,
      account_id: accountId,
      name,
      prefix: generated.prefix,
      hash: generated.hash,
      source: "generated",
      created_at: now.toISOString(),
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
        created_at: now.toISOString(),
        revoked_at: null,
      });
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error;
    }
  }

  async check(key: string): Promise<KeyCheck> {
    const doc = await this.keys.get(keyIdOf(key));
    if (!doc || !keyMatches(key, doc.hash)) return { ok: false, reason: "unknown" };
    if (doc.revoked_at !== null) return { ok: false, reason: "revoked" };
    return { ok: true, accountId: doc.account_id, keyId: doc.id };
  }

  async list(accountId?: string): Promise<ApiKeyView[]> {
    const docs = await this.keys.find(accountId ? { account_id: accountId } : {}, { sort: [["created_at", -1], ["id", -1]] });
    return docs.map(toView);
  }

  /** Revokes a key by its id; false when there is no such key. */
  async revoke(keyId: string, now = new Date()): Promise<boolean> {
    const doc = await this.keys.updateOne({ id: keyId }, { revoked_at: now.toISOString() });
    return doc !== null;
  }
}

function toView(doc: ApiKeyDoc): ApiKeyView {
  return {
    key_id: doc.id,
    account: doc.account_id,
    name: doc.name,
    prefix: doc.prefix,
    source: doc.source,
    created_at: doc.created_at,
    revoked_at: doc.revoked_at,
  };
}
