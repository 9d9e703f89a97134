import { resolve } from "node:path";
import { z } from "zod";

/** Names of the services one process can run (`SERVICES`). */
export const SERVICE_NAMES = ["gateway", "audiobook", "voice-stream", "subtitle", "synthesis"] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** Default of MAX_MEDIA_SECONDS: two hours, a feature film. */
export const DEFAULT_MAX_MEDIA_SECONDS = 7_200;
/** Default MAX_VIDEO_PIXELS: 8192×4320 (8K), the media package's own default too. */
export const DEFAULT_MAX_VIDEO_PIXELS = 8192 * 4320;
/** Default of MAX_BOOK_CHARACTERS: a long novel (about 18 hours of speech). */
export const DEFAULT_MAX_BOOK_CHARACTERS = 1_000_000;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

export interface SeedKey {
  account: string;
  key: string;
}

const ACCOUNT_ID = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/** Parses `alice:key1,bob:key2`. */
function parseSeedKeys(raw: string, ctx: z.RefinementCtx): SeedKey[] {
  const out: SeedKey[] = [];
  for (const part of raw.split(",").map((p) => p.trim()).filter(Boolean)) {
    const at = part.indexOf(":");
    const account = at > 0 ? part.slice(0, at).trim() : "";
    const key = at > 0 ? part.slice(at + 1).trim() : "";
    if (!ACCOUNT_ID.test(account) || key.length < 4) {
      ctx.addIssue({
        code: "custom",
        message: `expected a comma list of account:key pairs (account of letters, digits, . _ @ -; key of at least 4 characters), got an entry '${part.slice(0, 20)}…'`,
      });
      return z.NEVER;
    }
    out.push({ account, key });
  }
  return out;
}

/** A whole number from 1 to `max`; empty or unset gives `fallback`; with `allowOff`, `0` or `off` (any case) gives undefined. */
const wholeNumber = (fallback: number | undefined, max: number, allowOff: boolean) =>
  z
    .string()
    .optional()
    .transform((raw, ctx) => {
      const v = (raw ?? "").trim();
      if (v === "") return fallback;
      if (allowOff && (v === "0" || v.toLowerCase() === "off")) return undefined;
      const n = Number(v);
      if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < 1 || n > max) {
        ctx.addIssue({
          code: "custom",
          message: `expected a whole number from 1 to ${max}${allowOff ? ", or 0 / off to turn the limit off" : ""}`,
        });
        return z.NEVER;
      }
      return n;
    });

const optionalString = z
  .string()
  .trim()
  .transform((v) => (v === "" ? undefined : v))
  .optional();

