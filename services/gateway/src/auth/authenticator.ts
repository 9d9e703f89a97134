import { createRemoteJWKSet, decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import type { Logger } from "@voiceloc/log";
import { isSandboxOwner, sandboxOwner } from "@voiceloc/contracts";
import { ForbiddenError, UnauthorizedError } from "../http/errors.ts";
import type { ApiKeyRepository } from "./api-keys.ts";

export interface Principal {
  /** The owner of everything this caller stores and reads: the account id, or `sandbox:<account>` for a sandbox key. */
  accountId: string;
  via: "api_key" | "access_token";
  keyId?: string;
  /** `sandbox` for a `vl_test_…` key: a separate space with the sandbox limits; `live` otherwise. */
  mode: "live" | "sandbox";
}

export interface LiveKeyPolicy {
  /** `approval`: live keys work only for accounts `approved` says yes to (LIVE_KEYS). */
  liveKeys: "open" | "approval";
  approved: (accountId: string) => Promise<boolean>;
}

export interface JwtOptions {
  secret?: string | undefined;
  jwksUrl?: string | undefined;
  issuer?: string | undefined;
  audience?: string | undefined;
  /** Refuse tokens without an `exp` claim (JWT_REQUIRE_EXP, default true): such a token would never expire. */
  requireExp?: boolean | undefined;
}

/** Verified API keys are remembered this long, so a revoked key stops working within this time. */
export const KEY_CACHE_TTL_MS = 5_000;
const KEY_CACHE_MAX = 10_000;

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
const MAX_CREDENTIAL_LENGTH = 8192;

/** The request header fields a credential may come in. */
export interface CredentialHeaders {
  apiKey?: string | undefined;
  authorization?: string | undefined;
}

type PresentedCredential = { kind: "api_key" | "access_token"; value: string } | { kind: "none" | "malformed" };

/**
 * Which credential the headers present: `API-KEY` when it is not empty, else `Authorization: Bearer`
 * (an access token when shaped like a JWT, an API key otherwise).
 */
function presentedCredential(headers: CredentialHeaders): PresentedCredential {
  if (headers.apiKey !== undefined && headers.apiKey !== "") return { kind: "api_key", value: headers.apiKey.trim() };
  const authorization = headers.authorization?.trim();
  if (!authorization) return { kind: "none" };
  const credential = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
  if (!credential) return { kind: "malformed" };
  return { kind: JWT_SHAPE.test(credential) ? "access_token" : "api_key", value: credential };
}

/**
 * Resolves the caller from `API-KEY: <key>` or `Authorization: Bearer <key or JWT>`.
 * A bearer value shaped like a JWT is verified as an access token (HS256 with
 * JWT_SECRET, RS256/ES256 through JWKS_URL; `exp` required unless JWT_REQUIRE_EXP=false,
 * `exp`/`nbf` enforced; `sub` is the account's live space, see {@link subjectProblem}); anything else
 * is looked up as an API key.
 */
export class Authenticator {
  private readonly secretKey: Uint8Array | undefined;
  private readonly jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  /** Presented key → principal, for KEY_CACHE_TTL_MS (successful lookups only). */
  private readonly keyCache = new Map<string, { principal: Principal; until: number }>();

  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly jwt: JwtOptions,
    private readonly logger: Logger,
    private readonly policy?: LiveKeyPolicy,
  ) {
    this.secretKey = jwt.secret ? new TextEncoder().encode(jwt.secret) : undefined;
    this.jwks = jwt.jwksUrl ? createRemoteJWKSet(new URL(jwt.jwksUrl), { cooldownDuration: 30_000 }) : undefined;
  }

  async authenticate(headers: CredentialHeaders): Promise<Principal> {
    const presented = presentedCredential(headers);
    switch (presented.kind) {
      case "api_key":
        return this.viaApiKey(presented.value);
      case "access_token":
        return this.viaAccessToken(presented.value);
      case "none":
        throw new UnauthorizedError("Not authenticated");
      case "malformed":
        throw new UnauthorizedError("Invalid authentication credentials: expected 'Authorization: Bearer <token>'", "invalid_token");
    }
  }

  /**
   * The principal `authenticate` would give these headers when it needs no lookup: an API key (in
   * `API-KEY`, or `Authorization: Bearer` when it is not shaped like a JWT) verified within
   * KEY_CACHE_TTL_MS. Undefined in every other case (the caller then authenticates).
   */
  cachedPrincipal(headers: CredentialHeaders): Principal | undefined {
    const presented = presentedCredential(headers);
    if (presented.kind !== "api_key") return undefined;
    const cached = this.keyCache.get(presented.value);
    return cached !== undefined && cached.until > Date.now() ? cached.principal : undefined;
  }

  private async viaApiKey(key: string): Promise<Principal> {
    if (key.length > MAX_CREDENTIAL_LENGTH) throw new UnauthorizedError("Invalid API key", "invalid_token");
    const now = Date.now();
    const cached = this.keyCache.get(key);
    if (cached && cached.until > now) return cached.principal;
    const result = await this.keys.check(key);
    if (!result.ok) {
      this.keyCache.delete(key);
      throw new UnauthorizedError(result.reason === "revoked" ? "API key has been revoked" : "Invalid API key", "invalid_token");
    }
    if (result.mode === "live" && this.policy?.liveKeys === "approval" && !(await this.policy.approved(result.accountId))) {
      throw new ForbiddenError(
        "This account's live keys are not approved yet: an operator approves them (pnpm accounts approve <email>). Sandbox keys (vl_test_…) work meanwhile.",
      );
    }
    const principal: Principal =
      result.mode === "sandbox"
        ? { accountId: sandboxOwner(result.accountId), via: "api_key", keyId: result.keyId, mode: "sandbox" }
        : { accountId: result.accountId, via: "api_key", keyId: result.keyId, mode: "live" };
    if (this.keyCache.size >= KEY_CACHE_MAX) this.keyCache.clear();
    this.keyCache.set(key, { principal, until: now + KEY_CACHE_TTL_MS });
    return principal;
  }

  /** Forgets cached keys (after a revocation in this process). */
  forgetKeys(): void {
    this.keyCache.clear();
  }

  private async viaAccessToken(token: string): Promise<Principal> {
    if (token.length > MAX_CREDENTIAL_LENGTH) throw new UnauthorizedError("Invalid access token", "invalid_token");
    let alg: string | undefined;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      throw new UnauthorizedError("Invalid access token: malformed header", "invalid_token");
    }
    const options = {
      ...(this.jwt.issuer ? { issuer: this.jwt.issuer } : {}),
      ...(this.jwt.audience ? { audience: this.jwt.audience } : {}),
      ...(this.jwt.requireExp === false ? {} : { requiredClaims: ["exp"] }),
    };
    let payload: JWTPayload;
    try {
      if (alg === "HS256") {
        if (!this.secretKey) throw new UnauthorizedError("Access tokens signed with HS256 are not accepted: JWT_SECRET is not configured", "invalid_token");
        ({ payload } = await jwtVerify(token, this.secretKey, { ...options, algorithms: ["HS256"] }));
      } else if (alg === "RS256" || alg === "ES256") {
        if (!this.jwks) throw new UnauthorizedError(`Access tokens signed with ${alg} are not accepted: JWKS_URL is not configured`, "invalid_token");
        ({ payload } = await jwtVerify(token, this.jwks, { ...options, algorithms: ["RS256", "ES256"] }));
      } else {
        throw new UnauthorizedError(
          `Invalid access token: algorithm ${JSON.stringify(String(alg).slice(0, 32))} is not accepted (HS256, RS256, ES256)`,
          "invalid_token",
        );
      }
    } catch (error) {
      if (error instanceof UnauthorizedError) throw error;
      throw new UnauthorizedError(describeJwtError(error, this.logger), "invalid_token");
    }
    const problem = subjectProblem(payload.sub);
    if (problem !== null) throw new UnauthorizedError(`Invalid access token: ${problem}`, "invalid_token");
    return { accountId: payload.sub as string, via: "access_token", mode: "live" };
  }
}

