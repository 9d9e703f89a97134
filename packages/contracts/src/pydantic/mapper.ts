/**
 * zod issues → FastAPI / Pydantic v2 422 items.
 *
 * Issues raised by the `py*` primitives carry their Pydantic error verbatim. Issues raised by
 * plain zod schemas (z.object, z.array, z.string, …) are translated to the nearest Pydantic
 * error. zod 4 does not report the rejected input by default, so `input` is recovered by walking
 * the validated data along the issue path.
 */
import type { z } from "@hono/zod-openapi";
import type { PydanticError, ValidationErrorItem, ValidationLocation } from "./types.ts";
import { PYDANTIC_PARAM } from "./primitives.ts";
import { joinExpected } from "./repr.ts";
import { parseUuid } from "./uuid.ts";
import { urlParseError } from "./url.ts";

type Issue = z.core.$ZodIssue;
type Key = PropertyKey;

interface Lookup {
  /** The path resolves to an own property (or array element) that is not `undefined`. */
  present: boolean;
  value: unknown;
  /** The value holding the last path element (the containing object for a missing field). */
  parent: unknown;
}

function lookup(data: unknown, path: readonly Key[]): Lookup {
  let value: unknown = data;
  let parent: unknown = undefined;
  for (const key of path) {
    parent = value;
    if (value !== null && typeof value === "object" && typeof key !== "symbol" && Object.hasOwn(value, key)) {
      value = (value as Record<string | number, unknown>)[key];
    } else {
      return { present: false, value: undefined, parent };
    }
  }
  return { present: value !== undefined, value, parent };
}

