/**
 * Per-credential request rate limit on `/v1`: a token bucket (GCRA) whose state
 * lives in the store, so every gateway on the same store spends one budget.
 *
 * The bucket holds `burst` requests and refills at `perMinute / 60` per second.
 * Its whole state is one number per credential, the theoretical arrival time
 * (TAT): the instant the bucket will be full again. Taking `n` tokens moves it
 * forward by `n` emission intervals; it may not run further ahead of now than
 * the bucket's capacity. Updates are compare-and-set (`updateOne` filtered on
 * the TAT that was read), so concurrent gateways never both spend one token.
 *
 * To keep the per-request cost low a gateway does not write on every request:
 * it takes a lease of several tokens at once and serves requests from it in
 * memory. The lease grows (doubling, up to a tenth of the burst) while the
 * client keeps spending it within LEASE_TTL_MS and shrinks when tokens expire
 * unspent, so a slow client costs nothing extra and a fast one costs one store
 * write per lease: a lease never outgrows what its client spends in about a
 * LEASE_TTL_MS, so a busy credential with a large budget costs a few writes a
 * second however many requests it sends, and a gateway that dies forfeits at most
 * that second's worth (and never more than a tenth of the burst). Leased tokens are already debited from the shared bucket,
 * so gateways together never admit more than the bucket allows; an unspent
 * lease is forfeited after LEASE_TTL_MS (tokens cannot be saved up past the
 * burst). A refused credential is refused in memory until a token is due,
 * without touching the store.
 *
 * Response header fields follow draft-ietf-httpapi-ratelimit-headers-11:
 *   RateLimit-Policy: "per-key";q=<burst>;w=<seconds the bucket takes to refill>
 *   RateLimit: "per-key";r=<requests available now>;t=<seconds until full>
 * A client that sends at most q requests in any w seconds is never refused.
 * On a 429, `t` equals `Retry-After`: the seconds until one request is allowed.
 */
import { createHash } from "node:crypto";
import type { Context } from "hono";
import { ErrorSchema } from "@voiceloc/contracts";
import type { Logger } from "@voiceloc/log";
import { DuplicateKeyError, type Collection, type Store } from "@voiceloc/store";
import type { Principal } from "../auth/authenticator.ts";
import type { GatewayEnv } from "./context.ts";
import { TooManyRequestsError } from "./errors.ts";
import { headerFields } from "./respond.ts";

export interface RateLimitPolicy {
  /** Sustained requests per minute per credential. */
  perMinute: number;
  /** Requests a credential may send at once after being idle (the bucket's size). */
  burst: number;
}

export type RateDecision =
  | { kind: "allowed"; remaining: number; fullInSeconds: number }
  | { kind: "limited"; retryAfterSeconds: number }
  /** The shared state could not be read or written: the request goes through unmetered. */
  | { kind: "unmetered" };

/** A leased token not spent within this time is forfeited. */
export const LEASE_TTL_MS = 1_000;
/** Compare-and-set attempts against other gateways before refusing (with a short random pause between). */
const MAX_ATTEMPTS = 10;
const MAX_PAUSE_MS = 20;
/** Credentials remembered in memory before idle ones are forgotten. */
const LOCAL_SOFT_CAP = 10_000;
/** Buckets full for this long are deleted from the store, at most this often. */
const PURGE_INTERVAL_MS = 10 * 60_000;

const US_PER_MS = 1_000;
const US_PER_S = 1_000_000;

export const RATE_LIMIT_COLLECTION = "rate_limits";
/** The policy's name in the RateLimit-Policy and RateLimit fields. */
export const RATE_LIMIT_POLICY_NAME = "per-key";

interface BucketDoc {
  id: string;
  /** Theoretical arrival time, microseconds since the epoch (an integer). */
  tat: number;
}

/** What one gateway knows about one credential's bucket. */
interface LocalBucket {
  readonly id: string;
  /** The TAT last read or written; null when the store had no document. */
  tat: number | null;
  /** Whether `tat` may be used as the expected value of the next compare-and-set. */
  known: boolean;
  /** Leased tokens not yet spent, and until when they may be spent (µs). */
  tokens: number;
  leaseUntil: number;
  leaseSize: number;
  /** Refused without asking the store until this instant (µs). */
  blockedUntil: number;
  pending: Promise<void> | undefined;
}

/** The credential's bucket kept changing under this gateway: it is that busy, so the request is refused. */
export class RateLimitContentionError extends Error {
  readonly code = "rate_limit_contention";
  constructor(options?: { cause?: unknown }) {
    super("other gateways kept changing the credential's bucket", options);
    this.name = "RateLimitContentionError";
  }
}

export class RateLimiter {
  /** Microseconds between two tokens (rounded up: never faster than configured). */
  readonly #interval: number;
  /** The bucket's capacity in microseconds of TAT lead. */
  readonly #capacity: number;
  readonly #maxLease: number;
  readonly #local = new Map<string, LocalBucket>();
  #sweepAt = LOCAL_SOFT_CAP;
  #purgedAt = 0;
  /** `RateLimit-Policy` field value. */
  readonly policyField: string;
  /** The window `w` of the policy, in seconds. */
  readonly windowSeconds: number;

