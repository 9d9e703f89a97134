import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { runAccountsCli } from "../cli/accounts.ts";
import { startTestGateway, type TestGateway } from "../testing/harness.ts";
import { DashboardClient, csrfOf, shownKey } from "./testing/browserless.ts";

const PASSWORD = "correct horse battery";

async function* stdin(text: string): AsyncIterable<string> {
  yield text;
}

/** Another connection's commit is read from the next event-loop turn on. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

async function createAccount(t: TestGateway, email: string, extra: string[] = []): Promise<void> {
  const out: string[] = [];
  const code = await runAccountsCli(["create", email, "--password-stdin", ...extra], (l) => out.push(l), { DATA_DIR: t.dataDir, LOG_LEVEL: "silent" }, stdin(`${PASSWORD}\n`));
  expect(code, out.join("\n")).toBe(0);
  await nextTurn();
}

async function cli(t: TestGateway, args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string[] }> {
  const out: string[] = [];
  const code = await runAccountsCli(args, (l) => out.push(l), { DATA_DIR: t.dataDir, LOG_LEVEL: "silent", PUBLIC_BASE_URL: "http://api.test", ...env });
  await nextTurn();
  return { code, out };
}

describe("dashboard sessions", () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startTestGateway({ SESSION_IDLE_SECONDS: "120", SESSION_MAX_SECONDS: "300" });
    await createAccount(t, "Carol@Example.com");
  });
  afterAll(async () => t.close());
  afterEach(() => vi.useRealTimers());

  it("signs in with a server-side session in an HttpOnly, SameSite=Lax cookie and signs out by deleting it", async () => {
    const client = new DashboardClient(t);
    const page = await client.get("/dashboard/login");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(page.headers.get("cache-control")).toBe("no-store");
    const anonymous = client.cookies.get("vl_session");
    const signedIn = await client.post("/dashboard/login", { csrf: csrfOf(await page.text()), email: "carol@example.com", password: PASSWORD });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get("location")).toBe("/dashboard/keys");
    const cookie = client.lastSetCookies.find((l) => l.startsWith("vl_session="));
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).not.toMatch(/Secure/i);
    // a new session id on sign-in: the anonymous one is gone (no fixation)
    expect(client.cookies.get("vl_session")).not.toBe(anonymous);
    const keys = await client.get("/dashboard/keys");
    expect(keys.status).toBe(200);
    expect(await keys.text()).toContain("carol@example.com");

    const stolen = client.cookies.get("vl_session") ?? "";
    const out = await client.submit("/dashboard/keys", "/dashboard/logout", {});
    expect(out.status).toBe(303);
    const replay = await t.gateway.app.request("http://api.test/dashboard/keys", { headers: { Cookie: `vl_session=${stolen}` } });
    expect(replay.status).toBe(303);
    expect(replay.headers.get("location")).toBe("/dashboard/login");
  });

  it("ends a session after the idle time and after the absolute time however active", async () => {
    const idle = new DashboardClient(t);
    expect((await idle.signIn("carol@example.com", PASSWORD)).status).toBe(303);
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now() + 121_000);
    expect((await idle.get("/dashboard/keys")).headers.get("location")).toBe("/dashboard/login");
    vi.useRealTimers();

    const busy = new DashboardClient(t);
    expect((await busy.signIn("carol@example.com", PASSWORD)).status).toBe(303);
    vi.useFakeTimers({ toFake: ["Date"] });
    const start = Date.now();
    // a request every 100 s keeps it from idling, until 300 s after sign-in
    for (const at of [100, 200, 290]) {
      vi.setSystemTime(start + at * 1000);
      expect((await busy.get("/dashboard/keys")).status, `at ${at} s`).toBe(200);
    }
    vi.setSystemTime(start + 301_000);
    expect((await busy.get("/dashboard/keys")).headers.get("location")).toBe("/dashboard/login");
  });

  it("revokes every session of an account from the CLI", async () => {
    const a = new DashboardClient(t);
    const b = new DashboardClient(t);
    await a.signIn("carol@example.com", PASSWORD);
    await b.signIn("carol@example.com", PASSWORD);
    const { code, out } = await cli(t, ["revoke-sessions", "carol@example.com"]);
    expect(code).toBe(0);
    expect(out[0]).toMatch(/ended [2-9]\d* sessions/);
    expect((await a.get("/dashboard/keys")).status).toBe(303);
    expect((await b.get("/dashboard/keys")).status).toBe(303);
  });

  it("refuses forms without the session's CSRF token", async () => {
    const client = new DashboardClient(t);
    await client.signIn("carol@example.com", PASSWORD);
    const missing = await client.post("/dashboard/keys", { label: "x", mode: "sandbox" });
    expect(missing.status).toBe(403);
    expect(await missing.text()).toContain("CSRF");
    const wrong = await client.post("/dashboard/keys", { csrf: "A".repeat(43), label: "x", mode: "sandbox" });
    expect(wrong.status).toBe(403);
    // another session's token does not work either
    const other = new DashboardClient(t);
    const otherToken = csrfOf(await (await other.get("/dashboard/login")).text());
    expect((await client.post("/dashboard/keys", { csrf: otherToken, label: "x", mode: "sandbox" })).status).toBe(403);
    expect(await (await client.get("/dashboard/keys")).text()).toContain("No active keys");
    // sign-in itself needs the token
    const fresh = new DashboardClient(t);
    await fresh.get("/dashboard/login");
    expect((await fresh.post("/dashboard/login", { email: "carol@example.com", password: PASSWORD })).status).toBe(403);
  });

  it("resets a password through a one-time link printed by the CLI, signing out every session", async () => {
    await createAccount(t, "dave@example.com");
    const old = new DashboardClient(t);
    await old.signIn("dave@example.com", PASSWORD);
    const { code, out } = await cli(t, ["reset-link", "dave@example.com"]);
    expect(code).toBe(0);
    const link = new URL(out[0] ?? "");
    expect(link.pathname).toBe("/dashboard/reset");
    const browser = new DashboardClient(t);
    const form = await browser.get(`${link.pathname}${link.search}`);
    expect(form.status).toBe(200);
    const html = await form.text();
    const token = link.searchParams.get("token") ?? "";
    expect((await browser.post("/dashboard/reset", { csrf: csrfOf(html), token, password: "short", confirm: "short" })).status).toBe(422);
    const done = await browser.post("/dashboard/reset", { csrf: csrfOf(html), token, password: "a new long password", confirm: "a new long password" });
    expect(done.status).toBe(200);
    expect((await old.get("/dashboard/keys")).status).toBe(303);
    expect((await new DashboardClient(t).signIn("dave@example.com", PASSWORD)).status).toBe(401);
    expect((await new DashboardClient(t).signIn("dave@example.com", "a new long password")).status).toBe(303);
    // used once
    expect((await browser.get(`${link.pathname}${link.search}`)).status).toBe(404);
    expect((await cli(t, ["reset-link", "nobody@example.com"])).code).toBe(1);
  });

  it("keeps sign-up closed unless SIGNUP=open", async () => {
    expect((await new DashboardClient(t).get("/dashboard/signup")).status).toBe(404);
  });
});

describe("sign-in throttling", () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startTestGateway({ LOGIN_MAX_FAILURES_PER_ACCOUNT: "3", LOGIN_MAX_FAILURES_PER_ADDRESS: "6", TRUST_PROXY: "true" });
    await createAccount(t, "erin@example.com");
  });
  afterAll(async () => t.close());
  afterEach(() => vi.useRealTimers());

  it("refuses an account after its failures, even with the right password, and answers unknown emails alike", async () => {
    const from = (ip: string) => new DashboardClient(t, { "X-Forwarded-For": ip });
    for (let i = 0; i < 3; i++) expect((await from(`10.0.0.${i}`).signIn("erin@example.com", "wrong password!")).status).toBe(401);
    const locked = await from("10.0.1.1").signIn("erin@example.com", PASSWORD);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await locked.text()).toContain("Too many failed sign-ins");
    // an unknown email: the same answers in the same order
    for (let i = 0; i < 3; i++) expect((await from(`10.0.2.${i}`).signIn("ghost@example.com", "wrong password!")).status).toBe(401);
    expect((await from("10.0.3.1").signIn("ghost@example.com", PASSWORD)).status).toBe(429);
    // the window passes
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now() + 901_000);
    expect((await from("10.0.4.1").signIn("erin@example.com", PASSWORD)).status).toBe(303);
  });

  it("refuses an address after its failures across accounts", async () => {
    const client = () => new DashboardClient(t, { "X-Forwarded-For": "192.0.2.7" });
    for (let i = 0; i < 6; i++) expect((await client().signIn(`user${i}@example.com`, "wrong password!")).status).toBe(401);
    expect((await client().signIn("erin@example.com", PASSWORD)).status).toBe(429);
    expect((await new DashboardClient(t, { "X-Forwarded-For": "192.0.2.8" }).signIn("erin@example.com", PASSWORD)).status).toBe(303);
  });
});

describe("API keys on the dashboard, sandbox and live", () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startTestGateway({ SANDBOX_MAX_TASKS_IN_FLIGHT: "2", SANDBOX_MAX_SPEECH_CHARACTERS: "20", SIGNUP: "open" });
    await createAccount(t, "frank@example.com");
  });
  afterAll(async () => t.close());

  const createKey = async (client: DashboardClient, mode: "live" | "sandbox", label: string) => {
    const res = await client.submit("/dashboard/keys", "/dashboard/keys", { label, mode });
    expect(res.status).toBe(200);
    const key = shownKey(await res.text());
    expect(key).toBeDefined();
    return key as string;
  };

  it("creates keys shown once, lists them without the secret, and revokes them", async () => {
    const client = new DashboardClient(t);
    await client.signIn("frank@example.com", PASSWORD);
    const sandbox = await createKey(client, "sandbox", "phone <test>");
    const live = await createKey(client, "live", "server");
    expect(sandbox).toMatch(/^vl_test_[a-z2-7]{10}_[A-Za-z0-9_-]{43}$/);
    expect(live).toMatch(/^vl_live_[a-z2-7]{10}_[A-Za-z0-9_-]{43}$/);
    const page = await (await client.get("/dashboard/keys")).text();
    expect(page).not.toContain(sandbox.slice(20));
    expect(page).not.toContain(live.slice(20));
    expect(page).toContain("phone &lt;test&gt;");
    expect(page).toContain(`${sandbox.slice(0, 18)}_…`);

    const used = await t.request("GET", "/v1/voices/streams", { key: sandbox });
    expect(used.status).toBe(200);
    expect(used.headers.get("voiceloc-mode")).toBe("sandbox");
    expect((await t.request("GET", "/v1/voices/streams", { key: live })).headers.get("voiceloc-mode")).toBeNull();
    expect(await (await client.get("/dashboard/keys")).text()).toContain('data-label="Last used"><time');

    // revoke with confirmation
    const keyId = sandbox.slice(8, 18);
    const confirm = await client.get(`/dashboard/keys/${keyId}/revoke`);
    expect(confirm.status).toBe(200);
    const revoked = await client.post(`/dashboard/keys/${keyId}/revoke`, { csrf: csrfOf(await confirm.text()) });
    expect(revoked.status).toBe(303);
    const refused = await t.request("GET", "/v1/voices/streams", { key: sandbox });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ detail: "API key has been revoked" });
    expect((await t.request("GET", "/v1/voices/streams", { key: live })).status).toBe(200);
  });

  it("never lets the session authorise /v1", async () => {
    const client = new DashboardClient(t);
    await client.signIn("frank@example.com", PASSWORD);
    const cookie = [...client.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    const res = await t.request("GET", "/v1/voices/streams", { key: null, headers: { Cookie: cookie } });
    expect(res.status).toBe(401);
  });

  it("keeps sandbox and live records apart in both directions", async () => {
    const client = new DashboardClient(t);
    await client.signIn("frank@example.com", PASSWORD);
    const sandbox = await createKey(client, "sandbox", "separation");
    const live = await createKey(client, "live", "separation");
    const body = { file: "talk.wav", source_language: "English", target_language: "French" };
    const liveRecord = (await (await t.request("POST", "/v1/voices/streams", { key: live, body })).json()) as { id: string };
    const sandboxCreated = await t.request("POST", "/v1/voices/streams", { key: sandbox, body });
    expect(sandboxCreated.status).toBe(201);
    expect(sandboxCreated.headers.get("voiceloc-mode")).toBe("sandbox");
    const sandboxRecord = (await sandboxCreated.json()) as { id: string };

    expect((await t.request("GET", `/v1/voices/streams/${liveRecord.id}`, { key: sandbox })).status).toBe(404);
    expect((await t.request("GET", `/v1/voices/streams/${sandboxRecord.id}`, { key: live })).status).toBe(404);
    const sandboxList = (await (await t.request("GET", "/v1/voices/streams", { key: sandbox })).json()) as Array<{ id: string }>;
    const liveList = (await (await t.request("GET", "/v1/voices/streams", { key: live })).json()) as Array<{ id: string }>;
    expect(sandboxList.map((r) => r.id)).toEqual([sandboxRecord.id]);
    expect(liveList.map((r) => r.id)).toContain(liveRecord.id);
    expect(liveList.map((r) => r.id)).not.toContain(sandboxRecord.id);
    const notFound = await t.request("GET", `/v1/voices/streams/${liveRecord.id}`, { key: sandbox });
    expect(notFound.headers.get("voiceloc-mode")).toBe("sandbox");
  });

  it("holds sandbox keys to fewer tasks in flight and shorter speech, with clear messages", async () => {
    const client = new DashboardClient(t);
    await client.signIn("frank@example.com", PASSWORD);
    const sandbox = await createKey(client, "sandbox", "limits");
    const live = await createKey(client, "live", "limits");
    // the separation test left one unfinished sandbox record of this account (no workers here: records stay queued)
    const body = { file: "talk.wav", source_language: "English", target_language: "French" };
    expect((await t.request("POST", "/v1/videos/subtitle", { key: sandbox, body: { ...body, file: "film.mp4" } })).status).toBe(202);
    const third = await t.request("POST", "/v1/voices/streams", { key: sandbox, body });
    expect(third.status).toBe(429);
    expect(third.headers.get("retry-after")).toBe("5");
    expect(third.headers.get("voiceloc-mode")).toBe("sandbox");
    expect(((await third.json()) as { detail: string }).detail).toContain("at most 2 unfinished tasks");
    expect((await t.request("POST", "/v1/voices/streams", { key: live, body })).status).toBe(201);

    const speech = await t.request("POST", "/v1/speech/synthesize", { key: sandbox, body: { text: "x".repeat(21), language: "English" } });
    expect(speech.status).toBe(422);
    const detail = ((await speech.json()) as { detail: Array<{ loc: string[]; msg: string }> }).detail;
    expect(detail[0]?.loc).toEqual(["body", "text"]);
    expect(detail[0]?.msg).toContain("SANDBOX_MAX_SPEECH_CHARACTERS");
  });
});

describe("sign-up (SIGNUP=open)", () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startTestGateway({ SIGNUP: "open", TRUST_PROXY: "true" });
    await createAccount(t, "frank@example.com");
  });
  afterAll(async () => t.close());
  afterEach(() => vi.useRealTimers());

  const from = (address: string) => new DashboardClient(t, { "X-Forwarded-For": address });
  /** Signs up from a fresh anonymous session (the sign-up page's CSRF token). */
  const signUp = (address: string, email: string, password = PASSWORD, confirm = password) => {
    const client = from(address);
    return client.submit("/dashboard/signup", "/dashboard/signup", { email, password, confirm }).then((res) => ({ client, res }));
  };
  /** Everything a response tells but the fields that differ on every response anyway. */
  const shape = async (client: DashboardClient, res: Response) => ({
    status: res.status,
    location: res.headers.get("location"),
    headers: [...res.headers.keys()].filter((name) => name !== "x-request-id" && name !== "date").sort(),
    cookies: client.lastSetCookies.map((line) => line.replace(/=[^;]*/, "=…")),
    body: await res.text(),
  });

  it("refuses a form it cannot take, in plain words", async () => {
    const client = from("198.51.100.1");
    const page = await client.get("/dashboard/signup");
    expect(page.status).toBe(200);
    const csrf = csrfOf(await page.text());
    const differ = await client.post("/dashboard/signup", { csrf, email: "gina@example.com", password: PASSWORD, confirm: "different!!" });
    expect(differ.status).toBe(422);
    expect(await differ.text()).toContain("The two passwords differ.");
    const short = await client.post("/dashboard/signup", { csrf, email: "gina@example.com", password: "short", confirm: "short" });
    expect(short.status).toBe(422);
    expect(await short.text()).toContain("at least 10 characters");
    const noEmail = await client.post("/dashboard/signup", { csrf, email: "gina", password: PASSWORD, confirm: PASSWORD });
    expect(noEmail.status).toBe(422);
    expect(await noEmail.text()).toContain("Enter an email address");
  });

  it("answers an existing email exactly like a new one, and signs neither in", async () => {
    const made = await signUp("198.51.100.2", "Gina@Example.com", "gina's long password");
    const taken = await signUp("198.51.100.3", "frank@example.com", "someone else's password");
    const madeShape = await shape(made.client, made.res);
    expect(madeShape).toEqual(await shape(taken.client, taken.res));
    expect(madeShape).toMatchObject({ status: 303, location: "/dashboard/login?signed_up=1", cookies: [] });

    // both land on the sign-in page with the same words, still signed out
    for (const { client } of [made, taken]) {
      const landing = await client.get("/dashboard/login?signed_up=1");
      expect(landing.status).toBe(200);
      const text = await landing.text();
      expect(text).toContain("If this email address had no account, it has one now: sign in with the password you chose.");
      expect(text).not.toContain("exists");
      expect((await client.get("/dashboard/keys")).headers.get("location")).toBe("/dashboard/login");
    }
    // the new account is made; the existing one is unchanged
    expect((await from("198.51.100.4").signIn("gina@example.com", "gina's long password")).status).toBe(303);
    expect((await from("198.51.100.4").signIn("frank@example.com", "someone else's password")).status).toBe(401);
    expect((await from("198.51.100.4").signIn("frank@example.com", PASSWORD)).status).toBe(303);
  });

  it("tells the existing account once, at its next visit, and no other account", async () => {
    await createAccount(t, "hal@example.com");
    const attempt = await signUp("198.51.100.5", "hal@example.com", "not hal's password");
    expect(attempt.res.status).toBe(303);

    const hal = from("198.51.100.6");
    expect((await hal.signIn("hal@example.com", PASSWORD)).headers.get("location")).toBe("/dashboard/keys");
    const first = await (await hal.get("/dashboard/keys")).text();
    expect(first).toMatch(
      /Someone tried to create an account with your email address on <time datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/time>\. If it was you, you already have an account; if not, nothing changed\./,
    );
    // shown once
    expect(await (await hal.get("/dashboard/keys")).text()).not.toContain("Someone tried");
    const again = from("198.51.100.6");
    await again.signIn("hal@example.com", PASSWORD);
    expect(await (await again.get("/dashboard/keys")).text()).not.toContain("Someone tried");

    // several attempts make one notice that counts them
    for (let i = 0; i < 2; i++) expect((await signUp("198.51.100.7", "hal@example.com")).res.status).toBe(303);
    const later = from("198.51.100.6");
    await later.signIn("hal@example.com", PASSWORD);
    expect(await (await later.get("/dashboard/keys")).text()).toContain("Someone tried to create an account with your email address 2 times, most recently on <time");

    // an account nobody tried to sign up as is told nothing
    const gina = from("198.51.100.8");
    await gina.signIn("gina@example.com", "gina's long password");
    expect(await (await gina.get("/dashboard/keys")).text()).not.toContain("Someone tried");
  });

  it("takes as long for an existing email as for a new one (an argon2id hash either way)", async () => {
    const existing: number[] = [];
    const fresh: number[] = [];
    for (let i = 0; i < 5; i++) {
      for (const [email, times] of [["frank@example.com", existing], [`timing${i}@example.com`, fresh]] as const) {
        const client = from(`198.51.100.${20 + i}`);
        const csrf = csrfOf(await (await client.get("/dashboard/signup")).text());
        const started = performance.now();
        const res = await client.post("/dashboard/signup", { csrf, email, password: PASSWORD, confirm: PASSWORD });
        times.push(performance.now() - started);
        expect(res.status).toBe(303);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    // an answer without the hash would take a small fraction of one with it (tens of milliseconds)
    expect(median(existing)).toBeGreaterThan(median(fresh) * 0.5);
  });

  it("throttles sign-ups per client address: the 26th within the window is a 429, another address is not", async () => {
    const address = "203.0.113.9";
    for (let i = 0; i < 25; i++) {
      const email = i % 2 === 0 ? "frank@example.com" : `burst${i}@example.com`;
      expect((await signUp(address, email)).res.status, `sign-up ${i + 1}`).toBe(303);
    }
    const refused = (await signUp(address, "burst-last@example.com")).res;
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    const page = await refused.text();
    expect(page).toMatch(/Too many sign-ups from your network\. Try again in \d+ minutes?\./);
    expect(page).toContain('action="/dashboard/signup"');
    // refused without being made
    expect((await from("203.0.113.11").signIn("burst-last@example.com", PASSWORD)).status).toBe(401);
    expect((await signUp("203.0.113.10", "burst-last@example.com")).res.status).toBe(303);
    // the window passes
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now() + 901_000);
    expect((await signUp(address, "burst-later@example.com")).res.status).toBe(303);
  });
});

