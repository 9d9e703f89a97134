import { ErrorSchema, HTTPValidationErrorSchema } from "@voiceloc/contracts";
import { tooManyRequestsResponse } from "./rate-limit.ts";

const errorContent = { "application/json": { schema: ErrorSchema } };

/** Error responses shared by the operations, for the OpenAPI document. */
export const errorResponses = {
  401: {
    description: "Missing or invalid credentials (`API-KEY` header, or `Authorization: Bearer` with an API key or access token). Carries `WWW-Authenticate`.",
    content: errorContent,
  },
  403: {
    description: "The credential is valid but may not be used yet: with `LIVE_KEYS=approval`, live keys of an account an operator has not approved are refused (sandbox keys work meanwhile).",
    content: errorContent,
  },
  422: {
    description: "Validation error (FastAPI / Pydantic v2 shape).",
    content: { "application/json": { schema: HTTPValidationErrorSchema } },
  },
  ...tooManyRequestsResponse,
} as const;

export const notFoundResponse = {
  404: { description: "No such record for the calling account.", content: errorContent },
} as const;

export const bodyErrorResponses = {
  413: { description: "The request body is larger than the documented limit (1 MiB by default).", content: errorContent },
  415: { description: "The request body is not `application/json`.", content: errorContent },
} as const;

export const createErrorResponses = {
  409: {
    description: "The `Idempotency-Key` was already used with a different body, or its first request is still in progress.",
    content: errorContent,
  },
} as const;

/** A creation checked against the capability table of its kind's workers (`checkCapabilities`). */
export const capabilityErrorResponses = {
  502: {
    description:
      "The workers of this kind could not say what their engines can do (a worker refused or failed the capability request): nothing was created. Retry later.",
    content: errorContent,
  },
} as const;

/** Every error a task creation can answer (audio books, voice streams, subtitle jobs). */
export const taskCreationErrorResponses = {
  ...errorResponses,
  ...createErrorResponses,
  ...capabilityErrorResponses,
  ...bodyErrorResponses,
} as const;

/** The security requirement of every /v1 operation: an API key in `API-KEY`, or a bearer credential. */
export const SECURITY: Array<Record<string, string[]>> = [{ APIKeyHeader: [] }, { HTTPBearer: [] }];
