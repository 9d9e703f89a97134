import { DuplicateKeyError, type Collection, type Store } from "@voiceloc/store";

/**
 * What the dashboard tells an account at its next visit, where another deployment would send mail
 * (there is no mail system): for now, that someone tried to sign up with its email address. The
 * sign-up page answers an existing email exactly like a new one, so the requester learns nothing;
 * the account's owner learns it here instead. One document per account: repeated attempts update
 * it (the first and last time, how many), so no one can grow the store past one document per
 * account, and showing it deletes it (shown once).
 */
export interface SignupAttemptDoc {
  /** The account (its email). */
  id: string;
  first_at: string;
  last_at: string;
  attempts: number;
}

export class AccountNotices {
  private constructor(private readonly attempts: Collection<SignupAttemptDoc>) {}

  static async open(store: Store): Promise<AccountNotices> {
    return new AccountNotices(await store.collection<SignupAttemptDoc>({ name: "account_signup_attempts" }));
  }

  /** Someone tried to create an account with this existing account's email address. */
  async signupAttempted(account: string, now = new Date()): Promise<void> {
    const at = now.toISOString();
    for (let round = 0; round < 3; round++) {
      const known = await this.attempts.get(account);
      if (known) {
        // conditioned on the count read: two attempts at once both count
        const updated = await this.attempts.updateOne({ id: account, attempts: known.attempts }, { last_at: at, attempts: known.attempts + 1 });
        if (updated) return;
        continue;
      }
      try {
        await this.attempts.insert({ id: account, first_at: at, last_at: at, attempts: 1 });
        return;
      } catch (error) {
        if (!(error instanceof DuplicateKeyError)) throw error;
      }
    }
  }

  /** The account's pending notice, removed as it is read (so it is shown once), or null. */
  async take(account: string): Promise<SignupAttemptDoc | null> {
    const pending = await this.attempts.get(account);
    if (!pending) return null;
    // deleted only as read: an attempt counted meanwhile keeps it for the next page
    const deleted = await this.attempts.deleteMany({ id: account, attempts: pending.attempts });
    return deleted === 1 ? pending : null;
  }
}
