import { createHash } from "node:crypto";
import { DuplicateKeyError, type Collection, type Store } from "@voiceloc/store";
import { ConflictError } from "./errors.ts";

/** A stored first response for an (account, route, Idempotency-Key). */
export interface IdempotencyDoc {
  id: string;
  account_id: string;
  fingerprint: string;
  state: "in_progress" | "done";
  status: number | null;
  body: string | null;
  location: string | null;
  created_at: string;
  expires_at: string;
}

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export type Claim =
  | { kind: "new"; id: string }
  | { kind: "replay"; status: number; body: string; location: string | null };

/**
 * `Idempotency-Key` on creating POSTs: the first request with a key claims it;
 * the same key and the same body later replays the first response; the same key
 * with another body is a 409. Only successful responses are kept (a request that
 * failed validation can be corrected and retried with the same key). Keys expire
 * after 24 hours.
 */
export class IdempotencyStore {
  private constructor(private readonly docs: Collection<IdempotencyDoc>) {}

  static async open(store: Store): Promise<IdempotencyStore> {
    return new IdempotencyStore(
      await store.collection<IdempotencyDoc>({ name: "idempotency_keys", indexes: [{ fields: [["expires_at", 1]] }] }),
    );
  }

  async claim(accountId: string, route: string, key: string, body: unknown, now = new Date()): Promise<Claim> {
    const id = createHash("sha256").update(`${accountId}\n${route}\n${key}`).digest("hex");
    const fingerprint = createHash("sha256").update(canonicalJson(body)).digest("hex");
    const fresh: IdempotencyDoc = {
      id,
      account_id: accountId,
      fingerprint,
      state: "in_progress",
      status: null,
      body: null,
      location: null,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS).toISOString(),
    };
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const existing = await this.docs.get(id);
      if (!existing) {
        try {
          await this.docs.insert(fresh);
          return { kind: "new", id };
        } catch (error) {
          if (error instanceof DuplicateKeyError) continue;
          throw error;
        }
      }
      if (existing.expires_at <= fresh.created_at) {
        await this.docs.deleteMany({ id, expires_at: existing.expires_at });
        continue;
      }
      if (existing.fingerprint !== fingerprint) {
        throw new ConflictError("Idempotency-Key has already been used with a different request body");
      }
      if (existing.state === "in_progress" || existing.status === null || existing.body === null) {
        throw new ConflictError("A request with this Idempotency-Key is still being processed; retry later");
      }
      return { kind: "replay", status: existing.status, body: existing.body, location: existing.location };
    }
    throw new ConflictError("Idempotency-Key is being used concurrently; retry later");
  }

  async complete(id: string, status: number, body: string, location: string | null): Promise<void> {
    await this.docs.updateOne({ id }, { state: "done", status, body, location });
  }

  async release(id: string): Promise<void> {
    await this.docs.deleteMany({ id, state: "in_progress" });
  }

  async purgeExpired(now = new Date()): Promise<number> {
    return this.docs.deleteMany({ expires_at: { $lte: now.toISOString() } });
  }
}

/** JSON with object keys sorted, so key order does not make two bodies differ. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
