import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContractViolation, createContractFetch, createResponseChecker, type ContractProblem } from "./openapi.ts";

const LANGUAGE = { type: "string", enum: ["English", "Spanish", "French"] };

/** A small document in the shape the gateway serves (OpenAPI 3.1, zod-openapi style). */
function document(pivot: Record<string, unknown>): Record<string, unknown> {
  return {
    openapi: "3.1.0",
    info: { title: "t", version: "1" },
    paths: {
      "/v1/capabilities": {
        get: {
          operationId: "get_capabilities",
          responses: {
            200: {
              description: "ok",
              content: {
                "application/json": {
                  schema: {
                    type: "object",
                    properties: {
                      pairs: {
                        type: "array",
                        items: {
                          type: "object",
                          properties: { source: { $ref: "#/components/schemas/Language" }, pivot },
                          required: ["source", "pivot"],
                        },
                      },
                    },
                    required: ["pairs"],
                  },
                  example: { pairs: [] },
                },
              },
            },
            429: {
              description: "slow down",
              headers: { "Retry-After": { required: true, schema: { type: "integer", minimum: 1 } } },
              content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
            },
          },
        },
      },
      "/v1/items/{item_id}": {
        get: { operationId: "get_item", responses: { 200: { description: "ok", content: { "application/json": { schema: { type: "object" } } } } } },
        delete: { operationId: "delete_item", responses: { 204: { description: "gone" } } },
      },
      "/v1/items/{item_id}/events": {
        get: { operationId: "stream_item_events", responses: { 200: { description: "events", content: { "text/event-stream": { schema: { type: "string" } } } } } },
      },
    },
    components: {
      schemas: {
        Language: LANGUAGE,
        Error: { type: "object", properties: { detail: { type: "string" } }, required: ["detail"], "x-internal": false },
      },
    },
  };
}

const NULLABLE_REF = { anyOf: [{ $ref: "#/components/schemas/Language" }, { type: "null" }], description: "null: a direct pair." };
/** What zod-to-openapi writes for a registered enum made `.nullable()`: null cannot satisfy the allOf. */
const BROKEN_NULLABLE_REF = { allOf: [{ $ref: "#/components/schemas/Language" }, { type: ["string", "null"] }] };

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
const GET = (path: string) => ({ method: "GET", url: `http://127.0.0.1:1${path}` });

