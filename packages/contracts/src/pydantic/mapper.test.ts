/**
 * Whole-request cases. The expected `detail` lists are what FastAPI (Pydantic 2.13) writes for the
 * equivalent Python declarations, shown above each schema.
 */
import { describe, expect, it } from "vitest";
import { z } from "@hono/zod-openapi";
import { pyBool, pyEnum, pyHttpUrl, pyInt, pyOptional, pyStr, pyUuid } from "./primitives.ts";
import { toValidationDetail } from "./mapper.ts";
import type { ValidationErrorItem, ValidationLocation } from "./types.ts";

function detail(schema: z.ZodType, data: unknown, location: ValidationLocation = "body"): ValidationErrorItem[] | "OK" {
  const result = schema.safeParse(data);
  return result.success ? "OK" : toValidationDetail(result.error, data, location);
}

/** What FastAPI would answer, serialised: also proves `undefined` never leaks into the JSON. */
function wire(schema: z.ZodType, data: unknown, location: ValidationLocation = "body"): string {
  return JSON.stringify({ detail: detail(schema, data, location) });
}

// class Lang(str, Enum): French = "French"; English = "English"; Urdu = "Urdu"
const Lang = pyEnum(["French", "English", "Urdu"]);

// class Speaker(BaseModel):
//     name: str
//     voice_id: UUID
const Speaker = z.object({ name: pyStr(), voice_id: pyUuid() });

// class Job(BaseModel):
//     title: Annotated[str, Field(min_length=1, max_length=100)]
//     target_language: Lang
//     source_url: HttpUrl
//     notify: bool = False
//     speakers: list[Speaker] = []
//     priority: Annotated[int, Field(ge=1, le=10)] = 5
//     notes: str | None = None
const Job = z.object({
  title: pyStr({ min: 1, max: 100 }),
  target_language: Lang,
  source_url: pyHttpUrl(),
  notify: pyBool().default(false),
  speakers: z.array(Speaker).default([]),
  priority: pyInt({ ge: 1, le: 10 }).default(5),
  notes: pyOptional(pyStr()),
});

const MISSING_BODY = { type: "missing", loc: ["body"], msg: "Field required", input: null };
const NOT_AN_OBJECT = "Input should be a valid dictionary or object to extract fields from";
const LANG_EXPECTED = "'French', 'English' or 'Urdu'";

