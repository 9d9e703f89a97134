import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOB_KEY, startTestGateway, type TestGateway } from "../testing/harness.ts";

/** A 422 body as the API writes it. */
type Problem = { detail: Array<{ type: string; loc: Array<string | number>; input?: unknown }> };
/** A webhook endpoint as the API returns it. */
type WebhookBody = { id: string; url: string; events: string[]; enabled: boolean; disabled_reason: string | null };

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ FETCH_ALLOW_PRIVATE_HOSTS: "hooks.internal,127.0.0.1:9" });
});
afterAll(async () => {
  await t.close();
});

const GOOD = { url: "https://8.8.8.8/hooks/voiceloc?token=abc", events: ["audio_book.completed", "audio_book.failed"], description: "prod" };

async function create(body: unknown = GOOD, key?: string): Promise<Record<string, any>> {
  const res = await t.request("POST", "/v1/webhooks", { body, ...(key ? { key } : {}) });
  expect(res.status).toBe(201);
  return (await res.json()) as Record<string, any>;
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else out.push(path);
  }
  return out;
}

describe("POST /v1/webhooks", () => {
  it("registers an endpoint and shows its secret once: whsec_ + base64 of 24 bytes, never read back, stored only sealed", async () => {
    const res = await t.request("POST", "/v1/webhooks", { body: GOOD });
    expect(res.status).toBe(201);
    const created = (await res.json()) as Record<string, any>;
    expect(res.headers.get("location")).toBe(`/v1/webhooks/${created.id}`);
    expect(created).toMatchObject({ url: GOOD.url, events: GOOD.events, description: "prod", enabled: true, disabled_reason: null });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(String(created.secret).slice(6), "base64")).toHaveLength(24);
    expect(Object.keys(created).sort()).toEqual(["date_created", "date_updated", "description", "enabled", "events", "disabled_reason", "id", "secret", "url"].sort());

    const got = (await (await t.request("GET", `/v1/webhooks/${created.id}`)).json()) as Record<string, any>;
    expect(got.secret).toBeUndefined();
    expect(got).toEqual(Object.fromEntries(Object.entries(created).filter(([k]) => k !== "secret")));
    const listed = (await (await t.request("GET", "/v1/webhooks")).json()) as Array<Record<string, any>>;
    expect(listed.find((w) => w.id === created.id)).toEqual(got);
    expect(JSON.stringify(listed)).not.toContain("whsec_");

    // the store holds neither the secret nor its key bytes in clear
    const secretB64 = String(created.secret).slice(6);
    for (const file of await filesUnder(t.dataDir)) {
      const bytes = await readFile(file);
      expect(bytes.includes(Buffer.from(secretB64)), file).toBe(false);
      expect(bytes.includes(Buffer.from(secretB64, "base64")), file).toBe(false);
    }
  });

  it("accepts http:// for an allow-listed host, drops duplicate events, keeps the events in the documented order", async () => {
    const created = await create({ url: "http://hooks.internal/in", events: ["subtitle.failed", "audio_book.completed", "subtitle.failed"] });
    expect(created.events).toEqual(["audio_book.completed", "subtitle.failed"]);
    expect(created.description).toBeNull();
  });

  it.each([
    ["not a URL", "hooks.example.com/x"],
    ["http:// for a public host", "http://8.8.8.8/hook"],
    ["a loopback address", "https://127.0.0.1/hook"],
    ["an allow-listed address on another port", "https://127.0.0.1:8443/hook"],
    ["localhost", "https://localhost/hook"],
    ["a private address", "https://10.1.2.3/hook"],
    ["an IPv4 address written as a number", "https://2130706433/hook"],
    ["a cloud metadata service", "https://169.254.169.254/latest"],
    ["an IPv4-mapped IPv6 loopback", "https://[::ffff:127.0.0.1]/hook"],
    ["credentials in the URL", "https://user:pw@8.8.8.8/hook"],
    ["another scheme", "ftp://8.8.8.8/hook"],
  ])("422 for %s, pointing at body.url", async (_what, url) => {
    const res = await t.request("POST", "/v1/webhooks", { body: { ...GOOD, url } });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: Array<Record<string, unknown>> };
    expect(body.detail).toHaveLength(1);
    expect(body.detail[0]).toMatchObject({ type: "value_error", loc: ["body", "url"], input: url });
    expect(String(body.detail[0]?.msg)).toMatch(/^Value error, /);
  });

  it("422 for an unknown event, no events, a missing url", async () => {
    const unknown = await t.request("POST", "/v1/webhooks", { body: { ...GOOD, events: ["audio_book.completed", "audio_book.started"] } });
    expect(unknown.status).toBe(422);
    expect(((await unknown.json()) as Problem).detail[0]).toMatchObject({ type: "enum", loc: ["body", "events", 1], input: "audio_book.started" });
    const none = await t.request("POST", "/v1/webhooks", { body: { ...GOOD, events: [] } });
    expect(none.status).toBe(422);
    expect(((await none.json()) as Problem).detail[0]?.loc).toEqual(["body", "events"]);
    const noUrl = await t.request("POST", "/v1/webhooks", { body: { events: GOOD.events } });
    expect(noUrl.status).toBe(422);
    expect(((await noUrl.json()) as Problem).detail[0]).toMatchObject({ type: "missing", loc: ["body", "url"] });
  });

  it("401 without credentials", async () => {
    expect((await t.request("POST", "/v1/webhooks", { body: GOOD, key: null })).status).toBe(401);
    expect((await t.request("GET", "/v1/webhooks", { key: null })).status).toBe(401);
  });
});