describe("LIVE_KEYS=approval", () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startTestGateway({ LIVE_KEYS: "approval" });
    await createAccount(t, "hana@example.com");
  });
  afterAll(async () => t.close());

  it("refuses live keys of an unapproved account with 403 until an operator approves it; sandbox keys work at once", async () => {
    const client = new DashboardClient(t);
    await client.signIn("hana@example.com", PASSWORD);
    const keysPage = await (await client.get("/dashboard/keys")).text();
    expect(keysPage).toContain("once an operator approves");
    const make = async (mode: string) =>
      shownKey(await (await client.submit("/dashboard/keys", "/dashboard/keys", { label: mode, mode })).text()) as string;
    const live = await make("live");
    const sandbox = await make("sandbox");
    const refused = await t.request("GET", "/v1/audio_books/", { key: live });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { detail: string }).detail).toContain("pnpm accounts approve");
    expect((await t.request("GET", "/v1/audio_books/", { key: sandbox })).status).toBe(200);
    // operator-issued keys of accounts without a dashboard account (seeded alice) are not held back
    expect((await t.request("GET", "/v1/audio_books/")).status).toBe(200);
    expect((await cli(t, ["approve", "hana@example.com"], { LIVE_KEYS: "approval" })).code).toBe(0);
    expect((await t.request("GET", "/v1/audio_books/", { key: live })).status).toBe(200);
  });
});