  private constructor(
    private readonly buckets: Collection<BucketDoc>,
    readonly policy: RateLimitPolicy,
    private readonly logger: Logger,
    private readonly nowMs: () => number,
  ) {
    this.#interval = Math.ceil((60 * US_PER_S) / policy.perMinute);
    this.#capacity = policy.burst * this.#interval;
    this.#maxLease = Math.max(1, Math.floor(policy.burst / 10));
    this.windowSeconds = Math.max(1, Math.ceil(this.#capacity / US_PER_S));
    this.policyField = `"${RATE_LIMIT_POLICY_NAME}";q=${policy.burst};w=${this.windowSeconds}`;
  }

  static async open(store: Store, policy: RateLimitPolicy, options: { logger: Logger; now?: () => number }): Promise<RateLimiter> {
    const buckets = await store.collection<BucketDoc>({ name: RATE_LIMIT_COLLECTION });
    return new RateLimiter(buckets, policy, options.logger.child({ component: "rate-limit" }), options.now ?? Date.now);
  }

  /** The partition (credential) a principal spends from: its API key, or its access token's subject. */
  static partitionOf(principal: Principal): string {
    return principal.via === "api_key" && principal.keyId ? `key:${principal.keyId}` : `sub:${principal.accountId}`;
  }

  /** Spends one request of `partition`'s budget, or says how long to wait. */
  async take(partition: string): Promise<RateDecision> {
    const bucket = this.#bucket(partition);
    try {
      for (;;) {
        const now = this.nowMs() * US_PER_MS;
        const leased = this.#spendLeased(bucket, now);
        if (leased !== undefined) return leased;
        if (now < bucket.blockedUntil) {
          return { kind: "limited", retryAfterSeconds: Math.max(1, Math.ceil((bucket.blockedUntil - now) / US_PER_S)) };
        }
        if (!bucket.pending) {
          const lease = this.#lease(bucket, now);
          bucket.pending = lease;
          void lease.then(
            () => (bucket.pending = undefined),
            () => (bucket.pending = undefined),
          );
        }
        await bucket.pending;
      }
    } catch (error) {
      if (error instanceof RateLimitContentionError) {
        this.logger.warn({ partition: bucket.id }, "rate limit bucket contended; request refused");
        return { kind: "limited", retryAfterSeconds: 1 };
      }
      this.logger.warn({ err: error, partition: bucket.id }, "rate limit state unavailable; request not metered");
      return { kind: "unmetered" };
    }
  }

  /**
   * Spends one request from this gateway's lease without waiting: `allowed` when a leased token is
   * at hand, undefined when taking one needs the store (a new lease) or the credential is refused
   * (the caller then goes through `take`, which answers those).
   */
  takeLeased(partition: string): RateDecision | undefined {
    const bucket = this.#local.get(partition);
    return bucket === undefined ? undefined : this.#spendLeased(bucket, this.nowMs() * US_PER_MS);
  }

  /** One token of the bucket's lease, when it has one at hand that has not expired. */
  #spendLeased(bucket: LocalBucket, now: number): RateDecision | undefined {
    if (bucket.tokens <= 0 || now >= bucket.leaseUntil) return undefined;
    bucket.tokens -= 1;
    return this.#allowed(bucket, now);
  }

  #allowed(bucket: LocalBucket, now: number): RateDecision {
    const tat = bucket.tat ?? now;
    const shared = Math.max(0, Math.floor((now + this.#capacity - Math.max(tat, now)) / this.#interval));
    return {
      kind: "allowed",
      remaining: Math.min(this.policy.burst, shared + bucket.tokens),
      fullInSeconds: Math.max(0, Math.ceil((tat - now) / US_PER_S)),
    };
  }

  /** Takes a lease of tokens from the shared bucket (or records until when the credential is refused). */
  async #lease(bucket: LocalBucket, now: number): Promise<void> {
    if (bucket.tokens > 0) {
      // The previous lease expired with tokens unspent: lease less next time.
      bucket.leaseSize = Math.max(1, Math.floor(bucket.leaseSize / 2));
    } else if (bucket.leaseUntil > now) {
      // Spent within its lifetime: the client is busy, lease more.
      bucket.leaseSize = Math.min(this.#maxLease, bucket.leaseSize * 2);
    }
    bucket.tokens = 0;
    this.#maybePurge(now);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      if (!bucket.known) {
        const doc = await this.buckets.get(bucket.id);
        bucket.tat = doc ? doc.tat : null;
        bucket.known = true;
      }
      const start = Math.max(bucket.tat ?? now, now);
      const available = Math.floor((now + this.#capacity - start) / this.#interval);
      if (available <= 0) {
        // One token is due when the TAT is one interval inside the capacity again.
        bucket.blockedUntil = start + this.#interval - this.#capacity;
        return;
      }
      const granted = Math.min(bucket.leaseSize, available);
      const next = start + granted * this.#interval;
      if (await this.#compareAndSet(bucket, next)) {
        bucket.tat = next;
        bucket.tokens = granted;
        bucket.leaseUntil = now + LEASE_TTL_MS * US_PER_MS;
        return;
      }
      bucket.known = false;
      // Another gateway changed the bucket first; pause a random moment so the two stop colliding.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(MAX_PAUSE_MS, 2 ** attempt)));
    }
    throw new RateLimitContentionError();
  }

  async #compareAndSet(bucket: LocalBucket, next: number): Promise<boolean> {
    if (bucket.tat === null) {
      try {
        await this.buckets.insert({ id: bucket.id, tat: next });
        return true;
      } catch (error) {
        if (error instanceof DuplicateKeyError) return false;
        throw error;
      }
    }
    return (await this.buckets.updateOne({ id: bucket.id, tat: bucket.tat }, { tat: next })) !== null;
  }

  #bucket(partition: string): LocalBucket {
    let bucket = this.#local.get(partition);
    if (!bucket) {
      if (this.#local.size >= this.#sweepAt) this.#forgetIdle();
      bucket = {
        id: createHash("sha256").update(partition).digest("base64url").slice(0, 32),
        tat: null,
        known: false,
        tokens: 0,
        leaseUntil: 0,
        leaseSize: 1,
        blockedUntil: 0,
        pending: undefined,
      };
      this.#local.set(partition, bucket);
    }
    return bucket;
  }

  /** Forgets credentials with nothing leased, nothing pending and no refusal running. */
  #forgetIdle(): void {
    const now = this.nowMs() * US_PER_MS;
    for (const [partition, bucket] of this.#local) {
      if (!bucket.pending && (bucket.tokens === 0 || bucket.leaseUntil <= now) && bucket.blockedUntil <= now) {
        this.#local.delete(partition);
      }
    }
    this.#sweepAt = Math.max(LOCAL_SOFT_CAP, this.#local.size * 2);
  }

  /** Deletes buckets that have been full for a while (a missing bucket is a full one). */
  #maybePurge(now: number): void {
    const nowMs = now / US_PER_MS;
    if (nowMs - this.#purgedAt < PURGE_INTERVAL_MS) return;
    this.#purgedAt = nowMs;
    this.buckets.deleteMany({ tat: { $lt: now - PURGE_INTERVAL_MS * US_PER_MS } }).then(
      (deleted) => {
        if (deleted > 0) this.logger.debug({ deleted }, "full rate limit buckets purged");
      },
      (error: unknown) => this.logger.warn({ err: error }, "rate limit purge failed"),
    );
  }
}

/** `RateLimit` field value for a decision. */
export function rateLimitField(remaining: number, seconds: number): string {
  return `"${RATE_LIMIT_POLICY_NAME}";r=${remaining};t=${seconds}`;
}

/** The RateLimit fields of an answer (the app's and the fast path's): the policy, and `remaining` requests full in `seconds`. */
export function rateLimitFields(limiter: RateLimiter, remaining: number, seconds: number): { "RateLimit-Policy": string; RateLimit: string } {
  return { "RateLimit-Policy": limiter.policyField, RateLimit: rateLimitField(remaining, seconds) };
}

/**
 * Spends one request of the authenticated principal's budget: adds the RateLimit fields to the
 * request's response header fields, or throws the 429 (with `Retry-After`). Runs after
 * authentication, before the body is read.
 */
export async function meterRequest(limiter: RateLimiter, c: Context<GatewayEnv>): Promise<void> {
  const decision = await limiter.take(RateLimiter.partitionOf(c.get("principal")));
  switch (decision.kind) {
    case "allowed": {
      Object.assign(headerFields(c), rateLimitFields(limiter, decision.remaining, decision.fullInSeconds));
      return;
    }
    case "limited": {
      const seconds = decision.retryAfterSeconds;
      const { perMinute, burst } = limiter.policy;
      throw new TooManyRequestsError(
        `Too many requests for this credential: the limit is ${perMinute} requests per minute, with bursts of up to ${burst}. Try again in ${seconds} second${seconds === 1 ? "" : "s"}.`,
        seconds,
        rateLimitFields(limiter, 0, seconds),
      );
    }
    case "unmetered":
      return;
    default: {
      const never: never = decision;
      return never;
    }
  }
}

const fieldHeader = (description: string, example: string) => ({ description, schema: { type: "string" as const, example } });

/** The 429 of every metered operation, for the OpenAPI document. */
export const tooManyRequestsResponse = {
  429: {
    description:
      "Too many requests for this credential (API key, or access token subject). `Retry-After` says how many seconds to wait; `RateLimit` and `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers) describe the budget, and successful responses carry them too.",
    headers: {
      "Retry-After": { description: "Seconds until a request is allowed again.", schema: { type: "integer" as const, minimum: 1, example: 2 } },
      RateLimit: fieldHeader("Requests available now (`r`) and seconds (`t`) until they are (on a 429: until one is).", '"per-key";r=0;t=2'),
      "RateLimit-Policy": fieldHeader(
        "The policy: at most `q` requests in any `w` seconds are always served (a token bucket of `q` refilled over `w` seconds).",
        '"per-key";q=100;w=10',
      ),
    },
    content: { "application/json": { schema: ErrorSchema } },
  },
} as const;
