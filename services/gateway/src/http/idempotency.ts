import { createHash } from "node:crypto";
import { DuplicateKeyError, type Collection, type Store } from "@voiceloc/store";
import type { Logger } from "@voiceloc/log";
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
/** How often expired idempotency keys are deleted. */
export const IDEMPOTENCY_PURGE_INTERVAL_MS = 10 * 60 * 1000;

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

  /**
   * Purges expired keys now and then every `intervalMs` (an unref'd timer, so it never keeps the
   * process alive); returns the function that stops it (and waits for a purge under way). A failed purge is logged and retried at
   * the next tick.
   */
  startPurging(intervalMs: number, logger: Logger, now: () => Date = () => new Date()): () => Promise<void> {
    let current: Promise<void> | undefined;
    const tick = (): void => {
      if (current) return;
      current = this.purgeExpired(now())
        .then(
          (purged) => {
            if (purged > 0) logger.debug({ purged }, "expired idempotency keys purged");
          },
          (error: unknown) => logger.warn({ err: error }, "idempotency key purge failed"),
        )
        .finally(() => {
          current = undefined;
        });
    };
    const timer = setInterval(tick, intervalMs);
    timer.unref();
    tick();
    return async () => {
      clearInterval(timer);
      await current;
    };
  }
}

/**
 * JSON with object keys sorted, so key order does not make two bodies differ. Iterative (an
 * explicit stack), so no nesting depth can overflow the call stack.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  // Work items: a value to write, or a literal piece of text (a separator or a closing bracket).
  const stack: Array<{ value: unknown } | { text: string }> = [{ value }];
  while (stack.length > 0) {
    const item = stack.pop() as { value: unknown } | { text: string };
    if ("text" in item) {
      out.push(item.text);
      continue;
    }
    const v = item.value;
    if (Array.isArray(v)) {
      out.push("[");
      stack.push({ text: "]" });
      for (let i = v.length - 1; i >= 0; i--) {
        // JSON.stringify writes `undefined` (and functions) in arrays as null.
        stack.push({ value: v[i] === undefined ? null : v[i] });
        if (i > 0) stack.push({ text: "," });
      }
    } else if (v !== null && typeof v === "object") {
      const entries = Object.entries(v as Record<string, unknown>)
        .filter(([, e]) => e !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      out.push("{");
      stack.push({ text: "}" });
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, e] = entries[i] as [string, unknown];
        stack.push({ value: e });
        stack.push({ text: `${i > 0 ? "," : ""}${JSON.stringify(k)}:` });
      }
    } else {
      out.push(JSON.stringify(v) ?? "null");
    }
  }
  return out.join("");
}