describe("secure cookies behind https", () => {
  it("uses a __Host- cookie with Secure when PUBLIC_BASE_URL is https", async () => {
    const t = await startTestGateway({ PUBLIC_BASE_URL: "https://voice.example" });
    try {
      const client = new DashboardClient(t);
      await client.get("/dashboard/login");
      const cookie = client.lastSetCookies[0] ?? "";
      expect(cookie).toMatch(/^__Host-vl_session=/);
      expect(cookie).toMatch(/Secure/);
      expect(cookie).toMatch(/HttpOnly/);
    } finally {
      await t.close();
    }
  });
});

describe("work pages", () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startTestGateway();
    await createAccount(t, "ivy@example.com");
  });
  afterAll(async () => t.close());

  it("lists each space's records with status filter, pagination and a failed task's reason", async () => {
    const client = new DashboardClient(t);
    await client.signIn("ivy@example.com", PASSWORD);
    const sandbox = shownKey(await (await client.submit("/dashboard/keys", "/dashboard/keys", { label: "work", mode: "sandbox" })).text()) as string;
    const live = shownKey(await (await client.submit("/dashboard/keys", "/dashboard/keys", { label: "work", mode: "live" })).text()) as string;
    const body = { file: "talk.wav", source_language: "English", target_language: "French" };
    const liveIds: string[] = [];
    for (let i = 0; i < 22; i++) liveIds.push(((await (await t.request("POST", "/v1/voices/streams", { key: live, body })).json()) as { id: string }).id);
    const sandboxId = ((await (await t.request("POST", "/v1/voices/streams", { key: sandbox, body })).json()) as { id: string }).id;
    const failedId = liveIds[0] as string;
    await t.gateway.deps.records["voice-stream"].failIfUnfinished(failedId, "The recording <could not> be decoded.", new Date().toISOString());

    const first = await (await client.get("/dashboard/voice-streams?space=live")).text();
    expect(first.match(/data-record=/g)).toHaveLength(20);
    expect(first).not.toContain(sandboxId);
    expect(first).toContain(`data-events="/dashboard/events/voice-stream/${liveIds[21]}?space=live"`);
    const next = /href="([^"]+)" rel="next"/.exec(first)?.[1]?.replace(/&amp;/g, "&");
    expect(next).toBeDefined();
    const second = await (await client.get(next as string)).text();
    expect(second.match(/data-record=/g)).toHaveLength(2);
    expect(second).toContain(failedId);

    const failedOnly = await (await client.get("/dashboard/voice-streams?space=live&status=failed")).text();
    expect(failedOnly.match(/data-record=/g)).toHaveLength(1);
    const record = await (await client.get(`/dashboard/voice-streams/${failedId}?space=live`)).text();
    expect(record).toContain("Why it failed");
    expect(record).toContain("The recording &lt;could not&gt; be decoded.");
    expect(record).not.toContain("data-events"); // a finished record has no live bar

    const sandboxPage = await (await client.get("/dashboard/voice-streams?space=sandbox")).text();
    expect(sandboxPage.match(/data-record=/g)).toHaveLength(1);
    expect(sandboxPage).toContain(sandboxId);
    expect((await client.get(`/dashboard/voice-streams/${sandboxId}?space=live`)).status).toBe(404);
  });

  it("a finished voice stream made from a video plays in a video player, one made from audio in an audio player", async () => {
    const client = new DashboardClient(t);
    await client.signIn("ivy@example.com", PASSWORD);
    const live = shownKey(await (await client.submit("/dashboard/keys", "/dashboard/keys", { label: "players", mode: "live" })).text()) as string;
    const players: Record<string, string> = {};
    for (const [name, ext] of [["clip.mp4", "mp4"], ["clip.mkv", "mkv"], ["talk.wav", "mp3"]] as const) {
      const body = { file: name, source_language: "English", target_language: "French" };
      const { id } = (await (await t.request("POST", "/v1/voices/streams", { key: live, body })).json()) as { id: string };
      const done = await t.gateway.deps.records["voice-stream"].applyEvent(id, 9, { task_status: "completed", task_progress: 100, result_key: `results/voice-stream/${id}.${ext}` }, 100);
      expect(done).toBe(true);
      const page = await (await client.get(`/dashboard/voice-streams/${id}?space=live`)).text();
      players[ext] = page;
    }
    for (const ext of ["mp4", "mkv"]) {
      const page = players[ext] ?? "";
      expect(page).toMatch(new RegExp(`<video controls preload="metadata" src="[^"]+\\.${ext}[^"]*" class="player"></video>`));
      expect(page).toContain("Download the video");
      expect(page).not.toContain("<audio");
    }
    expect(players.mp3).toMatch(/<audio controls preload="metadata" src="[^"]+\.mp3[^"]*" class="player"><\/audio>/);
    expect(players.mp3).toContain("Download the audio");
    expect(players.mp3).not.toContain("<video");
  });

  it("streams progress only to the session of the record's account", async () => {
    const owner = new DashboardClient(t);
    await owner.signIn("ivy@example.com", PASSWORD);
    const sandbox = shownKey(await (await owner.submit("/dashboard/keys", "/dashboard/keys", { label: "sse", mode: "sandbox" })).text()) as string;
    const { id } = (await (await t.request("POST", "/v1/audio_books/", { key: sandbox, body: { file: "b.txt", name: "B", source_language: "English", target_language: "English" } })).json()) as { id: string };
    expect((await t.gateway.app.request(`http://api.test/dashboard/events/audiobook/${id}?space=sandbox`)).status).toBe(401);
    await t.gateway.deps.records.audiobook.failIfUnfinished(id, "no words", new Date().toISOString());
    const stream = await owner.get(`/dashboard/events/audiobook/${id}?space=sandbox`);
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toContain("text/event-stream");
    expect(await stream.text()).toContain("event: failed");
    expect((await owner.get(`/dashboard/events/audiobook/${id}?space=live`)).status).toBe(404);
    // another account's session
    await createAccount(t, "jay@example.com");
    const other = new DashboardClient(t);
    await other.signIn("jay@example.com", PASSWORD);
    expect((await other.get(`/dashboard/events/audiobook/${id}?space=sandbox`)).status).toBe(404);
  });

  it("says plainly when the try-it form cannot synthesise", async () => {
    const client = new DashboardClient(t);
    await client.signIn("ivy@example.com", PASSWORD);
    const page = await client.get("/dashboard/try");
    const html = await page.text();
    expect(html.match(/<option value="[A-Z][a-z]+" ?(selected)?>/g)?.length).toBe(16);
    const res = await client.post("/dashboard/try", { csrf: csrfOf(html), text: "Hello there", language: "English", voice: "" });
    expect(res.status).toBe(503);
    expect(await res.text()).toContain("Speech synthesis is not available");
  });
});