const optionalUrl = (protocols: string[]) =>
  optionalString.refine(
    (v) => {
      if (v === undefined) return true;
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    { message: `expected a URL with scheme ${protocols.join(" or ")}` },
  );

/** An OpenAI-compatible service address for one capability: a URL, or "off" to switch it off. */
const serviceUrlOrOff = optionalString.refine(
  (v) => {
    if (v === undefined || v.toLowerCase() === "off") return true;
    try {
      return ["http:", "https:"].includes(new URL(v).protocol);
    } catch {
      return false;
    }
  },
  { message: "expected a URL with scheme http: or https:, or off" },
);

/** A comma list of engine names (letters, digits, '.', '_', '-'), in the order they are tried. */
const engineOrder = z
  .string()
  .default("")
  .transform((v) => v.split(",").map((s) => s.trim()).filter(Boolean))
  .refine((names) => names.every((n) => /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(n)), { message: "expected a comma list of engine names such as whisper-cpp,pocketsphinx" });

export interface PiperVoiceSetting {
  /** A language name ("English") or ISO 639-1 code ("en"), as written. */
  language: string;
  /** The server's voice id, e.g. "en_US-lessac-medium". */
  voice: string;
  /** Speaker of a multi-speaker voice. */
  speaker?: string | undefined;
}

/** Parses PIPER_VOICES: `language=voice[:speaker]`, comma separated. */
function parsePiperVoices(raw: string, ctx: z.RefinementCtx): PiperVoiceSetting[] {
  const out: PiperVoiceSetting[] = [];
  for (const part of raw.split(",").map((p) => p.trim()).filter(Boolean)) {
    const match = /^([A-Za-z]{2,20})\s*=\s*([A-Za-z0-9][A-Za-z0-9_.-]{0,79})(?::([A-Za-z0-9][A-Za-z0-9_.-]{0,39}))?$/.exec(part);
    if (!match) {
      ctx.addIssue({ code: "custom", message: `expected a comma list of language=voice entries such as English=en_US-lessac-medium (a speaker after ':'), got '${part.slice(0, 40)}'` });
      return z.NEVER;
    }
    out.push({ language: match[1] as string, voice: match[2] as string, ...(match[3] === undefined ? {} : { speaker: match[3] }) });
  }
  return out;
}

/** The address for one capability: its own variable, else OPENAI_BASE_URL; none when switched off. */
/** The engines that make cloned voices (`CLONE_ENGINE`), and `off`. */
export const CLONE_ENGINES = ["elevenlabs", "voice-library", "match", "off"] as const;
export type CloneEngineSetting = (typeof CLONE_ENGINES)[number];

/** The default public ElevenLabs API. */
export const ELEVENLABS_DEFAULT_BASE_URL = "https://api.elevenlabs.io";

export interface CloneSettings {
  engine: CloneEngineSetting;
  /** Set when `engine` is `elevenlabs`. */
  elevenlabs?: { apiKey: string; baseUrl: string; model: string } | undefined;
  /** Set when `engine` is `voice-library`: the OpenAI-compatible speech server that keeps named voices (OPENAI_TTS_BASE_URL). */
  voiceLibrary?: { baseUrl: string; apiKey?: string | undefined } | undefined;
}

function cloneSettings(
  env: { CLONE_ENGINE?: CloneEngineSetting | undefined; ELEVENLABS_API_KEY?: string | undefined; ELEVENLABS_BASE_URL?: string | undefined; ELEVENLABS_MODEL: string; OPENAI_API_KEY?: string | undefined },
  ttsUrl: string | undefined,
): CloneSettings {
  const engine = env.CLONE_ENGINE ?? (env.ELEVENLABS_API_KEY ? "elevenlabs" : "match");
  return {
    engine,
    elevenlabs:
      engine === "elevenlabs" && env.ELEVENLABS_API_KEY
        ? { apiKey: env.ELEVENLABS_API_KEY, baseUrl: env.ELEVENLABS_BASE_URL ?? ELEVENLABS_DEFAULT_BASE_URL, model: env.ELEVENLABS_MODEL }
        : undefined,
    voiceLibrary: engine === "voice-library" && ttsUrl ? { baseUrl: ttsUrl, apiKey: env.OPENAI_API_KEY } : undefined,
  };
}

function serviceUrl(own: string | undefined, shared: string | undefined): string | undefined {
  if (own?.toLowerCase() === "off") return undefined;
  return own ?? shared;
}

/** DeepL's two APIs: free keys (ending in `:fx`) are served by api-free only. */
export const DEEPL_FREE_BASE_URL = "https://api-free.deepl.com";
export const DEEPL_PRO_BASE_URL = "https://api.deepl.com";

/** DeepL when a key is set and DEEPL_BASE_URL is not off; the address by the key unless DEEPL_BASE_URL names one. */
function deeplSettings(apiKey: string | undefined, baseUrl: string | undefined): { apiKey: string; baseUrl: string } | undefined {
  if (!apiKey || baseUrl?.toLowerCase() === "off") return undefined;
  return { apiKey, baseUrl: baseUrl ?? (apiKey.endsWith(":fx") ? DEEPL_FREE_BASE_URL : DEEPL_PRO_BASE_URL) };
}

export const EnvSchema = z
  .object({
    NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
    PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    HOST: z.string().default("0.0.0.0"),
    DATA_DIR: z.string().default("./data"),
    MEDIA_ROOT: optionalString,
    /**
     * `shared`: every account reads every file under MEDIA_ROOT (one tenant, the single-machine default);
     * `account`: an account's paths resolve under `MEDIA_ROOT/<its percent-encoded id>/` only.
     */
    MEDIA_ROOT_SCOPE: z.enum(["shared", "account"]).default("shared"),
    /** Largest upload (POST /v1/uploads), in bytes; 1 GiB by default. */
    UPLOAD_MAX_BYTES: z.coerce.number().int().min(1).max(64 * 1024 * 1024 * 1024).default(1024 * 1024 * 1024),
    /** How long an upload can be used (and is kept) after it was made, in seconds; 24 h by default. */
    UPLOAD_TTL_SECONDS: z.coerce.number().int().min(60).max(365 * 24 * 3600).default(86_400),
    /** How often a gateway deletes expired uploads (their record and blob), in milliseconds. */
    UPLOAD_SWEEP_INTERVAL_MS: z.coerce.number().int().min(1_000).max(24 * 3_600_000).default(300_000),
    PUBLIC_BASE_URL: optionalUrl(["http:", "https:"]),
    VOICELOC_API_KEYS: z
      .string()
      .default("")
      .transform((v, ctx) => parseSeedKeys(v, ctx)),
    JWT_SECRET: optionalString.refine((v) => v === undefined || v.length >= 32, {
      message: "must be at least 32 characters (HS256 needs a 256-bit secret)",
    }),
    JWKS_URL: optionalUrl(["http:", "https:"]),
    JWT_ISSUER: optionalString,
    JWT_AUDIENCE: optionalString,
    /** Refuse access tokens without `exp` (they would never expire). */
    JWT_REQUIRE_EXP: z.enum(["true", "false"]).default("true"),
    SIGNING_SECRET: optionalString.refine((v) => v === undefined || v.length >= 32, {
      message: "must be at least 32 characters",
    }),
    MONGODB_URL: optionalUrl(["mongodb:", "mongodb+srv:"]),
    MONGODB_DB: z.string().regex(/^[A-Za-z0-9_-]{1,63}$/).default("voiceloc"),
    NATS_URL: optionalUrl(["nats:", "tls:", "ws:", "wss:"]),
    LOG_LEVEL: z.enum(LOG_LEVELS).default("info"),
    SERVICES: z
      .string()
      .default(SERVICE_NAMES.join(","))
      .transform((v, ctx) => {
        const names = v.split(",").map((s) => s.trim()).filter(Boolean);
        const unknown = names.filter((n) => !(SERVICE_NAMES as readonly string[]).includes(n));
        if (unknown.length > 0 || names.length === 0) {
          ctx.addIssue({ code: "custom", message: `expected a comma list of ${SERVICE_NAMES.join(", ")}; unknown: ${unknown.join(", ") || "(empty)"}` });
          return z.NEVER;
        }
        return [...new Set(names)] as ServiceName[];
      }),
    MAX_BODY_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
    SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).default(10_000),
    BLOB_STORE: z.enum(["fs", "nats"]).default("fs"),
    FFMPEG_PATH: optionalString,
    SYNTHESIS_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
    /** Characters one synthesis request may carry; the API schema's own cap is 5,000. */
    SYNTHESIS_MAX_CHARACTERS: z.coerce.number().int().min(1).max(5000).default(5000),
    OPENAI_BASE_URL: optionalUrl(["http:", "https:"]),
    OPENAI_TTS_BASE_URL: serviceUrlOrOff,
    OPENAI_STT_BASE_URL: serviceUrlOrOff,
    OPENAI_MT_BASE_URL: serviceUrlOrOff,
    OPENAI_API_KEY: optionalString,
    OPENAI_TTS_MODEL: z.string().min(1).default("gpt-4o-mini-tts"),
    /** Voice ids of the speech service; unset: the voices it lists (`GET /v1/audio/voices`), else OpenAI's preset voices. */
    OPENAI_TTS_VOICES: z
      .string()
      .optional()
      .transform((v) => {
        const names = (v ?? "").split(",").map((s) => s.trim()).filter(Boolean);
        return names.length > 0 ? names : undefined;
      }),
    /** Languages the OpenAI-compatible speech server's voices are offered for (names or ISO 639-1 codes); empty: every language it may speak. */
    OPENAI_TTS_LANGUAGES: z
      .string()
      .default("")
      .transform((v) => v.split(",").map((s) => s.trim()).filter(Boolean))
      .refine((names) => names.every((n) => /^[A-Za-z]{2,16}$/.test(n)), { message: "expected a comma list of languages such as English,es" }),
    /** Who makes cloned voices: default `elevenlabs` when ELEVENLABS_API_KEY is set, otherwise `match` (offline). */
    CLONE_ENGINE: z.enum(CLONE_ENGINES).optional(),
    ELEVENLABS_API_KEY: optionalString,
    ELEVENLABS_BASE_URL: optionalUrl(["http:", "https:"]),
    ELEVENLABS_MODEL: z.string().min(1).default("eleven_multilingual_v2"),
    FETCH_ALLOW_PRIVATE_HOSTS: z
      .string()
      .default("")
      .transform((v) => v.split(",").map((s) => s.trim()).filter(Boolean)),
    FETCH_MAX_BYTES: z.coerce.number().int().min(1024).default(2 * 1024 * 1024 * 1024),
    S3_ENDPOINT: optionalUrl(["http:", "https:"]),
    S3_REGION: z.string().default("us-east-1"),
    S3_ACCESS_KEY_ID: optionalString,
    S3_SECRET_ACCESS_KEY: optionalString,
    S3_FORCE_PATH_STYLE: z.enum(["true", "false"]).default("true"),
    GCS_HMAC_ACCESS_KEY_ID: optionalString,
    GCS_HMAC_SECRET: optionalString,
    OPENAI_STT_MODEL: z.string().min(1).default("whisper-1"),
    OPENAI_MT_MODEL: optionalString,
    /** A LibreTranslate server (`POST /translate`, `GET /languages`), or off. */
    LIBRETRANSLATE_URL: serviceUrlOrOff,
    LIBRETRANSLATE_API_KEY: optionalString,
    /** A DeepL API key: turns DeepL translation on (free keys end in `:fx`). */
    DEEPL_API_KEY: optionalString,
    /** The DeepL API root (default by the key), or off. */
    DEEPL_BASE_URL: serviceUrlOrOff,
    /** A whisper.cpp server (`whisper-server`, `POST /inference`), or off. */
    WHISPER_CPP_URL: serviceUrlOrOff,
    /** A Piper HTTP server (`python3 -m piper.http_server`: `POST /synthesize`, `GET /voices`), or off. */
    PIPER_URL: serviceUrlOrOff,
    /** Piper voices per language (`English=en_US-lessac-medium,es=es_ES-davefx-medium`, a speaker after `:`); unset: every voice the server lists. */
    PIPER_VOICES: z.string().default("").transform(parsePiperVoices),
    /** Engine names tried first, in this order, for speech, recognition and translation (the others follow in their usual order). */
    ENGINE_ORDER_TTS: engineOrder,
    ENGINE_ORDER_STT: engineOrder,
    ENGINE_ORDER_MT: engineOrder,
    WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(1),
    /**
     * Ack wait of the task work queues (default: each queue's own, 60 s): a task whose worker vanished
     * (SIGKILL, lost node) is handed to another worker after this long; running tasks send in-progress
     * acks every quarter of it. Set the same value on every process of a mesh.
     */
    WORK_ACK_WAIT_MS: wholeNumber(undefined, 3_600_000, false).refine((v) => v === undefined || v >= 1_000, {
      message: "must be at least 1000 (milliseconds): in-progress acks go out every quarter of it",
    }),
    /** Niceness of engine and ffmpeg child processes (0 = off, 19 = lowest CPU priority). */
    ENGINE_NICE: z.coerce.number().int().min(0).max(19).default(10),
    /**
     * Address-space limit of every engine and ffmpeg child process, in MiB (0 = none). A child that
     * needs more fails on an allocation (the task fails in plain words, never retried) instead of taking
     * the machine's memory. Default 4096: an 8K (35-megapixel) burn-in needs about 3 GiB here.
     */
    CHILD_MEMORY_LIMIT_MB: z.coerce.number().int().min(0).max(1_048_576).refine((v) => v === 0 || v >= 256, { message: "must be 0 (no limit) or at least 256 (MiB): ffmpeg alone needs about 300 to start" }).default(4096),
    /** Largest video picture decoded (width × height of the decoded frames, not the headers): default 8192×4320 (8K), 35,389,440. */
    MAX_VIDEO_PIXELS: z.coerce.number().int().min(1).max(2_147_483_647).default(DEFAULT_MAX_VIDEO_PIXELS),
    /** At most one request a microsecond (the limiter's resolution): 60,000,000 a minute. */
    RATE_LIMIT_PER_MINUTE: wholeNumber(600, 60_000_000, true),
    RATE_LIMIT_BURST: wholeNumber(undefined, 60_000_000, false),
    /** Live progress streams (`…/events`): a `: heartbeat` comment after this long without another frame. */
    SSE_HEARTBEAT_MS: z.coerce.number().int().min(1_000).max(300_000).default(15_000),
    /** Live progress streams one account (owner) may hold open at once on one gateway process; more: 429. */
    SSE_MAX_STREAMS_PER_ACCOUNT: z.coerce.number().int().min(1).max(100_000).default(100),
    /** Longest media a voice stream (or subtitle task) accepts, in decoded seconds. */
    MAX_MEDIA_SECONDS: z.coerce.number().int().min(1).max(7 * 24 * 3600).default(DEFAULT_MAX_MEDIA_SECONDS),
    /** Most characters of text one audio book may have. */
    MAX_BOOK_CHARACTERS: z.coerce.number().int().min(1).max(100_000_000).default(DEFAULT_MAX_BOOK_CHARACTERS),
    /** Scheduling: tasks of one kind one account may have published and unfinished; the rest wait queued. */
    ACCOUNT_MAX_TASKS_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).default(4),
    /**
     * Scheduling: tasks of one kind (all accounts) published to the work queue and not yet started by a
     * worker; the rest wait queued and go out in turns across accounts as workers start tasks. Default 1
     * (one process, one worker per kind); with autoscaled workers, maxReplicaCount × lagThreshold.
     */
    QUEUE_MAX_UNSTARTED_TASKS: z.coerce.number().int().min(1).max(10_000).default(1),
    SUBTITLE_MAX_SECONDS: z.coerce.number().int().min(1).max(86_400).default(3600),
    /** OTLP/HTTP collector base URL; tracing (the OpenTelemetry SDK) runs only when it is set. */
    OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl(["http:", "https:"]),
    /** Headers of OTLP requests, `key=value,key2=value2` (values percent-encoded), e.g. a collector's API key. */
    OTEL_EXPORTER_OTLP_HEADERS: optionalString.transform((raw, ctx) => {
      if (raw === undefined) return undefined;
      const out: Record<string, string> = {};
      for (const part of raw.split(",").map((p) => p.trim()).filter(Boolean)) {
        const at = part.indexOf("=");
        const key = at > 0 ? part.slice(0, at).trim() : "";
        let value: string | undefined;
        try {
          value = decodeURIComponent(part.slice(at + 1).trim());
        } catch {
          value = undefined;
        }
        if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(key) || value === undefined) {
          ctx.addIssue({ code: "custom", message: "expected a comma list of key=value pairs (values percent-encoded)" });
          return z.NEVER;
        }
        out[key] = value;
      }
      return out;
    }),
    /** `service.name` of the spans; default `voiceloc-<SERVICES joined by +>`. */
    OTEL_SERVICE_NAME: optionalString,
    /** How long one webhook delivery attempt may take (connect, send, answer), in ms. */
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
    /** Wait before the second attempt of a webhook delivery; it doubles per attempt (±20 % jitter). */
    WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(1).max(3_600_000).default(45_000),
    /** Attempts of one webhook delivery before the endpoint is disabled (12 with the default base: about 25 h). */
    WEBHOOK_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(12),
    /** Webhook deliveries one gateway process sends at once. */
    WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(8),
    /** When set, GET /metrics needs `Authorization: Bearer <METRICS_TOKEN>`. */
    METRICS_TOKEN: optionalString.refine((v) => v === undefined || v.length >= 16, { message: "must be at least 16 characters" }),
    /** `info.contact` of /openapi.json: who answers questions about this deployment's API. */
    API_CONTACT_NAME: optionalString,
    API_CONTACT_URL: optionalUrl(["http:", "https:"]),
    API_CONTACT_EMAIL: optionalString.refine((v) => v === undefined || z.email().safeParse(v).success, { message: "expected an email address" }),
    /** `info.license` of /openapi.json: the terms the API is offered under (name, and a URL or an SPDX identifier). */
    API_LICENSE_NAME: optionalString,
    API_LICENSE_URL: optionalUrl(["http:", "https:"]),
    API_LICENSE_IDENTIFIER: optionalString.refine((v) => v === undefined || /^[A-Za-z0-9.+:() -]+$/.test(v), {
      message: "expected an SPDX license expression, e.g. Apache-2.0 or LicenseRef-Proprietary",
    }),
    /** `open`: anyone may create an account on the dashboard's sign-up page; `closed` (default): accounts come from `pnpm accounts create`. */
    SIGNUP: z.enum(["open", "closed"]).default("closed"),
    /** `approval`: live keys work only for accounts an operator approved (`pnpm accounts approve`); sandbox keys never need it. */
    LIVE_KEYS: z.enum(["open", "approval"]).default("open"),
    /** A dashboard session ends after this many seconds without a request (default 2 hours). */
    SESSION_IDLE_SECONDS: z.coerce.number().int().min(60).max(30 * 86_400).default(7_200),
    /** A dashboard session ends this many seconds after sign-in, however active (default 24 hours). */
    SESSION_MAX_SECONDS: z.coerce.number().int().min(60).max(365 * 86_400).default(86_400),
    /** Failed sign-ins one account may have within LOGIN_WINDOW_SECONDS before it is refused for the rest of the window. */
    LOGIN_MAX_FAILURES_PER_ACCOUNT: z.coerce.number().int().min(1).max(10_000).default(5),
    /** Failed sign-ins one client address may have within LOGIN_WINDOW_SECONDS (any accounts). */
    LOGIN_MAX_FAILURES_PER_ADDRESS: z.coerce.number().int().min(1).max(100_000).default(20),
    /** The sliding window of the sign-in and sign-up throttles (default 15 minutes). */
    LOGIN_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
    /** Sign-ups (SIGNUP=open) one client address may send within LOGIN_WINDOW_SECONDS; then 429 until the oldest leaves the window. */
    SIGNUP_MAX_PER_ADDRESS: z.coerce.number().int().min(1).max(100_000).default(25),
    /** `true`: the client address for the sign-in throttle is the first X-Forwarded-For entry (only behind a proxy that sets it). */
    TRUST_PROXY: z.enum(["true", "false"]).default("false"),
    /** How long a password reset link printed by `pnpm accounts reset-link` works (default 1 hour). */
    RESET_LINK_TTL_SECONDS: z.coerce.number().int().min(60).max(7 * 86_400).default(3_600),
    /** Sandbox keys: most characters of one audio book's text (default 5,000). */
    SANDBOX_MAX_BOOK_CHARACTERS: z.coerce.number().int().min(1).max(100_000_000).default(5_000),
    /** Sandbox keys: longest media of a voice stream or subtitle task, in decoded seconds (default 60). */
    SANDBOX_MAX_MEDIA_SECONDS: z.coerce.number().int().min(1).max(7 * 24 * 3600).default(60),
    /** Sandbox keys: largest video picture decoded, in pixels (default 1920×1080, 2,073,600). */
    SANDBOX_MAX_VIDEO_PIXELS: z.coerce.number().int().min(1).max(2_147_483_647).default(1920 * 1080),
    /** Sandbox keys: most characters of one speech synthesis request (default 500). */
    SANDBOX_MAX_SPEECH_CHARACTERS: z.coerce.number().int().min(1).max(5_000).default(500),
    /** Sandbox keys: unfinished (queued or processing) tasks of all kinds one account may have; creating more is a 429 (default 2). */
    SANDBOX_MAX_TASKS_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).default(2),
    /** Set by pnpm to the directory the command was run from; relative paths resolve against it. */
    INIT_CWD: optionalString,
  })
  .superRefine((env, ctx) => {
    for (const problem of crossFieldProblems(env)) ctx.addIssue({ code: "custom", path: [problem.variables.join(", ")], message: problem.message });
  })
  .transform((env) => {
    const base = env.INIT_CWD ?? process.cwd();
    const dataDir = resolve(base, env.DATA_DIR);
    const ttsUrl = serviceUrl(env.OPENAI_TTS_BASE_URL, env.OPENAI_BASE_URL);
    const sttUrl = serviceUrl(env.OPENAI_STT_BASE_URL, env.OPENAI_BASE_URL);
    const mtUrl = serviceUrl(env.OPENAI_MT_BASE_URL, env.OPENAI_BASE_URL);
    return {
      nodeEnv: env.NODE_ENV,
      port: env.PORT,
      host: env.HOST,
      dataDir,
      mediaRoot: env.MEDIA_ROOT ? resolve(base, env.MEDIA_ROOT) : resolve(dataDir, "media"),
      mediaRootScope: env.MEDIA_ROOT_SCOPE,
      uploads: { maxBytes: env.UPLOAD_MAX_BYTES, ttlSeconds: env.UPLOAD_TTL_SECONDS, sweepIntervalMs: env.UPLOAD_SWEEP_INTERVAL_MS },
      publicBaseUrl: (env.PUBLIC_BASE_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, ""),
      seedKeys: env.VOICELOC_API_KEYS,
      jwt: {
        secret: env.JWT_SECRET,
        jwksUrl: env.JWKS_URL,
        issuer: env.JWT_ISSUER,
        audience: env.JWT_AUDIENCE,
        requireExp: env.JWT_REQUIRE_EXP === "true",
      },
      signingSecret: env.SIGNING_SECRET,
      mongodb: env.MONGODB_URL ? { url: env.MONGODB_URL, dbName: env.MONGODB_DB } : undefined,
      natsUrl: env.NATS_URL,
      logLevel: env.LOG_LEVEL,
      services: env.SERVICES,
      maxBodyBytes: env.MAX_BODY_BYTES,
      shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
      blobStore: env.BLOB_STORE,
      ffmpegPath: env.FFMPEG_PATH,
      synthesisConcurrency: env.SYNTHESIS_CONCURRENCY,
      synthesisMaxCharacters: env.SYNTHESIS_MAX_CHARACTERS,
      fetch: {
        allowPrivateHosts: env.FETCH_ALLOW_PRIVATE_HOSTS,
        maxBytes: env.FETCH_MAX_BYTES,
        s3:
          env.S3_ACCESS_KEY_ID && env.S3_SECRET_ACCESS_KEY
            ? {
                ...(env.S3_ENDPOINT ? { endpoint: env.S3_ENDPOINT } : {}),
                region: env.S3_REGION,
                accessKeyId: env.S3_ACCESS_KEY_ID,
                secretAccessKey: env.S3_SECRET_ACCESS_KEY,
                forcePathStyle: env.S3_FORCE_PATH_STYLE === "true",
              }
            : undefined,
        gs:
          env.GCS_HMAC_ACCESS_KEY_ID && env.GCS_HMAC_SECRET
            ? { accessKeyId: env.GCS_HMAC_ACCESS_KEY_ID, secretAccessKey: env.GCS_HMAC_SECRET }
            : undefined,
      },
      openaiStt: sttUrl ? { baseUrl: sttUrl, apiKey: env.OPENAI_API_KEY, model: env.OPENAI_STT_MODEL } : undefined,
      openaiMt: mtUrl && env.OPENAI_MT_MODEL ? { baseUrl: mtUrl, apiKey: env.OPENAI_API_KEY, model: env.OPENAI_MT_MODEL } : undefined,
      libreTranslate: serviceUrl(env.LIBRETRANSLATE_URL, undefined) ? { baseUrl: env.LIBRETRANSLATE_URL as string, apiKey: env.LIBRETRANSLATE_API_KEY } : undefined,
      deepl: deeplSettings(env.DEEPL_API_KEY, env.DEEPL_BASE_URL),
      whisperCpp: serviceUrl(env.WHISPER_CPP_URL, undefined) ? { baseUrl: env.WHISPER_CPP_URL as string } : undefined,
      piper: serviceUrl(env.PIPER_URL, undefined) ? { baseUrl: env.PIPER_URL as string, voices: env.PIPER_VOICES.length > 0 ? env.PIPER_VOICES : undefined } : undefined,
      /** Engine ids tried first per kind of work, in order. */
      engineOrder: { tts: env.ENGINE_ORDER_TTS, stt: env.ENGINE_ORDER_STT, mt: env.ENGINE_ORDER_MT },
      workerConcurrency: env.WORKER_CONCURRENCY,
      workAckWaitMs: env.WORK_ACK_WAIT_MS,
      /** Niceness the workers' child processes (engines, ffmpeg) run at; 0 leaves them at this process's priority. */
      engineNice: env.ENGINE_NICE,
      /** Address-space limit of every child process (engines, ffmpeg), in bytes; 0 = none. */
      childMemoryLimitBytes: env.CHILD_MEMORY_LIMIT_MB * 1024 * 1024,
      /** Largest decoded video picture, in pixels. */
      maxVideoPixels: env.MAX_VIDEO_PIXELS,
      /** Per-credential request rate on /v1 (a token bucket); undefined when off. Burst defaults to 10 seconds' worth. */
      rateLimit:
        env.RATE_LIMIT_PER_MINUTE === undefined
          ? undefined
          : { perMinute: env.RATE_LIMIT_PER_MINUTE, burst: env.RATE_LIMIT_BURST ?? Math.ceil(env.RATE_LIMIT_PER_MINUTE / 6) },
      /** Live progress over Server-Sent Events: heartbeat period and open streams per owner (across the gateways sharing the store). */
      sse: { heartbeatMs: env.SSE_HEARTBEAT_MS, maxStreamsPerAccount: env.SSE_MAX_STREAMS_PER_ACCOUNT },
      maxMediaSeconds: env.MAX_MEDIA_SECONDS,
      maxBookCharacters: env.MAX_BOOK_CHARACTERS,
      scheduling: { accountMaxTasksInFlight: env.ACCOUNT_MAX_TASKS_IN_FLIGHT, queueMaxUnstartedTasks: env.QUEUE_MAX_UNSTARTED_TASKS },
      subtitleMaxSeconds: env.SUBTITLE_MAX_SECONDS,
      openaiTts: ttsUrl
        ? {
            baseUrl: ttsUrl,
            apiKey: env.OPENAI_API_KEY,
            model: env.OPENAI_TTS_MODEL,
            voices: env.OPENAI_TTS_VOICES,
            ...(env.OPENAI_TTS_LANGUAGES.length > 0 ? { languages: env.OPENAI_TTS_LANGUAGES } : {}),
          }
        : undefined,
      clone: cloneSettings(env, ttsUrl),
      /** `info.contact` and `info.license` of the OpenAPI document. */
      apiInfo: apiInfo(env),
      accounts: {
        signup: env.SIGNUP,
        liveKeys: env.LIVE_KEYS,
        sessionIdleSeconds: env.SESSION_IDLE_SECONDS,
        sessionMaxSeconds: env.SESSION_MAX_SECONDS,
        loginMaxFailuresPerAccount: env.LOGIN_MAX_FAILURES_PER_ACCOUNT,
        loginMaxFailuresPerAddress: env.LOGIN_MAX_FAILURES_PER_ADDRESS,
        loginWindowSeconds: env.LOGIN_WINDOW_SECONDS,
        signupMaxPerAddress: env.SIGNUP_MAX_PER_ADDRESS,
        trustProxy: env.TRUST_PROXY === "true",
        resetLinkTtlSeconds: env.RESET_LINK_TTL_SECONDS,
      },
      /** Limits of sandbox keys (records owned by `sandbox:<account>`). */
      sandbox: {
        maxBookCharacters: env.SANDBOX_MAX_BOOK_CHARACTERS,
        maxMediaSeconds: env.SANDBOX_MAX_MEDIA_SECONDS,
        maxVideoPixels: env.SANDBOX_MAX_VIDEO_PIXELS,
        maxSpeechCharacters: env.SANDBOX_MAX_SPEECH_CHARACTERS,
        maxTasksInFlight: env.SANDBOX_MAX_TASKS_IN_FLIGHT,
      },
      webhooks: {
        timeoutMs: env.WEBHOOK_TIMEOUT_MS,
        retryBaseMs: env.WEBHOOK_RETRY_BASE_MS,
        maxAttempts: env.WEBHOOK_MAX_ATTEMPTS,
        concurrency: env.WEBHOOK_CONCURRENCY,
      },
      telemetry: {
        /** Tracing exports here over OTLP/HTTP; undefined: no tracing SDK at all. */
        otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
        otlpHeaders: env.OTEL_EXPORTER_OTLP_HEADERS,
        serviceName: env.OTEL_SERVICE_NAME ?? `voiceloc-${env.SERVICES.join("+")}`,
        metricsToken: env.METRICS_TOKEN,
      },
    };
  });

