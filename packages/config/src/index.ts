import { resolve } from "node:path";
import { z } from "zod";

/** Names of the services one process can run (`SERVICES`). */
export const SERVICE_NAMES = ["gateway", "audiobook", "voice-stream", "subtitle", "synthesis"] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

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

/** The address for one capability: its own variable, else OPENAI_BASE_URL; none when switched off. */
function serviceUrl(own: string | undefined, shared: string | undefined): string | undefined {
  if (own?.toLowerCase() === "off") return undefined;
  return own ?? shared;
}

export const EnvSchema = z
  .object({
    NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
    PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    HOST: z.string().default("0.0.0.0"),
    DATA_DIR: z.string().default("./data"),
    MEDIA_ROOT: optionalString,
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
    OPENAI_BASE_URL: optionalUrl(["http:", "https:"]),
    OPENAI_TTS_BASE_URL: serviceUrlOrOff,
    OPENAI_STT_BASE_URL: serviceUrlOrOff,
    OPENAI_MT_BASE_URL: serviceUrlOrOff,
    OPENAI_API_KEY: optionalString,
    OPENAI_TTS_MODEL: z.string().min(1).default("gpt-4o-mini-tts"),
    OPENAI_TTS_VOICES: z
      .string()
      .default("alloy,ash,coral,echo,fable,nova,onyx,sage,shimmer")
      .transform((v) => v.split(",").map((s) => s.trim()).filter(Boolean)),
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
    WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(1),
    /** Set by pnpm to the directory the command was run from; relative paths resolve against it. */
    INIT_CWD: optionalString,
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
      publicBaseUrl: (env.PUBLIC_BASE_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, ""),
      seedKeys: env.VOICELOC_API_KEYS,
      jwt: {
        secret: env.JWT_SECRET,
        jwksUrl: env.JWKS_URL,
        issuer: env.JWT_ISSUER,
        audience: env.JWT_AUDIENCE,
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
      workerConcurrency: env.WORKER_CONCURRENCY,
      openaiTts: ttsUrl ? { baseUrl: ttsUrl, apiKey: env.OPENAI_API_KEY, model: env.OPENAI_TTS_MODEL, voices: env.OPENAI_TTS_VOICES } : undefined,
    };
  });

export type Config = z.output<typeof EnvSchema>;

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
    openaiTts: config.openaiTts ? { ...config.openaiTts, apiKey: config.openaiTts.apiKey ? "[redacted]" : undefined } : undefined,
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
