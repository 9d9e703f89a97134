import { createRoute } from "@hono/zod-openapi";
import {
  AudioBookSchema,
  CreateAudioBookSchema,
  UpdateAudioBookSchema,
  uuidParam,
} from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayApp } from "../http/context.ts";
import { respond } from "../http/respond.ts";
import { NotFoundError, ValueError422 } from "../http/errors.ts";
import { resolveVoiceClone } from "../clones/resolve.ts";
import { resolveLexicons } from "../lexicons/resolve.ts";
import { SECURITY, bodyErrorResponses, errorResponses, notFoundResponse, taskCreationErrorResponses } from "../http/responses.ts";
import { AUDIO_BOOKS, type AudioBookDoc } from "./kinds.ts";
import { IdempotencyHeaders, checkCapabilities, checkFileReference, createTask } from "./shared.ts";

const TAGS = [AUDIO_BOOKS.tag];
const IdParam = uuidParam("audio_book_id", AUDIO_BOOKS.idDescription);
const json = <T>(schema: T) => ({ "application/json": { schema } });

const createAudioBook = createRoute({
  method: "post",
  path: "/v1/audio_books/",
  operationId: "create_audio_book",
  summary: "Create Audio Book",
  description:
    "Stores the audio book and starts its processing at once: the text is fetched, translated when the languages differ, synthesised and encoded to one MP3. Follow `task_status` and `task_progress` by reading the record.\n\n" +
    "Voices: `preset_voice_name` takes a preset voice or one of your cloned voices, `clone:<id>` (another account's, or one that does not speak the target language, is a **422** at the field). " +
    "`use_voice_clone: true` speaks the book in a voice cloned from `voice_clone_sample` for this book (deleted at the engine when the book ends); without a sample it is a **422** at `voice_clone_sample`.",
  tags: TAGS,
  security: SECURITY,
  request: {
    headers: IdempotencyHeaders,
    body: {
      content: {
        "application/json": {
          schema: CreateAudioBookSchema,
          example: {
            file: "https://files.example.org/books/little-prince.txt",
            name: "The Little Prince",
            source_language: "English",
            target_language: "Spanish",
            use_voice_clone: false,
          },
        },
      },
      required: true,
    },
  },
  responses: {
    201: { description: "The audio book record, `task_status: queued`.", content: json(AudioBookSchema) },
    ...taskCreationErrorResponses,
  },
});

const updateAudioBook = createRoute({
  method: "patch",
  path: "/v1/audio_books/{audio_book_id}",
  operationId: "update_audio_book",
  summary: "Update Audio Book",
  description: "Changes the title and/or cover. Both fields are optional; omitted fields keep their value; `{}` changes nothing.",
  tags: TAGS,
  security: SECURITY,
  request: {
    params: IdParam,
    body: {
      content: {
        "application/json": {
          schema: UpdateAudioBookSchema,
          example: { name: "The Little Prince (Spanish edition)", audio_book_cover: "https://files.example.org/covers/little-prince.jpg" },
        },
      },
      required: true,
    },
  },
  responses: {
    200: { description: "The updated audio book.", content: json(AudioBookSchema) },
    ...errorResponses,
    ...notFoundResponse,
    ...bodyErrorResponses,
  },
});

/** The 422 of `use_voice_clone: true` with no sample to clone. */
export const NO_SAMPLE =
  "use_voice_clone is true but no voice_clone_sample is given: send the audio of the voice to clone (a URL, a MEDIA_ROOT path or upload:<id>; 3 s to 5 min of speech)";

export function registerAudioBooks(app: GatewayApp, deps: GatewayDeps): void {
  app.openapi(createAudioBook, async (c) => {
    const body = c.req.valid("json");
    const { "idempotency-key": key } = c.req.valid("header");
    const owner = c.get("principal").accountId;
    await checkFileReference(deps, owner, body.file, ["body", "file"], ["text"]);
    if (body.use_voice_clone && !body.voice_clone_sample) {
      throw new ValueError422(["body", "voice_clone_sample"], NO_SAMPLE, body.voice_clone_sample ?? null);
    }
    if (body.voice_clone_sample) await checkFileReference(deps, owner, body.voice_clone_sample, ["body", "voice_clone_sample"], ["audio"]);
    const clone = await resolveVoiceClone(deps, owner, body.preset_voice_name, ["body", "preset_voice_name"], body.target_language);
    const lexicons = await resolveLexicons(deps, owner, body.lexicons, body.target_language, {
      voice: body.preset_voice_name,
      cloned: clone !== null || body.use_voice_clone === true,
    });
    await checkCapabilities(deps, {
      kind: "audiobook",
      source: body.source_language,
      target: body.target_language,
      // a clone is checked above, against the caller's own clones; the table lists preset voices
      voice: clone ? null : body.preset_voice_name,
      voiceField: "preset_voice_name",
      useVoiceClone: body.use_voice_clone,
    });
    return createTask(c, deps, "audiobook", key, 201, {
      file: body.file,
      name: body.name,
      source_language: body.source_language,
      target_language: body.target_language,
      audio_book_cover: body.audio_book_cover ?? null,
      output_format: body.output_format ?? "mp3",
      use_voice_clone: body.use_voice_clone ?? false,
      preset_voice_name: body.preset_voice_name ?? null,
      voice_clone_sample: body.voice_clone_sample ?? null,
      clone,
      ...(lexicons.length > 0 ? { lexicons } : {}),
    }) as Promise<never>;
  });
}

/** PATCH of an audio book (after its reads, as the document lists them). */
export function registerAudioBookUpdate(app: GatewayApp, deps: GatewayDeps): void {
  const now = () => (deps.now ? deps.now() : new Date());

  app.openapi(updateAudioBook, async (c) => {
    const { audio_book_id: id } = c.req.valid("param");
    const body = c.req.valid("json");
    const accountId = c.get("principal").accountId;
    const set: Partial<AudioBookDoc> = {};
    if (body.name !== undefined) set.name = body.name;
    if (body.audio_book_cover !== undefined) set.audio_book_cover = body.audio_book_cover;
    let doc: AudioBookDoc | null;
    if (Object.keys(set).length === 0) {
      doc = await deps.records.audiobook.getOwned(accountId, id);
    } else {
      set.date_updated = now().toISOString();
      doc = await deps.records.audiobook.updateOwned(accountId, id, set);
    }
    if (!doc) throw new NotFoundError(AUDIO_BOOKS.notFound);
    return respond(c, 200, AUDIO_BOOKS.present(doc, deps.signer));
  });
}