export type Config = z.output<typeof EnvSchema>;

/** Default `info.contact.name` of the OpenAPI document. */
export const DEFAULT_API_CONTACT_NAME = "Voice Localization Service operators";
/** Default `info.license` of the OpenAPI document: the deployment's own terms, no public licence granted. */
export const DEFAULT_API_LICENSE = { name: "Proprietary", identifier: "LicenseRef-Proprietary" } as const;

export interface ApiInfo {
  contact: { name: string; url?: string; email?: string };
  license: { name: string; url?: string; identifier?: string };
}

function apiInfo(env: {
  API_CONTACT_NAME?: string | undefined;
  API_CONTACT_URL?: string | undefined;
  API_CONTACT_EMAIL?: string | undefined;
  API_LICENSE_NAME?: string | undefined;
  API_LICENSE_URL?: string | undefined;
  API_LICENSE_IDENTIFIER?: string | undefined;
}): ApiInfo {
  const contact: ApiInfo["contact"] = { name: env.API_CONTACT_NAME ?? DEFAULT_API_CONTACT_NAME };
  if (env.API_CONTACT_URL) contact.url = env.API_CONTACT_URL;
  if (env.API_CONTACT_EMAIL) contact.email = env.API_CONTACT_EMAIL;
  const custom = env.API_LICENSE_NAME ?? env.API_LICENSE_URL ?? env.API_LICENSE_IDENTIFIER;
  if (custom === undefined) return { contact, license: { ...DEFAULT_API_LICENSE } };
  const license: ApiInfo["license"] = { name: env.API_LICENSE_NAME ?? env.API_LICENSE_IDENTIFIER ?? "License" };
  if (env.API_LICENSE_URL) license.url = env.API_LICENSE_URL;
  if (env.API_LICENSE_IDENTIFIER) license.identifier = env.API_LICENSE_IDENTIFIER;
  return { contact, license };
}

