/**
 * docker-compose.yml: the Compose Specification schema and lint rules (dclint, which carries the current
 * compose-spec JSON schema), plus our own rules for the mesh. Each rule returns its violations.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Ajv, type ValidateFunction } from "ajv";
import { DCLinter } from "dclint";
import { parse } from "yaml";
import { ConfigError, loadConfig, SERVICE_NAMES, type ServiceName } from "@voiceloc/config";

/**
 * dclint's rules we switch off, each for a reason:
 * - no-build-and-image: the Compose Specification allows both (build, then tag the result as `image`); we
 *   want the built images named and versioned (`voiceloc/<service>:<version>`), not `voiceloc-<service>:latest`.
 * - no-unbound-port-interfaces: the gateway binds `${VOICELOC_BIND:-127.0.0.1}`, which the rule cannot read;
 *   composePolicy checks the default is an explicit interface.
 * - ordering and quoting rules (style only): the file is ordered by start-up, not alphabetically.
 */
export const LINT_RULES = {
  "no-build-and-image": 0,
  "no-unbound-port-interfaces": 0,
  "services-alphabetical-order": 0,
  "service-keys-order": 0,
  "service-dependencies-alphabetical-order": 0,
  "top-level-properties-order": 0,
  "service-ports-alphabetical-order": 0,
  "require-quotes-in-ports": 0,
  // An override file is merged into docker-compose.yml, which carries the project name.
  "require-project-name-field": 0,
} as const;

/** The Compose Specification JSON schema as dclint ships it (kept current with the compose-spec project). */
const COMPOSE_SCHEMA = join(dirname(createRequire(import.meta.url).resolve("dclint/package.json")), "schemas", "compose.schema.json");
let validateCompose: ValidateFunction | undefined;

/** Every schema error of a parsed compose file (dclint itself reports only the first). */
export function composeSchemaErrors(doc: unknown): string[] {
  if (!validateCompose) {
    // Draft 7, named by a URL ajv does not know under that spelling: compiled as draft 7 without it.
    const { $schema: _draft, ...schema } = JSON.parse(readFileSync(COMPOSE_SCHEMA, "utf8")) as Record<string, unknown>;
    validateCompose = new Ajv({ allErrors: true, strict: false, allowUnionTypes: true }).compile(schema);
  }
  if (validateCompose(doc)) return [];
  return (validateCompose.errors ?? []).map((e) => {
    const extra = "additionalProperty" in e.params ? ` (${String(e.params.additionalProperty)})` : "";
    return `invalid-schema ${e.instancePath || "/"}: ${e.message ?? e.keyword}${extra}`;
  });
}

/** Schema errors and lint errors/warnings of a compose file, as "rule line: message". */
export function lintCompose(file: string): string[] {
  const linter = new DCLinter({ rules: { ...LINT_RULES }, quiet: false, debug: false, exclude: [] });
  const results = linter.lintFiles([file], false) as Array<{ messages: Array<{ rule: string; line: number; message: string }> }>;
  const lint = results.flatMap((r) => r.messages.map((m) => `${m.rule} ${m.line}: ${m.message}`));
  return [...composeSchemaErrors(readCompose(file)), ...lint];
}

export interface ComposeService {
  image?: string;
  profiles?: string[];
  user?: string;
  cap_drop?: string[];
  security_opt?: string[];
  build?: { context: string; dockerfile?: string; target?: string };
  command?: string[] | string;
  container_name?: string;
  ports?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string; required?: boolean }>;
  healthcheck?: { test: string[]; start_period?: string };
  volumes?: string[];
  deploy?: { replicas?: number; resources?: { limits?: { cpus?: string; memory?: string } } };
  stop_grace_period?: string;
  restart?: string;
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

export function readCompose(file: string): ComposeFile {
  return parse(readFileSync(file, "utf8"), { merge: true, maxAliasCount: 100 }) as ComposeFile;
}

