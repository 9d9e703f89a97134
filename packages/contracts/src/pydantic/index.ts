/**
 * FastAPI / Pydantic v2 compatible request validation for Hono + @hono/zod-openapi.
 *
 * - `py*` primitives: zod schemas that accept what Pydantic (lax mode) accepts and fail with
 *   Pydantic's exact error type / msg / ctx.
 * - `toValidationDetail`: a ZodError → FastAPI's `detail` items (`loc` starts with the location).
 * - `parseJsonBody`: FastAPI's JSON body decoding, with the exact `json_invalid` item.
 * - `ValidationErrorSchema` / `HTTPValidationErrorSchema`: the documented 422 body.
 */
export type { PydanticError, ValidationErrorItem, ValidationLocation } from "./types.ts";
export {
  PYDANTIC_PARAM,
  pyBool,
  pyEnum,
  pyHttpUrl,
  pyInt,
  pyOptional,
  pyStr,
  pyUuid,
} from "./primitives.ts";
export type { PyEnumOptions, PyIntOptions, PyStrOptions } from "./primitives.ts";
export { detailFromHookResult, locationOfTarget, toValidationDetail } from "./mapper.ts";
export { codePointIndex, jsonInvalidItem, parseJsonBody, pythonJsonError } from "./json.ts";
export type { JsonBodyResult, JsonDecodeError, PythonJsonOptions } from "./json.ts";
export { HTTPValidationErrorSchema, ValidationErrorSchema } from "./schemas.ts";
export type { ValidationErrorBody } from "./schemas.ts";
export { parseUuid } from "./uuid.ts";
export type { UuidOptions, UuidResult } from "./uuid.ts";
export { HTTP_URL_MAX_LENGTH, validateHttpUrl } from "./url.ts";
export type { UrlResult } from "./url.ts";
export { joinExpected, pyRepr, pyStrRepr } from "./repr.ts";