function isPydanticError(value: unknown): value is PydanticError {
  if (value === null || typeof value !== "object") return false;
  const v = value as Record<string, unknown>;
  return typeof v.type === "string" && typeof v.msg === "string";
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function valueError(message: string): PydanticError {
  // A ValueError in ctx goes through FastAPI's jsonable_encoder as `{}`.
  return { type: "value_error", msg: `Value error, ${message}`, ctx: { error: {} } };
}

function lengthOf(value: unknown): number {
  if (typeof value === "string") return [...value].length;
  if (Array.isArray(value)) return value.length;
  if (value instanceof Set || value instanceof Map) return value.size;
  return 0;
}

function numeric(bound: number | bigint): number {
  return typeof bound === "bigint" ? Number(bound) : bound;
}

/** The Pydantic error closest to a plain zod issue. */
function translate(issue: Issue, value: unknown): PydanticError {
  switch (issue.code) {
    case "invalid_type":
      // A string where Pydantic would have tried to parse one (lax mode).
      if (typeof value === "string") {
        if (issue.expected === "number") {
          return { type: "float_parsing", msg: "Input should be a valid number, unable to parse string as a number" };
        }
        if (issue.expected === "int") {
          return { type: "int_parsing", msg: "Input should be a valid integer, unable to parse string as an integer" };
        }
        if (issue.expected === "boolean") {
          return { type: "bool_parsing", msg: "Input should be a valid boolean, unable to interpret input" };
        }
      }
      switch (issue.expected) {
        case "string":
          return { type: "string_type", msg: "Input should be a valid string" };
        case "boolean":
          return { type: "bool_type", msg: "Input should be a valid boolean" };
        case "int":
          return { type: "int_type", msg: "Input should be a valid integer" };
        case "number":
        case "bigint":
          return { type: "float_type", msg: "Input should be a valid number" };
        case "object":
          // FastAPI validates models with from_attributes=True.
          return {
            type: "model_attributes_type",
            msg: "Input should be a valid dictionary or object to extract fields from",
          };
        case "record":
        case "map":
          return { type: "dict_type", msg: "Input should be a valid dictionary" };
        case "array":
          return { type: "list_type", msg: "Input should be a valid list" };
        case "tuple":
          return { type: "tuple_type", msg: "Input should be a valid tuple" };
        case "set":
          return { type: "set_type", msg: "Input should be a valid set" };
        case "null":
          return { type: "none_required", msg: "Input should be None" };
        default:
          return valueError(issue.message);
      }
    case "too_small": {
      const min = numeric(issue.minimum);
      if (issue.origin === "string") {
        return {
          type: "string_too_short",
          msg: `String should have at least ${plural(min, "character")}`,
          ctx: { min_length: min },
        };
      }
      if (issue.origin === "array" || issue.origin === "set") {
        const fieldType = issue.origin === "array" ? "List" : "Set";
        const actual = lengthOf(value);
        return {
          type: "too_short",
          msg: `${fieldType} should have at least ${plural(min, "item")} after validation, not ${actual}`,
          ctx: { field_type: fieldType, min_length: min, actual_length: actual },
        };
      }
      return issue.inclusive === false
        ? { type: "greater_than", msg: `Input should be greater than ${min}`, ctx: { gt: min } }
        : { type: "greater_than_equal", msg: `Input should be greater than or equal to ${min}`, ctx: { ge: min } };
    }
    case "too_big": {
      const max = numeric(issue.maximum);
      if (issue.origin === "string") {
        return {
          type: "string_too_long",
          msg: `String should have at most ${plural(max, "character")}`,
          ctx: { max_length: max },
        };
      }
      if (issue.origin === "array" || issue.origin === "set") {
        const fieldType = issue.origin === "array" ? "List" : "Set";
        const actual = lengthOf(value);
        return {
          type: "too_long",
          msg: `${fieldType} should have at most ${plural(max, "item")} after validation, not ${actual}`,
          ctx: { field_type: fieldType, max_length: max, actual_length: actual },
        };
      }
      return issue.inclusive === false
        ? { type: "less_than", msg: `Input should be less than ${max}`, ctx: { lt: max } }
        : { type: "less_than_equal", msg: `Input should be less than or equal to ${max}`, ctx: { le: max } };
    }
    case "invalid_value": {
      const values = issue.values.filter(
        (v): v is string | number | boolean | null =>
          v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean",
      );
      const expected = joinExpected(values);
      // z.literal(x) ~ Literal[x]; z.enum([...]) ~ an Enum class.
      return {
        type: values.length === 1 ? "literal_error" : "enum",
        msg: `Input should be ${expected}`,
        ctx: { expected },
      };
    }
    case "invalid_format":
      if ((issue.format === "uuid" || issue.format === "guid") && typeof value === "string") {
        const parsed = parseUuid(value);
        if (!parsed.ok) {
          return { type: "uuid_parsing", msg: `Input should be a valid UUID, ${parsed.error}`, ctx: { error: parsed.error } };
        }
      }
      if (issue.format === "url" && typeof value === "string") {
        const error = value === "" ? "input is empty" : urlParseError(value);
        return { type: "url_parsing", msg: `Input should be a valid URL, ${error}`, ctx: { error } };
      }
      if (issue.format === "regex" && issue.pattern !== undefined) {
        // zod reports `String(regex)`, "/^a+$/u"; Pydantic the pattern source.
        const pattern = /^\/(.*)\/[a-z]*$/s.exec(issue.pattern)?.[1] ?? issue.pattern;
        return {
          type: "string_pattern_mismatch",
          msg: `String should match pattern '${pattern}'`,
          ctx: { pattern },
        };
      }
      return valueError(issue.message);
    case "not_multiple_of": {
      const divisor = numeric(issue.divisor);
      return { type: "multiple_of", msg: `Input should be a multiple of ${divisor}`, ctx: { multiple_of: divisor } };
    }
    default:
      return valueError(issue.message);
  }
}

function item(
  error: PydanticError,
  loc: (string | number)[],
  input: unknown,
): ValidationErrorItem {
  const out: ValidationErrorItem = { type: error.type, loc, msg: error.msg, input };
  if (error.ctx !== undefined) out.ctx = error.ctx;
  return out;
}

function collect(
  issues: readonly Issue[],
  prefix: readonly Key[],
  data: unknown,
  location: ValidationLocation,
  out: ValidationErrorItem[],
): void {
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    const loc: (string | number)[] = [location, ...path.map((k) => (typeof k === "number" ? k : String(k)))];

    if (issue.code === "invalid_union" && issue.errors.length > 0) {
      // Pydantic would add a per-member tag to each loc; zod does not know it.
      for (const branch of issue.errors) collect(branch, path, data, location, out);
      continue;
    }
    if (issue.code === "unrecognized_keys") {
      // extra='forbid'
      for (const key of issue.keys) {
        const extra = lookup(data, [...path, key]);
        out.push(item({ type: "extra_forbidden", msg: "Extra inputs are not permitted" }, [...loc, key], extra.value));
      }
      continue;
    }

    const found = lookup(data, path);
    if (!found.present) {
      // An absent field: Pydantic's `input` is the containing object; FastAPI writes null for a
      // missing body and for missing query / path / header / cookie parameters.
      const input = location === "body" && path.length > 0 ? found.parent : null;
      out.push(item({ type: "missing", msg: "Field required" }, loc, input));
      continue;
    }
    if (location === "body" && path.length === 0 && found.value === null) {
      // A JSON `null` body is `None` to FastAPI: "Field required".
      out.push(item({ type: "missing", msg: "Field required" }, loc, null));
      continue;
    }

    const params = issue.code === "custom" ? (issue.params as Record<string, unknown> | undefined) : undefined;
    const carried = params?.[PYDANTIC_PARAM];
    const error = isPydanticError(carried) ? carried : translate(issue, found.value);
    out.push(item(error, loc, found.value));
  }
}

/**
 * Translate a ZodError raised while validating `data` (the parsed JSON body, or the object of
 * query / path / header / cookie strings) into FastAPI's `detail` list, in zod's issue order —
 * which for synchronous object schemas is the shape's field order, as in Pydantic.
 */
export function toValidationDetail(
  error: z.ZodError,
  data: unknown,
  location: ValidationLocation,
): ValidationErrorItem[] {
  const out: ValidationErrorItem[] = [];
  collect(error.issues, [], data, location, out);
  return out;
}

/** Hono validator target → FastAPI location (`json` / `form` → body, `param` → path). */
export function locationOfTarget(target: string): ValidationLocation {
  switch (target) {
    case "query":
      return "query";
    case "param":
      return "path";
    case "header":
      return "header";
    case "cookie":
      return "cookie";
    default:
      return "body";
  }
}

/**
 * For an `OpenAPIHono` `defaultHook` / route hook: the failed result it receives. At runtime the
 * result also carries `data`, the value that was validated (its type omits it).
 */
export function detailFromHookResult(result: { target: string; error: z.ZodError }): ValidationErrorItem[] {
  const data = "data" in result ? result.data : undefined;
  return toValidationDetail(result.error, data, locationOfTarget(result.target));
}
