/**
 * Everything that crosses the bus: subjects, the topology with per-queue settings,
 * and the zod schemas both publishers and consumers parse through.
 */
import { z } from "zod";
import { LANGUAGES } from "./languages.ts";
import { AUDIO_BOOK_FORMATS, AUDIO_FORMATS, ORIGINAL_AUDIO_MODES, SUBTITLE_FORMATS, SUBTITLE_MODES, TASK_STATUSES, TRANSLATION_QUALITIES } from "./api.ts";

export const TASK_KINDS = ["audiobook", "voice-stream", "subtitle"] as const;
export type TaskKind = (typeof TASK_KINDS)[number];

/**
 * The kinds of work a capability table is answered for: speech synthesis on request/reply and each
 * task kind. A process answers the table of each one it runs, from its own engines.
 */
export const CAPABILITY_KINDS = ["synthesis", ...TASK_KINDS] as const;
export type CapabilityKind = (typeof CAPABILITY_KINDS)[number];

export const SUBJECTS = {
  work: (kind: TaskKind) => `work.${kind}` as const,
  /** events.task.<kind>.<task id> */
  taskEvent: (kind: TaskKind, taskId: string) => `events.task.${kind}.${taskId}` as const,
  allTaskEvents: "events.task.>",
  synthesize: "svc.synthesis.synthesize",
  voices: "svc.synthesis.voices",
  cloneCreate: "svc.synthesis.clone.create",
  cloneDelete: "svc.synthesis.clone.delete",
  /** notices.record.<kind>.<task id>: core (never stored) hint between gateways that a record changed. */
  recordNotice: (kind: TaskKind, taskId: string) => `notices.record.${kind}.${taskId}` as const,
  allRecordNotices: "notices.record.>",
  /** svc.capabilities.<kind>: the capability table of the workers of one kind. */
  capabilities: (kind: CapabilityKind) => `svc.capabilities.${kind}` as const,
} as const;

/** Stream and queue settings, structurally the bus package's StreamSpec and WorkQueueSpec. */
export interface StreamSettings {
  name: string;
  subjects: string[];
  kind: "work" | "events";
  duplicateWindowMs?: number;
  maxAgeMs?: number;
}

export interface QueueSettings {
  stream: string;
  name: string;
  subject: string;
  ackWaitMs: number;
  maxDeliver: number;
  backoffMs: number[];
}

export const STREAMS: { work: StreamSettings; events: StreamSettings } = {
  work: { name: "WORK", subjects: ["work.>"], kind: "work", duplicateWindowMs: 10 * 60_000 },
  events: { name: "EVENTS", subjects: ["events.>"], kind: "events", maxAgeMs: 7 * 24 * 3_600_000, duplicateWindowMs: 10 * 60_000 },
};

/** Per-queue settings: ack wait (workers send in-progress acks meanwhile), deliveries, back-off. */
export const WORK_QUEUES: Record<TaskKind, QueueSettings> = {
  audiobook: {
    stream: STREAMS.work.name,
    name: "audiobook",
    subject: "work.audiobook",
    ackWaitMs: 60_000,
    maxDeliver: 5,
    backoffMs: [5_000, 30_000, 120_000, 600_000],
  },
  "voice-stream": {
    stream: STREAMS.work.name,
    name: "voice-stream",
    subject: "work.voice-stream",
    ackWaitMs: 60_000,
    maxDeliver: 5,
    backoffMs: [5_000, 30_000, 120_000, 600_000],
  },
  subtitle: {
    stream: STREAMS.work.name,
    name: "subtitle",
    subject: "work.subtitle",
    ackWaitMs: 60_000,
    maxDeliver: 5,
    backoffMs: [5_000, 30_000, 120_000, 600_000],
  },
};

/**
 * Webhook deliveries (`work.webhook`), consumed by the gateways: one message per endpoint and event,
 * its attempts are redeliveries (the consumer naks with its own back-off, WEBHOOK_RETRY_BASE_MS, and
 * stops after WEBHOOK_MAX_ATTEMPTS, at most 50; `maxDeliver` leaves room for deliveries lost to a
 * gateway that stopped mid-attempt). The ack wait covers one attempt (WEBHOOK_TIMEOUT_MS, at most 60 s).
 */
export const WEBHOOK_QUEUE: QueueSettings = {
  stream: STREAMS.work.name,
  name: "webhook",
  subject: "work.webhook",
  ackWaitMs: 90_000,
  maxDeliver: 60,
  backoffMs: [5_000, 30_000, 120_000, 600_000],
};