/** Compose interpolation of `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}`, `${VAR?error}`. */
export function interpolate(value: string, env: Record<string, string | undefined>): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}/g, (_all, name: string, colon: string, op: string | undefined, arg: string) => {
    const v = env[name];
    const missing = colon ? v === undefined || v === "" : v === undefined;
    if (!op) return v ?? "";
    if (op === "-") return missing ? arg : v!;
    if (missing) throw new Error(`required variable ${name} is missing: ${arg}`);
    return v!;
  });
}

const OURS = SERVICE_NAMES;
const WORKERS = SERVICE_NAMES.filter((s) => s !== "gateway");

function parseDuration(text: string | undefined): number {
  const m = /^(\d+)(ms|s|m)$/.exec(text ?? "");
  if (!m) return 10; // Docker's default
  const n = Number(m[1]);
  return m[2] === "ms" ? n / 1000 : m[2] === "m" ? n * 60 : n;
}

/** Our rules for the mesh in docker-compose.yml. */
export function composePolicy(compose: ComposeFile): string[] {
  const out: string[] = [];
  const s = compose.services;
  const env = { SIGNING_SECRET: "s".repeat(40) };
  const volumeAt = (svc: ComposeService, path: string) =>
    (svc.volumes ?? []).some((v) => {
      const [source, target] = v.split(":");
      return target === path && compose.volumes !== undefined && source !== undefined && source in compose.volumes;
    });

  // NATS with JetStream on a named volume, healthy only once JetStream answers.
  const nats = s.nats;
  if (!nats) out.push("no nats service");
  else {
    const tag = /^nats:(\d+)\.(\d+)/.exec(nats.image ?? "");
    if (!tag || Number(tag[1]) < 2 || (Number(tag[1]) === 2 && Number(tag[2]) < 10)) out.push(`nats image ${nats.image} is not 2.10 or newer`);
    const cmd = ([] as string[]).concat(nats.command ?? []);
    if (!cmd.some((a) => a === "--jetstream" || a === "-js")) out.push("nats runs without JetStream");
    const storeFlag = cmd.findIndex((a) => a === "--store_dir" || a === "-sd");
    const storeAt = storeFlag === -1 ? undefined : cmd[storeFlag + 1];
    if (!storeAt || !volumeAt(nats, storeAt)) out.push("nats keeps JetStream on no named volume");
    if (!nats.healthcheck?.test.join(" ").includes("js-enabled-only=true")) out.push("nats has no JetStream health check");
  }

  // MongoDB as a one-member replica set, initiated by a one-shot service.
  const mongo = s.mongodb;
  if (!mongo) out.push("no mongodb service");
  else {
    const cmd = ([] as string[]).concat(mongo.command ?? []);
    const setFlag = cmd.indexOf("--replSet");
    const set = setFlag === -1 ? undefined : cmd[setFlag + 1];
    if (!set) out.push("mongodb is not started as a replica set");
    if (!volumeAt(mongo, "/data/db")) out.push("mongodb keeps its data on no named volume");
    if (!mongo.healthcheck) out.push("mongodb has no health check");
    const init = s["mongodb-init"];
    const script = ([] as string[]).concat(init?.command ?? []).join(" ");
    if (!init || !script.includes(`_id: "${set}"`) || !script.includes("NotYetInitialized")) out.push("no idempotent one-shot rs.initiate of the replica set");
    if (init?.depends_on?.mongodb?.condition !== "service_healthy") out.push("the replica set is initiated before mongodb is healthy");
    if (init && init.restart !== "no") out.push("mongodb-init restarts (a one-shot must not)");
    const url = interpolate(s.gateway?.environment?.MONGODB_URL ?? "", env);
    if (set && (!url.includes(`replicaSet=${set}`) || !url.includes("retryWrites=true"))) out.push(`the gateway's MONGODB_URL does not name replicaSet=${set} with retryWrites=true`);
  }

  for (const name of OURS) {
    const svc = s[name];
    if (!svc) {
      out.push(`no ${name} service`);
      continue;
    }
    if (svc.build?.target !== name || svc.build.dockerfile !== "deploy/Dockerfile") out.push(`${name}: not built from deploy/Dockerfile target ${name}`);
    const image = interpolate(svc.image ?? "", env);
    if (!/:[^/:]+$/.test(image) || image.endsWith(":latest")) out.push(`${name}: image ${image} has no version tag`);
    if (svc.depends_on?.nats?.condition !== "service_healthy") out.push(`${name}: does not wait for nats to be healthy`);
    const limits = svc.deploy?.resources?.limits;
    if (!limits?.cpus || !limits.memory) out.push(`${name}: no cpu and memory limits`);
    if (parseDuration(svc.stop_grace_period) * 1000 <= loadConfig({ SHUTDOWN_TIMEOUT_MS: svc.environment?.SHUTDOWN_TIMEOUT_MS }).shutdownTimeoutMs) {
      out.push(`${name}: stop_grace_period ${svc.stop_grace_period ?? "10s"} does not cover SHUTDOWN_TIMEOUT_MS`);
    }
    // The environment, interpolated with its defaults, must be a configuration the process accepts.
    try {
      const resolved = Object.fromEntries(Object.entries(svc.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), env)]));
      const config = loadConfig(resolved);
      if (config.services.join() !== name) out.push(`${name}: runs ${config.services.join(",")}`);
      if (config.blobStore !== "nats") out.push(`${name}: blobs are not shared through NATS`);
    } catch (error) {
      out.push(`${name}: ${error instanceof ConfigError ? error.problems.join("; ") : String(error)}`);
    }
  }

  for (const name of WORKERS as ServiceName[]) {
    const svc = s[name];
    if (svc?.container_name) out.push(`${name}: a container_name stops --scale`);
    if (svc?.ports?.length) out.push(`${name}: a published port stops --scale`);
    if (svc?.environment?.SIGNING_SECRET !== undefined || svc?.environment?.MONGODB_URL !== undefined) out.push(`${name}: gets a secret it does not use`);
  }

  const gw = s.gateway;
  if (gw) {
    if (gw.depends_on?.["mongodb-init"]?.condition !== "service_completed_successfully") out.push("gateway: starts before the replica set is initiated");
    const secret = gw.environment?.SIGNING_SECRET ?? "";
    if (!/^\$\{SIGNING_SECRET:\?[^}]+\}$/.test(secret)) out.push("gateway: SIGNING_SECRET is not required (${SIGNING_SECRET:?…})");
    const port = interpolate((gw.ports ?? [])[0] ?? "", {});
    if (!/^\d+\.\d+\.\d+\.\d+:8080:8080$/.test(port)) out.push(`gateway: the API is not published on an explicit interface at :8080 (${port || "none"})`);
    if (!gw.healthcheck?.test.join(" ").includes("/readyz")) out.push("gateway: its health check is not readiness (/readyz)");
  }

  for (const [name, svc] of Object.entries(s)) {
    if (svc.image && !svc.build && (!/:[^/:]+$/.test(svc.image) || svc.image.endsWith(":latest"))) out.push(`${name}: image ${svc.image} is not pinned`);
  }
  return out;
}

