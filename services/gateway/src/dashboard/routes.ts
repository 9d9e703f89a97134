/**
 * The dashboard under /dashboard: server-rendered HTML (hono/html templates, escaped by default) with
 * one self-served style sheet and one small script, so it needs no build step, no bundler and no CDN
 * (air-gapped installs work) and runs under a strict Content-Security-Policy. Signed-in state is a
 * server-side session (sessions.ts); every form carries the session's synchronizer CSRF token. The
 * session authorises only these pages: /v1 stays key or token based (its middleware never reads cookies).
 */
import { readFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { createRequire } from "node:module";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { html } from "hono/html";
import { getCookie, setCookie, deleteCookie } from "hono/cookie";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { GatewayDeps } from "../deps.ts";
import type { DashboardDeps, DashboardKit } from "./kit.ts";
import type { ApiKeyRepository } from "../auth/api-keys.ts";
import type { GatewayApp, GatewayEnv } from "../http/context.ts";
import { requestLog } from "../http/context.ts";
import { AccountExistsError, PASSWORD_MIN_LENGTH, normaliseEmail, passwordProblem } from "../accounts/accounts.ts";
import type { SessionDoc } from "../accounts/sessions.ts";
import { sameSecret } from "../accounts/sessions.ts";
import { KEY_CACHE_TTL_MS } from "../auth/authenticator.ts";
import { APP_JS, STYLE_CSS } from "./assets.ts";
import { registerWorkPages } from "./work.ts";
import { registerNewBook } from "./new-book.ts";
import { SIGNED_UP, keysPage, layout, loginForm, notice, resetForm, revokeConfirm, signupAttemptNotice, signupForm, type Markup } from "./views.ts";
import { createRouter } from "../http/router.ts";

export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' blob:; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

const SECURITY_HEADERS: Record<string, string> = {
  "Content-Security-Policy": CSP,
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
};

/** Form bodies are small; a bigger one is a 413. */
const FORM_MAX_BYTES = 64 * 1024;

type Ctx = Context<GatewayEnv>;

/** What the dashboard's page modules share: the session, rendering and form checks. */

export function dashboardRoutes(deps: GatewayDeps, d: DashboardDeps): GatewayApp {
  const app = createRouter();
  const secureCookies = deps.publicBaseUrl.startsWith("https:");
  const cookieName = (c: Ctx) => (isSecure(c) ? "__Host-vl_session" : "vl_session");
  const isSecure = (c: Ctx) =>
    secureCookies || new URL(c.req.url).protocol === "https:" || (d.trustProxy && c.req.header("x-forwarded-proto")?.split(",")[0]?.trim() === "https");

  const security = async (c: Ctx, next: () => Promise<void>) => {
    await next();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(name, value);
    if (!c.req.path.startsWith("/dashboard/assets/")) c.res.headers.set("Cache-Control", "no-store");
  };
  app.use("/dashboard", security);
  app.use("/dashboard/*", security);
  const formLimit = bodyLimit({ maxSize: FORM_MAX_BYTES, onError: (c) => c.text("The form is too large.", 413) });
  // the new-book form carries a file and has its own limit (new-book.ts)
  app.post("/dashboard/*", (c, next) => (c.req.path === "/dashboard/audio-books/new" ? next() : formLimit(c, next)));

  app.get("/dashboard/assets/style.css", (c) => c.body(STYLE_CSS, 200, { "Content-Type": "text/css; charset=utf-8", "Cache-Control": "public, max-age=300" }));
  app.get("/dashboard/assets/app.js", (c) =>
    c.body(APP_JS, 200, { "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "public, max-age=300" }),
  );

  // hls.js (the audio book stream player where the browser plays no HLS itself), served from here like swagger-ui-dist: no CDN.
  let hlsJs: Buffer | undefined;
  app.get("/dashboard/assets/hls.js", (c) => {
    hlsJs ??= readFileSync(createRequire(import.meta.url).resolve("hls.js/dist/hls.light.min.js"));
    return c.body(new Uint8Array(hlsJs), 200, { "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "public, max-age=300" });
  });

  /** The request's live session, if any. */
  const current = async (c: Ctx): Promise<SessionDoc | null> => d.sessions.resolve(getCookie(c, cookieName(c)));

  const setSessionCookie = (c: Ctx, token: string) =>
    setCookie(c, cookieName(c), token, {
      path: "/",
      httpOnly: true,
      sameSite: "Lax",
      secure: isSecure(c),
      maxAge: d.sessions.times.maxSeconds,
    });

  /** The session for a page with a form: the current one, or a new anonymous one (for its CSRF token). */
  const sessionForForm = async (c: Ctx): Promise<SessionDoc> => {
    const existing = await current(c);
    if (existing) return existing;
    const { token, session } = await d.sessions.create(null);
    setSessionCookie(c, token);
    return session;
  };

  const render = (c: Ctx, status: ContentfulStatusCode, title: string, session: SessionDoc | null, body: Markup) =>
    c.html(layout({ title, account: session?.account_id ?? null, csrf: session?.csrf ?? "", body }), status);

  /** The posted form when its CSRF token is the session's; otherwise the 403 page is the answer. */
  const postedForm = async (c: Ctx): Promise<{ session: SessionDoc; form: Record<string, string>; files: Record<string, File> } | Response> => {
    const session = await current(c);
    let form: Record<string, string> = {};
    let files: Record<string, File> = {};
    try {
      const parsed = await c.req.parseBody();
      form = Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === "string"));
      files = Object.fromEntries(Object.entries(parsed).filter((e): e is [string, File] => e[1] instanceof File));
    } catch {
      form = {};
    }
    const token = form.csrf ?? "";
    if (!session || token.length === 0 || !sameSecret(token, session.csrf)) {
      return render(
        c,
        403,
        "Form expired",
        session,
        notice("error", "This form is out of date or was not sent from this dashboard (CSRF check failed). Go back, reload the page and try again."),
      );
    }
    return { session, form, files };
  };

  /** The signed-in session, or the redirect to the sign-in page. */
  const signedIn = async (c: Ctx): Promise<SessionDoc | Response> => {
    const session = await current(c);
    if (session?.account_id) return session;
    return c.redirect("/dashboard/login", 303);
  };

  const clientAddress = (c: Ctx): string => {
    if (d.trustProxy) {
      const forwarded = c.req.header("x-forwarded-for")?.split(",")[0]?.trim();
      if (forwarded) return forwarded.slice(0, 64);
    }
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    return incoming?.socket.remoteAddress ?? "unknown";
  };

  /** Replaces the request's session by a new signed-in one (a fresh id: no session fixation). */
  const signIn = async (c: Ctx, previous: SessionDoc | null, account: string) => {
    if (previous) await d.sessions.deleteById(previous.id);
    const { token } = await d.sessions.create(account);
    setSessionCookie(c, token);
    return c.redirect("/dashboard/keys", 303);
  };

  const kit: DashboardKit = { current, signedIn, postedForm, render };
  registerNewBook(app, deps, d, kit);
  registerWorkPages(app, deps, kit);

  app.get("/dashboard", async (c) => c.redirect((await current(c))?.account_id ? "/dashboard/keys" : "/dashboard/login", 303));
  app.get("/dashboard/", async (c) => c.redirect((await current(c))?.account_id ? "/dashboard/keys" : "/dashboard/login", 303));

  app.get("/dashboard/login", async (c) => {
    const session = await sessionForForm(c);
    if (session.account_id) return c.redirect("/dashboard/keys", 303);
    const message = c.req.query("signed_up") === "1" ? notice("ok", SIGNED_UP) : null;
    return render(c, 200, "Sign in", session, loginForm(session.csrf, "", null, d.signup, message));
  });

  app.post("/dashboard/login", async (c) => {
    const posted = await postedForm(c);
    if (posted instanceof Response) return posted;
    const { session, form } = posted;
    const typed = (form.email ?? "").slice(0, 300);
    const email = normaliseEmail(typed) ?? typed.trim().toLowerCase();
    const password = (form.password ?? "").slice(0, 4096);
    const address = clientAddress(c);
    const wait = await d.throttle.retryAfter(email, address);
    if (wait > 0) {
      c.header("Retry-After", String(wait));
      const minutes = Math.ceil(wait / 60);
      return render(c, 429, "Sign in", session, loginForm(session.csrf, typed, `Too many failed sign-ins. Try again in ${minutes} minute${minutes === 1 ? "" : "s"}.`, d.signup));
    }
    const account = await d.accounts.verify(email, password);
    if (!account) {
      await d.throttle.recordFailure(email, address);
      requestLog(c, deps.logger).info({ address }, "dashboard sign-in failed");
      return render(c, 401, "Sign in", session, loginForm(session.csrf, typed, "Wrong email or password.", d.signup));
    }
    await d.throttle.clearAccount(email);
    return signIn(c, session, account.id);
  });

  app.post("/dashboard/logout", async (c) => {
    const posted = await postedForm(c);
    if (posted instanceof Response) return posted;
    await d.sessions.deleteById(posted.session.id);
    deleteCookie(c, cookieName(c), { path: "/", secure: isSecure(c) });
    return c.redirect("/dashboard/login", 303);
  });

  app.get("/dashboard/signup", async (c) => {
    if (!d.signup) return render(c, 404, "Sign-up is closed", await current(c), notice("info", "Accounts are created by an operator here."));
    const session = await sessionForForm(c);
    return render(c, 200, "Create an account", session, signupForm(session.csrf, "", null, PASSWORD_MIN_LENGTH));
  });

  /**
   * A sign-up answers alike whether the email had an account or not (no account enumeration): the
   * same 303 to the sign-in page with the same notice, no session (a new account signs in like any
   * other), and the same work (an argon2id hash and one store write either way). An existing account
   * is left unchanged and told at its next visit instead. Sign-ups are throttled per client address.
   */
  app.post("/dashboard/signup", async (c) => {
    if (!d.signup) return render(c, 404, "Sign-up is closed", await current(c), notice("info", "Accounts are created by an operator here."));
    const posted = await postedForm(c);
    if (posted instanceof Response) return posted;
    const { session, form } = posted;
    const typed = (form.email ?? "").slice(0, 300);
    const address = clientAddress(c);
    const wait = await d.throttle.signupRetryAfter(address);
    if (wait > 0) {
      c.header("Retry-After", String(wait));
      const minutes = Math.ceil(wait / 60);
      requestLog(c, deps.logger).info({ address }, "dashboard sign-up refused: too many from this address");
      return render(
        c,
        429,
        "Create an account",
        session,
        signupForm(session.csrf, typed, `Too many sign-ups from your network. Try again in ${minutes} minute${minutes === 1 ? "" : "s"}.`, PASSWORD_MIN_LENGTH),
      );
    }
    await d.throttle.recordSignup(address);
    const email = normaliseEmail(typed);
    const password = form.password ?? "";
    const again = (problem: string) => render(c, 422, "Create an account", session, signupForm(session.csrf, typed, problem, PASSWORD_MIN_LENGTH));
    if (!email) return again("Enter an email address such as name@example.com.");
    const weak = passwordProblem(password);
    if (weak) return again(weak);
    if (password !== form.confirm) return again("The two passwords differ.");
    try {
      // hashes the password before it finds out whether the account exists
      await d.accounts.create(email, password);
      requestLog(c, deps.logger).info({ address }, "dashboard sign-up");
    } catch (error) {
      if (!(error instanceof AccountExistsError)) throw error;
      await d.notices.signupAttempted(email);
      requestLog(c, deps.logger).info({ address }, "dashboard sign-up for an existing account: the account is told at its next visit");
    }
    return c.redirect("/dashboard/login?signed_up=1", 303);
  });

  app.get("/dashboard/reset", async (c) => {
    const session = await sessionForForm(c);
    const token = c.req.query("token") ?? "";
    if ((await d.resets.peek(token)) === null) {
      return render(c, 404, "Reset password", session, notice("error", "This reset link is unknown, used or expired: ask an operator for a new one."));
    }
    return render(c, 200, "Reset password", session, resetForm(session.csrf, token, null, PASSWORD_MIN_LENGTH));
  });

  app.post("/dashboard/reset", async (c) => {
    const posted = await postedForm(c);
    if (posted instanceof Response) return posted;
    const { session, form } = posted;
    const token = form.token ?? "";
    const password = form.password ?? "";
    const again = (problem: string) => render(c, 422, "Reset password", session, resetForm(session.csrf, token, problem, PASSWORD_MIN_LENGTH));
    const weak = passwordProblem(password);
    if (weak) return again(weak);
    if (password !== form.confirm) return again("The two passwords differ.");
    const account = await d.resets.consume(token);
    if (account === null) {
      return render(c, 404, "Reset password", session, notice("error", "This reset link is unknown, used or expired: ask an operator for a new one."));
    }
    await d.accounts.setPassword(account, password);
    await d.sessions.deleteForAccount(account);
    await d.throttle.clearAccount(account);
    const fresh = await sessionForForm(c);
    return render(c, 200, "Password changed", fresh, html`<p>Your password is changed and every session was signed out. <a href="/dashboard/login">Sign in</a>.</p>`);
  });

  app.get("/dashboard/keys", async (c) => {
    const session = await signedIn(c);
    if (session instanceof Response) return session;
    const revoked = c.req.query("revoked") === "1" ? notice("ok", "The key is revoked.") : null;
    // shown once: taking it deletes it
    const attempt = await d.notices.take(session.account_id ?? "");
    const message = attempt ? html`${signupAttemptNotice(attempt)}${revoked ?? ""}` : revoked;
    return keysView(c, session, 200, null, message);
  });

  app.post("/dashboard/keys", async (c) => {
    const posted = await postedForm(c);
    if (posted instanceof Response) return posted;
    const { session, form } = posted;
    if (!session.account_id) return c.redirect("/dashboard/login", 303);
    const label = (form.label ?? "").trim();
    const mode = form.mode === "live" ? "live" : form.mode === "sandbox" ? "sandbox" : null;
    if (label.length === 0 || label.length > 100 || mode === null) {
      return keysView(c, session, 422, null, notice("error", "Give the key a label (1 to 100 characters) and choose live or sandbox."));
    }
    const created = await d.keys.create(session.account_id, label, new Date(), mode);
    requestLog(c, deps.logger).info({ account: session.account_id, keyId: created.view.key_id, mode }, "API key created on the dashboard");
    return keysView(c, session, 200, created, null);
  });

  app.get("/dashboard/keys/:keyId/revoke", async (c) => {
    const session = await signedIn(c);
    if (session instanceof Response) return session;
    const key = await d.keys.getOwned(session.account_id ?? "", c.req.param("keyId"));
    if (!key || key.revoked_at !== null) return render(c, 404, "Revoke a key", session, notice("error", "No such active key."));
    return render(c, 200, "Revoke a key", session, revokeConfirm(session.csrf, key));
  });

  app.post("/dashboard/keys/:keyId/revoke", async (c) => {
    const posted = await postedForm(c);
    if (posted instanceof Response) return posted;
    const { session } = posted;
    if (!session.account_id) return c.redirect("/dashboard/login", 303);
    const keyId = c.req.param("keyId");
    const key = await d.keys.getOwned(session.account_id, keyId);
    if (!key || key.revoked_at !== null) return render(c, 404, "Revoke a key", session, notice("error", "No such active key."));
    await d.keys.revoke(keyId, new Date(), session.account_id);
    d.forgetKeys();
    requestLog(c, deps.logger).info({ account: session.account_id, keyId }, "API key revoked on the dashboard");
    return c.redirect("/dashboard/keys?revoked=1", 303);
  });

  async function keysView(
    c: Ctx,
    session: SessionDoc,
    status: 200 | 422,
    created: Awaited<ReturnType<ApiKeyRepository["create"]>> | null,
    message: Markup | null,
  ) {
    const account = session.account_id ?? "";
    const keys = await d.keys.list(account);
    const liveAwaitsApproval = d.liveKeys === "approval" && !(await d.accounts.liveApproved(account));
    return render(
      c,
      status,
      "API keys",
      session,
      keysPage({ csrf: session.csrf, keys, created, message, liveAwaitsApproval, cacheSeconds: Math.ceil(KEY_CACHE_TTL_MS / 1000) }),
    );
  }
  return app;
}
