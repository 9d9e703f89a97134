import { randomUUID } from "node:crypto";
import type { Collection, Store } from "@voiceloc/store";

/**
 * Sign-in and sign-up throttling shared by every gateway on the store: each failed sign-in is one
 * document for its account and one for its client address; an account with
 * LOGIN_MAX_FAILURES_PER_ACCOUNT failures (or an address with LOGIN_MAX_FAILURES_PER_ADDRESS) within
 * the last LOGIN_WINDOW_SECONDS is refused without checking the password until the oldest of them
 * leaves the window. Unknown emails count exactly like known ones, so the refusal tells nothing about
 * which accounts exist. A successful sign-in clears its account's failures (not its address's).
 * Sign-ups are counted per client address alike, every one (made or not): past
 * SIGNUP_MAX_PER_ADDRESS within the window, an address's sign-ups are refused until the oldest
 * leaves it.
 */
interface FailureDoc {
  id: string;
  key: string;
  at: string;
}

export interface ThrottleLimits {
  perAccount: number;
  perAddress: number;
  windowSeconds: number;
  /** Sign-ups one client address may send within the window (SIGNUP_MAX_PER_ADDRESS). */
  signupsPerAddress: number;
}

export class LoginThrottle {
  private lastPurge = 0;

  private constructor(
    private readonly failures: Collection<FailureDoc>,
    readonly limits: ThrottleLimits,
    private readonly clock: () => Date,
  ) {}

  static async open(store: Store, limits: ThrottleLimits, clock: () => Date = () => new Date()): Promise<LoginThrottle> {
    const failures = await store.collection<FailureDoc>({ name: "login_failures", indexes: [{ fields: [["key", 1], ["at", 1]] }] });
    return new LoginThrottle(failures, limits, clock);
  }

  /** Seconds until a sign-in for this account from this address may be tried again; 0 when it may now. */
  retryAfter(account: string, address: string): Promise<number> {
    return this.wait([
      [`account:${account}`, this.limits.perAccount],
      [`address:${address}`, this.limits.perAddress],
    ]);
  }

  /** Seconds until a sign-up from this address may be tried again; 0 when it may now. */
  signupRetryAfter(address: string): Promise<number> {
    return this.wait([[`signup:${address}`, this.limits.signupsPerAddress]]);
  }

  /** Counts a sign-up from this address (whether it made an account or not). */
  async recordSignup(address: string): Promise<void> {
    const now = this.clock();
    await this.purge(now);
    await this.failures.insert({ id: randomUUID(), key: `signup:${address}`, at: now.toISOString() });
  }

  private async wait(limits: ReadonlyArray<readonly [key: string, max: number]>): Promise<number> {
    const now = this.clock().getTime();
    const since = new Date(now - this.limits.windowSeconds * 1000).toISOString();
    let wait = 0;
    for (const [key, max] of limits) {
      const count = await this.failures.count({ key, at: { $gt: since } });
      if (count < max) continue;
      // refused until enough of the window's entries have aged out to leave room for one more
      const recent = await this.failures.find({ key, at: { $gt: since } }, { sort: [["at", -1]], limit: max });
      const freeing = recent[max - 1];
      const until = freeing ? Date.parse(freeing.at) + this.limits.windowSeconds * 1000 : now + 1000;
      wait = Math.max(wait, Math.ceil((until - now) / 1000));
    }
    return wait;
  }

  async recordFailure(account: string, address: string): Promise<void> {
    const now = this.clock();
    await this.purge(now);
    const at = now.toISOString();
    await this.failures.insertMany([
      { id: randomUUID(), key: `account:${account}`, at },
      { id: randomUUID(), key: `address:${address}`, at },
    ]);
  }

  async clearAccount(account: string): Promise<void> {
    await this.failures.deleteMany({ key: `account:${account}` });
  }

  private async purge(now: Date): Promise<void> {
    if (now.getTime() - this.lastPurge < 60_000) return;
    this.lastPurge = now.getTime();
    await this.failures.deleteMany({ at: { $lte: new Date(now.getTime() - this.limits.windowSeconds * 1000).toISOString() } });
  }
}
