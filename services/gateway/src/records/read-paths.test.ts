/**
 * Every read of every kind, sent to a real listening gateway with the fast path on (its own server)
 * and off (the app alone on the same store): status, header fields (but `Date`) and bodies agree.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { TASK_KINDS as KIND_NAMES } from "@voiceloc/contracts";
import { ALICE_KEY, BOB_KEY, startTestGateway, wireRequest as get, type TestGateway, type WireAnswer as Answer } from "../testing/harness.ts";
import { TASK_KINDS } from "./kinds.ts";

let t: TestGateway;
let fast: string;
let appOnly: string;
let server: Server;
let sandboxKey: string;
const ids: Record<string, { alice: string; sandbox: string }> = {};

beforeAll(async () => {
  t = await startTestGateway({ RATE_LIMIT_PER_MINUTE: "60", RATE_LIMIT_BURST: "1000", PORT: "0", HOST: "127.0.0.1" });
  fast = `http://127.0.0.1:${await t.gateway.start()}`;
  server = createServer(getRequestListener(t.gateway.app.fetch));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  appOnly = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const keys = t.gateway.deps.dashboard?.keys;
  if (!keys) throw new Error("no key repository");
  sandboxKey = (await keys.create("alice", "sandbox", new Date(), "sandbox")).key;
  for (const kind of KIND_NAMES) {
    const made = async (owner: string, i: number) => {
      const id = crypto.randomUUID();
      const at = new Date(Date.UTC(2026, 0, 1 + i)).toISOString();
      const base = { id, account_id: owner, task_status: "completed" as const, task_progress: 100, task_error: null, result_key: `results/${kind}/${id}`, seq: 3, published: true, date_created: at, date_updated: at, file: "in.bin", source_language: "English" as const, target_language: "Spanish" as const };
      if (kind === "audiobook") await t.gateway.deps.records.audiobook.create({ ...base, name: `Book ${i}`, audio_book_cover: null, use_voice_clone: false, preset_voice_name: null, voice_clone_sample: null });
      else if (kind === "voice-stream") await t.gateway.deps.records["voice-stream"].create({ ...base, voice: null });
      else await t.gateway.deps.records.subtitle.create({ ...base, mode: "side_file", subtitle_format: "srt", subtitle_key: `results/subtitle/${id}.srt` });
      return id;
    };
    for (let i = 0; i < 3; i += 1) await made("alice", i);
    ids[kind] = { alice: await made("alice", 5), sandbox: await made("sandbox:alice", 1) };
    await made("bob", 1);
  }
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await t.close();
});

/** The same read through both servers, again while the two fell on either side of a second (signed links). */
async function both(path: string, headers: Record<string, string>): Promise<[Answer, Answer]> {
  let pair: [Answer, Answer] = [await get(fast, path, headers), await get(appOnly, path, headers)];
  for (let i = 0; i < 3 && !alike(...pair); i += 1) pair = [await get(fast, path, headers), await get(appOnly, path, headers)];
  return pair;
}

/**
 * Field names in lower case (the app's come through a `Headers` object), and RateLimit by shape: its
 * remaining count and seconds until full move with every request of the credential.
 */
const comparable = (a: Answer) => ({
  ...a,
  fields: a.fields.map(([n, v]) => [n.toLowerCase(), n.toLowerCase() === "ratelimit" ? v.replace(/r=\d+;t=\d+/, "r=R;t=T") : v]),
});
const alike = (a: Answer, b: Answer) => JSON.stringify(comparable(a)) === JSON.stringify(comparable(b));

