import { createHash, randomBytes } from "node:crypto";
import type { Collection, Store } from "@voiceloc/store";

/**
 * Offline password resets: `pnpm accounts reset-link <email>` prints a link holding a random token; the
 * store keeps its SHA-256 only. A link works once, for RESET_LINK_TTL_SECONDS; a new link replaces older
 * ones of the account.
 */
interface ResetDoc {
  id: string;
  account_id: string;
  expires_at: string;
}

const hashToken = (token: string) => createHash("sha256").update(token, "utf8").digest("hex");

export class PasswordResets {
  private constructor(
    private readonly resets: Collection<ResetDoc>,
    private readonly clock: () => Date,
  ) {}

  static async open(store: Store, clock: () => Date = () => new Date()): Promise<PasswordResets> {
    return new PasswordResets(await store.collection<ResetDoc>({ name: "password_resets", indexes: [{ fields: [["account_id", 1]] }] }), clock);
  }

  async create(accountId: string, ttlSeconds: number): Promise<{ token: string; expiresAt: string }> {
    await this.resets.deleteMany({ account_id: accountId });
    const token = randomBytes(32).toString("base64url");
    const expiresAt = new Date(this.clock().getTime() + ttlSeconds * 1000).toISOString();
    await this.resets.insert({ id: hashToken(token), account_id: accountId, expires_at: expiresAt });
    return { token, expiresAt };
  }

  /** The account a live token resets, or null (unknown, used or expired). */
  async peek(token: string): Promise<string | null> {
    if (token.length === 0 || token.length > 100) return null;
    const doc = await this.resets.get(hashToken(token));
    if (!doc || Date.parse(doc.expires_at) <= this.clock().getTime()) return null;
    return doc.account_id;
  }

  /** Uses the token up: the account it resets, or null. Only one caller can consume a token. */
  async consume(token: string): Promise<string | null> {
    const account = await this.peek(token);
    if (account === null) return null;
    const deleted = await this.resets.deleteMany({ id: hashToken(token) });
    return deleted === 1 ? account : null;
  }
}