describe("request body (a Pydantic model)", () => {
  it("an empty object: every required field is missing, with the object as input", () => {
    expect(detail(Job, {})).toEqual([
      { type: "missing", loc: ["body", "title"], msg: "Field required", input: {} },
      { type: "missing", loc: ["body", "target_language"], msg: "Field required", input: {} },
      { type: "missing", loc: ["body", "source_url"], msg: "Field required", input: {} },
    ]);
  });

  it("wrong types and the unknown 'Klingon'", () => {
    const body = { title: 123, target_language: "Klingon", source_url: "foo" };
    expect(wire(Job, body)).toBe(
      JSON.stringify({
        detail: [
          { type: "string_type", loc: ["body", "title"], msg: "Input should be a valid string", input: 123 },
          {
            type: "enum",
            loc: ["body", "target_language"],
            msg: `Input should be ${LANG_EXPECTED}`,
            input: "Klingon",
            ctx: { expected: LANG_EXPECTED },
          },
          {
            type: "url_parsing",
            loc: ["body", "source_url"],
            msg: "Input should be a valid URL, relative URL without a base",
            input: "foo",
            ctx: { error: "relative URL without a base" },
          },
        ],
      }),
    );
  });

  it("null for required fields, 'Hindu', 'maybe', an unparsable int", () => {
    const body = {
      title: null,
      target_language: "Hindu",
      source_url: null,
      notify: "maybe",
      priority: "abc",
      notes: 5,
    };
    expect(detail(Job, body)).toEqual([
      { type: "string_type", loc: ["body", "title"], msg: "Input should be a valid string", input: null },
      {
        type: "enum",
        loc: ["body", "target_language"],
        msg: "Input should be 'French', 'English' or 'Urdu'",
        input: "Hindu",
        ctx: { expected: "'French', 'English' or 'Urdu'" },
      },
      { type: "url_type", loc: ["body", "source_url"], msg: "URL input should be a string or URL", input: null },
      {
        type: "bool_parsing",
        loc: ["body", "notify"],
        msg: "Input should be a valid boolean, unable to interpret input",
        input: "maybe",
      },
      {
        type: "int_parsing",
        loc: ["body", "priority"],
        msg: "Input should be a valid integer, unable to parse string as an integer",
        input: "abc",
      },
      { type: "string_type", loc: ["body", "notes"], msg: "Input should be a valid string", input: 5 },
    ]);
  });

  it("nested models and list items, in field order", () => {
    const body = {
      title: "",
      target_language: "Urdu",
      source_url: "ftp://example.com/a.wav",
      speakers: [{ name: "A", voice_id: "abc" }, { voice_id: "not-a-uuid" }, 3],
      priority: 0,
    };
    expect(detail(Job, body)).toEqual([
      {
        type: "string_too_short",
        loc: ["body", "title"],
        msg: "String should have at least 1 character",
        input: "",
        ctx: { min_length: 1 },
      },
      {
        type: "url_scheme",
        loc: ["body", "source_url"],
        msg: "URL scheme should be 'http' or 'https'",
        input: "ftp://example.com/a.wav",
        ctx: { expected_schemes: "'http' or 'https'" },
      },
      {
        type: "uuid_parsing",
        loc: ["body", "speakers", 0, "voice_id"],
        msg: "Input should be a valid UUID, invalid length: expected length 32 for simple format, found 3",
        input: "abc",
        ctx: { error: "invalid length: expected length 32 for simple format, found 3" },
      },
      {
        type: "missing",
        loc: ["body", "speakers", 1, "name"],
        msg: "Field required",
        input: { voice_id: "not-a-uuid" },
      },
      {
        type: "uuid_parsing",
        loc: ["body", "speakers", 1, "voice_id"],
        msg: "Input should be a valid UUID, invalid character: found `n` at 1",
        input: "not-a-uuid",
        ctx: { error: "invalid character: found `n` at 1" },
      },
      { type: "model_attributes_type", loc: ["body", "speakers", 2], msg: NOT_AN_OBJECT, input: 3 },
      {
        type: "greater_than_equal",
        loc: ["body", "priority"],
        msg: "Input should be greater than or equal to 1",
        input: 0,
        ctx: { ge: 1 },
      },
    ]);
  });

  it("too long, not a list, out of range", () => {
    const title = "x".repeat(101);
    const body = {
      title,
      target_language: "English",
      source_url: "https://example.com",
      speakers: "nope",
      priority: 11,
      notify: 2,
    };
    expect(detail(Job, body)).toEqual([
      {
        type: "string_too_long",
        loc: ["body", "title"],
        msg: "String should have at most 100 characters",
        input: title,
        ctx: { max_length: 100 },
      },
      {
        type: "bool_parsing",
        loc: ["body", "notify"],
        msg: "Input should be a valid boolean, unable to interpret input",
        input: 2,
      },
      { type: "list_type", loc: ["body", "speakers"], msg: "Input should be a valid list", input: "nope" },
      {
        type: "less_than_equal",
        loc: ["body", "priority"],
        msg: "Input should be less than or equal to 10",
        input: 11,
        ctx: { le: 10 },
      },
    ]);
  });

  it.each([[[]], ["x"], [3], [true]])("a non-object body %j is model_attributes_type at ['body']", (body) => {
    expect(detail(Job, body)).toEqual([{ type: "model_attributes_type", loc: ["body"], msg: NOT_AN_OBJECT, input: body }]);
  });

  it("a JSON null body and an absent body are both a missing body", () => {
    expect(detail(Job, null)).toEqual([MISSING_BODY]);
    expect(detail(Job, undefined)).toEqual([MISSING_BODY]);
    expect(wire(Job, undefined)).toBe('{"detail":[{"type":"missing","loc":["body"],"msg":"Field required","input":null}]}');
  });

  it("ignores unknown fields and applies defaults", () => {
    const data = { title: "t", target_language: "Urdu", source_url: "https://x.org", extra: 1 };
    expect(Job.parse(data)).toEqual({
      title: "t",
      target_language: "Urdu",
      source_url: "https://x.org/",
      notify: false,
      speakers: [],
      priority: 5,
    });
  });

  it("coerces like Pydantic on success", () => {
    const data = {
      title: "t",
      target_language: "French",
      source_url: "HTTP://Example.COM:80/a b",
      notify: "YES",
      priority: "7",
      speakers: [{ name: "A", voice_id: "{0192AB00-CDEF-7000-8000-0123456789AB}" }],
      notes: null,
    };
    expect(Job.parse(data)).toEqual({
      title: "t",
      target_language: "French",
      source_url: "http://example.com/a%20b",
      notify: true,
      priority: 7,
      speakers: [{ name: "A", voice_id: "0192ab00-cdef-7000-8000-0123456789ab" }],
      notes: null,
    });
  });
});

