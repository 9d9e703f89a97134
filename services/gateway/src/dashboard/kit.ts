/** What the dashboard's pages are given: its stores, and the helpers every page uses. */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AccountRepository } from "../accounts/accounts.ts";
import type { SessionDoc, SessionStore } from "../accounts/sessions.ts";
import type { LoginThrottle } from "../accounts/throttle.ts";
import type { AccountNotices } from "../accounts/notices.ts";
import type { PasswordResets } from "../accounts/resets.ts";
import type { ApiKeyRepository } from "../auth/api-keys.ts";
import type { GatewayEnv } from "../http/context.ts";
import type { Markup } from "./views.ts";

type Ctx = Context<GatewayEnv>;

export interface DashboardDeps {
  accounts: AccountRepository;
  sessions: SessionStore;
  throttle: LoginThrottle;
  /** What an account is told at its next visit (a sign-up tried with its email address). */
  notices: AccountNotices;
  resets: PasswordResets;
  keys: ApiKeyRepository;
  /** SIGNUP=open. */
  signup: boolean;
  liveKeys: "open" | "approval";
  /** X-Forwarded-For names the client (TRUST_PROXY=true). */
  trustProxy: boolean;
  /** Forgets this process's cache of verified keys (after a revocation). */
  forgetKeys: () => void;
}

export interface DashboardKit {
  current(c: Ctx): Promise<SessionDoc | null>;
  signedIn(c: Ctx): Promise<SessionDoc | Response>;
  postedForm(c: Ctx): Promise<{ session: SessionDoc; form: Record<string, string>; files: Record<string, File> } | Response>;
  render(c: Ctx, status: ContentfulStatusCode, title: string, session: SessionDoc | null, body: Markup): Response | Promise<Response>;
}
