/**
 * Every expectation below is what Pydantic 2.13 (pydantic-core 2.46) answers for the same input,
 * captured with `TypeAdapter(T).validate_python(value)` (lax mode, as FastAPI validates):
 * `{ok: true, value}` for an accepted value, else the error's type, msg and ctx.
 */
import { describe, expect, it } from "vitest";
import type { z } from "@hono/zod-openapi";
import { pyBool, pyEnum, pyHttpUrl, pyInt, pyOptional, pyStr, pyUuid } from "./primitives.ts";
import { toValidationDetail } from "./mapper.ts";

/** The accepted value, or the Pydantic error a primitive produces for `value` alone. */
function outcome(schema: z.ZodType, value: unknown): unknown {
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, value: result.data };
  const [item, ...rest] = toValidationDetail(result.error, value, "query");
  expect(rest).toEqual([]);
  if (item === undefined) throw new Error("no item");
  const { type, msg, ctx } = item;
  return ctx === undefined ? { ok: false, type, msg } : { ok: false, type, msg, ctx };
}

const UUID_CASES: [unknown, unknown][] = [
  ["abc", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid length: expected length 32 for simple format, found 3", "ctx": {"error": "invalid length: expected length 32 for simple format, found 3"}}],
  ["not-a-uuid", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid character: found `n` at 1", "ctx": {"error": "invalid character: found `n` at 1"}}],
  ["1234", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid length: expected length 32 for simple format, found 4", "ctx": {"error": "invalid length: expected length 32 for simple format, found 4"}}],
  ["x", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid character: found `x` at 1", "ctx": {"error": "invalid character: found `x` at 1"}}],
  ["", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid length: expected length 32 for simple format, found 0", "ctx": {"error": "invalid length: expected length 32 for simple format, found 0"}}],
  ["{}", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid group count: expected 5, found 1", "ctx": {"error": "invalid group count: expected 5, found 1"}}],
  ["{", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid character: found `{` at 1", "ctx": {"error": "invalid character: found `{` at 1"}}],
  ["urn:uuid:", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid group count: expected 5, found 1", "ctx": {"error": "invalid group count: expected 5, found 1"}}],
  ["URN:UUID:0192ab00-cdef-7000-8000-0123456789ab", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid character: found `U` at 1", "ctx": {"error": "invalid character: found `U` at 1"}}],
  ["0192ab00-cdef-7000-8000-0123456789ab", {"ok": true, "value": "0192ab00-cdef-7000-8000-0123456789ab"}],
  ["0192AB00CDEF700080000123456789AB", {"ok": true, "value": "0192ab00-cdef-7000-8000-0123456789ab"}],
  ["{0192ab00-cdef-7000-8000-0123456789ab}", {"ok": true, "value": "0192ab00-cdef-7000-8000-0123456789ab"}],
  ["urn:uuid:0192ab00-cdef-7000-8000-0123456789ab", {"ok": true, "value": "0192ab00-cdef-7000-8000-0123456789ab"}],
  ["0192ab00-cdef-7000-8000-0123456789aX", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid character: found `X` at 36", "ctx": {"error": "invalid character: found `X` at 36"}}],
  ["0192ab0-0cdef-7000-8000-0123456789ab", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid group length in group 0: expected 8, found 7", "ctx": {"error": "invalid group length in group 0: expected 8, found 7"}}],
  ["0192ab00-cde-f7000-8000-0123456789ab", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid group length in group 1: expected 4, found 3", "ctx": {"error": "invalid group length in group 1: expected 4, found 3"}}],
  ["0192ab00-cdef-7000-8000-0123456789a", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid group length in group 4: expected 12, found 11", "ctx": {"error": "invalid group length in group 4: expected 12, found 11"}}],
  ["0192ab00-cdef-7000-80000123456789ab", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid group count: expected 5, found 4", "ctx": {"error": "invalid group count: expected 5, found 4"}}],
  ["0192ab00cdef7000-8000-0123456789ab", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid group count: expected 5, found 3", "ctx": {"error": "invalid group count: expected 5, found 3"}}],
  ["{0192ab00-cdef-7000-8000-0123456789aX}", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid character: found `X` at 36", "ctx": {"error": "invalid character: found `X` at 36"}}],
  ["{0192ab00-cdef-7000-8000-0123456789abc}", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid group length in group 4: expected 12, found 15", "ctx": {"error": "invalid group length in group 4: expected 12, found 15"}}],
  ["urn:uuid:0192ab00-cdef-7000-8000-0123456789a", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid group length in group 4: expected 12, found 20", "ctx": {"error": "invalid group length in group 4: expected 12, found 20"}}],
  ["{0192ab00cdef70008000012345678900abcd}", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid length: expected length 32 for simple format, found 36", "ctx": {"error": "invalid length: expected length 32 for simple format, found 36"}}],
  ["0192ab00cdef700080000123456789a", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid length: expected length 32 for simple format, found 31", "ctx": {"error": "invalid length: expected length 32 for simple format, found 31"}}],
  ["aé", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid character: found `é` at 2", "ctx": {"error": "invalid character: found `é` at 2"}}],
  ["a😀", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid character: found `😀` at 2", "ctx": {"error": "invalid character: found `😀` at 2"}}],
  ["----", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid group length in group 0: expected 8, found 0", "ctx": {"error": "invalid group length in group 0: expected 8, found 0"}}],
  ["0192ab00-cdef-7000-8000-0123456789ab ", {"ok": false, "type": "uuid_parsing", "msg": "Input should be a valid UUID, invalid character: found ` ` at 37", "ctx": {"error": "invalid character: found ` ` at 37"}}],
  [1, {"ok": false, "type": "uuid_type", "msg": "UUID input should be a string, bytes or UUID object"}],
  [null, {"ok": false, "type": "uuid_type", "msg": "UUID input should be a string, bytes or UUID object"}],
  [true, {"ok": false, "type": "uuid_type", "msg": "UUID input should be a string, bytes or UUID object"}],
];
const BOOL_CASES: [unknown, unknown][] = [
  ["true", {"ok": true, "value": true}],
  ["False", {"ok": true, "value": false}],
  ["YES", {"ok": true, "value": true}],
  ["n", {"ok": true, "value": false}],
  ["On", {"ok": true, "value": true}],
  ["0", {"ok": true, "value": false}],
  ["1", {"ok": true, "value": true}],
  ["off", {"ok": true, "value": false}],
  ["T", {"ok": true, "value": true}],
  ["y", {"ok": true, "value": true}],
  ["maybe", {"ok": false, "type": "bool_parsing", "msg": "Input should be a valid boolean, unable to interpret input"}],
  ["", {"ok": false, "type": "bool_parsing", "msg": "Input should be a valid boolean, unable to interpret input"}],
  [" true", {"ok": false, "type": "bool_parsing", "msg": "Input should be a valid boolean, unable to interpret input"}],
  ["2", {"ok": false, "type": "bool_parsing", "msg": "Input should be a valid boolean, unable to interpret input"}],
  ["1.0", {"ok": false, "type": "bool_parsing", "msg": "Input should be a valid boolean, unable to interpret input"}],
  ["00", {"ok": false, "type": "bool_parsing", "msg": "Input should be a valid boolean, unable to interpret input"}],
  [1, {"ok": true, "value": true}],
  [0, {"ok": true, "value": false}],
  [2, {"ok": false, "type": "bool_parsing", "msg": "Input should be a valid boolean, unable to interpret input"}],
  [-1, {"ok": false, "type": "bool_parsing", "msg": "Input should be a valid boolean, unable to interpret input"}],
  [0.5, {"ok": false, "type": "bool_type", "msg": "Input should be a valid boolean"}],
  [null, {"ok": false, "type": "bool_type", "msg": "Input should be a valid boolean"}],
  [[], {"ok": false, "type": "bool_type", "msg": "Input should be a valid boolean"}],
  [{}, {"ok": false, "type": "bool_type", "msg": "Input should be a valid boolean"}],
];
const INT_1_200_CASES: [unknown, unknown][] = [
  ["1", {"ok": true, "value": 1}],
  ["200", {"ok": true, "value": 200}],
  [" 12 ", {"ok": true, "value": 12}],
  ["+7", {"ok": true, "value": 7}],
  ["007", {"ok": true, "value": 7}],
  ["1_0", {"ok": true, "value": 10}],
  ["10.0", {"ok": true, "value": 10}],
  ["1.5", {"ok": false, "type": "int_parsing", "msg": "Input should be a valid integer, unable to parse string as an integer"}],
  ["1e2", {"ok": false, "type": "int_parsing", "msg": "Input should be a valid integer, unable to parse string as an integer"}],
  ["abc", {"ok": false, "type": "int_parsing", "msg": "Input should be a valid integer, unable to parse string as an integer"}],
  ["", {"ok": false, "type": "int_parsing", "msg": "Input should be a valid integer, unable to parse string as an integer"}],
  ["0", {"ok": false, "type": "greater_than_equal", "msg": "Input should be greater than or equal to 1", "ctx": {"ge": 1}}],
  ["201", {"ok": false, "type": "less_than_equal", "msg": "Input should be less than or equal to 200", "ctx": {"le": 200}}],
  ["-5", {"ok": false, "type": "greater_than_equal", "msg": "Input should be greater than or equal to 1", "ctx": {"ge": 1}}],
  ["0-9", {"ok": false, "type": "greater_than_equal", "msg": "Input should be greater than or equal to 1", "ctx": {"ge": 1}}],
  [" 42　", {"ok": true, "value": 42}],
  ["1__0", {"ok": false, "type": "int_parsing", "msg": "Input should be a valid integer, unable to parse string as an integer"}],
  ["0x10", {"ok": false, "type": "int_parsing", "msg": "Input should be a valid integer, unable to parse string as an integer"}],
  ["１２", {"ok": false, "type": "int_parsing", "msg": "Input should be a valid integer, unable to parse string as an integer"}],
  [12, {"ok": true, "value": 12}],
  [1.5, {"ok": false, "type": "int_from_float", "msg": "Input should be a valid integer, got a number with a fractional part"}],
  [0, {"ok": false, "type": "greater_than_equal", "msg": "Input should be greater than or equal to 1", "ctx": {"ge": 1}}],
  [201, {"ok": false, "type": "less_than_equal", "msg": "Input should be less than or equal to 200", "ctx": {"le": 200}}],
  [true, {"ok": true, "value": 1}],
  [false, {"ok": false, "type": "greater_than_equal", "msg": "Input should be greater than or equal to 1", "ctx": {"ge": 1}}],
  [null, {"ok": false, "type": "int_type", "msg": "Input should be a valid integer"}],
  [[], {"ok": false, "type": "int_type", "msg": "Input should be a valid integer"}],
  [{}, {"ok": false, "type": "int_type", "msg": "Input should be a valid integer"}],
];
const URL_CASES: [unknown, unknown][] = [
  ["https://example.com", {"ok": true, "value": "https://example.com/"}],
  ["http://EXAMPLE.com:80/a b?q#f", {"ok": true, "value": "http://example.com/a%20b?q#f"}],
  ["http://例子.测试/路径", {"ok": true, "value": "http://xn--fsqu00a.xn--0zwm56d/%E8%B7%AF%E5%BE%84"}],
  ["", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, input is empty", "ctx": {"error": "input is empty"}}],
  ["  ", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, relative URL without a base", "ctx": {"error": "relative URL without a base"}}],
  ["foo", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, relative URL without a base", "ctx": {"error": "relative URL without a base"}}],
  ["/path", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, relative URL without a base", "ctx": {"error": "relative URL without a base"}}],
  ["//x.com", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, relative URL without a base", "ctx": {"error": "relative URL without a base"}}],
  ["http://", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, empty host", "ctx": {"error": "empty host"}}],
  ["http://a b", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid international domain name", "ctx": {"error": "invalid international domain name"}}],
  ["http://[::1", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid IPv6 address", "ctx": {"error": "invalid IPv6 address"}}],
  ["http://1.2.3.256", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid IPv4 address", "ctx": {"error": "invalid IPv4 address"}}],
  ["http://a:99999", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid port number", "ctx": {"error": "invalid port number"}}],
  ["http://xn--a.com", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid international domain name", "ctx": {"error": "invalid international domain name"}}],
  ["ftp://x", {"ok": false, "type": "url_scheme", "msg": "URL scheme should be 'http' or 'https'", "ctx": {"expected_schemes": "'http' or 'https'"}}],
  ["mailto:x@y", {"ok": false, "type": "url_scheme", "msg": "URL scheme should be 'http' or 'https'", "ctx": {"expected_schemes": "'http' or 'https'"}}],
  ["http://٣.com", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid international domain name", "ctx": {"error": "invalid international domain name"}}],
  ["http://:80", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, empty host", "ctx": {"error": "empty host"}}],
  ["https://user@", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, empty host", "ctx": {"error": "empty host"}}],
  ["http://" + "a".repeat(2077), {"ok": false, "type": "url_too_long", "msg": "URL should have at most 2083 characters", "ctx": {"max_length": 2083}}],
  [1, {"ok": false, "type": "url_type", "msg": "URL input should be a string or URL"}],
  [null, {"ok": false, "type": "url_type", "msg": "URL input should be a string or URL"}],
];
const STR_1_5_CASES: [unknown, unknown][] = [
  ["", {"ok": false, "type": "string_too_short", "msg": "String should have at least 1 character", "ctx": {"min_length": 1}}],
  ["a", {"ok": true, "value": "a"}],
  ["abcde", {"ok": true, "value": "abcde"}],
  ["abcdef", {"ok": false, "type": "string_too_long", "msg": "String should have at most 5 characters", "ctx": {"max_length": 5}}],
  ["😀😀😀😀😀", {"ok": true, "value": "😀😀😀😀😀"}],
  ["😀😀😀😀😀😀", {"ok": false, "type": "string_too_long", "msg": "String should have at most 5 characters", "ctx": {"max_length": 5}}],
  [1, {"ok": false, "type": "string_type", "msg": "Input should be a valid string"}],
  [1.5, {"ok": false, "type": "string_type", "msg": "Input should be a valid string"}],
  [true, {"ok": false, "type": "string_type", "msg": "Input should be a valid string"}],
  [null, {"ok": false, "type": "string_type", "msg": "Input should be a valid string"}],
  [[], {"ok": false, "type": "string_type", "msg": "Input should be a valid string"}],
  [{}, {"ok": false, "type": "string_type", "msg": "Input should be a valid string"}],
];
const ENUM_CASES: [unknown, unknown][] = [
  ["French", {"ok": true, "value": "French"}],
  ["English", {"ok": true, "value": "English"}],
  ["Urdu", {"ok": true, "value": "Urdu"}],
  ["Klingon", {"ok": false, "type": "enum", "msg": "Input should be 'French', 'English' or 'Urdu'", "ctx": {"expected": "'French', 'English' or 'Urdu'"}}],
  ["Hindu", {"ok": false, "type": "enum", "msg": "Input should be 'French', 'English' or 'Urdu'", "ctx": {"expected": "'French', 'English' or 'Urdu'"}}],
  ["french", {"ok": false, "type": "enum", "msg": "Input should be 'French', 'English' or 'Urdu'", "ctx": {"expected": "'French', 'English' or 'Urdu'"}}],
  ["", {"ok": false, "type": "enum", "msg": "Input should be 'French', 'English' or 'Urdu'", "ctx": {"expected": "'French', 'English' or 'Urdu'"}}],
  [1, {"ok": false, "type": "enum", "msg": "Input should be 'French', 'English' or 'Urdu'", "ctx": {"expected": "'French', 'English' or 'Urdu'"}}],
  [null, {"ok": false, "type": "enum", "msg": "Input should be 'French', 'English' or 'Urdu'", "ctx": {"expected": "'French', 'English' or 'Urdu'"}}],
  [true, {"ok": false, "type": "enum", "msg": "Input should be 'French', 'English' or 'Urdu'", "ctx": {"expected": "'French', 'English' or 'Urdu'"}}],
  [[], {"ok": false, "type": "enum", "msg": "Input should be 'French', 'English' or 'Urdu'", "ctx": {"expected": "'French', 'English' or 'Urdu'"}}],
];

describe("pyUuid (uuid.UUID)", () => {
  it.each(UUID_CASES)("%j", (input, expected) => {
    expect(outcome(pyUuid(), input)).toEqual(expected);
  });
});

describe("pyUuid({ legacyMessages: true })", () => {
  it("uses the uuid crate's pre-2026 invalid-character text, nothing else changes", () => {
    const legacy = pyUuid({ legacyMessages: true });
    const error = "invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `x` at 1";
    expect(outcome(legacy, "xyz")).toEqual({
      ok: false,
      type: "uuid_parsing",
      msg: `Input should be a valid UUID, ${error}`,
      ctx: { error },
    });
    expect(outcome(legacy, "0192ab00-cde-f7000-8000-0123456789ab")).toEqual(
      outcome(pyUuid(), "0192ab00-cde-f7000-8000-0123456789ab"),
    );
  });
});

describe("pyBool (bool, lax)", () => {
  it.each(BOOL_CASES)("%j", (input, expected) => {
    expect(outcome(pyBool(), input)).toEqual(expected);
  });
});

describe("pyInt({ ge: 1, le: 200 }) (Annotated[int, Field(ge=1, le=200)])", () => {
  it.each(INT_1_200_CASES)("%j", (input, expected) => {
    expect(outcome(pyInt({ ge: 1, le: 200 }), input)).toEqual(expected);
  });

  it("reports gt / lt with their own types", () => {
    expect(outcome(pyInt({ gt: 0 }), "0")).toEqual({
      ok: false,
      type: "greater_than",
      msg: "Input should be greater than 0",
      ctx: { gt: 0 },
    });
    expect(outcome(pyInt({ lt: 10 }), 10)).toEqual({
      ok: false,
      type: "less_than",
      msg: "Input should be less than 10",
      ctx: { lt: 10 },
    });
  });

  it("refuses integers a JS number cannot hold exactly (Pydantic would accept them)", () => {
    expect(outcome(pyInt(), "99999999999999999999")).toEqual({
      ok: false,
      type: "int_parsing_size",
      msg: "Unable to parse input string as an integer, exceeded maximum size",
    });
    expect(outcome(pyInt({ le: 200 }), "99999999999999999999")).toEqual({
      ok: false,
      type: "less_than_equal",
      msg: "Input should be less than or equal to 200",
      ctx: { le: 200 },
    });
    expect(outcome(pyInt(), "1" + "0".repeat(4300))).toEqual({
      ok: false,
      type: "int_parsing_size",
      msg: "Unable to parse input string as an integer, exceeded maximum size",
    });
  });

  it("returns 0, not -0", () => {
    expect(outcome(pyInt(), "-0")).toEqual({ ok: true, value: 0 });
    expect(Object.is((pyInt().parse("-0") as number), 0)).toBe(true);
  });
});

describe("pyHttpUrl (HttpUrl)", () => {
  it.each(URL_CASES)("%j", (input, expected) => {
    expect(outcome(pyHttpUrl(), input)).toEqual(expected);
  });
});

describe("pyStr({ min: 1, max: 5 }) (Annotated[str, Field(min_length=1, max_length=5)])", () => {
  it.each(STR_1_5_CASES)("%j", (input, expected) => {
    expect(outcome(pyStr({ min: 1, max: 5 }), input)).toEqual(expected);
  });

  it("pluralises like Pydantic", () => {
    expect(outcome(pyStr({ min: 3 }), "ab")).toEqual({
      ok: false,
      type: "string_too_short",
      msg: "String should have at least 3 characters",
      ctx: { min_length: 3 },
    });
    expect(outcome(pyStr({ max: 1 }), "ab")).toEqual({
      ok: false,
      type: "string_too_long",
      msg: "String should have at most 1 character",
      ctx: { max_length: 1 },
    });
  });
});

describe("pyEnum (str Enum / Literal)", () => {
  it.each(ENUM_CASES)("%j", (input, expected) => {
    expect(outcome(pyEnum(["French", "English", "Urdu"]), input)).toEqual(expected);
  });

  it("joins one and two values like pydantic-core", () => {
    expect(outcome(pyEnum(["a"]), "b")).toEqual({
      ok: false,
      type: "enum",
      msg: "Input should be 'a'",
      ctx: { expected: "'a'" },
    });
    expect(outcome(pyEnum(["a", "b"], { kind: "literal" }), "c")).toEqual({
      ok: false,
      type: "literal_error",
      msg: "Input should be 'a' or 'b'",
      ctx: { expected: "'a' or 'b'" },
    });
  });

  it("quotes with Python's repr", () => {
    expect(outcome(pyEnum(["it's", "a\\b"]), "x")).toEqual({
      ok: false,
      type: "enum",
      msg: `Input should be "it's" or 'a\\\\b'`,
      ctx: { expected: `"it's" or 'a\\\\b'` },
    });
  });
});

describe("strings Pydantic cannot read", () => {
  it("answers string_unicode for a lone surrogate, whatever the primitive", () => {
    const error = {
      ok: false,
      type: "string_unicode",
      msg: "Input should be a valid string, unable to parse raw data as a unicode string",
    };
    for (const schema of [pyStr(), pyEnum(["a"]), pyBool(), pyInt(), pyUuid(), pyHttpUrl()]) {
      expect(outcome(schema, "a\ud800")).toEqual(error);
    }
  });
});

describe("optional and nullable fields", () => {
  it("pyOptional accepts absent and null like `X | None = None`", () => {
    expect(pyOptional(pyStr()).parse(undefined)).toBeUndefined();
    expect(pyOptional(pyStr()).parse(null)).toBeNull();
    expect(outcome(pyOptional(pyStr()), 1)).toEqual({ ok: false, type: "string_type", msg: "Input should be a valid string" });
  });

  it("a missing required value is `missing`", () => {
    expect(outcome(pyStr(), undefined)).toEqual({ ok: false, type: "missing", msg: "Field required" });
  });
});
