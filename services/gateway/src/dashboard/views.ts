import { html } from "hono/html";
import type { ApiKeyView } from "../auth/api-keys.ts";

export type Markup = ReturnType<typeof html>;

export interface LayoutOptions {
  title: string;
  /** The signed-in account (navigation and sign-out), or null. */
  account: string | null;
  csrf: string;
  body: Markup;
}

export function layout({ title, account, csrf, body }: LayoutOptions): Markup {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · VoiceLoc dashboard</title>
<link rel="stylesheet" href="/dashboard/assets/style.css">
<script src="/dashboard/assets/app.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header><nav aria-label="Dashboard">
<a class="brand" href="/dashboard">VoiceLoc dashboard</a>
${
  account
    ? html`<a href="/dashboard/audio-books">Audio books</a>
<a href="/dashboard/voice-streams">Voice streams</a>
<a href="/dashboard/subtitles">Subtitles</a>
<a href="/dashboard/try">Try it</a>
<a href="/dashboard/keys">API keys</a>
<span>${account}</span>
<form method="post" action="/dashboard/logout"><input type="hidden" name="csrf" value="${csrf}"><button class="secondary" type="submit">Sign out</button></form>`
    : html`<a href="/dashboard/login">Sign in</a>`
}
</nav></header>
<main id="main">
<h1>${title}</h1>
${body}
</main>
</body>
</html>`;
}

export function notice(kind: "error" | "ok" | "info", text: string | Markup): Markup {
  return html`<p class="notice ${kind === "info" ? "" : kind}" role="${kind === "error" ? "alert" : "status"}">${text}</p>`;
}

export function loginForm(csrf: string, email: string, problem: string | null, signup: boolean, message: Markup | null = null): Markup {
  return html`${message ?? ""}${problem ? notice("error", problem) : ""}
<form class="stack" method="post" action="/dashboard/login">
<input type="hidden" name="csrf" value="${csrf}">
<div><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${email}" autofocus></div>
<div><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required></div>
<div><button type="submit">Sign in</button></div>
</form>
<p class="hint">Forgot your password? An operator prints a reset link with <code>pnpm accounts reset-link &lt;email&gt;</code>.</p>
${signup ? html`<p>No account yet? <a href="/dashboard/signup">Create one</a>.</p>` : ""}`;
}

export function signupForm(csrf: string, email: string, problem: string | null, minLength: number): Markup {
  return html`${problem ? notice("error", problem) : ""}
<form class="stack" method="post" action="/dashboard/signup">
<input type="hidden" name="csrf" value="${csrf}">
<div><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${email}"></div>
<div><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="new-password" minlength="${minLength}" required aria-describedby="password-hint">
<p class="hint" id="password-hint">At least ${minLength} characters.</p></div>
<div><label for="confirm">Password again</label><input id="confirm" name="confirm" type="password" autocomplete="new-password" required></div>
<div><button type="submit">Create account</button></div>
</form>
<p>Have an account? <a href="/dashboard/login">Sign in</a>.</p>`;
}

export function resetForm(csrf: string, token: string, problem: string | null, minLength: number): Markup {
  return html`${problem ? notice("error", problem) : ""}
<form class="stack" method="post" action="/dashboard/reset">
<input type="hidden" name="csrf" value="${csrf}">
<input type="hidden" name="token" value="${token}">
<div><label for="password">New password</label><input id="password" name="password" type="password" autocomplete="new-password" minlength="${minLength}" required aria-describedby="password-hint">
<p class="hint" id="password-hint">At least ${minLength} characters. Every session of the account is signed out.</p></div>
<div><label for="confirm">New password again</label><input id="confirm" name="confirm" type="password" autocomplete="new-password" required></div>
<div><button type="submit">Set password</button></div>
</form>`;
}

const when = (iso: string | null) => (iso ? html`<time datetime="${iso}">${iso.slice(0, 16).replace("T", " ")} UTC</time>` : "never");

/**
 * What the sign-in page says after every sign-up, whether the email had an account or not: the
 * answer must not tell which (the existing account's owner is told on their next visit instead).
 */
export const SIGNED_UP = "If this email address had no account, it has one now: sign in with the password you chose.";

/** The notice an account sees once after someone tried to sign up with its email address. */
export function signupAttemptNotice(attempt: { first_at: string; last_at: string; attempts: number }): Markup {
  const times = attempt.attempts === 1 ? html`on ${when(attempt.last_at)}` : html`${attempt.attempts} times, most recently on ${when(attempt.last_at)}`;
  return notice(
    "info",
    html`Someone tried to create an account with your email address ${times}. If it was you, you already have an account; if not, nothing changed.`,
  );
}

export interface KeysPageOptions {
  csrf: string;
  keys: ApiKeyView[];
  created: { key: string; view: ApiKeyView } | null;
  message: Markup | null;
  liveAwaitsApproval: boolean;
  cacheSeconds: number;
}

export function keysPage(o: KeysPageOptions): Markup {
  const active = o.keys.filter((k) => k.revoked_at === null);
  const revoked = o.keys.filter((k) => k.revoked_at !== null);
  return html`${o.message ?? ""}
${o.liveAwaitsApproval ? notice("info", "Your live keys work once an operator approves the account. Sandbox keys work now.") : ""}
${
  o.created
    ? html`<section aria-labelledby="new-key-title" class="notice ok">
<h2 id="new-key-title">Your new ${o.created.view.mode} key</h2>
<p>Copy it now: it is shown only this once and kept only as a hash.</p>
<div class="secret"><label class="visually-hidden" for="new-key">New API key</label>
<input id="new-key" type="text" readonly value="${o.created.key}" aria-describedby="new-key-status">
<button type="button" data-copy="new-key">Copy</button></div>
<p class="hint" id="new-key-status" aria-live="polite"></p>
</section>`
    : ""
}
<h2>Create a key</h2>
<form class="stack" method="post" action="/dashboard/keys">
<input type="hidden" name="csrf" value="${o.csrf}">
<div><label for="label">Label</label><input id="label" name="label" type="text" maxlength="100" required aria-describedby="label-hint">
<p class="hint" id="label-hint">What the key is for, e.g. "laptop" or "staging server".</p></div>
<fieldset><legend>Mode</legend>
<input type="radio" id="mode-sandbox" name="mode" value="sandbox" checked><label for="mode-sandbox">Sandbox (<code>vl_test_…</code>: separate records, small limits, no approval)</label>
<input type="radio" id="mode-live" name="mode" value="live"><label for="mode-live">Live (<code>vl_live_…</code>)</label>
</fieldset>
<div><button type="submit">Create key</button></div>
</form>
<h2>Your keys</h2>
${
  active.length === 0
    ? html`<p>No active keys.</p>`
    : html`<table>
<thead><tr><th scope="col">Prefix</th><th scope="col">Label</th><th scope="col">Mode</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>
${active.map(
  (k) => html`<tr>
<td data-label="Prefix"><code>${k.prefix}</code></td>
<td data-label="Label">${k.name}</td>
<td data-label="Mode"><span class="mode ${k.mode}">${k.mode}</span></td>
<td data-label="Created">${when(k.created_at)}</td>
<td data-label="Last used">${when(k.last_used_at)}</td>
<td><a href="/dashboard/keys/${k.key_id}/revoke" aria-label="Revoke key ${k.prefix} (${k.name})">Revoke…</a></td>
</tr>`,
)}
</tbody></table>`
}
<p class="hint">A revoked key is refused by every gateway within ${o.cacheSeconds} seconds (they remember verified keys that long).</p>
${
  revoked.length === 0
    ? ""
    : html`<h2>Revoked keys</h2><ul>${revoked.map((k) => html`<li><code>${k.prefix}</code> ${k.name} (${k.mode}), revoked ${when(k.revoked_at)}</li>`)}</ul>`
}`;
}

export function revokeConfirm(csrf: string, key: ApiKeyView): Markup {
  return html`<p>Revoke the ${key.mode} key <code>${key.prefix}</code> “${key.name}”? Requests with it are refused from then on; this cannot be undone.</p>
<form method="post" action="/dashboard/keys/${key.key_id}/revoke">
<input type="hidden" name="csrf" value="${csrf}">
<button class="danger" type="submit">Revoke the key</button>
<a class="button secondary" href="/dashboard/keys">Keep it</a>
</form>`;
}