interface CrossFieldInput {
  NATS_URL?: string | undefined;
  BLOB_STORE: "fs" | "nats";
  SERVICES: ServiceName[];
  S3_ACCESS_KEY_ID?: string | undefined;
  S3_SECRET_ACCESS_KEY?: string | undefined;
  S3_ENDPOINT?: string | undefined;
  GCS_HMAC_ACCESS_KEY_ID?: string | undefined;
  GCS_HMAC_SECRET?: string | undefined;
  JWT_SECRET?: string | undefined;
  JWKS_URL?: string | undefined;
  JWT_ISSUER?: string | undefined;
  JWT_AUDIENCE?: string | undefined;
  OPENAI_BASE_URL?: string | undefined;
  OPENAI_MT_BASE_URL?: string | undefined;
  OPENAI_MT_MODEL?: string | undefined;
  OPENAI_TTS_BASE_URL?: string | undefined;
  PIPER_URL?: string | undefined;
  PIPER_VOICES: PiperVoiceSetting[];
  CLONE_ENGINE?: CloneEngineSetting | undefined;
  ELEVENLABS_API_KEY?: string | undefined;
  API_LICENSE_URL?: string | undefined;
  API_LICENSE_IDENTIFIER?: string | undefined;
  DEEPL_API_KEY?: string | undefined;
  DEEPL_BASE_URL?: string | undefined;
}

