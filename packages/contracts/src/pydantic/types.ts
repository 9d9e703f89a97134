/** Where a request value came from; the first element of every `loc`. */
export type ValidationLocation = "body" | "query" | "path" | "header" | "cookie";

/** One entry of FastAPI's 422 `detail` (Pydantic v2 `ValidationError.errors(include_url=False)`). */
export interface ValidationErrorItem {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

/** The Pydantic error a primitive attaches to its zod issue (`issue.params.pydantic`). */
export interface PydanticError {
  type: string;
  msg: string;
  ctx?: Record<string, unknown>;
}
