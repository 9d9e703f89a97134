/**
 * What an access token's `sub` may name: the live space of an account. The sandbox space
 * (`sandbox:<account>`) is reached with a sandbox API key only, and a `sub` no identity provider
 * would issue as an account is refused like any other bad token: 401, `{"detail"}`, the constant
 * challenge.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SignJWT, type JWTPayload } from "jose";
import { ApiKeyRepository } from "./api-keys.ts";
import { JWT_SECRET, startTestGateway, type TestGateway } from "../testing/harness.ts";

const CHALLENGE = 'Bearer realm="voiceloc", error="invalid_token"';
const secret = new TextEncoder().encode(JWT_SECRET);
const STREAM = { file: "talk.wav", source_language: "English", target_language: "French" };

let t: TestGateway;
let sandboxKey: string;
let sandboxRecord: string;

/** An HS256 token signed with the gateway's JWT_SECRET carrying these claims (and an expiry). */
const token = (claims: JWTPayload) => new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setExpirationTime("5m").sign(secret);
const bearer = (value: string, extra: Record<string, string> = {}) => ({ key: null, headers: { Authorization: `Bearer ${value}`, ...extra } });

beforeAll(async () => {
  t = await startTestGateway();
  const keys = await ApiKeyRepository.open(t.gateway.deps.store);
  sandboxKey = (await keys.create("alice", "sandbox", new Date(), "sandbox")).key;
  const created = await t.request("POST", "/v1/voices/streams", { key: sandboxKey, body: STREAM });
  expect(created.status).toBe(201);
  expect(created.headers.get("voiceloc-mode")).toBe("sandbox");
  sandboxRecord = ((await created.json()) as { id: string }).id;
});
afterAll(async () => t.close());

async function expectRefused(res: Response, detail: RegExp): Promise<void> {
  expect(res.status).toBe(401);
  expect(res.headers.get("www-authenticate")).toBe(CHALLENGE);
  expect(res.headers.get("voiceloc-mode")).toBeNull();
  const body = (await res.json()) as Record<string, unknown>;
  expect(Object.keys(body)).toEqual(["detail"]);
  expect(body.detail).toMatch(detail);
}

describe("an access token whose sub names the sandbox space", () => {
  it("is a 401: it neither lists the sandbox records nor synthesises past the sandbox limit, header or not", async () => {
    const intruder = await token({ sub: "sandbox:alice" });
    for (const headers of [{}, { "VoiceLoc-Mode": "sandbox" }] as Array<Record<string, string>>) {
      const list = await t.request("GET", "/v1/voices/streams", bearer(intruder, headers));
      await expectRefused(list, /sandbox/);
      const read = await t.request("GET", `/v1/voices/streams/${sandboxRecord}`, bearer(intruder, headers));
      await expectRefused(read, /sandbox/);
      const speech = await t.request("POST", "/v1/speech/synthesize", { ...bearer(intruder, headers), body: { text: "x".repeat(650), language: "English" } });
      await expectRefused(speech, /sandbox API keys \(vl_test_…\)/);
      const create = await t.request("POST", "/v1/voices/streams", { ...bearer(intruder, headers), body: STREAM });
      await expectRefused(create, /sandbox/);
    }
    // the sandbox space holds only what the sandbox key made
    const mine = (await (await t.request("GET", "/v1/voices/streams", { key: sandboxKey })).json()) as Array<{ id: string }>;
    expect(mine.map((r) => r.id)).toEqual([sandboxRecord]);
  });

  it("leaves the account's own token in its live space", async () => {
    const res = await t.request("GET", "/v1/voices/streams", bearer(await token({ sub: "alice" })));
    expect(res.status).toBe(200);
    expect(res.headers.get("voiceloc-mode")).toBeNull();
    expect(((await res.json()) as Array<{ id: string }>).map((r) => r.id)).not.toContain(sandboxRecord);
    expect((await t.request("GET", `/v1/voices/streams/${sandboxRecord}`, bearer(await token({ sub: "alice" })))).status).toBe(404);
  });
});

describe("a sub that could never be an account", () => {
  it("is a 401 with the usual body and challenge", async () => {
    const cases: Array<[string, unknown, RegExp]> = [
      ["missing", undefined, /'sub' claim \(the account\) is missing/],
      ["empty", "", /is missing/],
      ["blank", "   ", /is missing/],
      ["a number", 42, /is missing/],
      ["a list", ["alice"], /is missing/],
      ["a newline", "alice\nbob", /control characters/],
      ["NUL", "alice\u0000", /control characters/],
      ["DEL", "al\u007fice", /control characters/],
      ["a C1 control", "alice\u0085", /control characters/],
      ["a line separator", "alice\u2028", /control characters/],
      ["a lone surrogate", "alice\ud800", /broken Unicode/],
      ["256 characters", "a".repeat(256), /longer than 255 characters/],
      ["the sandbox prefix alone", "sandbox:", /sandbox/],
    ];
    for (const [what, sub, detail] of cases) {
      const claims: JWTPayload = sub === undefined ? {} : { sub: sub as string };
      const res = await t.request("GET", "/v1/audio_books/", bearer(await token(claims)));
      await expectRefused(res, detail).catch((error: unknown) => {
        throw new Error(`sub ${what}: ${String(error)}`);
      });
    }
  });

  it("still accepts what identity providers issue: emails, ids with | or /, 255 characters, other scripts", async () => {
    for (const sub of ["carol@example.com", "auth0|65f1c2", "google-oauth2|1234567890", "tenant/user-7", "a".repeat(255), "Ünïcødé", "248289761001"]) {
      const res = await t.request("GET", "/v1/audio_books/", bearer(await token({ sub })));
      expect(res.status, sub).toBe(200);
    }
  });
});
