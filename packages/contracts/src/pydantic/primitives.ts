/**
 * Zod schemas whose failures are Pydantic v2 errors (lax "python" mode, as FastAPI validates the
 * result of `json.loads` or the raw query/path/header strings).
 *
 * Each primitive is `z.preprocess(check, render)`: `check` reproduces Pydantic's coercion and
 * produces either the value or the exact Pydantic error (attached to a zod `custom` issue as
 * `params.pydantic`, which {@link toValidationDetail} copies verbatim); `render` is a plain zod
 * schema that never rejects an accepted value and only exists so the OpenAPI generator documents
 * the field the way FastAPI does (enum values, `boolean`, `integer` + bounds, `uuid` / `uri`
 * formats, `minLength` / `maxLength`).
 */
import { z } from "@hono/zod-openapi";
import type { PydanticError } from "./types.ts";
import { joinExpected } from "./repr.ts";
import { parseUuid } from "./uuid.ts";
import type { UuidOptions } from "./uuid.ts";
import { HTTP_URL_MAX_LENGTH, validateHttpUrl } from "./url.ts";

type CheckResult<T> = { ok: true; value: T } | { ok: false; error: PydanticError };
type Check<T> = (input: unknown) => CheckResult<T>;

/** Marker key under `issue.params` carrying the Pydantic error. */
export const PYDANTIC_PARAM = "pydantic";

const MISSING: PydanticError = { type: "missing", msg: "Field required" };

function fail(type: string, msg: string, ctx?: Record<string, unknown>): { ok: false; error: PydanticError } {
  return { ok: false, error: ctx === undefined ? { type, msg } : { type, msg, ctx } };
}

// A string with a lone surrogate (only reachable through a "\ud800" JSON escape) cannot become a
// Rust string: every string-accepting Pydantic validator answers string_unicode.
const LONE_SURROGATE = /\p{Surrogate}/u;
const STRING_UNICODE: PydanticError = {
  type: "string_unicode",
  msg: "Input should be a valid string, unable to parse raw data as a unicode string",
};