describe("one account's endpoints are invisible to another", () => {
  it("404 for bob on every operation of alice's endpoint, and bob's list does not show it", async () => {
    const alice = await create();
    for (const [method, path, body] of [
      ["GET", `/v1/webhooks/${alice.id}`, undefined],
      ["PATCH", `/v1/webhooks/${alice.id}`, { enabled: false }],
      ["DELETE", `/v1/webhooks/${alice.id}`, undefined],
      ["GET", `/v1/webhooks/${alice.id}/deliveries`, undefined],
    ] as const) {
      const res = await t.request(method, path, { key: BOB_KEY, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(await res.json()).toEqual({ detail: "Webhook not found" });
    }
    const bobs = (await (await t.request("GET", "/v1/webhooks", { key: BOB_KEY })).json()) as Array<{ id: string }>;
    expect(bobs.map((w) => w.id)).not.toContain(alice.id);
    // alice's endpoint is untouched
    expect(((await (await t.request("GET", `/v1/webhooks/${alice.id}`)).json()) as WebhookBody).enabled).toBe(true);
  });

  it("404 for an id that does not exist, 422 for one that is not a UUID", async () => {
    expect((await t.request("GET", "/v1/webhooks/0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0")).status).toBe(404);
    expect((await t.request("DELETE", "/v1/webhooks/0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0")).status).toBe(404);
    expect((await t.request("GET", "/v1/webhooks/nope")).status).toBe(422);
  });
});

describe("PATCH, DELETE, deliveries", () => {
  it("changes url, events and description; omitted fields keep their value; a bad url is a 422 and changes nothing", async () => {
    const w = await create();
    const res = await t.request("PATCH", `/v1/webhooks/${w.id}`, { body: { events: ["subtitle.completed"], description: null } });
    expect(res.status).toBe(200);
    const patched = (await res.json()) as Record<string, any>;
    expect(patched).toMatchObject({ url: GOOD.url, events: ["subtitle.completed"], description: null, enabled: true });
    expect(patched.secret).toBeUndefined();

    const bad = await t.request("PATCH", `/v1/webhooks/${w.id}`, { body: { url: "https://192.168.1.1/x" } });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as Problem).detail[0]?.loc).toEqual(["body", "url"]);
    const moved = await t.request("PATCH", `/v1/webhooks/${w.id}`, { body: { url: "https://1.1.1.1/new" } });
    expect(((await moved.json()) as WebhookBody).url).toBe("https://1.1.1.1/new");
    expect(((await (await t.request("GET", `/v1/webhooks/${w.id}`)).json()) as WebhookBody).events).toEqual(["subtitle.completed"]);
  });

  it("disable by hand, and re-enabling an endpoint the service disabled clears disabled_reason", async () => {
    const w = await create();
    const off = (await (await t.request("PATCH", `/v1/webhooks/${w.id}`, { body: { enabled: false } })).json()) as WebhookBody;
    expect(off).toMatchObject({ enabled: false, disabled_reason: null });
    await t.request("PATCH", `/v1/webhooks/${w.id}`, { body: { enabled: true } });
    const repo = t.gateway.deps.webhooks!.repo;
    await repo.disable(w.id, "Disabled after 12 failed attempts", new Date().toISOString());
    const disabled = (await (await t.request("GET", `/v1/webhooks/${w.id}`)).json()) as WebhookBody;
    expect(disabled).toMatchObject({ enabled: false, disabled_reason: "Disabled after 12 failed attempts" });
    const on = (await (await t.request("PATCH", `/v1/webhooks/${w.id}`, { body: { enabled: true } })).json()) as WebhookBody;
    expect(on).toMatchObject({ enabled: true, disabled_reason: null });
  });

  it("DELETE answers 204 once, then 404; the endpoint is gone from the list", async () => {
    const w = await create();
    const res = await t.request("DELETE", `/v1/webhooks/${w.id}`);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    expect((await t.request("DELETE", `/v1/webhooks/${w.id}`)).status).toBe(404);
    expect((await t.request("GET", `/v1/webhooks/${w.id}`)).status).toBe(404);
    const listed = (await (await t.request("GET", "/v1/webhooks")).json()) as Array<{ id: string }>;
    expect(listed.map((x) => x.id)).not.toContain(w.id);
  });

  it("lists newest first with a Link to the next page; deliveries of a new endpoint are an empty list", async () => {
    const a = await create(GOOD, BOB_KEY);
    const b = await create(GOOD, BOB_KEY);
    const first = await t.request("GET", "/v1/webhooks?limit=1", { key: BOB_KEY });
    expect(((await first.json()) as WebhookBody[]).map((w) => w.id)).toEqual([b.id]);
    const link = first.headers.get("link");
    expect(link).toMatch(/rel="next"$/);
    const next = new URL(/<([^>]+)>/.exec(link!)![1]!);
    const second = (await (await t.request("GET", `${next.pathname}${next.search}`, { key: BOB_KEY })).json()) as WebhookBody[];
    expect(second.map((w) => w.id)).toEqual([a.id]);
    const deliveries = await t.request("GET", `/v1/webhooks/${a.id}/deliveries`, { key: BOB_KEY });
    expect(deliveries.status).toBe(200);
    expect(await deliveries.json()).toEqual([]);
    expect((await t.request("GET", "/v1/webhooks?cursor=garbage", { key: BOB_KEY })).status).toBe(422);
  });
});