/** The scaling example: only services of the main file, no fixed names or ports on workers. */
export function overridePolicy(override: ComposeFile, main: ComposeFile): string[] {
  const out: string[] = [];
  for (const [name, svc] of Object.entries(override.services)) {
    if (!(name in main.services)) out.push(`${name}: not a service of docker-compose.yml`);
    if (svc.container_name) out.push(`${name}: a container_name stops scaling`);
    if (svc.ports?.length) out.push(`${name}: a published port stops scaling`);
  }
  if (!Object.values(override.services).some((svc) => (svc.deploy?.replicas ?? 1) > 1)) out.push("the example scales nothing");
  return out;
}

/**
 * The outside engines of the `engines` profile: third-party images, so the rules of our own services
 * (built from deploy/Dockerfile, a version tag of ours, stop_grace_period over SHUTDOWN_TIMEOUT_MS, a
 * configuration the process accepts) do not apply to them. What does: the profile, a pinned image of
 * the project, a health check on the port the workers use, limits, the models on a named volume, the
 * image's own non-root user, no capabilities, no published port (they have no API key of ours).
 */
export const ENGINE_SERVICES = {
  speaches: { image: "ghcr.io/speaches-ai/speaches", port: 8000, models: "/home/ubuntu/.cache/huggingface/hub", setting: "OPENAI_STT_BASE_URL", ready: "speaches-init" },
  kokoro: { image: "ghcr.io/remsky/kokoro-fastapi-cpu", port: 8880, models: "/app/api/src/models", setting: "OPENAI_TTS_BASE_URL", ready: "kokoro" },
  libretranslate: { image: "libretranslate/libretranslate", port: 5000, models: "/home/libretranslate/.local", setting: "LIBRETRANSLATE_URL", ready: "libretranslate" },
} as const;
export type EngineService = keyof typeof ENGINE_SERVICES;

