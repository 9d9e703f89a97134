import { z } from "@hono/zod-openapi";
import { LANGUAGES, LANGUAGE_CODES } from "./languages.ts";
import { pyBool, pyEnum, pyHttpUrl, pyInt, pyStr, pyUuid } from "./pydantic/index.ts";

/* ------------------------------------------------------------------ enums */

export const TASK_STATUSES = ["queued", "processing", "completed", "failed"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const SUBTITLE_MODES = ["burn_in", "side_file"] as const;
export const SUBTITLE_FORMATS = ["srt", "vtt"] as const;
export const AUDIO_FORMATS = ["mp3", "wav", "ogg", "flac"] as const;
export type AudioFormat = (typeof AUDIO_FORMATS)[number];
/** How a translation pair is translated: rule-based (Apertium), a neural MT model, or a general language model. */
export const TRANSLATION_QUALITIES = ["rule-based", "neural", "llm"] as const;

/** Documented limits (also stated in the OpenAPI description). */
export const LIMITS = {
  fileReferenceLength: 2048,
  nameLength: 500,
  voiceNameLength: 100,
  synthesisTextLength: 5000,
  listDefault: 50,
  listMax: 200,
  idempotencyKeyLength: 255,
} as const;

export const LanguageSchema = z.enum(LANGUAGES).openapi("Language", {
  description: "Language of a text or speech. Case-sensitive; exactly these values.",
});
const languageIn = () => pyEnum(LANGUAGES).openapi({ description: "A Language value (see the Language schema)." });

export const TaskStatusSchema = z.enum(TASK_STATUSES).openapi("TaskStatus", {
  description:
    "Status of the processing task: `queued` (stored, waiting for a worker) → `processing` → `completed` | `failed` (see `task_error`).",
});

const fileRef = (what: string) =>
  pyStr({ min: 1, max: LIMITS.fileReferenceLength }).openapi({
    description: `Reference to the ${what}: an \`http(s)://\` URL reachable from the service (private and loopback addresses are refused), an \`s3://bucket/key\` or \`gs://bucket/key\` URI (fetched through the configured S3-compatible endpoint), or a path relative to the server's MEDIA_ROOT.`,
    example: "https://example.com/books/chapter-1.txt",
  });

const taskFields = {
  task_status: TaskStatusSchema,
  task_progress: z.number().min(0).max(100).openapi({ description: "Progress in percent, 0–100; never moves backwards." }),
  task_error: z
    .string()
    .nullable()
    .openapi({ description: "Why the task failed, in plain words; null unless `task_status` is `failed`." }),
  localized_file: z.string().url().nullable().openapi({
    description: "Signed download URL of the result, valid for 1 hour from this read; null until the task completes.",
  }),
  date_created: z.string().datetime().openapi({ example: "2026-11-22T06:30:00.000Z" }),
  date_updated: z.string().datetime().openapi({ example: "2026-11-22T06:31:12.000Z" }),
};

/* ------------------------------------------------------------ audio books */

export const AudioBookSchema = z
  .object({
    id: z.string().uuid(),
    file: z.string(),
    name: z.string(),
    source_language: LanguageSchema,
    target_language: LanguageSchema,
    audio_book_cover: z.string().nullable().openapi({ description: "Public URI of the cover image." }),
    ...taskFields,
  })
  .openapi("AudioBook");

export const CreateAudioBookSchema = z
  .object({
    file: fileRef("text file (UTF-8, or UTF-16 with a byte order mark)"),
    name: pyStr({ min: 1, max: LIMITS.nameLength }).openapi({ description: "Title of the audio book.", example: "The Little Prince" }),
    source_language: languageIn(),
    target_language: languageIn(),
    use_voice_clone: pyBool()
      .optional()
      .openapi({
        description:
          "Whether a voice clone is used: the book is spoken in a voice cloned from `voice_clone_sample` (required then), made for this book and deleted when it ends. Default false.",
        default: false,
      }),
    preset_voice_name: pyStr({ min: 1, max: LIMITS.voiceNameLength })
      .nullable()
      .optional()
      .openapi({
        description:
          "Preset voice for the audio (see `GET /v1/voices`) or one of your cloned voices, `clone:<id>`; default: the target language's most natural voice.",
      }),
    voice_clone_sample: pyStr({ min: 1, max: LIMITS.fileReferenceLength })
      .nullable()
      .optional()
      .openapi({
        description:
          "Public URL of a sample voice audio (or a MEDIA_ROOT path, or `upload:<id>`): 3 s to 5 min of speech. Used only when use_voice_clone is true, and required then. You must have the speaker's permission.",
      }),
  })
  .openapi("CreateAudioBook");

export const UpdateAudioBookSchema = z
  .object({
    name: pyStr({ min: 1, max: LIMITS.nameLength }).optional().openapi({ description: "New title." }),
    audio_book_cover: pyHttpUrl()
      .nullable()
      .optional()
      .openapi({ description: "Public http(s) URI of the cover image; null removes the cover." }),
  })
  .openapi("UpdateAudioBook");

/* ---------------------------------------------------------- voice streams */

export const VoiceStreamSchema = z
  .object({
    id: z.string().uuid(),
    file: z.string(),
    source_language: LanguageSchema,
    target_language: LanguageSchema,
    ...taskFields,
  })
  .openapi("VoiceStream");

export const CreateVoiceStreamSchema = z
  .object({
    file: fileRef("audio file"),
    source_language: languageIn(),
    target_language: languageIn(),
    voice: pyStr({ min: 1, max: LIMITS.voiceNameLength })
      .nullable()
      .optional()
      .openapi({
        description:
          "Voice for the translated speech: a preset voice (see `GET /v1/voices`) or one of your cloned voices, `clone:<id>`; default: the target language's most natural voice.",
      }),
    use_voice_clone: pyBool()
      .optional()
      .openapi({
        description:
          "Speak in a cloned voice made for this task: of `voice_clone_sample` when given, otherwise of the speech in the input itself. The clone is deleted when the task ends. Default false.",
        default: false,
      }),
    voice_clone_sample: pyStr({ min: 1, max: LIMITS.fileReferenceLength })
      .nullable()
      .optional()
      .openapi({
        description:
          "Audio of the voice to speak in (3 s to 5 min of speech; a URL, a MEDIA_ROOT path or `upload:<id>`), with `use_voice_clone: true`. You must have the speaker's permission.",
      }),
  })
  .openapi("CreateVoiceStream");

/* ------------------------------------------------------------- subtitles */

export const SubtitleJobSchema = z
  .object({
    id: z.string().uuid(),
    file: z.string(),
    source_language: LanguageSchema,
    target_language: LanguageSchema,
    mode: z.enum(SUBTITLE_MODES),
    subtitle_format: z.enum(SUBTITLE_FORMATS),
    ...taskFields,
    localized_file: taskFields.localized_file.openapi({
      description: "Signed URL of the video with subtitles burned in (mode `burn_in`); null otherwise or until completed.",
    }),
    subtitle_file: z.string().url().nullable().openapi({
      description: "Signed URL of the subtitle file (SRT or WebVTT), valid for 1 hour; null until completed.",
    }),
  })
  .openapi("SubtitleJob");

export const SubtitleVideoSchema = z
  .object({
    file: fileRef("video file"),
    source_language: languageIn(),
    target_language: languageIn(),
    mode: pyEnum(SUBTITLE_MODES).optional().openapi({ description: "`burn_in` (default) renders the subtitles into the video; `side_file` delivers only the subtitle file." }),
    subtitle_format: pyEnum(SUBTITLE_FORMATS).optional().openapi({ description: "`srt` (default) or `vtt`." }),
  })
  .openapi("SubtitleVideo");

/* ---------------------------------------------------------------- speech */

const languageCodes = Object.values(LANGUAGE_CODES);

export const SpeechSynthesisRequestSchema = z
  .object({
    text: pyStr({ min: 1, max: LIMITS.synthesisTextLength }).openapi({
      description: `Text to synthesise, 1–${LIMITS.synthesisTextLength} characters.`,
      example: "Hello, and welcome to the show.",
    }),
    language: pyEnum([...LANGUAGES, ...languageCodes]).openapi({
      description: "Language of the text: a Language name or its ISO 639-1 code (`en`, `fr`, …).",
      example: "English",
    }),
    voice: pyStr({ min: 1, max: LIMITS.voiceNameLength })
      .nullable()
      .optional()
      .openapi({ description: "Voice name from `GET /v1/voices` (a preset voice, or one of your cloned voices, `clone:<id>`); default: the language's most natural voice." }),
    format: pyEnum(AUDIO_FORMATS).optional().openapi({ description: "Output audio format: `mp3` (default), `wav`, `ogg` (Opus) or `flac`." }),
  })
  .openapi("SpeechSynthesisRequest");

export const SpeechSynthesisResponseSchema = z
  .object({
    audio_url: z.string().url().openapi({ description: "Signed link to the audio file, valid for 1 hour." }),
    duration_seconds: z.number().openapi({ description: "Duration of the audio in seconds, measured from the file." }),
  })
  .openapi("SpeechSynthesisResponse");

/* ------------------------------------------------------- shared pieces */

export const ErrorSchema = z
  .object({ detail: z.string() })
  .openapi("Error", { description: "Error other than validation: a human-readable `detail`." });

export const ListQuerySchema = z.object({
  limit: pyInt({ ge: 1, le: LIMITS.listMax })
    .optional()
    .openapi({ description: `Page size, 1–${LIMITS.listMax}; default ${LIMITS.listDefault}.` }),
  cursor: pyStr({ min: 1, max: 512 }).optional().openapi({
    description: "Opaque cursor from the previous page's `Link: <…>; rel=\"next\"` header.",
  }),
  task_status: pyEnum(TASK_STATUSES).optional().openapi({ description: "Only records with this status." }),
});

/** A UUID path parameter; `description` is the parameter's text in the OpenAPI document. */
export function uuidParam<const N extends string>(name: N, description = "The record's id (a UUID), as returned when it was created.") {
  const field = pyUuid().openapi({ param: { name, in: "path" }, format: "uuid", description });
  return z.object({ [name]: field } as { [K in N]: typeof field });
}

/* ---------------------------------------------------------------- voices */

export const VoiceInfoSchema = z
  .object({
    name: z.string().openapi({ description: "Voice name to pass as `voice` / `preset_voice_name`.", example: "flite:slt" }),
    language: LanguageSchema,
    engine: z.string().openapi({ example: "flite" }),
    gender: z.string().nullable().optional(),
    description: z.string(),
    default: z.boolean().openapi({ description: "True for the language's default voice (its most natural one)." }),
  })
  .openapi("Voice");

export const VoicesQuerySchema = z.object({
  language: pyEnum([...LANGUAGES, ...languageCodes])
    .optional()
    .openapi({ description: "Only voices of this language (a Language name or its ISO 639-1 code)." }),
});

/* --------------------------------------------------------- cloned voices */

/** The engines a cloned voice can be made with (`CLONE_ENGINE`). */
export const VOICE_CLONE_ENGINES = ["elevenlabs", "voice-library", "match"] as const;

export const CreateVoiceCloneSchema = z
  .object({
    name: pyStr({ min: 1, max: LIMITS.voiceNameLength }).openapi({ description: "Your name for the voice, 1–100 characters.", example: "Narrator (Ana)" }),
    sample: pyStr({ min: 1, max: LIMITS.fileReferenceLength }).openapi({
      description:
        "Audio of the voice (3 s to 5 min of speech, one speaker, little noise): an `http(s)://` URL reachable from the service, an `s3://` or `gs://` URI, a path relative to MEDIA_ROOT, or `upload:<id>` of an audio upload. It is fetched and checked while the request waits. You must have the speaker's permission.",
      example: "upload:0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0",
    }),
    language: languageIn()
      .optional()
      .openapi({ description: "The language spoken in the sample, when known (some engines use it); the clone may speak others (see `languages`)." }),
  })
  .openapi("CreateVoiceClone");

export const VoiceCloneSchema = z
  .object({
    id: z.string().uuid(),
    name: z.string(),
    voice: z.string().openapi({ description: "The value to pass as `voice` / `preset_voice_name`: `clone:<id>`.", example: "clone:0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0" }),
    engine: z.enum(VOICE_CLONE_ENGINES).openapi({
      description:
        "The engine that made it: `elevenlabs` (ElevenLabs instant voice cloning), `voice-library` (a self-hosted OpenAI-compatible speech server that keeps named voices), or `match` (offline: an approximation of the sample's pitch and rate with an installed voice, not a clone of the voice).",
    }),
    sample_seconds: z.number().openapi({ description: "Decoded length of the sample, in seconds." }),
    languages: z.array(LanguageSchema).openapi({ description: "The languages the voice can speak." }),
    date_created: z.string().datetime().openapi({ example: "2026-11-22T06:30:00.000Z" }),
  })
  .openapi("VoiceClone");

export const VoiceCloneListQuerySchema = z.object({
  limit: pyInt({ ge: 1, le: LIMITS.listMax })
    .optional()
    .openapi({ description: `Page size, 1–${LIMITS.listMax}; default ${LIMITS.listDefault}.` }),
  cursor: pyStr({ min: 1, max: 512 }).optional().openapi({
    description: "Opaque cursor from the previous page's `Link: <…>; rel=\"next\"` header.",
  }),
});

/* ---------------------------------------------------------- capabilities */

const languageList = () => z.object({ languages: z.array(LanguageSchema) });

/** `GET /v1/capabilities`: what the engines of the running workers can do, per operation. */
export const CapabilitiesResponseSchema = z
  .object({
    synthesis: languageList().openapi({ description: "Languages speech can be synthesised in (audio books, voice streams, `/v1/speech/synthesize`)." }),
    recognition: z
      .object({
        languages: z.array(LanguageSchema),
        engines: z
          .array(
            z.object({
              language: LanguageSchema,
              engines: z.array(z.string()).openapi({ description: "Recognition engine names (such as whisper-cpp, openai-stt, pocketsphinx), in the order they are tried." }),
            }),
          )
          .openapi({ description: "Per language, the recognition engines in the order they are tried; the setting ENGINE_ORDER_STT changes the order." }),
      })
      .openapi({ description: "Languages speech can be recognised in (voice streams, subtitles)." }),
    translation: z
      .object({
        pairs: z.array(
          z.object({
            source: LanguageSchema,
            target: LanguageSchema,
            // A union with null, not `.nullable()`: zod-to-openapi writes a nullable reference as an
            // `allOf` of the Language enum, which no null satisfies.
            pivot: z.union([LanguageSchema, z.null()]).openapi({
              description:
                "The language the text is translated through (source → pivot → target) when no engine translates the pair directly; null for a direct pair.",
            }),
            quality: z.enum(TRANSLATION_QUALITIES).openapi({ description: "How the pair is translated: rule-based (Apertium), a neural MT model, or a general language model." }),
            engines: z.array(z.string()).openapi({
              description: "Translation engine names (such as libretranslate, openai, apertium), in the order they are tried; the setting ENGINE_ORDER_MT changes the order.",
            }),
          }),
        ),
      })
      .openapi({ description: "Translation pairs (same-language tasks need none)." }),
    cloning: z.object({ available: z.boolean(), languages: z.array(LanguageSchema) }),
  })
  .openapi("Capabilities");