/**
 * Settings that are each valid alone but contradict each other; each would otherwise be ignored
 * silently (e.g. a blob store on NATS without a NATS server falls back to the filesystem).
 */
function crossFieldProblems(env: CrossFieldInput): Array<{ variables: string[]; message: string }> {
  const problems: Array<{ variables: string[]; message: string }> = [];
  if (env.BLOB_STORE === "nats" && !env.NATS_URL) {
    problems.push({ variables: ["BLOB_STORE", "NATS_URL"], message: "BLOB_STORE=nats keeps blobs in NATS JetStream and needs NATS_URL" });
  }
  if (!env.NATS_URL && Array.isArray(env.SERVICES) && !env.SERVICES.includes("gateway")) {
    problems.push({
      variables: ["SERVICES", "NATS_URL"],
      message: "a process without the gateway receives its work over NATS and needs NATS_URL (or add gateway to SERVICES)",
    });
  }
  const pair = (a: string, av: string | undefined, b: string, bv: string | undefined) => {
    if (Boolean(av) !== Boolean(bv)) problems.push({ variables: [a, b], message: `${a} and ${b} go together: set both or neither` });
  };
  pair("S3_ACCESS_KEY_ID", env.S3_ACCESS_KEY_ID, "S3_SECRET_ACCESS_KEY", env.S3_SECRET_ACCESS_KEY);
  pair("GCS_HMAC_ACCESS_KEY_ID", env.GCS_HMAC_ACCESS_KEY_ID, "GCS_HMAC_SECRET", env.GCS_HMAC_SECRET);
  if (env.S3_ENDPOINT && !env.S3_ACCESS_KEY_ID && !env.S3_SECRET_ACCESS_KEY) {
    problems.push({ variables: ["S3_ENDPOINT", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"], message: "S3_ENDPOINT is used only with S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY" });
  }
  for (const [name, value] of [["JWT_ISSUER", env.JWT_ISSUER], ["JWT_AUDIENCE", env.JWT_AUDIENCE]] as const) {
    if (value && !env.JWT_SECRET && !env.JWKS_URL) {
      problems.push({ variables: [name, "JWT_SECRET", "JWKS_URL"], message: `${name} checks JWTs, which are accepted only with JWT_SECRET or JWKS_URL` });
    }
  }
  if (env.DEEPL_BASE_URL && env.DEEPL_BASE_URL.toLowerCase() !== "off" && !env.DEEPL_API_KEY) {
    problems.push({ variables: ["DEEPL_BASE_URL", "DEEPL_API_KEY"], message: "DEEPL_BASE_URL is used only with DEEPL_API_KEY (DeepL needs a key)" });
  }
  if (env.CLONE_ENGINE === "elevenlabs" && !env.ELEVENLABS_API_KEY) {
    problems.push({ variables: ["CLONE_ENGINE", "ELEVENLABS_API_KEY"], message: "CLONE_ENGINE=elevenlabs makes voices at ElevenLabs and needs ELEVENLABS_API_KEY" });
  }
  if (env.CLONE_ENGINE === "voice-library" && (env.OPENAI_TTS_BASE_URL?.toLowerCase() === "off" || !(env.OPENAI_TTS_BASE_URL ?? env.OPENAI_BASE_URL))) {
    problems.push({
      variables: ["CLONE_ENGINE", "OPENAI_TTS_BASE_URL", "OPENAI_BASE_URL"],
      message: "CLONE_ENGINE=voice-library keeps voices on the OpenAI-compatible speech server: set OPENAI_TTS_BASE_URL or OPENAI_BASE_URL (not off)",
    });
  }
  // LLM translation needs both an address and a model; one without the other would be ignored
  if (env.PIPER_VOICES.length > 0 && (env.PIPER_URL === undefined || env.PIPER_URL.toLowerCase() === "off")) {
    problems.push({ variables: ["PIPER_VOICES", "PIPER_URL"], message: "PIPER_VOICES names voices of a Piper server: set PIPER_URL (not off)" });
  }
  const mtOff = env.OPENAI_MT_BASE_URL?.toLowerCase() === "off";
  if (env.OPENAI_MT_MODEL && (mtOff || !(env.OPENAI_MT_BASE_URL ?? env.OPENAI_BASE_URL))) {
    problems.push({
      variables: ["OPENAI_MT_MODEL", "OPENAI_MT_BASE_URL", "OPENAI_BASE_URL"],
      message: "OPENAI_MT_MODEL translates through an OpenAI-compatible server: set OPENAI_MT_BASE_URL or OPENAI_BASE_URL (not off)",
    });
  }
  if (env.OPENAI_MT_BASE_URL && !mtOff && !env.OPENAI_MT_MODEL) {
    problems.push({ variables: ["OPENAI_MT_BASE_URL", "OPENAI_MT_MODEL"], message: "OPENAI_MT_BASE_URL is used only with OPENAI_MT_MODEL (the chat model that translates)" });
  }
  // OpenAPI 3.1: a license object names its terms by `url` or by `identifier`, never both
  if (env.API_LICENSE_URL && env.API_LICENSE_IDENTIFIER) {
    problems.push({ variables: ["API_LICENSE_URL", "API_LICENSE_IDENTIFIER"], message: "set API_LICENSE_URL or API_LICENSE_IDENTIFIER, not both (OpenAPI 3.1 allows one)" });
  }
  return problems;
}

export class ConfigError extends Error {
  readonly code = "invalid_config";
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n  ${problems.join("\n  ")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

/** Parses the environment once; throws ConfigError naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const result = EnvSchema.safeParse(env);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => `${issue.path.join(".") || "(environment)"}: ${issue.message}`),
    );
  }
  return result.data;
}

/** The configuration with secrets replaced, safe to log. */
export function redactConfig(config: Config): Record<string, unknown> {
  return {
    ...config,
    seedKeys: config.seedKeys.map((k) => ({ account: k.account, key: "[redacted]" })),
    jwt: { ...config.jwt, secret: config.jwt.secret ? "[redacted]" : undefined },
    signingSecret: config.signingSecret ? "[redacted]" : undefined,
    mongodb: config.mongodb ? { url: redactUrl(config.mongodb.url), dbName: config.mongodb.dbName } : undefined,
    natsUrl: config.natsUrl ? redactUrl(config.natsUrl) : undefined,
    fetch: {
      ...config.fetch,
      s3: config.fetch.s3 ? { ...config.fetch.s3, secretAccessKey: "[redacted]" } : undefined,
      gs: config.fetch.gs ? { ...config.fetch.gs, secretAccessKey: "[redacted]" } : undefined,
    },
    openaiStt: config.openaiStt ? { ...config.openaiStt, apiKey: config.openaiStt.apiKey ? "[redacted]" : undefined } : undefined,
    openaiMt: config.openaiMt ? { ...config.openaiMt, apiKey: config.openaiMt.apiKey ? "[redacted]" : undefined } : undefined,
    libreTranslate: config.libreTranslate ? { ...config.libreTranslate, apiKey: config.libreTranslate.apiKey ? "[redacted]" : undefined } : undefined,
    deepl: config.deepl ? { ...config.deepl, apiKey: "[redacted]" } : undefined,
    openaiTts: config.openaiTts ? { ...config.openaiTts, apiKey: config.openaiTts.apiKey ? "[redacted]" : undefined } : undefined,
    clone: {
      ...config.clone,
      elevenlabs: config.clone.elevenlabs ? { ...config.clone.elevenlabs, apiKey: "[redacted]" } : undefined,
      voiceLibrary: config.clone.voiceLibrary ? { ...config.clone.voiceLibrary, apiKey: config.clone.voiceLibrary.apiKey ? "[redacted]" : undefined } : undefined,
    },
    telemetry: {
      ...config.telemetry,
      otlpHeaders: config.telemetry.otlpHeaders ? Object.fromEntries(Object.keys(config.telemetry.otlpHeaders).map((k) => [k, "[redacted]"])) : undefined,
      metricsToken: config.telemetry.metricsToken ? "[redacted]" : undefined,
    },
  };
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "redacted";
    return u.toString();
  } catch {
    return "[unparseable]";
  }
}
