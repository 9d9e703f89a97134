import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, redactConfig } from "./index.ts";

describe("loadConfig", () => {
  it("applies defaults", () => {
    const c = loadConfig({});
    expect(c.port).toBe(8080);
    expect(c.publicBaseUrl).toBe("http://localhost:8080");
    expect(c.services).toEqual(["gateway", "audiobook", "voice-stream", "subtitle", "synthesis"]);
    expect(c.mongodb).toBeUndefined();
    expect(c.mediaRoot.endsWith("/data/media")).toBe(true);
  });

  it("uploads and the media root scope: defaults, values, refusals", () => {
    const c = loadConfig({});
    expect(c.mediaRootScope).toBe("shared");
    expect(c.uploads).toEqual({ maxBytes: 1024 * 1024 * 1024, ttlSeconds: 86_400, sweepIntervalMs: 300_000 });
    const set = loadConfig({ MEDIA_ROOT_SCOPE: "account", UPLOAD_MAX_BYTES: "5000", UPLOAD_TTL_SECONDS: "3600", UPLOAD_SWEEP_INTERVAL_MS: "60000" });
    expect(set.mediaRootScope).toBe("account");
    expect(set.uploads).toEqual({ maxBytes: 5000, ttlSeconds: 3600, sweepIntervalMs: 60_000 });
    expect(() => loadConfig({ MEDIA_ROOT_SCOPE: "tenant" })).toThrow(/MEDIA_ROOT_SCOPE/);
    expect(() => loadConfig({ UPLOAD_MAX_BYTES: "0" })).toThrow(/UPLOAD_MAX_BYTES/);
    expect(() => loadConfig({ UPLOAD_TTL_SECONDS: "10" })).toThrow(/UPLOAD_TTL_SECONDS/);
  });

  it("parses seed keys and service lists", () => {
    const c = loadConfig({ VOICELOC_API_KEYS: "alice:key1, bob:key2", SERVICES: "gateway,synthesis", PORT: "9000" });
    expect(c.seedKeys).toEqual([
      { account: "alice", key: "key1" },
      { account: "bob", key: "key2" },
    ]);
    expect(c.services).toEqual(["gateway", "synthesis"]);
    expect(c.port).toBe(9000);
  });

  it("names every wrong variable", () => {
    try {
      loadConfig({ PORT: "eighty", LOG_LEVEL: "loud", MONGODB_URL: "http://x", SERVICES: "gateway,teleport", JWT_SECRET: "short" });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const message = (error as ConfigError).message;
      for (const name of ["PORT", "LOG_LEVEL", "MONGODB_URL", "SERVICES", "JWT_SECRET"]) expect(message).toContain(name);
      expect(message).toContain("teleport");
    }
  });

  it("ENGINE_NICE: engines and ffmpeg run at niceness 10 by default; 0 turns it off; outside 0–19 is refused", () => {
    expect(loadConfig({}).engineNice).toBe(10);
    expect(loadConfig({ ENGINE_NICE: "0" }).engineNice).toBe(0);
    expect(loadConfig({ ENGINE_NICE: "19" }).engineNice).toBe(19);
    for (const bad of ["-1", "20", "high", "2.5"]) expect(() => loadConfig({ ENGINE_NICE: bad })).toThrow(/ENGINE_NICE/);
  });

  it("refuses a malformed key list", () => {
    expect(() => loadConfig({ VOICELOC_API_KEYS: "alice" })).toThrow(/VOICELOC_API_KEYS/);
  });

  it("reads the telemetry settings: tracing only with an OTLP endpoint, a metrics token of 16+ characters, both redacted", () => {
    const off = loadConfig({});
    expect(off.telemetry).toEqual({ otlpEndpoint: undefined, otlpHeaders: undefined, serviceName: `voiceloc-gateway+audiobook+voice-stream+subtitle+synthesis`, metricsToken: undefined });
    const on = loadConfig({
      SERVICES: "audiobook",
      NATS_URL: "nats://127.0.0.1:4222",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
      OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=abc%3D1, tenant=t1",
      METRICS_TOKEN: "scrape-token-0123456789",
    });
    expect(on.telemetry).toEqual({
      otlpEndpoint: "http://collector:4318",
      otlpHeaders: { "x-api-key": "abc=1", tenant: "t1" },
      serviceName: "voiceloc-audiobook",
      metricsToken: "scrape-token-0123456789",
    });
    expect(JSON.stringify(redactConfig(on))).not.toMatch(/abc=1|scrape-token/);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "grpc://collector:4317" })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_HEADERS: "no-equals-sign" })).toThrow(/OTEL_EXPORTER_OTLP_HEADERS/);
    expect(() => loadConfig({ METRICS_TOKEN: "short" })).toThrow(/METRICS_TOKEN/);
  });

  it("reads DeepL: on with a key, the free or pro API by the key, DEEPL_BASE_URL overrides, off switches it off; the key redacted", () => {
    expect(loadConfig({}).deepl).toBeUndefined();
    expect(loadConfig({ DEEPL_API_KEY: "k-123:fx" }).deepl).toEqual({ apiKey: "k-123:fx", baseUrl: "https://api-free.deepl.com" });
    expect(loadConfig({ DEEPL_API_KEY: "k-123" }).deepl).toEqual({ apiKey: "k-123", baseUrl: "https://api.deepl.com" });
    expect(loadConfig({ DEEPL_API_KEY: "k-123", DEEPL_BASE_URL: "http://deepl-proxy:8080" }).deepl?.baseUrl).toBe("http://deepl-proxy:8080");
    expect(loadConfig({ DEEPL_API_KEY: "k-123", DEEPL_BASE_URL: "OFF" }).deepl).toBeUndefined();
    expect(loadConfig({ DEEPL_BASE_URL: "off" }).deepl).toBeUndefined();
    expect(() => loadConfig({ DEEPL_API_KEY: "k-123", DEEPL_BASE_URL: "ftp://deepl" })).toThrow(/DEEPL_BASE_URL/);
    expect(JSON.stringify(redactConfig(loadConfig({ DEEPL_API_KEY: "secret-deepl-key:fx" })))).not.toContain("secret-deepl-key");
    expect(loadConfig({ ENGINE_ORDER_MT: "deepl, libretranslate,apertium" }).engineOrder.mt).toEqual(["deepl", "libretranslate", "apertium"]);
  });

  it("redacts secrets", () => {
    const c = loadConfig({
      VOICELOC_API_KEYS: "alice:supersecretkey",
      JWT_SECRET: "x".repeat(40),
      MONGODB_URL: "mongodb://user:pw@db:27017",
    });
    const text = JSON.stringify(redactConfig(c));
    expect(text).not.toContain("supersecretkey");
    expect(text).not.toContain("x".repeat(40));
    expect(text).not.toContain(":pw@");
  });

  it("reads the request rate limit: on by default, burst of 10 seconds' worth, 0 or off turns it off", () => {
    expect(loadConfig({}).rateLimit).toEqual({ perMinute: 600, burst: 100 });
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "90" }).rateLimit).toEqual({ perMinute: 90, burst: 15 });
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "90", RATE_LIMIT_BURST: "5" }).rateLimit).toEqual({ perMinute: 90, burst: 5 });
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "0" }).rateLimit).toBeUndefined();
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "OFF" }).rateLimit).toBeUndefined();
    expect(() => loadConfig({ RATE_LIMIT_PER_MINUTE: "-5" })).toThrow(/RATE_LIMIT_PER_MINUTE/);
    expect(() => loadConfig({ RATE_LIMIT_PER_MINUTE: "1.5" })).toThrow(/RATE_LIMIT_PER_MINUTE/);
    expect(() => loadConfig({ RATE_LIMIT_BURST: "0" })).toThrow(/RATE_LIMIT_BURST/);
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "60000000", RATE_LIMIT_BURST: "60000000" }).rateLimit).toEqual({ perMinute: 60_000_000, burst: 60_000_000 });
    expect(() => loadConfig({ RATE_LIMIT_PER_MINUTE: "60000001" })).toThrow(/RATE_LIMIT_PER_MINUTE/);
  });

  it("reads the live progress stream settings: heartbeat period and streams per account, bounded", () => {
    expect(loadConfig({}).sse).toEqual({ heartbeatMs: 15_000, maxStreamsPerAccount: 100 });
    expect(loadConfig({ SSE_HEARTBEAT_MS: "2000", SSE_MAX_STREAMS_PER_ACCOUNT: "3" }).sse).toEqual({ heartbeatMs: 2_000, maxStreamsPerAccount: 3 });
    expect(() => loadConfig({ SSE_HEARTBEAT_MS: "10" })).toThrow(/SSE_HEARTBEAT_MS/);
    expect(() => loadConfig({ SSE_MAX_STREAMS_PER_ACCOUNT: "0" })).toThrow(/SSE_MAX_STREAMS_PER_ACCOUNT/);
  });

  it("refuses settings that contradict each other, naming the variables", () => {
    const cases: Array<[Record<string, string>, string[]]> = [
      [{ BLOB_STORE: "nats" }, ["BLOB_STORE", "NATS_URL"]],
      [{ SERVICES: "audiobook,synthesis" }, ["SERVICES", "NATS_URL"]],
      [{ S3_ACCESS_KEY_ID: "AKIA0000" }, ["S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"]],
      [{ GCS_HMAC_SECRET: "secret" }, ["GCS_HMAC_ACCESS_KEY_ID", "GCS_HMAC_SECRET"]],
      [{ S3_ENDPOINT: "http://minio:9000" }, ["S3_ENDPOINT", "S3_ACCESS_KEY_ID"]],
      [{ JWT_ISSUER: "https://issuer.example" }, ["JWT_ISSUER", "JWT_SECRET", "JWKS_URL"]],
      [{ OPENAI_MT_MODEL: "m" }, ["OPENAI_MT_MODEL", "OPENAI_MT_BASE_URL", "OPENAI_BASE_URL"]],
      [{ OPENAI_MT_MODEL: "m", OPENAI_BASE_URL: "http://llm:8000", OPENAI_MT_BASE_URL: "off" }, ["OPENAI_MT_MODEL", "OPENAI_MT_BASE_URL"]],
      [{ OPENAI_MT_BASE_URL: "http://llm:8000" }, ["OPENAI_MT_BASE_URL", "OPENAI_MT_MODEL"]],
      [{ DEEPL_BASE_URL: "http://deepl-proxy:8080" }, ["DEEPL_BASE_URL", "DEEPL_API_KEY"]],
    ];
    for (const [env, names] of cases) {
      let error: unknown;
      try {
        loadConfig(env);
      } catch (caught) {
        error = caught;
      }
      expect(error, JSON.stringify(env)).toBeInstanceOf(ConfigError);
      for (const name of names) expect((error as ConfigError).message, JSON.stringify(env)).toContain(name);
    }
    // the same settings made consistent are accepted
    expect(loadConfig({ BLOB_STORE: "nats", NATS_URL: "nats://127.0.0.1:4222" }).blobStore).toBe("nats");
    expect(loadConfig({ SERVICES: "audiobook", NATS_URL: "nats://127.0.0.1:4222" }).services).toEqual(["audiobook"]);
    expect(loadConfig({ JWT_ISSUER: "https://issuer.example", JWT_SECRET: "s".repeat(32) }).jwt.issuer).toBe("https://issuer.example");
    expect(loadConfig({ OPENAI_MT_BASE_URL: "http://llm:8000", OPENAI_MT_MODEL: "m" }).openaiMt?.baseUrl).toBe("http://llm:8000");
    // an OpenAI server for speech only needs no translation model
    expect(loadConfig({ OPENAI_BASE_URL: "http://tts:8000" }).openaiMt).toBeUndefined();
  });

  it("reads the work queues' ack wait: unset keeps each queue's own, at least 1000 ms", () => {
    expect(loadConfig({}).workAckWaitMs).toBeUndefined();
    expect(loadConfig({ WORK_ACK_WAIT_MS: "5000" }).workAckWaitMs).toBe(5_000);
    expect(() => loadConfig({ WORK_ACK_WAIT_MS: "500" })).toThrow(/WORK_ACK_WAIT_MS/);
    expect(() => loadConfig({ WORK_ACK_WAIT_MS: "soon" })).toThrow(/WORK_ACK_WAIT_MS/);
  });

  it("limits tasks in flight per account and kind: 4 by default, configurable, at least 1", () => {
    expect(loadConfig({}).scheduling.accountMaxTasksInFlight).toBe(4);
    expect(loadConfig({ ACCOUNT_MAX_TASKS_IN_FLIGHT: "12" }).scheduling.accountMaxTasksInFlight).toBe(12);
    expect(() => loadConfig({ ACCOUNT_MAX_TASKS_IN_FLIGHT: "0" })).toThrow(/ACCOUNT_MAX_TASKS_IN_FLIGHT/);
  });

  it("limits tasks of one kind in the work queue not yet started: 1 by default, configurable, a whole number of at least 1", () => {
    expect(loadConfig({}).scheduling.queueMaxUnstartedTasks).toBe(1);
    expect(loadConfig({ QUEUE_MAX_UNSTARTED_TASKS: "20" }).scheduling.queueMaxUnstartedTasks).toBe(20);
    for (const bad of ["0", "2.5", "many"]) expect(() => loadConfig({ QUEUE_MAX_UNSTARTED_TASKS: bad })).toThrow(/QUEUE_MAX_UNSTARTED_TASKS/);
  });

  it("reads the OpenAPI document's contact and license: defaults, overrides, invalid values and url+identifier refused", () => {
    expect(loadConfig({}).apiInfo).toEqual({
      contact: { name: "Voice Localization Service operators" },
      license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
    });
    const set = loadConfig({
      API_CONTACT_NAME: "Acme API team",
      API_CONTACT_URL: "https://acme.example/support",
      API_CONTACT_EMAIL: "api@acme.example",
      API_LICENSE_NAME: "Acme terms of service",
      API_LICENSE_URL: "https://acme.example/terms",
    }).apiInfo;
    expect(set).toEqual({
      contact: { name: "Acme API team", url: "https://acme.example/support", email: "api@acme.example" },
      license: { name: "Acme terms of service", url: "https://acme.example/terms" },
    });
    expect(loadConfig({ API_LICENSE_IDENTIFIER: "Apache-2.0" }).apiInfo.license).toEqual({ name: "Apache-2.0", identifier: "Apache-2.0" });
    expect(() => loadConfig({ API_CONTACT_EMAIL: "not-an-address" })).toThrow(/API_CONTACT_EMAIL/);
    expect(() => loadConfig({ API_CONTACT_URL: "ftp://x" })).toThrow(/API_CONTACT_URL/);
    expect(() => loadConfig({ API_LICENSE_URL: "https://x.example/l", API_LICENSE_IDENTIFIER: "MIT" })).toThrow(/API_LICENSE_URL, API_LICENSE_IDENTIFIER/);
  });

  it("reads the webhook settings: 10 s per attempt, 45 s base, 12 attempts, 8 at once; out-of-range values are refused", () => {
    expect(loadConfig({}).webhooks).toEqual({ timeoutMs: 10_000, retryBaseMs: 45_000, maxAttempts: 12, concurrency: 8 });
    expect(loadConfig({ WEBHOOK_TIMEOUT_MS: "2000", WEBHOOK_RETRY_BASE_MS: "100", WEBHOOK_MAX_ATTEMPTS: "3", WEBHOOK_CONCURRENCY: "2" }).webhooks).toEqual({
      timeoutMs: 2_000,
      retryBaseMs: 100,
      maxAttempts: 3,
      concurrency: 2,
    });
    expect(() => loadConfig({ WEBHOOK_MAX_ATTEMPTS: "51" })).toThrow(/WEBHOOK_MAX_ATTEMPTS/);
    expect(() => loadConfig({ WEBHOOK_TIMEOUT_MS: "120000" })).toThrow(/WEBHOOK_TIMEOUT_MS/);
  });
});