describe("createResponseChecker", () => {
  it("accepts a body that matches, null where the schema allows it", async () => {
    const checker = createResponseChecker(document(NULLABLE_REF));
    expect(checker.version).toBe("3.1.0");
    const ok = json({ pairs: [{ source: "English", pivot: null }, { source: "English", pivot: "Spanish" }] });
    expect(await checker.check(GET("/v1/capabilities"), ok)).toEqual([]);
    expect(ok.bodyUsed).toBe(false);
  });

  it("names the operation and the JSON pointer of a wrong body", async () => {
    const checker = createResponseChecker(document(BROKEN_NULLABLE_REF));
    const problems = await checker.check(GET("/v1/capabilities"), json({ pairs: [{ source: "English", pivot: null }] }));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]).toMatchObject({ operation: "get_capabilities (GET /v1/capabilities)", status: 200, pointer: "body /pairs/0/pivot" });
    const wrongEnum = await createResponseChecker(document(NULLABLE_REF)).check(GET("/v1/capabilities"), json({ pairs: [{ source: "Klingon", pivot: null }] }));
    expect(wrongEnum).toEqual([
      expect.objectContaining({ pointer: "body /pairs/0/source", message: expect.stringContaining('"English", "Spanish", "French"') }),
    ]);
    const missing = await createResponseChecker(document(NULLABLE_REF)).check(GET("/v1/capabilities"), json({}));
    expect(missing).toEqual([expect.objectContaining({ pointer: "body /", message: expect.stringContaining("must have required property 'pairs'") })]);
  });

  it("reads an object schema as closed: a property the document does not list is drift (unless allowed)", async () => {
    const body = { pairs: [{ source: "English", pivot: null, engine: "apertium" }] };
    const problems = await createResponseChecker(document(NULLABLE_REF)).check(GET("/v1/capabilities"), json(body));
    expect(problems).toEqual([expect.objectContaining({ pointer: "body /pairs/0", message: expect.stringContaining("does not list: engine") })]);
    const lenient = createResponseChecker(document(NULLABLE_REF), { allowUndocumentedProperties: true });
    expect(await lenient.check(GET("/v1/capabilities"), json(body))).toEqual([]);
  });

  it("refuses a status the operation does not document, an unknown path and an unknown method", async () => {
    const checker = createResponseChecker(document(NULLABLE_REF));
    const problems = await checker.check(GET("/v1/capabilities"), json({ detail: "boom" }, 500));
    expect(problems).toEqual([
      { operation: "get_capabilities (GET /v1/capabilities)", status: 500, pointer: "", message: "status 500 is not documented (documented: 200, 429)" },
    ]);
    expect(await checker.check(GET("/v1/nothing"), json({}, 404))).toEqual([expect.objectContaining({ message: "no path of the document matches this URL" })]);
    const patch = await checker.check({ method: "PATCH", url: "http://127.0.0.1:1/v1/items/7" }, json({}));
    expect(patch[0]?.message).toContain("no PATCH operation here (only GET, DELETE /v1/items/{item_id})");
  });

  it("checks the content type, bodiless statuses and documented headers", async () => {
    const checker = createResponseChecker(document(NULLABLE_REF));
    const text = new Response("hi", { status: 200, headers: { "content-type": "text/plain" } });
    expect(await checker.check(GET("/v1/capabilities"), text)).toEqual([expect.objectContaining({ pointer: "header Content-Type", message: expect.stringContaining("text/plain") })]);
    expect(await checker.check({ method: "DELETE", url: "http://127.0.0.1:1/v1/items/7" }, new Response(null, { status: 204 }))).toEqual([]);
    expect(await checker.check(GET("/v1/capabilities"), json({ detail: "slow" }, 429, { "retry-after": "3" }))).toEqual([]);
    expect(await checker.check(GET("/v1/capabilities"), json({ detail: "slow" }, 429))).toEqual([
      expect.objectContaining({ pointer: "header Retry-After", message: "is required and missing" }),
    ]);
    expect(await checker.check(GET("/v1/capabilities"), json({ detail: "slow" }, 429, { "retry-after": "soon" }))).toEqual([
      expect.objectContaining({ pointer: "header Retry-After", message: expect.stringContaining("must be integer") }),
    ]);
  });

  it("checks a stream for its status and content type only, leaving its body unread", async () => {
    const checker = createResponseChecker(document(NULLABLE_REF));
    const stream = new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode("data: {}\n\n")) }), {
      headers: { "content-type": "text/event-stream" },
    });
    expect(await checker.check(GET("/v1/items/7/events"), stream)).toEqual([]);
    expect(stream.bodyUsed).toBe(false);
  });

  it("routes outside the document are checked for their statuses only; a redirect must lead to an operation", async () => {
    const checker = createResponseChecker(document(NULLABLE_REF), { outside: [{ path: /^\/healthz$/, what: "health", statuses: [200] }] });
    expect(await checker.check(GET("/healthz"), new Response("ok"))).toEqual([]);
    expect(await checker.check(GET("/healthz"), new Response("no", { status: 503 }))).toEqual([expect.objectContaining({ message: "status 503 is not one of 200" })]);
    const redirect = (location: string) => new Response(null, { status: 307, headers: { location } });
    expect(await checker.check(GET("/v1/capabilities/"), redirect("/v1/capabilities"))).toEqual([]);
    expect(await checker.check(GET("/v1/elsewhere/"), redirect("/v1/elsewhere"))).toHaveLength(1);
  });

  it("reads OpenAPI 3.0's nullable", async () => {
    // (3.0.3: with an `enum`, null must be among its values too; without one, `nullable` admits it.)
    const doc = document({ type: "string", nullable: true });
    doc.openapi = "3.0.3";
    const checker = createResponseChecker(doc);
    expect(await checker.check(GET("/v1/capabilities"), json({ pairs: [{ source: "English", pivot: null }] }))).toEqual([]);
    expect(await checker.check(GET("/v1/capabilities"), json({ pairs: [{ source: "English", pivot: 3 }] }))).not.toEqual([]);
  });
});

describe("createContractFetch over HTTP", () => {
  let server: Server;
  let origin: string;
  let other: Server;
  let otherOrigin: string;
  const listen = async (s: Server) => {
    await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  };

  beforeAll(async () => {
    // A service whose document says `pivot` is a Language, and which answers null anyway.
    server = createServer((req, res) => {
      const send = (status: number, body: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (req.url === "/openapi.json") return send(200, document(BROKEN_NULLABLE_REF));
      if (req.url === "/v1/capabilities") return send(200, { pairs: [{ source: "English", pivot: null }] });
      if (req.url === "/v1/items/1") return send(200, { id: 1 });
      return send(500, { detail: "boom" });
    });
    origin = await listen(server);
    other = createServer((_req, res) => res.writeHead(500).end("not the API"));
    otherOrigin = await listen(other);
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await new Promise((resolve) => other.close(resolve));
  });

  it("rejects a drifted response with the operation and pointer, records it, and passes the rest through", async () => {
    const contract = createContractFetch(globalThis.fetch);
    contract.watch(origin);
    const ok = await contract.fetch(`${origin}/v1/items/1`);
    expect(await ok.json()).toEqual({ id: 1 });

    const drift = await contract.fetch(new Request(`${origin}/v1/capabilities`)).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(drift).toBeInstanceOf(ContractViolation);
    expect((drift as Error).message).toContain("get_capabilities (GET /v1/capabilities) → 200 at body /pairs/0/pivot");
    const undocumented = await contract.fetch(`${origin}/v1/items/1/events`, { method: "DELETE" }).catch((error: ContractViolation) => error.problems);
    expect((undocumented as ContractProblem[])[0]?.message).toContain("no DELETE operation here");

    // An origin nobody watches (a stand-in engine, a webhook receiver) is not checked.
    expect((await contract.fetch(`${otherOrigin}/v1/capabilities`)).status).toBe(500);
    expect(contract.checked).toBe(3);
    expect(contract.takeViolations().map((v) => v.url)).toEqual([`GET ${origin}/v1/capabilities`, `DELETE ${origin}/v1/items/1/events`]);
    expect(contract.takeViolations()).toEqual([]);
  });
});