describe("query, path and header parameters", () => {
  // def list_jobs(lang: Lang, limit: Annotated[int, Query(ge=1, le=200)] = 50, verbose: bool = False)
  const Query = z.object({
    lang: Lang,
    limit: pyInt({ ge: 1, le: 200 }).default(50),
    verbose: pyBool().default(false),
  });

  it("a missing query parameter has input null", () => {
    expect(detail(Query, {}, "query")).toEqual([
      { type: "missing", loc: ["query", "lang"], msg: "Field required", input: null },
    ]);
  });

  it("every invalid parameter, in declaration order", () => {
    expect(detail(Query, { lang: "Hindu", limit: "0", verbose: "maybe" }, "query")).toEqual([
      {
        type: "enum",
        loc: ["query", "lang"],
        msg: "Input should be 'French', 'English' or 'Urdu'",
        input: "Hindu",
        ctx: { expected: "'French', 'English' or 'Urdu'" },
      },
      {
        type: "greater_than_equal",
        loc: ["query", "limit"],
        msg: "Input should be greater than or equal to 1",
        input: "0",
        ctx: { ge: 1 },
      },
      {
        type: "bool_parsing",
        loc: ["query", "verbose"],
        msg: "Input should be a valid boolean, unable to interpret input",
        input: "maybe",
      },
    ]);
    expect(detail(Query, { lang: "Urdu", limit: "abc" }, "query")).toEqual([
      {
        type: "int_parsing",
        loc: ["query", "limit"],
        msg: "Input should be a valid integer, unable to parse string as an integer",
        input: "abc",
      },
    ]);
    expect(detail(Query, { lang: "Urdu", limit: "201", verbose: "yes" }, "query")).toEqual([
      {
        type: "less_than_equal",
        loc: ["query", "limit"],
        msg: "Input should be less than or equal to 200",
        input: "201",
        ctx: { le: 200 },
      },
    ]);
  });

  it("parses query strings like Pydantic", () => {
    expect(Query.parse({ lang: "French", limit: " 7 ", verbose: "on" })).toEqual({ lang: "French", limit: 7, verbose: true });
  });

  // @app.get("/jobs/{job_id}") def get_job(job_id: UUID)
  const Path = z.object({ job_id: pyUuid() });

  it.each([
    ["abc", "invalid length: expected length 32 for simple format, found 3"],
    ["not-a-uuid", "invalid character: found `n` at 1"],
    ["1234", "invalid length: expected length 32 for simple format, found 4"],
  ])("path uuid %j", (jobId, error) => {
    expect(detail(Path, { job_id: jobId }, "path")).toEqual([
      {
        type: "uuid_parsing",
        loc: ["path", "job_id"],
        msg: `Input should be a valid UUID, ${error}`,
        input: jobId,
        ctx: { error },
      },
    ]);
  });

  it("a missing header has input null", () => {
    const Headers = z.object({ "x-api-version": pyInt({ ge: 1 }) });
    expect(detail(Headers, {}, "header")).toEqual([
      { type: "missing", loc: ["header", "x-api-version"], msg: "Field required", input: null },
    ]);
  });
});