function pydanticType<R extends z.ZodType>(check: Check<z.output<R>>, render: R) {
  return z.preprocess((input: unknown, ctx) => {
    const result =
      input === undefined
        ? ({ ok: false, error: MISSING } as const)
        : typeof input === "string" && LONE_SURROGATE.test(input)
          ? ({ ok: false, error: STRING_UNICODE } as const)
          : check(input);
    if (result.ok) return result.value;
    ctx.addIssue({
      code: "custom",
      message: result.error.msg,
      input,
      params: { [PYDANTIC_PARAM]: result.error },
    });
    return input;
  }, render);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// ---------------------------------------------------------------------------------------------
// str

export interface PyStrOptions {
  /** `Field(min_length=…)`, counted in code points like Python. */
  min?: number;
  /** `Field(max_length=…)`, counted in code points like Python. */
  max?: number;
}

/** `str` with optional `min_length` / `max_length`. */
export function pyStr(options: PyStrOptions = {}) {
  const { min, max } = options;
  const check: Check<string> = (input) => {
    if (typeof input !== "string") return fail("string_type", "Input should be a valid string");
    if (min !== undefined || max !== undefined) {
      let length = 0;
      for (const _ of input) length++;
      if (min !== undefined && length < min) {
        return fail("string_too_short", `String should have at least ${plural(min, "character")}`, {
          min_length: min,
        });
      }
      if (max !== undefined && length > max) {
        return fail("string_too_long", `String should have at most ${plural(max, "character")}`, {
          max_length: max,
        });
      }
    }
    return { ok: true, value: input };
  };
  const meta: { minLength?: number; maxLength?: number } = {};
  if (min !== undefined) meta.minLength = min;
  if (max !== undefined) meta.maxLength = max;
  return pydanticType(check, Object.keys(meta).length > 0 ? z.string().openapi(meta) : z.string());
}

// ---------------------------------------------------------------------------------------------
// Enum / Literal

export interface PyEnumOptions {
  /**
   * `"enum"` (default) for a Python `Enum` class (error type `enum`); `"literal"` for
   * `typing.Literal[...]` (error type `literal_error`). Message and ctx are identical.
   */
  kind?: "enum" | "literal";
}

/** A string `Enum` (or `Literal`): "Input should be 'French', 'English' or 'Urdu'". */
export function pyEnum<const T extends readonly [string, ...string[]]>(values: T, options: PyEnumOptions = {}) {
  const expected = joinExpected(values);
  const type = options.kind === "literal" ? "literal_error" : "enum";
  const allowed = new Set<unknown>(values);
  const check: Check<T[number]> = (input) =>
    allowed.has(input)
      ? { ok: true, value: input as T[number] }
      : fail(type, `Input should be ${expected}`, { expected });
  return pydanticType(check, z.enum(values));
}

// ---------------------------------------------------------------------------------------------
// bool

const FALSE_STRINGS = new Set(["0", "off", "f", "false", "n", "no"]);
const TRUE_STRINGS = new Set(["1", "on", "t", "true", "y", "yes"]);
const I64_LIMIT = 2 ** 63;

/** Lax `bool`: true/false, 0/1, and "0","off","f","false","n","no" / "1","on","t","true","y","yes" (any case). */
export function pyBool() {
  const check: Check<boolean> = (input) => {
    if (typeof input === "boolean") return { ok: true, value: input };
    if (typeof input === "string") {
      // No trimming, ASCII case folding (no non-ASCII letter lowercases into these words).
      const lower = input.toLowerCase();
      if (FALSE_STRINGS.has(lower)) return { ok: true, value: false };
      if (TRUE_STRINGS.has(lower)) return { ok: true, value: true };
      return fail("bool_parsing", "Input should be a valid boolean, unable to interpret input");
    }
    if (typeof input === "number" && Number.isInteger(input) && Math.abs(input) < I64_LIMIT) {
      if (input === 0) return { ok: true, value: false };
      if (input === 1) return { ok: true, value: true };
      return fail("bool_parsing", "Input should be a valid boolean, unable to interpret input");
    }
    return fail("bool_type", "Input should be a valid boolean");
  };
  return pydanticType(check, z.boolean());
}

// ---------------------------------------------------------------------------------------------
// int

export interface PyIntOptions {
  ge?: number;
  gt?: number;
  le?: number;
  lt?: number;
}

// Rust's `str::trim` (Unicode White_Space), which differs from JS `trim` on U+0085 and U+FEFF.
const RUST_WS = "[\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";
const RUST_TRIM = new RegExp(`^${RUST_WS}+|${RUST_WS}+$`, "g");
/** jiter's `NumberInt::try_from`: a JSON integer literal, nothing around it. */
const JSON_INT = /^-?(?:0|[1-9][0-9]*)$/;
const MAX_INT_DIGITS = 4300;

/** pydantic-core `strip_leading_zeros`. */
function stripLeadingZeros(s: string): string | undefined {
  const first = s[0];
  if (first === undefined) return undefined;
  if (first !== "0") return (first >= "1" && first <= "9") || first === "-" ? s : undefined;
  for (let i = 1; i < s.length; i++) {
    const c = s[i] ?? "";
    if (c === "0" || c === "_") continue;
    if ((c >= "1" && c <= "9") || c === "-") return s.slice(i);
    if (c === ".") return s.slice(i - 1);
    return undefined;
  }
  return s.slice(-1);
}

/** pydantic-core `strip_underscores`. */
function stripUnderscores(s: string): string | undefined {
  if (s.startsWith("_") || s.endsWith("_") || !s.includes("_") || s.includes("__")) return undefined;
  return s.replaceAll("_", "");
}

/** pydantic-core `clean_int_str`. */
function cleanIntStr(raw: string): string | undefined {
  let s = raw.replace(RUST_TRIM, "");
  if (s.startsWith("+")) {
    if (s.startsWith("+-")) return undefined;
    s = s.slice(1);
  }
  let negative = false;
  if (s.startsWith("-")) {
    if (s.startsWith("--") || s.startsWith("-+")) return undefined;
    negative = true;
    s = s.slice(1);
  }
  const stripped = stripLeadingZeros(s);
  if (stripped === undefined) return undefined;
  s = stripped;
  const dot = s.indexOf(".");
  if (dot >= 0) {
    const decimals = s.slice(dot + 1);
    if (decimals !== "" && /^0+$/.test(decimals)) s = s.slice(0, dot);
  }
  const sign = negative ? "-" : "";
  const noUnderscores = stripUnderscores(s);
  if (noUnderscores !== undefined) return sign + noUnderscores;
  if (raw.length === s.length) return undefined;
  return sign + s;
}

/** pydantic-core `str_as_int`. */
function strAsInt(raw: string): CheckResult<number> {
  if (JSON_INT.test(raw)) {
    if (raw.replace("-", "").length > MAX_INT_DIGITS) {
      return fail("int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size");
    }
    return { ok: true, value: Number(raw) };
  }
  const cleaned = cleanIntStr(raw);
  if (cleaned === undefined || !JSON_INT.test(cleaned) || cleaned.replace("-", "").length > MAX_INT_DIGITS) {
    return fail("int_parsing", "Input should be a valid integer, unable to parse string as an integer");
  }
  return { ok: true, value: Number(cleaned) };
}

function intBounds(value: number, o: PyIntOptions): CheckResult<number> {
  if (o.le !== undefined && !(value <= o.le)) {
    return fail("less_than_equal", `Input should be less than or equal to ${o.le}`, { le: o.le });
  }
  if (o.lt !== undefined && !(value < o.lt)) {
    return fail("less_than", `Input should be less than ${o.lt}`, { lt: o.lt });
  }
  if (o.ge !== undefined && !(value >= o.ge)) {
    return fail("greater_than_equal", `Input should be greater than or equal to ${o.ge}`, { ge: o.ge });
  }
  if (o.gt !== undefined && !(value > o.gt)) {
    return fail("greater_than", `Input should be greater than ${o.gt}`, { gt: o.gt });
  }
  if (!Number.isSafeInteger(value)) {
    // Pydantic would accept an arbitrarily large int; a JS number cannot hold it exactly.
    return fail("int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size");
  }
  return { ok: true, value: value === 0 ? 0 : value };
}

/**
 * Lax `int` with optional `ge` / `gt` / `le` / `lt`: strings like Python/pydantic-core ("12",
 * " 12 ", "+1", "1_000", "10.0"), integral numbers, booleans.
 */
export function pyInt(options: PyIntOptions = {}) {
  const check: Check<number> = (input) => {
    if (typeof input === "string") {
      const parsed = strAsInt(input);
      return parsed.ok ? intBounds(parsed.value, options) : parsed;
    }
    if (typeof input === "boolean") return intBounds(input ? 1 : 0, options);
    if (typeof input === "number") {
      if (!Number.isFinite(input)) return fail("finite_number", "Input should be a finite number");
      if (!Number.isInteger(input)) {
        return fail("int_from_float", "Input should be a valid integer, got a number with a fractional part");
      }
      return intBounds(input, options);
    }
    return fail("int_type", "Input should be a valid integer");
  };
  let render = z.int();
  if (options.ge !== undefined) render = render.gte(options.ge);
  if (options.gt !== undefined) render = render.gt(options.gt);
  if (options.le !== undefined) render = render.lte(options.le);
  if (options.lt !== undefined) render = render.lt(options.lt);
  return pydanticType(check, render);
}

// ---------------------------------------------------------------------------------------------
// UUID

/** `uuid.UUID`; the value is the lowercase hyphenated form. */
export function pyUuid(options: UuidOptions = {}) {
  const check: Check<string> = (input) => {
    if (typeof input !== "string") return fail("uuid_type", "UUID input should be a string, bytes or UUID object");
    const parsed = parseUuid(input, options);
    if (parsed.ok) return parsed;
    return fail("uuid_parsing", `Input should be a valid UUID, ${parsed.error}`, { error: parsed.error });
  };
  return pydanticType(check, z.string().openapi({ format: "uuid" }));
}

// ---------------------------------------------------------------------------------------------
// HttpUrl

/** `pydantic.HttpUrl` (http/https, at most 2083 bytes); the value is the normalised URL. */
export function pyHttpUrl() {
  const check: Check<string> = (input) => {
    if (typeof input !== "string") return fail("url_type", "URL input should be a string or URL");
    const result = validateHttpUrl(input);
    return result.ok ? result : { ok: false, error: result.error };
  };
  return pydanticType(
    check,
    z.string().openapi({ format: "uri", minLength: 1, maxLength: HTTP_URL_MAX_LENGTH }),
  );
}

// ---------------------------------------------------------------------------------------------
// Optional

/** `X | None = None`: the field may be absent or null (zod `.nullish()`). */
export function pyOptional<S extends z.ZodType>(schema: S) {
  return schema.nullish();
}
