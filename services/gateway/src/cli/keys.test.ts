import { describe, expect, it, vi } from "vitest";
import { KEY_CACHE_TTL_MS } from "../auth/authenticator.ts";
import { tempDir } from "@voiceloc/testing";
import { runKeysCli } from "./keys.ts";
import { hashApiKey } from "../auth/keys.ts";
import { startTestGateway } from "../testing/harness.ts";

describe("keys CLI", () => {
  it("creates a key shown once, lists it without the secret, and revokes it", async () => {
    const dir = await tempDir("voiceloc-cli-");
    try {
      const env = { DATA_DIR: dir.path, LOG_LEVEL: "silent" };
      const created: string[] = [];
      expect(await runKeysCli(["create", "zoe", "--name", "laptop", "--json"], (l) => created.push(l), env)).toBe(0);
      const view = JSON.parse(created[0] ?? "{}") as { key: string; key_id: string; account: string };
      expect(view.account).toBe("zoe");
      expect(view.key).toMatch(/^vl_live_[a-z2-7]{10}_[A-Za-z0-9_-]{43}$/);

      const listed: string[] = [];
      await runKeysCli(["list", "zoe"], (l) => listed.push(l), env);
      expect(listed).toHaveLength(1);
      expect(listed[0]).toContain(view.key_id);
      expect(listed[0]).toContain("active");
      expect(listed.join("\n")).not.toContain(view.key.slice(15));

      const gw = await startTestGateway({}, {}, dir.path);
      // a key of the shape made before modes existed keeps working, as a live key
      const legacy = "vl_abcdefghij_" + "A".repeat(43);
      await (await gw.gateway.deps.store.collection<{ id: string }>({ name: "api_keys" })).insert({
        id: "abcdefghij", account_id: "zoe", name: "old", prefix: "vl_abcdefghij_…", hash: hashApiKey(legacy), source: "generated", created_at: new Date().toISOString(), revoked_at: null,
      } as { id: string });
      const legacyRes = await gw.request("GET", "/v1/voices/streams", { key: legacy });
      expect(legacyRes.status).toBe(200);
      expect(legacyRes.headers.get("voiceloc-mode")).toBeNull();
      try {
        expect((await gw.request("GET", "/v1/voices/streams", { key: view.key })).status).toBe(200);
        const out: string[] = [];
        expect(await runKeysCli(["revoke", view.key_id], (l) => out.push(l), env)).toBe(0);
        // another connection's commit is read from the next event-loop turn on (reads share a snapshot per turn)
        await new Promise((resolve) => setImmediate(resolve));
        // the running gateway honours the revocation once its short key cache expires
        vi.useFakeTimers({ toFake: ["Date"] });
        try {
          vi.setSystemTime(Date.now() + KEY_CACHE_TTL_MS + 1);
          expect((await gw.request("GET", "/v1/voices/streams", { key: view.key })).status).toBe(401);
        } finally {
          vi.useRealTimers();
        }
      } finally {
        await gw.gateway.stop();
      }
      const after: string[] = [];
      await runKeysCli(["list"], (l) => after.push(l), env);
      expect(after.find((l) => l.startsWith(view.key_id))).toContain("revoked");
      expect(await runKeysCli(["revoke", "nope"], () => undefined, env)).toBe(1);
      expect(await runKeysCli(["create", "../bad"], () => undefined, env)).toBe(2);

      // --sandbox: a vl_test_ key whose records belong to sandbox:zoe
      const sandboxOut: string[] = [];
      expect(await runKeysCli(["create", "zoe", "--sandbox", "--json"], (l) => sandboxOut.push(l), env)).toBe(0);
      const sandbox = JSON.parse(sandboxOut[0] ?? "{}") as { key: string; mode: string };
      expect(sandbox.key).toMatch(/^vl_test_[a-z2-7]{10}_[A-Za-z0-9_-]{43}$/);
      expect(sandbox.mode).toBe("sandbox");
    } finally {
      await dir.cleanup();
    }
  });
});