/** Which workers use which engine (recognition: voice streams and subtitles; speech; translation). */
export const ENGINE_USERS: Record<EngineService, readonly ServiceName[]> = {
  speaches: ["voice-stream", "subtitle"],
  kokoro: ["synthesis", "audiobook", "voice-stream"],
  libretranslate: ["audiobook", "voice-stream", "subtitle"],
};

/** The `KEY=value` lines of an env file (`#` comments and blank lines skipped). */
export function readEnvFile(file: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(file, "utf8").split(/\r?\n/)) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m && !line.trimStart().startsWith("#")) out[m[1]!] = m[2]!.trim();
  }
  return out;
}

/** Our rules for the `engines` profile and deploy/engines.env, the settings that wire it to the workers. */
export function enginesPolicy(compose: ComposeFile, enginesEnv: Record<string, string>): string[] {
  const out: string[] = [];
  const s = compose.services;
  const secret = { SIGNING_SECRET: "s".repeat(40) };
  const namedVolumeAt = (svc: ComposeService, path: string) =>
    (svc.volumes ?? []).some((v) => {
      const [source, target] = v.split(":");
      return target === path && compose.volumes !== undefined && source !== undefined && source in compose.volumes;
    });
  const workerConfig = (name: ServiceName, env: Record<string, string>) =>
    loadConfig(Object.fromEntries(Object.entries(s[name]?.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), { ...secret, ...env })])));

  for (const [name, rule] of Object.entries(ENGINE_SERVICES) as Array<[EngineService, (typeof ENGINE_SERVICES)[EngineService]]>) {
    const svc = s[name];
    if (!svc) {
      out.push(`no ${name} service`);
      continue;
    }
    if (!svc.profiles?.includes("engines")) out.push(`${name}: not in the engines profile`);
    if (!svc.image?.startsWith(`${rule.image}:`)) out.push(`${name}: image ${svc.image ?? "none"} is not ${rule.image}`);
    if (!svc.healthcheck?.test.join(" ").includes(`127.0.0.1:${rule.port}/`)) out.push(`${name}: no health check on its port ${rule.port}`);
    const limits = svc.deploy?.resources?.limits;
    if (!limits?.cpus || !limits.memory) out.push(`${name}: no cpu and memory limits`);
    if (!namedVolumeAt(svc, rule.models)) out.push(`${name}: keeps its models on no named volume (${rule.models})`);
    const uid = (svc.user ?? "").split(":")[0] ?? "";
    if (!/^\d+$/.test(uid) || uid === "0") out.push(`${name}: runs as ${svc.user ?? "the image's default user"}, not a fixed non-root user`);
    if (svc.ports?.length) out.push(`${name}: a published port (it has no API key of ours)`);
    if (!svc.cap_drop?.includes("ALL") || !svc.security_opt?.includes("no-new-privileges:true")) out.push(`${name}: keeps capabilities or may gain privileges`);
  }
  const init = s["speaches-init"];
  if (!init?.profiles?.includes("engines") || init.restart !== "no" || init.depends_on?.speaches?.condition !== "service_healthy") {
    out.push("speaches-init: not a one-shot of the engines profile run once speaches is healthy");
  }

  for (const [engine, users] of Object.entries(ENGINE_USERS) as Array<[EngineService, readonly ServiceName[]]>) {
    const { ready } = ENGINE_SERVICES[engine];
    for (const worker of users) {
      const dep = s[worker]?.depends_on?.[ready];
      if (!dep) out.push(`${worker}: starts without waiting for ${ready}`);
      else if (dep.required !== false) out.push(`${worker}: requires ${ready}, so it cannot start without the engines profile`);
    }
  }

  // Without the settings: offline engines only, with the process's own defaults for the rest.
  for (const worker of WORKERS) {
    try {
      const config = workerConfig(worker, {});
      const defaults = loadConfig({ SERVICES: worker, NATS_URL: "nats://nats:4222" });
      if (config.openaiStt || config.openaiTts || config.libreTranslate || config.whisperCpp || config.deepl || config.piper) out.push(`${worker}: uses an outside engine without deploy/engines.env`);
      if (JSON.stringify(config.engineOrder) !== JSON.stringify(defaults.engineOrder)) out.push(`${worker}: engine order differs from the process's default`);
      // An OpenAI-compatible server given alone gets the process's default models and voices.
      const server = { OPENAI_BASE_URL: "http://openai.example" };
      const given = workerConfig(worker, server);
      const own = loadConfig({ SERVICES: worker, NATS_URL: "nats://nats:4222", ...server });
      if (JSON.stringify([given.openaiStt, given.openaiTts]) !== JSON.stringify([own.openaiStt, own.openaiTts])) out.push(`${worker}: the speech and recognition models or voices differ from the process's defaults`);
    } catch (error) {
      out.push(`${worker}: ${error instanceof ConfigError ? error.problems.join("; ") : String(error)}`);
    }
  }

  // With deploy/engines.env: the profile is on and every worker reaches each engine at its service and port.
  if (!(enginesEnv.COMPOSE_PROFILES ?? "").split(",").includes("engines")) out.push("deploy/engines.env does not turn the engines profile on");
  for (const worker of WORKERS) {
    let config: ReturnType<typeof loadConfig>;
    try {
      config = workerConfig(worker, enginesEnv);
    } catch (error) {
      out.push(`${worker} with deploy/engines.env: ${error instanceof ConfigError ? error.problems.join("; ") : String(error)}`);
      continue;
    }
    const urls: Record<EngineService, string | undefined> = {
      speaches: config.openaiStt?.baseUrl,
      kokoro: config.openaiTts?.baseUrl,
      libretranslate: config.libreTranslate?.baseUrl,
    };
    if (config.openaiTts && !config.openaiTts.languages?.length) out.push(`${worker} with deploy/engines.env: the Kokoro voices are offered for every language (set OPENAI_TTS_LANGUAGES)`);
    for (const [engine, url] of Object.entries(urls) as Array<[EngineService, string | undefined]>) {
      const at = url === undefined ? undefined : new URL(url);
      if (!at || at.hostname !== engine || Number(at.port) !== ENGINE_SERVICES[engine].port) {
        out.push(`${worker} with deploy/engines.env: ${ENGINE_SERVICES[engine].setting} is ${url ?? "unset"}, not the ${engine} service on port ${ENGINE_SERVICES[engine].port}`);
      }
    }
  }
  return out;
}
