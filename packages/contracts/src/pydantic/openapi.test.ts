import { describe, expect, it } from "vitest";
import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { pyBool, pyEnum, pyHttpUrl, pyInt, pyOptional, pyStr, pyUuid } from "./primitives.ts";
import { HTTPValidationErrorSchema } from "./schemas.ts";
import { detailFromHookResult, locationOfTarget, toValidationDetail } from "./mapper.ts";

const CreateJob = z
  .object({
    title: pyStr({ min: 1, max: 100 }),
    target_language: pyEnum(["French", "English", "Urdu"]),
    source_url: pyHttpUrl(),
    notify: pyBool().default(false),
    priority: pyInt({ ge: 1, le: 10 }).default(5),
    weight: pyInt({ gt: 0, lt: 100 }).nullable(),
    notes: pyOptional(pyStr({ max: 500 })),
  })
  .openapi("CreateJob");

const route = createRoute({
  method: "post",
  path: "/jobs/{job_id}",
  request: {
    params: z.object({ job_id: pyUuid() }),
    query: z.object({ limit: pyInt({ ge: 1, le: 200 }).optional(), verbose: pyBool().optional() }),
    body: { content: { "application/json": { schema: CreateJob } } },
  },
  responses: {
    200: { description: "OK" },
    422: { description: "Validation Error", content: { "application/json": { schema: HTTPValidationErrorSchema } } },
  },
});

function build() {
  const app = new OpenAPIHono({
    defaultHook: (result, c) => {
      if (!result.success) return c.json({ detail: detailFromHookResult(result) }, 422);
      return undefined;
    },
  });
  app.openapi(route, (c) => c.json({ ok: true }, 200));
  return app;
}

describe("OpenAPI 3.1 rendering", () => {
  const doc = build().getOpenAPI31Document({ openapi: "3.1.0", info: { title: "t", version: "1" } });

  it("documents the body model like FastAPI (enum values, boolean, integer bounds, uri, lengths)", () => {
    expect(doc.components?.schemas?.CreateJob).toEqual({
      type: "object",
      properties: {
        title: { type: "string", minLength: 1, maxLength: 100 },
        target_language: { type: "string", enum: ["French", "English", "Urdu"] },
        source_url: { type: "string", minLength: 1, maxLength: 2083, format: "uri" },
        notify: { type: "boolean", default: false },
        priority: { type: "integer", minimum: 1, maximum: 10, default: 5 },
        weight: { type: ["integer", "null"], exclusiveMinimum: 0, exclusiveMaximum: 100 },
        notes: { type: ["string", "null"], maxLength: 500 },
      },
      required: ["title", "target_language", "source_url", "weight"],
    });
  });

  it("documents path and query parameters", () => {
    expect(doc.paths?.["/jobs/{job_id}"]?.post?.parameters).toEqual([
      { schema: { type: "string", format: "uuid" }, required: true, name: "job_id", in: "path" },
      { schema: { type: "integer", minimum: 1, maximum: 200 }, required: false, name: "limit", in: "query" },
      { schema: { type: "boolean" }, required: false, name: "verbose", in: "query" },
    ]);
  });

  it("documents the 422 body under FastAPI's component names", () => {
    expect(doc.components?.schemas?.HTTPValidationError).toEqual({
      type: "object",
      properties: {
        detail: { type: "array", items: { $ref: "#/components/schemas/ValidationError" }, title: "Detail" },
      },
      title: "HTTPValidationError",
    });
    expect(doc.components?.schemas?.ValidationError).toEqual({
      type: "object",
      properties: {
        loc: { type: "array", items: { anyOf: [{ type: "string" }, { type: "integer" }] }, title: "Location" },
        msg: { type: "string", title: "Message" },
        type: { type: "string", title: "Error Type" },
        input: { title: "Input" },
        ctx: { type: "object", additionalProperties: {}, title: "Context" },
      },
      required: ["loc", "msg", "type"],
      title: "ValidationError",
    });
    const responses = doc.paths?.["/jobs/{job_id}"]?.post?.responses;
    expect(responses?.["422"]).toEqual({
      description: "Validation Error",
      content: { "application/json": { schema: { $ref: "#/components/schemas/HTTPValidationError" } } },
    });
  });
});

describe("wired into an OpenAPIHono defaultHook", () => {
  it("maps Hono targets to FastAPI locations", () => {
    expect(["json", "form", "query", "param", "header", "cookie"].map(locationOfTarget)).toEqual([
      "body",
      "body",
      "query",
      "path",
      "header",
      "cookie",
    ]);
  });

  it("the hook result carries the validated data at runtime", () => {
    const result = z.object({ a: pyStr() }).safeParse({});
    if (result.success) throw new Error("expected a failure");
    const hookResult = { target: "json" as const, success: false as const, error: result.error, data: {} };
    expect(detailFromHookResult(hookResult)).toEqual(
      toValidationDetail(result.error, {}, "body"),
    );
  });

  const app = build();
  const id = "0192ab00-cdef-7000-8000-0123456789ab";
  const post = (path: string, body: unknown) =>
    app.request(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

  it("a bad path parameter", async () => {
    const res = await post("/jobs/abc", {});
    expect(res.status).toBe(422);
    expect(await res.text()).toBe(
      '{"detail":[{"type":"uuid_parsing","loc":["path","job_id"],"msg":"Input should be a valid UUID, invalid length: expected length 32 for simple format, found 3","input":"abc","ctx":{"error":"invalid length: expected length 32 for simple format, found 3"}}]}',
    );
  });

  it("a bad query parameter", async () => {
    const res = await post(`/jobs/${id}?limit=0`, {});
    expect(res.status).toBe(422);
    const body: unknown = await res.json();
    expect(HTTPValidationErrorSchema.parse(body)).toEqual({
      detail: [
        { type: "greater_than_equal", loc: ["query", "limit"], msg: "Input should be greater than or equal to 1", input: "0", ctx: { ge: 1 } },
      ],
    });
  });

  it("a bad body", async () => {
    const res = await post(`/jobs/${id}?limit=5&verbose=yes`, { title: "t", target_language: "Klingon", source_url: "https://a.b", weight: 1 });
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({
      detail: [
        {
          type: "enum",
          loc: ["body", "target_language"],
          msg: "Input should be 'French', 'English' or 'Urdu'",
          input: "Klingon",
          ctx: { expected: "'French', 'English' or 'Urdu'" },
        },
      ],
    });
  });

  it("a valid request", async () => {
    const res = await post(`/jobs/${id}?limit=5&verbose=yes`, { title: "t", target_language: "Urdu", source_url: "https://a.b", weight: null });
    expect(res.status).toBe(200);
  });
});
