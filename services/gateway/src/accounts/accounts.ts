import { randomBytes } from "node:crypto";
import { hash, verify } from "@node-rs/argon2";
import { DuplicateKeyError, type Collection, type Store } from "@voiceloc/store";

/**
 * Dashboard accounts: the email (lower case) is the account id that API keys and records belong to.
 * Passwords are kept as argon2id hashes (OWASP's minimum profile: 19 MiB, 2 passes, 1 lane).
 */
export interface AccountDoc {
  id: string;
  password_hash: string;
  /** An operator approved the account's live keys (matters only with LIVE_KEYS=approval). */
  approved: boolean;
  approved_at: string | null;
  created_at: string;
  password_changed_at: string;
}

export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 1024;
const EMAIL = /^[a-z0-9._%+-]{1,64}@[a-z0-9-]{1,63}(\.[a-z0-9-]{1,63})+$/;
const EMAIL_MAX_LENGTH = 254;
const ARGON2 = { algorithm: 2 /* Argon2id (a const enum in the typings) */, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

/** The account id for an email as typed (trimmed, lower case), or null when it is not an email address. */
export function normaliseEmail(raw: string): string | null {
  const email = raw.trim().toLowerCase();
  return email.length <= EMAIL_MAX_LENGTH && EMAIL.test(email) ? email : null;
}

/** Why a password is refused, or null when acceptable. */
export function passwordProblem(password: string): string | null {
  if ([...password].length < PASSWORD_MIN_LENGTH) return `The password needs at least ${PASSWORD_MIN_LENGTH} characters.`;
  if (password.length > PASSWORD_MAX_LENGTH) return `The password may have at most ${PASSWORD_MAX_LENGTH} characters.`;
  return null;
}

export class AccountExistsError extends Error {
  constructor(email: string) {
    super(`An account for ${email} exists already`);
    this.name = "AccountExistsError";
  }
}

export class AccountRepository {
  /** A hash of a random password: unknown emails are verified against it, so they take as long as known ones. */
  private dummyHash: Promise<string> | undefined;

  private constructor(private readonly accounts: Collection<AccountDoc>) {}

  static async open(store: Store): Promise<AccountRepository> {
    return new AccountRepository(await store.collection<AccountDoc>({ name: "accounts" }));
  }

  async create(email: string, password: string, options: { approved?: boolean; now?: Date } = {}): Promise<AccountDoc> {
    const now = (options.now ?? new Date()).toISOString();
    const doc: AccountDoc = {
      id: email,
      password_hash: await hash(password, ARGON2),
      approved: options.approved ?? false,
      approved_at: options.approved ? now : null,
      created_at: now,
      password_changed_at: now,
    };
    try {
      await this.accounts.insert(doc);
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw new AccountExistsError(email);
      throw error;
    }
    return doc;
  }

  get(email: string): Promise<AccountDoc | null> {
    return this.accounts.get(email);
  }

  /**
   * The account when the password is right, else null. An unknown email costs one argon2id
   * verification too (against a dummy hash), so timing does not tell which emails have accounts.
   */
  async verify(email: string, password: string): Promise<AccountDoc | null> {
    const doc = await this.accounts.get(email);
    const stored = doc?.password_hash ?? (await (this.dummyHash ??= hash(randomBytes(32).toString("base64url"), ARGON2)));
    let ok = false;
    try {
      ok = await verify(stored, password);
    } catch {
      ok = false;
    }
    return ok && doc ? doc : null;
  }

  async approve(email: string, now = new Date()): Promise<boolean> {
    return (await this.accounts.updateOne({ id: email }, { approved: true, approved_at: now.toISOString() })) !== null;
  }

  async setPassword(email: string, password: string, now = new Date()): Promise<boolean> {
    const password_hash = await hash(password, ARGON2);
    return (await this.accounts.updateOne({ id: email }, { password_hash, password_changed_at: now.toISOString() })) !== null;
  }

  /**
   * Whether live keys of this account may be used under LIVE_KEYS=approval: an approved account, or an
   * account id with no dashboard account (keys an operator issued with `pnpm keys create` or seeded).
   */
  async liveApproved(accountId: string): Promise<boolean> {
    const doc = await this.accounts.get(accountId);
    return doc === null || doc.approved;
  }
}