/** The gateway's durable consumer of task events (the projection). */
export const PROJECTION_DURABLE = "gateway-projection";

const Language = z.enum(LANGUAGES);

/* ------------------------------------------------------------ cloned voices */

/** The engines that make cloned voices (the `engine` of a clone). */
export const CLONE_ENGINE_NAMES = ["elevenlabs", "voice-library", "match"] as const;

/** What a sample's speech sounds like (engines' VoiceProfile, in snake case on the wire). */
export const VoiceProfileSchema = z.object({
  median_pitch_hz: z.number().positive().nullable(),
  pitch_low_hz: z.number().positive().nullable(),
  pitch_high_hz: z.number().positive().nullable(),
  syllables_per_second: z.number().nonnegative().nullable(),
});
export type VoiceProfileWire = z.infer<typeof VoiceProfileSchema>;

/**
 * A cloned voice as it travels in synthesis requests and work messages (resolved by the gateway from the
 * caller's own clone, so the speaking process needs no store): `ref` is the engine's handle of the voice.
 */
export const ClonedVoiceSchema = z.object({
  id: z.string().min(1).max(64),
  name: z.string(),
  engine: z.enum(CLONE_ENGINE_NAMES),
  ref: z.string(),
  profile: VoiceProfileSchema,
});
export type ClonedVoiceWire = z.infer<typeof ClonedVoiceSchema>;

/** Make a voice from a sample: the serving process fetches the sample as the account, checks and measures it, and makes the voice at its engine. */
export const CloneCreateRequestSchema = z.object({
  /** The clone's id, chosen by the gateway (engines that keep named voices name theirs after it). */
  id: z.string().min(1).max(64),
  name: z.string().min(1),
  /** A file reference (URL, MEDIA_ROOT path, `upload:<id>`), fetched under the account's rights. */
  sample: z.string().min(1),
  language: Language.nullable(),
  account_id: z.string().min(1),
  request_id: z.string(),
});
export type CloneCreateRequest = z.infer<typeof CloneCreateRequestSchema>;

export const CloneCreateReplySchema = z.object({
  engine: z.enum(CLONE_ENGINE_NAMES),
  ref: z.string(),
  profile: VoiceProfileSchema,
  /** Decoded length of the sample. */
  sample_seconds: z.number().positive(),
  /** The languages the voice can speak. */
  languages: z.array(Language),
});
export type CloneCreateReply = z.infer<typeof CloneCreateReplySchema>;

/**
 * Refusals of `clone.create` / `clone.delete`. The first two are the client's doing (the gateway answers
 * 422 at `sample`, with the message in plain words), the rest engine trouble (502/503).
 */
export const CLONE_ERROR_CODES = [
  /** The sample cannot be fetched (unknown upload, unreachable URL, path outside the media root). */
  "sample_not_available",
  /** Not audio, shorter than 3 s or longer than 5 min of decoded sound, silent, or refused by the engine. */
  "sample_unusable",
  /** This deployment makes no cloned voices (CLONE_ENGINE=off). */
  "cloning_unavailable",
  "engine_unavailable",
  "engine_busy",
  "engine_failed",
] as const;
export type CloneErrorCode = (typeof CLONE_ERROR_CODES)[number];

/** Shortest and longest decoded sample a clone is made from, in seconds. */
export const CLONE_SAMPLE_SECONDS = { min: 3, max: 300 } as const;

export const CloneDeleteRequestSchema = z.object({
  clone: ClonedVoiceSchema,
  account_id: z.string().min(1),
  request_id: z.string(),
});
export type CloneDeleteRequest = z.infer<typeof CloneDeleteRequestSchema>;
export const CloneDeleteReplySchema = z.object({ deleted: z.boolean() });

/* ------------------------------------------------ pronunciation lexicons */

/**
 * A pronunciation lexicon as it travels in synthesis requests and work messages (resolved by the
 * gateway from the caller's own lexicons, so the speaking process needs no store).
 */
export const LexiconWireSchema = z.object({
  id: z.string().min(1).max(64),
  name: z.string(),
  entries: z.array(
    z.object({
      graphemes: z.array(z.string().min(1)).min(1),
      alias: z.string().nullable(),
      phoneme: z.string().nullable(),
      alphabet: z.string().nullable(),
    }),
  ),
});
export type LexiconWire = z.infer<typeof LexiconWireSchema>;

