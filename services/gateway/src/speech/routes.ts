import { createRoute } from "@hono/zod-openapi";
import {
  SpeechSynthesisRequestSchema,
  SpeechSynthesisResponseSchema,
  ErrorSchema,
  languageFromNameOrCode,
} from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import { registerVoices } from "./voices.ts";
import { registerCapabilities } from "./capabilities.ts";
import { createRouter } from "../http/router.ts";
import type { GatewayApp } from "../http/context.ts";
import { respond } from "../http/respond.ts";
import { ServiceUnavailableError, ValueError422 } from "../http/errors.ts";
import { bodyErrorResponses, errorResponses } from "../http/responses.ts";
import { resolveVoiceClone } from "../clones/resolve.ts";
import { resolveLexicons } from "../lexicons/resolve.ts";

const json = <T>(schema: T) => ({ "application/json": { schema } });

/** Length in code points, as Pydantic's `max_length` counts. */
function characters(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/** The deployment's text limit, answered exactly as the schema's own `max_length` is (`string_too_long`). */
function textTooLong(text: string, max: number): ValueError422 {
  const error = new ValueError422(["body", "text"], `String should have at most ${max} character${max === 1 ? "" : "s"}`, text, "string_too_long");
  error.items.splice(0, 1, { ...error.items[0], ctx: { max_length: max } });
  return error;
}

const synthesize = createRoute({
  method: "post",
  path: "/v1/speech/synthesize",
  operationId: "synthesize_speech",
  summary: "Synthesise speech",
  description:
    "Synthesises the text and answers **200** with a signed link to the audio (valid for 1 hour) and its duration measured from the file. Send the credential as `Authorization: Bearer <API_KEY>` (the `API-KEY` header and access tokens are accepted too).\n\n" +
    "`text` may have at most `SYNTHESIS_MAX_CHARACTERS` characters (a deployment setting, default 5,000, never above 5,000); longer text is a **422** `string_too_long` on `body.text` with `ctx.max_length` naming the limit. " +
    "Text with nothing to speak (only spaces or punctuation), text the voice cannot read, an unknown voice, a voice of another language and a language no engine speaks are **422**s pointing at `text`, `voice` or `language`. " +
    "`voice` may name one of your cloned voices, `clone:<id>` (see `POST /v1/voices/clones`); another account's clone is the same 422 as an unknown voice. " +
    "Engine trouble is a **503** with `Retry-After` (no engine available, busy, timed out) or a **502** (the engine failed); nothing is stored then.",
  tags: ["Speech"],
  security: [{ HTTPBearer: [] }, { APIKeyHeader: [] }] as Array<Record<string, string[]>>,
  request: {
    body: {
      content: {
        "application/json": { schema: SpeechSynthesisRequestSchema, example: { text: "Hello, and welcome to the show.", language: "English", format: "mp3" } },
      },
      required: true,
    },
  },
  responses: {
    200: { description: "The audio link and its duration.", content: json(SpeechSynthesisResponseSchema) },
    ...errorResponses,
    ...bodyErrorResponses,
    502: { description: "The speech engine or the synthesis service failed; nothing was stored.", content: json(ErrorSchema) },
    503: { description: "No synthesis engine is available right now, or it is busy (`Retry-After`).", content: json(ErrorSchema) },
  },
});

function registerSynthesis(app: GatewayApp, deps: GatewayDeps): void {
  app.openapi(synthesize, async (c) => {
    const body = c.req.valid("json");
    const language = languageFromNameOrCode(body.language);
    if (!language) throw new Error("validated language did not resolve");
    const sandboxMax = deps.sandbox?.maxSpeechCharacters;
    if (c.get("principal").mode === "sandbox" && sandboxMax !== undefined && characters(body.text) > sandboxMax) {
      throw new ValueError422(
        ["body", "text"],
        `sandbox keys may synthesise at most ${sandboxMax} characters per request (SANDBOX_MAX_SPEECH_CHARACTERS); use a live key for longer text`,
        body.text,
      );
    }
    const clone = await resolveVoiceClone(deps, c.get("principal").accountId, body.voice, ["body", "voice"], language);
    const lexicons = await resolveLexicons(deps, c.get("principal").accountId, body.lexicons, language, { voice: body.voice, cloned: clone !== null });
    if (!deps.synthesizer) {
      throw new ServiceUnavailableError(
        "Speech synthesis is not available: this deployment runs no synthesis service yet. Nothing was charged or stored; retry when it is enabled.",
      );
    }
    const max = deps.synthesizer.maxCharacters;
    if (max !== undefined && characters(body.text) > max) throw textTooLong(body.text, max);
    const result = await deps.synthesizer.synthesize({
      text: body.text,
      language,
      languageInput: body.language,
      voice: body.voice ?? null,
      clone,
      lexicons,
      format: body.format ?? "mp3",
      accountId: c.get("principal").accountId,
      requestId: c.get("requestId"),
    });
    return respond(c, 200, { audio_url: deps.signer.sign(result.key), duration_seconds: result.durationSeconds });
  });
}

/** Speech synthesis, its voices and the engines' capabilities. */
export function speechRoutes(deps: GatewayDeps): GatewayApp {
  const app = createRouter();
  registerSynthesis(app, deps);
  registerVoices(app, deps);
  registerCapabilities(app, deps);
  return app;
}