describe("plain zod schemas (fallback translation)", () => {
  // class Inner(BaseModel): a: str
  // class Native(BaseModel):
  //     tags: Annotated[list[str], Field(min_length=1)]
  //     kind: Literal["a"]
  //     n: float
  //     nested: Inner
  //     s: Annotated[str, Field(max_length=3)]
  const Native = z.object({
    tags: z.array(z.string()).min(1),
    kind: z.literal("a"),
    n: z.number(),
    nested: z.object({ a: z.string() }),
    s: z.string().max(3),
  });

  it("lists, literals, numbers, nested objects, string lengths", () => {
    expect(detail(Native, { tags: [], kind: "b", n: "x", nested: {}, s: "abcd" })).toEqual([
      {
        type: "too_short",
        loc: ["body", "tags"],
        msg: "List should have at least 1 item after validation, not 0",
        input: [],
        ctx: { field_type: "List", min_length: 1, actual_length: 0 },
      },
      { type: "literal_error", loc: ["body", "kind"], msg: "Input should be 'a'", input: "b", ctx: { expected: "'a'" } },
      {
        type: "float_parsing",
        loc: ["body", "n"],
        msg: "Input should be a valid number, unable to parse string as a number",
        input: "x",
      },
      { type: "missing", loc: ["body", "nested", "a"], msg: "Field required", input: {} },
      {
        type: "string_too_long",
        loc: ["body", "s"],
        msg: "String should have at most 3 characters",
        input: "abcd",
        ctx: { max_length: 3 },
      },
    ]);
  });

  it("type errors", () => {
    expect(detail(Native, { tags: "x", kind: null, n: null, nested: 3, s: 1 })).toEqual([
      { type: "list_type", loc: ["body", "tags"], msg: "Input should be a valid list", input: "x" },
      { type: "literal_error", loc: ["body", "kind"], msg: "Input should be 'a'", input: null, ctx: { expected: "'a'" } },
      { type: "float_type", loc: ["body", "n"], msg: "Input should be a valid number", input: null },
      { type: "model_attributes_type", loc: ["body", "nested"], msg: NOT_AN_OBJECT, input: 3 },
      { type: "string_type", loc: ["body", "s"], msg: "Input should be a valid string", input: 1 },
    ]);
  });

  it("list items first, then the missing fields with the whole object as input", () => {
    const body = { tags: ["a", 1] };
    expect(detail(Native, body)).toEqual([
      { type: "string_type", loc: ["body", "tags", 1], msg: "Input should be a valid string", input: 1 },
      { type: "missing", loc: ["body", "kind"], msg: "Field required", input: body },
      { type: "missing", loc: ["body", "n"], msg: "Field required", input: body },
      { type: "missing", loc: ["body", "nested"], msg: "Field required", input: body },
      { type: "missing", loc: ["body", "s"], msg: "Field required", input: body },
    ]);
  });

  it("a strict object is extra='forbid'", () => {
    // model_config = ConfigDict(extra="forbid"); a: str
    expect(detail(z.strictObject({ a: z.string() }), { a: "x", zz: 1, yy: [1] })).toEqual([
      { type: "extra_forbidden", loc: ["body", "zz"], msg: "Extra inputs are not permitted", input: 1 },
      { type: "extra_forbidden", loc: ["body", "yy"], msg: "Extra inputs are not permitted", input: [1] },
    ]);
  });

  it("a refinement is a ValueError from a validator (ctx.error encodes as {})", () => {
    const schema = z.object({ code: pyStr().refine((v) => v.startsWith("X"), "must start with X") });
    expect(wire(schema, { code: "abc" })).toBe(
      '{"detail":[{"type":"value_error","loc":["body","code"],"msg":"Value error, must start with X","input":"abc","ctx":{"error":{}}}]}',
    );
  });

  it("native enum, uuid, url and regex checks", () => {
    const schema = z.object({
      e: z.enum(["x", "y"]),
      u: z.uuid(),
      l: z.url(),
      r: z.string().regex(/^a+$/),
      m: z.number().multipleOf(5),
      g: z.int().gt(0).lt(9),
    });
    expect(detail(schema, { e: "z", u: "abc", l: "nope", r: "b", m: 7, g: 9 })).toEqual([
      { type: "enum", loc: ["body", "e"], msg: "Input should be 'x' or 'y'", input: "z", ctx: { expected: "'x' or 'y'" } },
      {
        type: "uuid_parsing",
        loc: ["body", "u"],
        msg: "Input should be a valid UUID, invalid length: expected length 32 for simple format, found 3",
        input: "abc",
        ctx: { error: "invalid length: expected length 32 for simple format, found 3" },
      },
      {
        type: "url_parsing",
        loc: ["body", "l"],
        msg: "Input should be a valid URL, relative URL without a base",
        input: "nope",
        ctx: { error: "relative URL without a base" },
      },
      {
        type: "string_pattern_mismatch",
        loc: ["body", "r"],
        msg: "String should match pattern '^a+$'",
        input: "b",
        ctx: { pattern: "^a+$" },
      },
      { type: "multiple_of", loc: ["body", "m"], msg: "Input should be a multiple of 5", input: 7, ctx: { multiple_of: 5 } },
      { type: "less_than", loc: ["body", "g"], msg: "Input should be less than 9", input: 9, ctx: { lt: 9 } },
    ]);
  });

  it("union members' errors are listed (without Pydantic's member tags)", () => {
    const schema = z.object({ v: z.union([pyStr(), pyInt()]) });
    expect(detail(schema, { v: [] })).toEqual([
      { type: "string_type", loc: ["body", "v"], msg: "Input should be a valid string", input: [] },
      { type: "int_type", loc: ["body", "v"], msg: "Input should be a valid integer", input: [] },
    ]);
  });

  it("items carry ctx only when Pydantic has one", () => {
    const items = detail(Job, { title: 1, target_language: "French", source_url: "https://a.b" });
    expect(items).toEqual([{ type: "string_type", loc: ["body", "title"], msg: "Input should be a valid string", input: 1 }]);
    expect(Object.keys((items as ValidationErrorItem[])[0] ?? {})).toEqual(["type", "loc", "msg", "input"]);
  });
});