const workBase = {
  task_id: z.string().uuid(),
  account_id: z.string().min(1),
  file: z.string().min(1),
  source_language: Language,
  target_language: Language,
};

export const AudioBookWorkSchema = z.object({
  kind: z.literal("audiobook"),
  ...workBase,
  name: z.string(),
  preset_voice_name: z.string().nullable(),
  use_voice_clone: z.boolean(),
  voice_clone_sample: z.string().nullable(),
  /** The caller's clone named by `preset_voice_name: "clone:<id>"`, resolved by the gateway; absent in messages of older gateways. */
  clone: ClonedVoiceSchema.nullable().optional(),
  /** What the book file is written as; absent in messages of older gateways (mp3). */
  output_format: z.enum(AUDIO_BOOK_FORMATS).optional(),
  /** The cover to embed (fetched like the file); absent or null: none. */
  audio_book_cover: z.string().nullable().optional(),
  /** The caller's pronunciation lexicons named by `lexicons`, resolved by the gateway, in the order given. */
  lexicons: z.array(LexiconWireSchema).optional(),
});

export const VoiceStreamWorkSchema = z.object({
  kind: z.literal("voice-stream"),
  ...workBase,
  voice: z.string().nullable(),
  /** The caller's clone named by `voice: "clone:<id>"`, resolved by the gateway. */
  clone: ClonedVoiceSchema.nullable().optional(),
  /** Speak in a clone: of `voice_clone_sample` when given (made for this task, deleted after), else of the speech in the input. */
  use_voice_clone: z.boolean().optional(),
  voice_clone_sample: z.string().nullable().optional(),
  /** The input's own sound in the dubbed track: dropped (default; messages of older gateways) or ducked under the new speech. */
  original_audio: z.enum(ORIGINAL_AUDIO_MODES).optional(),
  /** "auto" (absent): a voice per speaker; "one": every line in the one voice. */
  speakers: z.enum(["auto", "one"]).optional(),
  /** The caller's pronunciation lexicons named by `lexicons`, resolved by the gateway, in the order given. */
  lexicons: z.array(LexiconWireSchema).optional(),
});

export const SubtitleWorkSchema = z.object({
  kind: z.literal("subtitle"),
  ...workBase,
  mode: z.enum(SUBTITLE_MODES),
  subtitle_format: z.enum(SUBTITLE_FORMATS),
});

export const WorkMessageSchema = z.discriminatedUnion("kind", [AudioBookWorkSchema, VoiceStreamWorkSchema, SubtitleWorkSchema]);
export type WorkMessage = z.infer<typeof WorkMessageSchema>;
export type AudioBookWork = z.infer<typeof AudioBookWorkSchema>;
export type VoiceStreamWork = z.infer<typeof VoiceStreamWorkSchema>;
export type SubtitleWork = z.infer<typeof SubtitleWorkSchema>;

/** Progress of a task, published by its worker; `seq` rises with every event of the task. */
export const TaskEventSchema = z.object({
  task_id: z.string().uuid(),
  kind: z.enum(TASK_KINDS),
  seq: z.number().int().positive(),
  status: z.enum(TASK_STATUSES),
  progress: z.number().min(0).max(100),
  error: z.string().nullable().optional(),
  /** Blob key of the result (completed). */
  result_key: z.string().nullable().optional(),
  /** Blob key of a subtitle file (completed subtitle jobs). */
  subtitle_key: z.string().nullable().optional(),
  /** The chapters of a finished audio book (completed), as the record shows them. */
  chapters: z.array(z.object({ title: z.string(), start_seconds: z.number().min(0), end_seconds: z.number().min(0) })).optional(),
  /** What went wrong without failing the task, in plain words (completed). */
  warnings: z.array(z.string()).optional(),
  /** How the lines were fitted to their slots (completed voice streams). */
  timing: z.object({ lines_sped_up: z.number().int().min(0), largest_factor: z.number().min(1) }).nullable().optional(),
  at: z.string().datetime(),
});
export type TaskEvent = z.infer<typeof TaskEventSchema>;

/**
 * "This record changed, re-read it": published (core NATS, at most once, never stored) by the gateway
 * that projected a change, for the gateways holding live progress streams of the record. `origin` is the
 * publishing gateway process, which has told its own streams already.
 */
