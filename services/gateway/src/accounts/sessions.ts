import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Collection, Store } from "@voiceloc/store";

/**
 * Server-side dashboard sessions. The cookie carries a random 256-bit token; the store keeps only its
 * SHA-256 (a copy of the store gives no usable session). A session is anonymous (`account_id` null,
 * made for the sign-in and sign-up forms' CSRF token) or signed in; signing in replaces the anonymous
 * session by a new one (no session fixation). A session ends after SESSION_IDLE_SECONDS without a
 * request or SESSION_MAX_SECONDS after it began, on sign-out (deleted), on a password reset (every
 * session of the account deleted) or by `pnpm accounts revoke-sessions`.
 */
export interface SessionDoc {
  id: string;
  account_id: string | null;
  /** The synchronizer CSRF token of every form of this session. */
  csrf: string;
  created_at: string;
  last_seen_at: string;
  idle_expires_at: string;
  absolute_expires_at: string;
}

export interface SessionTimes {
  idleSeconds: number;
  maxSeconds: number;
}

/** last_seen_at is written when older than this: at most one write a minute per active session. */
const TOUCH_RESOLUTION_MS = 60_000;

const hashToken = (token: string) => createHash("sha256").update(token, "utf8").digest("hex");

export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length === y.length && timingSafeEqual(x, y);
}

export class SessionStore {
  private lastPurge = 0;

  private constructor(
    private readonly sessions: Collection<SessionDoc>,
    readonly times: SessionTimes,
    private readonly clock: () => Date,
  ) {}

  static async open(store: Store, times: SessionTimes, clock: () => Date = () => new Date()): Promise<SessionStore> {
    const sessions = await store.collection<SessionDoc>({
      name: "dashboard_sessions",
      indexes: [{ fields: [["account_id", 1]] }, { fields: [["idle_expires_at", 1]] }],
    });
    return new SessionStore(sessions, times, clock);
  }

  /** A new session; the token goes in the cookie and nowhere else. */
  async create(accountId: string | null): Promise<{ token: string; session: SessionDoc }> {
    const now = this.clock();
    await this.purgeExpired(now);
    const token = randomBytes(32).toString("base64url");
    const absolute = new Date(now.getTime() + this.times.maxSeconds * 1000);
    const session: SessionDoc = {
      id: hashToken(token),
      account_id: accountId,
      csrf: randomBytes(32).toString("base64url"),
      created_at: now.toISOString(),
      last_seen_at: now.toISOString(),
      idle_expires_at: this.idleUntil(now, absolute).toISOString(),
      absolute_expires_at: absolute.toISOString(),
    };
    await this.sessions.insert(session);
    return { token, session };
  }

  /** The live session of a cookie token (its idle time renewed), or null when unknown, expired or revoked. */
  async resolve(token: string | undefined): Promise<SessionDoc | null> {
    if (!token || token.length > 100) return null;
    const id = hashToken(token);
    const session = await this.sessions.get(id);
    if (!session) return null;
    const now = this.clock();
    if (Date.parse(session.idle_expires_at) <= now.getTime() || Date.parse(session.absolute_expires_at) <= now.getTime()) {
      await this.sessions.deleteMany({ id });
      return null;
    }
    if (now.getTime() - Date.parse(session.last_seen_at) >= TOUCH_RESOLUTION_MS) {
      const idle = this.idleUntil(now, new Date(session.absolute_expires_at)).toISOString();
      return (await this.sessions.updateOne({ id }, { last_seen_at: now.toISOString(), idle_expires_at: idle })) ?? null;
    }
    return session;
  }

  async delete(token: string): Promise<void> {
    await this.sessions.deleteMany({ id: hashToken(token) });
  }

  async deleteById(id: string): Promise<void> {
    await this.sessions.deleteMany({ id });
  }

  /** Ends every session of an account; returns how many. */
  deleteForAccount(accountId: string): Promise<number> {
    return this.sessions.deleteMany({ account_id: accountId });
  }

  countForAccount(accountId: string): Promise<number> {
    return this.sessions.count({ account_id: accountId });
  }

  private idleUntil(now: Date, absolute: Date): Date {
    return new Date(Math.min(now.getTime() + this.times.idleSeconds * 1000, absolute.getTime()));
  }

  /** Expired sessions are deleted at most once a minute, when sessions are made. */
  private async purgeExpired(now: Date): Promise<void> {
    if (now.getTime() - this.lastPurge < 60_000) return;
    this.lastPurge = now.getTime();
    await this.sessions.deleteMany({ idle_expires_at: { $lte: now.toISOString() } });
  }
}
