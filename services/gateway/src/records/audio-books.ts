import { createRoute } from "@hono/zod-openapi";
import {
  AudioBookSchema,
  ErrorSchema,
  CreateAudioBookSchema,
  UpdateAudioBookSchema,
  uuidParam,
} from "@voiceloc/contracts";
import type { GatewayDeps } from "../deps.ts";
import { requestLog, type GatewayApp } from "../http/context.ts";
import { respond } from "../http/respond.ts";
import { NotFoundError, ServiceUnavailableError, ValueError422 } from "../http/errors.ts";
import { resolveVoiceClone } from "../clones/resolve.ts";
import { resolveLexicons } from "../lexicons/resolve.ts";
import { SECURITY, bodyErrorResponses, errorResponses, notFoundResponse, taskCreationErrorResponses } from "../http/responses.ts";
import { AUDIO_BOOKS, type AudioBookDoc } from "./kinds.ts";
import { applyPendingCover, withoutCoverWarnings } from "./book-covers.ts";
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

/** The answers of a cover re-wrap the server could not do (nothing changed). */
const coverErrorResponses = {
  502: { description: "The finished book's file could not be written with the new cover (the audio book service failed); nothing changed.", content: json(ErrorSchema) },
  503: {
    description: "No audio book service is running to write the finished book's file with the new cover, or it did not answer in time; nothing changed. Carries `Retry-After`.",
    headers: { "Retry-After": { description: "Seconds to wait before retrying.", schema: { type: "integer" as const } } },
    content: json(ErrorSchema),
  },
} as const;

const updateAudioBook = createRoute({
  method: "patch",
  path: "/v1/audio_books/{audio_book_id}",
  operationId: "update_audio_book",
  summary: "Update Audio Book",
  description:
    "Changes the title and/or cover. Both fields are optional; omitted fields keep their value; `{}` changes nothing.\n\n" +
    "A cover given for a **completed** book is embedded in its file now, while the request waits: the cover is fetched (SSRF-guarded, at most 10 MB, JPEG or PNG sniffed from its bytes, at most 4096×4096 pixels) and the file written again with the new picture (`null` removes it), its audio, chapters and tags copied unchanged (no speech is made again); the next read's `localized_file` carries it and cover warnings are cleared. " +
    "A cover that cannot be fetched or is not a usable picture is a **422** at `body.audio_book_cover` in plain words, and nothing changes: the record keeps its cover and the book its file. " +
    "When the file cannot be written (no audio book service running, or it failed) the answer is a **503** with `Retry-After` or a **502**, and nothing changes either.\n\n" +
    "A book still **queued or processing** takes the new cover when it completes (answered at once, with the new `audio_book_cover`); a cover that cannot be embedded then leaves the file as it was finished and says so in `warnings`. A **failed** book only changes its record.",
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
    ...coverErrorResponses,
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
    const requestId = c.get("requestId");
    const repo = deps.records.audiobook;
    const set: Partial<AudioBookDoc> = {};
    if (body.name !== undefined) set.name = body.name;
    let doc: AudioBookDoc | null;
    if (body.audio_book_cover !== undefined) {
      const current = await repo.getOwned(accountId, id);
      if (!current) throw new NotFoundError(AUDIO_BOOKS.notFound);
      set.audio_book_cover = body.audio_book_cover;
      if (current.task_status === "completed" && current.result_key !== null) {
        // Embedded now, while the request waits; a refusal throws its answer and nothing changes.
        const covers = deps.bookCovers;
        if (covers === undefined) throw new ServiceUnavailableError("The cover was not changed: this gateway has no audio book service to write the book file again.", 30);
        await covers.rewrap({ taskId: id, accountId, resultKey: current.result_key, cover: body.audio_book_cover, requestId });
        set.warnings = withoutCoverWarnings(current.warnings);
        set.cover_pending = false;
      } else if (current.task_status === "queued" || current.task_status === "processing") {
        set.cover_pending = true;
      }
    }
    if (Object.keys(set).length === 0) {
      doc = await repo.getOwned(accountId, id);
    } else {
      set.date_updated = now().toISOString();
      doc = await repo.updateOwned(accountId, id, set);
    }
    if (!doc) throw new NotFoundError(AUDIO_BOOKS.notFound);
    if (set.cover_pending === true && doc.task_status === "completed" && deps.bookCovers !== undefined) {
      // The book completed while this request changed its cover: the gateway that projected the
      // completion may have read the record before the mark; embedding it again here is harmless.
      await applyPendingCover({ repo, covers: deps.bookCovers, logger: requestLog(c, deps.logger), now }, doc, requestId);
      doc = (await repo.getOwned(accountId, id)) ?? doc;
    }
    return respond(c, 200, AUDIO_BOOKS.present(doc, deps.signer));
  });
}
