import { z } from "@hono/zod-openapi";
import { LANGUAGES, LANGUAGE_CODES } from "./languages.ts";
import { pyBool, pyEnum, pyHttpUrl, pyInt, pyStr, pyUuid } from "./pydantic/index.ts";

/* ------------------------------------------------------------------ enums */

export const TASK_STATUSES = ["queued", "processing", "completed", "failed"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const SUBTITLE_MODES = ["burn_in", "side_file"] as const;
/** What a voice stream does with the input's own sound: `drop` it (speech on silence) or `duck` it under the new speech. */
export const ORIGINAL_AUDIO_MODES = ["drop", "duck"] as const;
export type OriginalAudioMode = (typeof ORIGINAL_AUDIO_MODES)[number];
export const SUBTITLE_FORMATS = ["srt", "vtt"] as const;
export const AUDIO_FORMATS = ["mp3", "wav", "ogg", "flac"] as const;
/** What an audio book is written as: MP3 with ID3v2 chapters, or M4B (AAC in MP4) with chapter markers. */
export const AUDIO_BOOK_FORMATS = ["mp3", "m4b"] as const;
export type AudioBookFormat = (typeof AUDIO_BOOK_FORMATS)[number];
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
  /** Pronunciation lexicons named by one audio book, synthesis or voice stream. */
  lexiconsPerRequest: 5,
  /** Characters of a PLS document (`POST /v1/lexicons`). */
  lexiconLength: 512 * 1024,
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

const lexiconIds = (what: string) =>
  z
    .array(pyUuid())
    .max(LIMITS.lexiconsPerRequest)
    .optional()
    .openapi({
      description: `Ids of your pronunciation lexicons (\`POST /v1/lexicons\`, at most ${LIMITS.lexiconsPerRequest}) applied to ${what} before it is spoken, the first naming a word winning. Each must be yours and of the speech's language; an \`<alias>\` is said by every voice, a \`<phoneme>\` (IPA) only by espeak-ng voices (with another voice a phoneme-only entry is a **422** naming it).`,
      example: ["0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0"],
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

export const AudioBookChapterSchema = z
  .object({
    title: z.string().openapi({ description: "The chapter's title (translated with the book)." }),
    start_seconds: z.number().min(0).openapi({ description: "Where the chapter starts in `localized_file`, in seconds." }),
    end_seconds: z.number().min(0).openapi({ description: "Where it ends, in seconds (the next chapter's start; the book's end for the last)." }),
  })
  .openapi("AudioBookChapter");

export const AudioBookSchema = z
  .object({
    id: z.string().uuid(),
    file: z.string(),
    name: z.string(),
    source_language: LanguageSchema,
    target_language: LanguageSchema,
    audio_book_cover: z.string().nullable().openapi({ description: "Public URI of the cover image." }),
    output_format: z.enum(AUDIO_BOOK_FORMATS).openapi({
      description: "Extension to the contract: what `localized_file` is, `mp3` (ID3v2.3 chapters, tags and cover) or `m4b` (AAC in MP4 with chapter markers, tags and cover).",
    }),
    chapters: z
      .array(AudioBookChapterSchema)
      .nullable()
      .openapi({
        description:
          "Extension to the contract: the chapters of the finished book, in order (the source's headings, or the table of contents of an EPUB; a text without headings is cut into parts of about 30 minutes, titled \"Part N\" in the target language); they span the whole book. Null until the book completes.",
      }),
    warnings: z.array(z.string()).openapi({
      description: "Extension to the contract: what did not go as asked without failing the book, in plain words (a cover that could not be fetched or was refused). Empty when nothing went wrong.",
    }),
    ...taskFields,
    stream_url: z
      .string()
      .nullable()
      .openapi({
        description:
          "Listen while the book renders: a signed HLS playlist link (valid for 1 hour, renewed on every read, like `localized_file`), set from the moment the speech begins. The playlist is of type EVENT and lists AAC parts (MPEG-TS segments of about 10 s) of the book from its start as they are spoken; it ends (`#EXT-X-ENDLIST`) and spans the whole book once the book is completed. Null before the speech begins and for a failed book.",
      }),
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
    output_format: pyEnum(AUDIO_BOOK_FORMATS)
      .optional()
      .openapi({
        description:
          "Extension to the contract: `mp3` (default; ID3v2.3 chapters, tags and cover) or `m4b` (AAC in MP4 with chapter markers, tags and cover; `localized_file` is then `audio/mp4` with an `.m4b` name).",
        default: "mp3",
      }),
    audio_book_cover: pyHttpUrl()
      .nullable()
      .optional()
      .openapi({
        description:
          "Extension to the contract: public http(s) URI of a JPEG or PNG cover, embedded as the book file's attached picture. One that cannot be fetched or is refused leaves the book without a cover and says so in `warnings`.",
      }),
    lexicons: lexiconIds("the book's (translated) text"),
  })
  .openapi("CreateAudioBook");

export const UpdateAudioBookSchema = z
  .object({
    name: pyStr({ min: 1, max: LIMITS.nameLength }).optional().openapi({ description: "New title." }),
    audio_book_cover: pyHttpUrl()
      .nullable()
      .optional()
      .openapi({
        description:
          "Public http(s) URI of a JPEG or PNG cover image; null removes the cover. A completed book's file is written again with it at once (no new speech; a cover that cannot be fetched or used is a 422 and nothing changes); a book still rendering embeds it when it completes (a cover that cannot be embedded then is a `warnings` entry).",
      }),
  })
  .openapi("UpdateAudioBook");

/* ---------------------------------------------------------- voice streams */

export const VoiceStreamSchema = z
  .object({
    id: z.string().uuid(),
    file: z.string(),
    source_language: LanguageSchema,
    target_language: LanguageSchema,
    original_audio: z.enum(ORIGINAL_AUDIO_MODES).openapi({
      description: "What the dubbed track does with the input's own sound: `drop` (speech on silence) or `duck` (kept under the new speech, lowered while it plays).",
    }),
    speakers: z.enum(["auto", "one"]).openapi({ description: "How voices were given to the speakers: `auto`, a voice per speaker; `one`, one voice for every line." }),
    timing: z
      .object({
        lines_sped_up: z.number().int().min(0).openapi({ description: "How many translated lines were sped up (pitch kept) to end before the next line starts." }),
        largest_factor: z.number().min(1).openapi({ description: "The largest speed-up applied (1 when none; at most 1.4: the rest of a longer line is cut, with a short fade, at the next line's start)." }),
      })
      .nullable()
      .openapi({ description: "How the translated lines were fitted to the original timing, once completed; null before (and in records made before this field)." }),
    ...taskFields,
    localized_file: taskFields.localized_file.openapi({
      description:
        "Signed download URL of the result, valid for 1 hour from this read; null until the task completes. Audio input gives an MP3; video input gives the same kind of container (MP4 for MP4/MOV, Matroska for MKV/WebM and others) with the picture copied, the dubbed audio as the first, default track and the original audio as the second.",
    }),
  })
  .openapi("VoiceStream");

export const CreateVoiceStreamSchema = z
  .object({
    file: fileRef("audio or video file"),
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
    original_audio: pyEnum(ORIGINAL_AUDIO_MODES)
      .optional()
      .openapi({
        description:
          "The input's own sound in the dubbed track: `drop` (default) leaves silence between the new lines; `duck` keeps it (room tone, music, effects) at full level between lines and about 18 dB lower while the new speech plays, voice-over style (the original speech stays faintly audible: this is not source separation).",
        default: "drop",
      }),
    speakers: z
      .enum(["auto", "one"])
      .optional()
      .openapi({
        description:
          "`auto` (default): lines are grouped by speaker (the recogniser's speakers, else by clustering each line's pitch and spectral envelope) and each speaker gets a distinct voice of the target language nearest their pitch, or with `use_voice_clone` and no sample a clone of their own lines; a `voice` given speaks every line. `one`: every line in one voice.",
        default: "auto",
      }),
    lexicons: lexiconIds("the translated text"),
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
    lexicons: lexiconIds("the text"),
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

/** A page of a list without a status filter (`limit`, `cursor`): uploads, cloned voices, lexicons, webhooks. */
export const PageQuerySchema = ListQuerySchema.pick({ limit: true, cursor: true });

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

export const VoiceCloneListQuerySchema = PageQuerySchema;

/* ------------------------------------------------ pronunciation lexicons */

export const CreateLexiconSchema = z
  .object({
    name: pyStr({ min: 1, max: LIMITS.voiceNameLength }).openapi({ description: "Your name for the lexicon, 1–100 characters.", example: "Place names" }),
    language: languageIn().openapi({
      description: "The language of the speech it is for; the PLS `xml:lang` must be a tag of this language (`en`, `en-US` for English).",
      example: "English",
    }),
    pls: pyStr({ min: 1, max: LIMITS.lexiconLength }).openapi({
      description:
        "The lexicon, a W3C Pronunciation Lexicon Specification 1.0 document: `<lexicon version=\"1.0\" xmlns=\"http://www.w3.org/2005/01/pronunciation-lexicon\" alphabet=\"ipa\" xml:lang=\"en-US\">` with `<lexeme>`s of one or more `<grapheme>` and an `<alias>` and/or a `<phoneme>`. At most 5,000 lexemes; no DOCTYPE (no DTD or entity is ever read).",
      example:
        '<?xml version="1.0" encoding="UTF-8"?><lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa" xml:lang="en-US"><lexeme><grapheme>W3C</grapheme><alias>World Wide Web Consortium</alias></lexeme></lexicon>',
    }),
  })
  .openapi("CreateLexicon");

export const LexiconEntrySchema = z
  .object({
    graphemes: z.array(z.string()).openapi({ description: "The written forms the entry matches, as whole words." }),
    alias: z.string().nullable().openapi({ description: "Text said instead (`<alias>`), or null." }),
    phoneme: z.string().nullable().openapi({ description: "Pronunciation (`<phoneme>`), or null." }),
    alphabet: z.string().nullable().openapi({ description: "The phoneme's alphabet (`ipa`), or null without a phoneme." }),
  })
  .openapi("LexiconEntry");

export const LexiconSchema = z
  .object({
    id: z.string().uuid(),
    name: z.string(),
    language: LanguageSchema,
    entries: z.array(LexiconEntrySchema).openapi({ description: "The lexicon's lexemes, in document order." }),
    date_created: z.string().datetime().openapi({ example: "2026-11-22T06:30:00.000Z" }),
  })
  .openapi("Lexicon");

export const LexiconListQuerySchema = PageQuerySchema;

/* ---------------------------------------------------------- capabilities */

/** `GET /v1/capabilities`: what the engines of the running workers can do, per operation. */
export const CapabilitiesResponseSchema = z
  .object({
    synthesis: z
      .object({
        languages: z.array(LanguageSchema),
        engines: z
          .array(
            z.object({
              language: LanguageSchema,
              engines: z.array(z.string()).openapi({ description: "Speech engine names (such as openai, piper, flite, festival, espeak), in the order their voices are tried." }),
            }),
          )
          .openapi({
            description:
              "Per language, the speech engines in the order they are tried: the first one's best voice is the language's default voice, the others take over when it fails; the setting ENGINE_ORDER_TTS changes the order.",
          }),
      })
      .openapi({ description: "Languages speech can be synthesised in (audio books, voice streams, `/v1/speech/synthesize`)." }),
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
              description: "Translation engine names (such as deepl, libretranslate, openai, apertium), in the order they are tried; the setting ENGINE_ORDER_MT changes the order.",
            }),
          }),
        ),
      })
      .openapi({ description: "Translation pairs (same-language tasks need none)." }),
    cloning: z.object({ available: z.boolean(), languages: z.array(LanguageSchema) }),
  })
  .openapi("Capabilities");