export const RecordNoticeSchema = z.object({
  kind: z.enum(TASK_KINDS),
  id: z.string().min(1).max(64),
  origin: z.string().min(1).max(64),
});
export type RecordNotice = z.infer<typeof RecordNoticeSchema>;

export const SynthesizeRequestSchema = z.object({
  text: z.string().min(1),
  language: Language,
  voice: z.string().nullable(),
  /** Set when `voice` is `clone:<id>`: the caller's clone, resolved by the gateway. */
  clone: ClonedVoiceSchema.nullable().optional(),
  /** The caller's pronunciation lexicons named by `lexicons`, resolved by the gateway, in the order given. */
  lexicons: z.array(LexiconWireSchema).optional(),
  format: z.enum(AUDIO_FORMATS),
  account_id: z.string().min(1),
  request_id: z.string(),
});
export type SynthesizeRequest = z.infer<typeof SynthesizeRequestSchema>;

export const SynthesizeReplySchema = z.object({
  key: z.string().min(1),
  duration_seconds: z.number().nonnegative(),
  voice: z.string(),
});
export type SynthesizeReply = z.infer<typeof SynthesizeReplySchema>;

/**
 * The closed set of refusals the synthesis service replies with (`BUS_CATALOG.requests.synthesize.errors`).
 * The first six are the client's doing (the gateway answers 422 pointing at the field), the last three
 * are engine trouble (502/503).
 */
export const SYNTHESIS_ERROR_CODES = [
  /** Nothing speakable: empty, whitespace or punctuation only. */
  "text_empty",
  /** Longer than the service's per-request limit (SYNTHESIS_MAX_CHARACTERS). */
  "text_too_long",
  /** The voice cannot read the text's script. */
  "text_not_speakable",
  "unknown_voice",
  "voice_language_mismatch",
  "language_not_supported",
  /** The engine is missing, misconfigured or its service refuses this deployment's credentials. */
  "engine_unavailable",
  /** The engine is overloaded, rate-limited, timed out or was cancelled: retrying later may work. */
  "engine_busy",
  /** The engine ran and failed, or its service answered nonsense. */
  "engine_failed",
] as const;
export type SynthesisErrorCode = (typeof SYNTHESIS_ERROR_CODES)[number];

/** Default of SYNTHESIS_MAX_CHARACTERS: the most characters one synthesis request may carry. */
export const DEFAULT_SYNTHESIS_MAX_CHARACTERS = 5000;

export const VoiceSchema = z.object({
  name: z.string(),
  language: Language,
  engine: z.string(),
  gender: z.string().nullable().optional(),
  description: z.string(),
  default: z.boolean(),
});
export type Voice = z.infer<typeof VoiceSchema>;

export const VoicesRequestSchema = z.object({});
export const VoicesReplySchema = z.object({ voices: z.array(VoiceSchema) });
export type VoicesReply = z.infer<typeof VoicesReplySchema>;

/* ------------------------------------------------------------ capabilities */

export const TranslationPairSchema = z.object({
  source: Language,
  target: Language,
  /** Set when the pair is reached by translating through this language. */
  pivot: Language.nullable(),
  quality: z.enum(TRANSLATION_QUALITIES),
  /** The engines that translate this pair, in the order they are tried (ENGINE_ORDER_MT changes it). */
  engines: z.array(z.string()).optional(),
});

/** The recognition engines of one language, in the order they are tried (ENGINE_ORDER_STT changes it). */
export const EngineChainSchema = z.object({ language: Language, engines: z.array(z.string()) });

/**
 * What the configured engines can do. Each worker process answers it per kind of work it runs on
 * SUBJECTS.capabilities(kind), holding only what that kind uses (see `capabilitiesFor`).
 */
export const CapabilitiesSchema = z.object({
  /** `engines`: per language, the speech engines in the order their voices are tried (ENGINE_ORDER_TTS changes it). */
  synthesis: z.object({ languages: z.array(Language), engines: z.array(EngineChainSchema).optional() }),
  recognition: z.object({ languages: z.array(Language), engines: z.array(EngineChainSchema).optional() }),
  translation: z.object({ pairs: z.array(TranslationPairSchema) }),
  cloning: z.object({ available: z.boolean(), languages: z.array(Language) }),
  voices: z.array(VoiceSchema),
});
export type Capabilities = z.infer<typeof CapabilitiesSchema>;
export const CapabilitiesRequestSchema = z.object({});
