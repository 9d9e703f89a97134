/**
 * docker-compose.yml and compose.override.example.yml against the Compose Specification (schema and
 * lint rules) and our rules for the mesh. No Docker engine needed.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { composePolicy, enginesPolicy, interpolate, lintCompose, overridePolicy, readCompose, readEnvFile, type ComposeFile } from "./compose-policy.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const composeFile = join(root, "docker-compose.yml");
const overrideFile = join(root, "compose.override.example.yml");
const enginesEnvFile = join(root, "deploy", "engines.env");
const scratch = mkdtempSync(join(tmpdir(), "voiceloc-compose-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const copy = (c: ComposeFile): ComposeFile => structuredClone(c);

describe("docker-compose.yml", () => {
  const compose = readCompose(composeFile);

  it("is valid by the Compose Specification schema and passes the lint rules", () => {
    expect(lintCompose(composeFile)).toEqual([]);
  });

  it("runs NATS (JetStream, volume, health), a MongoDB replica set with its initiator, the gateway and every worker", () => {
    const engines = ["kokoro", "libretranslate", "speaches", "speaches-init"];
    expect(Object.keys(compose.services).sort()).toEqual(["audiobook", "gateway", "mongodb", "mongodb-init", "nats", "subtitle", "synthesis", "voice-stream", ...engines].sort());
    expect(composePolicy(compose)).toEqual([]);
    // Without a profile, only the mesh starts.
    expect(Object.entries(compose.services).filter(([, svc]) => svc.profiles !== undefined).map(([name]) => name).sort()).toEqual(engines);
  });

  it("the engines profile: speaches, Kokoro-FastAPI and LibreTranslate, checked, limited, non-root, models on volumes, wired to the workers by deploy/engines.env", () => {
    expect(enginesPolicy(compose, readEnvFile(enginesEnvFile))).toEqual([]);
  });

  it("scopes MEDIA_ROOT per account in the gateway and every worker (several tenants), unless overridden", () => {
    for (const name of ["gateway", "synthesis", "audiobook", "voice-stream", "subtitle"]) {
      const value = compose.services[name]!.environment!.MEDIA_ROOT_SCOPE!;
      expect(interpolate(value, {}), name).toBe("account");
      expect(interpolate(value, { MEDIA_ROOT_SCOPE: "shared" }), name).toBe("shared");
    }
  });

  it("refuses to start without SIGNING_SECRET and uses the one given", () => {
    const secret = compose.services.gateway!.environment!.SIGNING_SECRET!;
    expect(() => interpolate(secret, {})).toThrow(/SIGNING_SECRET/);
    expect(() => interpolate(secret, { SIGNING_SECRET: "" })).toThrow(/SIGNING_SECRET/);
    expect(interpolate(secret, { SIGNING_SECRET: "k".repeat(64) })).toBe("k".repeat(64));
  });
});

describe("compose.override.example.yml", () => {
  it("is valid by the schema, names only services of the mesh, and scales workers", () => {
    expect(lintCompose(overrideFile)).toEqual([]);
    expect(overridePolicy(readCompose(overrideFile), readCompose(composeFile))).toEqual([]);
  });
});

/** Each check fails on a compose file broken the way it guards against. */
describe("the compose checks fail on broken files", () => {
  const good = readCompose(composeFile);

  it("schema: an unknown key and a wrong type", () => {
    const file = join(scratch, "broken.yml");
    const broken = copy(good) as unknown as { services: Record<string, Record<string, unknown>> };
    broken.services.subtitle!.restart_policy = "always";
    broken.services.nats!.healthcheck = { test: ["CMD", "true"], retries: [3] };
    writeFileSync(file, stringify(broken));
    const problems = lintCompose(file);
    expect(problems.some((p) => p.startsWith("invalid-schema") && p.includes("restart_policy"))).toBe(true);
    expect(problems.some((p) => p.startsWith("invalid-schema") && p.includes("retries"))).toBe(true);
  });

  it("policy: a worker with a fixed name and port and no limits, a default secret, no JetStream, no replica set", () => {
    const broken = copy(good);
    const s = broken.services;
    s.audiobook!.container_name = "audiobook";
    s.audiobook!.ports = ["9000:8080"];
    delete s.subtitle!.deploy;
    s.gateway!.environment!.SIGNING_SECRET = "${SIGNING_SECRET:-change-me-to-a-secret-of-32-or-more-chars}";
    s.nats!.command = ["nats-server", "--store_dir", "/data"];
    s.mongodb!.command = ["--bind_ip_all"];
    s.synthesis!.image = "voiceloc/synthesis:latest";
    s["voice-stream"]!.environment!.SERVICES = "voice-stream,audiobook";
    expect(composePolicy(broken).sort()).toEqual(
      [
        "audiobook: a container_name stops --scale",
        "audiobook: a published port stops --scale",
        "gateway: SIGNING_SECRET is not required (${SIGNING_SECRET:?…})",
        "mongodb is not started as a replica set",
        "nats runs without JetStream",
        "subtitle: no cpu and memory limits",
        "synthesis: image voiceloc/synthesis:latest has no version tag",
        "no idempotent one-shot rs.initiate of the replica set",
        "voice-stream: runs voice-stream,audiobook",
      ].sort(),
    );
  });

  it("engines: a published port, root, no health check, a latest image, a required engine, a wrong port in the settings", () => {
    const broken = copy(good);
    const s = broken.services;
    s.kokoro!.ports = ["8880:8880"];
    s.kokoro!.user = "0";
    delete s.libretranslate!.healthcheck;
    s.speaches!.image = "ghcr.io/speaches-ai/speaches:latest";
    s.speaches!.volumes = ["/srv/models:/home/ubuntu/.cache/huggingface/hub"];
    s.subtitle!.depends_on!.libretranslate = { condition: "service_healthy" };
    delete s.synthesis!.depends_on!.kokoro;
    const env = { ...readEnvFile(enginesEnvFile), LIBRETRANSLATE_URL: "http://libretranslate:8080", COMPOSE_PROFILES: "" };
    const problems = enginesPolicy(broken, env);
    expect(problems).toEqual(
      expect.arrayContaining([
        "kokoro: a published port (it has no API key of ours)",
        "kokoro: runs as 0, not a fixed non-root user",
        "libretranslate: no health check on its port 5000",
        "speaches: keeps its models on no named volume (/home/ubuntu/.cache/huggingface/hub)",
        "synthesis: starts without waiting for kokoro",
        "subtitle: requires libretranslate, so it cannot start without the engines profile",
        "deploy/engines.env does not turn the engines profile on",
        "audiobook with deploy/engines.env: LIBRETRANSLATE_URL is http://libretranslate:8080, not the libretranslate service on port 5000",
      ]),
    );
    expect(composePolicy(broken)).toContain("speaches: image ghcr.io/speaches-ai/speaches:latest is not pinned");
    // A worker wired to an engine by default (without deploy/engines.env) is refused too.
    const wired = copy(good);
    wired.services.subtitle!.environment!.LIBRETRANSLATE_URL = "${LIBRETRANSLATE_URL:-http://libretranslate:5000}";
    expect(enginesPolicy(wired, readEnvFile(enginesEnvFile))).toEqual(["subtitle: uses an outside engine without deploy/engines.env"]);
  });

  it("override: a worker with a container_name, a service the mesh does not have", () => {
    const override: ComposeFile = { services: { audiobook: { container_name: "a", deploy: { replicas: 3 } }, transcoder: { deploy: { replicas: 2 } } } };
    expect(overridePolicy(override, good)).toEqual(["audiobook: a container_name stops scaling", "transcoder: not a service of docker-compose.yml"]);
  });
});
