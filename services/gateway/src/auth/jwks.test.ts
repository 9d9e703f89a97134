import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SignJWT, exportJWK, generateKeyPair } from "jose";
import { startTestGateway, type TestGateway } from "../testing/harness.ts";

let server: Server;
let t: TestGateway;
type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
let rsa: PrivateKey;
let ec: PrivateKey;
let stranger: PrivateKey;

beforeAll(async () => {
  const rsaPair = await generateKeyPair("RS256");
  const ecPair = await generateKeyPair("ES256");
  stranger = (await generateKeyPair("RS256")).privateKey;
  rsa = rsaPair.privateKey;
  ec = ecPair.privateKey;
  const jwks = {
    keys: [
      { ...(await exportJWK(rsaPair.publicKey)), kid: "rsa-1", alg: "RS256", use: "sig" },
      { ...(await exportJWK(ecPair.publicKey)), kid: "ec-1", alg: "ES256", use: "sig" },
    ],
  };
  server = createServer((_req, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(jwks));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  t = await startTestGateway({ JWKS_URL: `http://127.0.0.1:${port}/.well-known/jwks.json`, JWT_ISSUER: "https://idp.test" });
});

afterAll(async () => {
  await t.close();
  await new Promise((resolve) => server.close(resolve));
});

const bearer = (token: string) => ({ key: null, headers: { Authorization: `Bearer ${token}` } });

describe("access tokens through JWKS", () => {
  it("accepts RS256 and ES256 tokens from the configured issuer", async () => {
    const r = await new SignJWT({}).setProtectedHeader({ alg: "RS256", kid: "rsa-1" }).setSubject("erin").setIssuer("https://idp.test").setExpirationTime("5m").sign(rsa);
    const e = await new SignJWT({}).setProtectedHeader({ alg: "ES256", kid: "ec-1" }).setSubject("erin").setIssuer("https://idp.test").setExpirationTime("5m").sign(ec);
    const created = await t.request("POST", "/v1/voices/streams", { ...bearer(r), body: { file: "x.wav", source_language: "English", target_language: "French" } });
    expect(created.status).toBe(201);
    const id = ((await created.json()) as { id: string }).id;
    const read = await t.request("GET", `/v1/voices/streams/${id}`, bearer(e));
    expect(read.status).toBe(200);
  });

  it("refuses a token signed by an unknown key or from another issuer", async () => {
    const unknown = await new SignJWT({}).setProtectedHeader({ alg: "RS256", kid: "rsa-1" }).setSubject("erin").setIssuer("https://idp.test").setExpirationTime("5m").sign(stranger);
    const otherIssuer = await new SignJWT({}).setProtectedHeader({ alg: "RS256", kid: "rsa-1" }).setSubject("erin").setIssuer("https://evil.test").setExpirationTime("5m").sign(rsa);
    for (const token of [unknown, otherIssuer]) {
      const res = await t.request("GET", "/v1/voices/streams", bearer(token));
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toContain("invalid_token");
    }
  });
});