describe("new audio book from a text file", () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startTestGateway();
    await createAccount(t, "kim@example.com");
  });
  afterAll(async () => t.close());

  it("stores the file as an upload of the chosen space and creates the book from it", async () => {
    const client = new DashboardClient(t);
    await client.signIn("kim@example.com", PASSWORD);
    const page = await client.get("/dashboard/audio-books/new?space=sandbox");
    expect(page.status).toBe(200);
    const csrf = csrfOf(await page.text());
    const form = new FormData();
    form.set("csrf", csrf);
    form.set("name", "Uploaded book");
    form.set("source", "English");
    form.set("target", "English");
    form.set("voice", "");
    form.set("space", "sandbox");
    form.set("file", new File(["Once upon a time there was a lighthouse."], "book.txt", { type: "text/plain" }));
    const cookie = [...client.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    const res = await t.gateway.app.request("http://api.test/dashboard/audio-books/new", { method: "POST", body: form, headers: { Cookie: cookie } });
    expect(res.status).toBe(303);
    const location = res.headers.get("location") ?? "";
    expect(location).toMatch(/^\/dashboard\/audio-books\/[0-9a-f-]{36}\?space=sandbox$/);
    const id = location.split("/")[3]?.split("?")[0] as string;
    const doc = await t.gateway.deps.records.audiobook.getOwned("sandbox:kim@example.com", id);
    expect(doc?.file).toMatch(/^upload:/);
    expect(doc?.name).toBe("Uploaded book");
    expect((await client.get(location)).status).toBe(200);
    // without the session's token: refused
    const forged = new FormData();
    forged.set("file", new File(["x"], "x.txt"));
    expect((await t.gateway.app.request("http://api.test/dashboard/audio-books/new", { method: "POST", body: forged, headers: { Cookie: cookie } })).status).toBe(403);
  });
});
