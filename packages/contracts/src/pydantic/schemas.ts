/**
 * The 422 body as FastAPI documents it (components `ValidationError` and `HTTPValidationError`,
 * including the `input` / `ctx` properties recent FastAPI versions list).
 */
import { z } from "@hono/zod-openapi";

export const ValidationErrorSchema = z
  .object({
    loc: z.array(z.union([z.string(), z.int()])).openapi({ title: "Location" }),
    msg: z.string().openapi({ title: "Message" }),
    type: z.string().openapi({ title: "Error Type" }),
    input: z.unknown().optional().openapi({ title: "Input" }),
    ctx: z.record(z.string(), z.unknown()).optional().openapi({ title: "Context" }),
  })
  .openapi("ValidationError", { title: "ValidationError" });

export const HTTPValidationErrorSchema = z
  .object({
    detail: z.array(ValidationErrorSchema).optional().openapi({ title: "Detail" }),
  })
  .openapi("HTTPValidationError", { title: "HTTPValidationError" });

export type ValidationErrorBody = z.infer<typeof HTTPValidationErrorSchema>;