/** OpenID Connect Core 1.0, section 2: `sub` "MUST NOT exceed 255 ASCII characters in length". */
export const MAX_SUBJECT_LENGTH = 255;

/** Control characters (C0, DEL, C1), lone surrogates, line and paragraph separators. */
const UNPRINTABLE = /[\p{Cc}\p{Cs}\p{Zl}\p{Zp}]/u;

/**
 * Why an access token's `sub` cannot be the account it acts for, or null when it can. An access token
 * acts in the live space of the account its `sub` names: the sandbox space (`sandbox:<account>`) is
 * reached with a sandbox API key only, so a `sub` naming it is refused (it would read that space's
 * records with live limits). So is a `sub` no identity provider issues as an account: empty or blank,
 * longer than OpenID Connect allows, with control characters or broken Unicode.
 */
export function subjectProblem(sub: unknown): string | null {
  if (typeof sub !== "string" || sub.trim().length === 0) return "the 'sub' claim (the account) is missing";
  if (sub.length > MAX_SUBJECT_LENGTH) return `the 'sub' claim (the account) is longer than ${MAX_SUBJECT_LENGTH} characters`;
  if (UNPRINTABLE.test(sub)) return "the 'sub' claim (the account) holds control characters or broken Unicode";
  if (isSandboxOwner(sub)) return "the 'sub' claim names a sandbox space ('sandbox:…'), which only sandbox API keys (vl_test_…) reach";
  return null;
}

function describeJwtError(error: unknown, logger: Logger): string {
  if (error instanceof joseErrors.JWTExpired) return "Access token has expired";
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === "nbf") return "Access token is not valid yet";
    if (error.claim === "exp" && error.reason === "missing") {
      return "Invalid access token: the 'exp' claim (expiry time) is required";
    }
    return `Invalid access token: claim '${error.claim}' ${error.reason === "check_failed" ? "check failed" : error.reason.replace(/_/g, " ")}`;
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return "Invalid access token: bad signature";
  if (error instanceof joseErrors.JWKSNoMatchingKey) return "Invalid access token: no matching signing key";
  if (error instanceof joseErrors.JWKSTimeout || error instanceof joseErrors.JWKSInvalid) {
    logger.warn({ err: error }, "JWKS could not be fetched");
    return "Access token could not be verified: the signing keys are unavailable";
  }
  return "Invalid access token";
}