describe("record reads with the fast path on and off", () => {
  for (const kind of KIND_NAMES) {
    const spec = TASK_KINDS[kind];
    it(`answer every read of ${kind} records alike`, async () => {
      const alice = { "API-KEY": ALICE_KEY, "X-Request-Id": "same-id" };
      const own = ids[kind]?.alice ?? "";
      const cases: Array<[string, Record<string, string>, number]> = [
        [`${spec.recordPrefix}${own}`, alice, 200],
        [spec.listPath, alice, 200],
        [`${spec.listPath}?limit=2`, alice, 200],
        [`${spec.listPath}?task_status=completed&limit=1`, alice, 200],
        [`${spec.listPath}?task_status=failed`, alice, 200],
        [`${spec.recordPrefix}${crypto.randomUUID()}`, alice, 404],
        [`${spec.recordPrefix}${own}`, { "API-KEY": BOB_KEY, "X-Request-Id": "same-id" }, 404],
        [`${spec.recordPrefix}${ids[kind]?.sandbox ?? ""}`, { "API-KEY": sandboxKey, "X-Request-Id": "same-id" }, 200],
        [spec.listPath, { "API-KEY": sandboxKey, "X-Request-Id": "same-id" }, 200],
        [spec.listPath.endsWith("/") ? spec.listPath.slice(0, -1) : `${spec.listPath}/`, alice, 307],
        [`${spec.listPath}?limit=0`, alice, 422],
        [`${spec.listPath}?cursor=${Buffer.from("nope").toString("base64url")}`, alice, 422],
        [`${spec.recordPrefix}not-a-uuid`, alice, 422],
      ];
      // the first page's Link, followed
      const first = await get(fast, `${spec.listPath}?limit=2`, alice);
      const next = /^<http:\/\/api\.test([^>]+)>/.exec(first.fields.find(([n]) => n === "Link")?.[1] ?? "")?.[1];
      expect(next).toBeDefined();
      cases.push([next ?? "", alice, 200]);
      // the app answers through the read core's `record` and `list`; the fast path through `recordNow` and `listNow`
      const reader = t.gateway.deps.reads[kind];
      const appReads = [vi.spyOn(reader, "record"), vi.spyOn(reader, "list")];
      const appReadCount = () => appReads.reduce((n, spy) => n + spy.mock.calls.length, 0);
      for (const [path, headers, status] of cases) {
        await get(fast, path, headers); // the key verified and cached: the fast path answers what it can
        const before = appReadCount();
        let viaFast = await get(fast, path, headers);
        if (status === 200) expect(appReadCount(), `${path} reached the app`).toBe(before);
        let viaApp = await get(appOnly, path, headers);
        // the two fell on either side of a second (signed links): both again
        if (!alike(viaFast, viaApp)) [viaFast, viaApp] = await both(path, headers);
        expect(viaFast.status, path).toBe(status);
        expect(comparable(viaFast), path).toEqual(comparable(viaApp));
      }
    });
  }

  it("answer a record the presenter cannot read alike: the app's 500, and the process goes on", async () => {
    const alice = { "API-KEY": ALICE_KEY, "X-Request-Id": "same-id" };
    for (const kind of KIND_NAMES) {
      const spec = TASK_KINDS[kind];
      const id = ids[kind]?.alice ?? "";
      const docs = t.gateway.deps.records[kind];
      const before = await docs.get(id);
      // a result key no download link can be signed for, as a corrupt store could give: the presenter throws
      await docs.updateOwned("alice", id, { result_key: "../outside" });
      try {
        await get(fast, `${spec.recordPrefix}${id}`, alice);
        const [viaFast, viaApp] = await both(`${spec.recordPrefix}${id}`, alice);
        expect(viaFast.status).toBe(500);
        expect(comparable(viaFast)).toEqual(comparable(viaApp));
        expect((await get(fast, spec.listPath, alice)).status).toBe(500);
      } finally {
        await docs.updateOwned("alice", id, { result_key: before?.result_key ?? null });
      }
      expect((await get(fast, `${spec.recordPrefix}${id}`, alice)).status).toBe(200);
    }
  });

  it("answer a rate-limited credential alike", async () => {
    const limited = await startTestGateway({ RATE_LIMIT_PER_MINUTE: "1", RATE_LIMIT_BURST: "2", PORT: "0", HOST: "127.0.0.1" });
    const port = await limited.gateway.start();
    const s = createServer(getRequestListener(limited.gateway.app.fetch));
    await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
    try {
      const urls = [`http://127.0.0.1:${port}`, `http://127.0.0.1:${(s.address() as AddressInfo).port}`];
      for (const kind of KIND_NAMES) {
        const headers = { "API-KEY": ALICE_KEY, "X-Request-Id": "same-id" };
        for (let i = 0; i < 3; i += 1) await get(urls[0] ?? "", TASK_KINDS[kind].listPath, headers);
        const [a, b] = [await get(urls[0] ?? "", TASK_KINDS[kind].listPath, headers), await get(urls[1] ?? "", TASK_KINDS[kind].listPath, headers)];
        expect(a.status).toBe(429);
        expect(comparable(a).fields.map(([n]) => n)).toEqual(comparable(b).fields.map(([n]) => n));
        const digitless = (x: Answer) => x.body.replace(/\d+/g, "N");
        expect(digitless(a)).toBe(digitless(b));
        expect(b.status).toBe(429);
      }
    } finally {
      s.closeAllConnections();
      await new Promise((resolve) => s.close(resolve));
      await limited.close();
    }
  });
});
