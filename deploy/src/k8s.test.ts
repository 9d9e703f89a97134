/**
 * The Kubernetes manifests, rendered as `kubectl apply -k` would (base and production overlay), checked
 * against the Kubernetes and KEDA schemas and against our own rules. No cluster needed.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ConfigMap, Secret, Service, ServiceAccount } from "kubernetes-models/v1";
import { Deployment } from "kubernetes-models/apps/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1";
import { ConfigError, loadConfig } from "@voiceloc/config";
import { STREAMS, WORK_QUEUES } from "@voiceloc/contracts";
import { readManifests, renderKustomization, type Manifest } from "./kustomize.ts";
import {
  containerViolations,
  deployments,
  gracePeriodViolations,
  QUEUE_WORKERS,
  scalingViolations,
  secretViolations,
  serviceViolations,
  type Deployment as DeploymentManifest,
} from "./k8s-policy.ts";

const k8s = join(dirname(fileURLToPath(import.meta.url)), "..", "k8s");

/** Every kind we ship, with the model that validates it; a kind outside this table fails the test. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "v1/ServiceAccount": ServiceAccount,
  "apps/v1/Deployment": Deployment,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "keda.sh/v1alpha1/ScaledObject": ScaledObject,
};

function schemaErrors(ms: Manifest[]): string[] {
  const out: string[] = [];
  for (const m of ms) {
    const Model = MODELS[`${m.apiVersion}/${m.kind}`];
    if (!Model) {
      out.push(`${m.apiVersion} ${m.kind} ${m.metadata.name}: no schema to validate it against`);
      continue;
    }
    try {
      new Model(m as never).validate();
    } catch (error) {
      out.push(`${m.kind} ${m.metadata.name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return out;
}

const copy = (ms: Manifest[]): Manifest[] => structuredClone(ms);
const deployment = (ms: Manifest[], name: string): DeploymentManifest => deployments(ms).find((d) => d.metadata.name === name)!;

const renders = {
  base: () => renderKustomization(join(k8s, "base")),
  production: () => renderKustomization(join(k8s, "overlays", "production")),
};

for (const [name, render] of Object.entries(renders)) {
  describe(`Kubernetes ${name}`, () => {
    const manifests = render();

    it("renders one Deployment per service, the gateway Service + HPA, a ScaledObject per worker, PDBs, the ConfigMap", () => {
      const kinds = manifests.map((m) => `${m.kind}/${m.metadata.name}`).sort();
      expect(kinds).toEqual(
        [
          "ConfigMap/voiceloc-config",
          "ServiceAccount/voiceloc",
          "Service/gateway",
          "HorizontalPodAutoscaler/gateway",
          ...["gateway", "synthesis", "audiobook", "voice-stream", "subtitle"].flatMap((s) => [`Deployment/${s}`, `PodDisruptionBudget/${s}`]),
          ...["synthesis", "audiobook", "voice-stream", "subtitle"].map((s) => `ScaledObject/${s}`),
        ].sort(),
      );
    });

    it("validates against the Kubernetes and KEDA schemas", () => {
      expect(schemaErrors(manifests)).toEqual([]);
    });

    it("every container has requests and limits, /healthz and /readyz probes, runs non-root on a read-only root, no latest tags", () => {
      expect(containerViolations(manifests)).toEqual([]);
    });

    it("each Deployment runs its service; the grace period covers the drain", () => {
      expect(serviceViolations(manifests)).toEqual([]);
      expect(gracePeriodViolations(manifests)).toEqual([]);
    });

    it("the gateway scales on an HPA, every worker on a ScaledObject over the stream and consumer the code creates", () => {
      expect(scalingViolations(manifests)).toEqual([]);
      for (const kind of QUEUE_WORKERS) {
        const so = manifests.find((m) => m.kind === "ScaledObject" && m.metadata.name === kind)!;
        const trigger = (so.spec as { triggers: Array<{ metadata: Record<string, string> }> }).triggers[0]!;
        expect({ stream: trigger.metadata.stream, consumer: trigger.metadata.consumer }).toEqual({ stream: STREAMS.work.name, consumer: WORK_QUEUES[kind].name });
      }
    });

    it("keeps secrets out of the ConfigMap and the rendered output", () => {
      expect(secretViolations(manifests)).toEqual([]);
    });

    it("the ConfigMap is a valid configuration for every service (as the processes will parse it)", () => {
      const cm = manifests.find((m) => m.kind === "ConfigMap")!;
      for (const d of deployments(manifests)) {
        const env = { ...(cm.data as Record<string, string>), ...Object.fromEntries((d.spec.template.spec.containers[0]!.env ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value!])) };
        expect(() => loadConfig(env), d.metadata.name).not.toThrow();
        // several tenants: each account reads only its own folder of MEDIA_ROOT
        expect(loadConfig(env).mediaRootScope, d.metadata.name).toBe("account");
      }
    });
  });
}

describe("Kubernetes production overlay", () => {
  const base = renders.base();
  const production = renders.production();

  it("puts everything in the voiceloc namespace, pins images of our registry, raises the gateway floor", () => {
    expect(new Set(production.map((m) => m.metadata.namespace))).toEqual(new Set(["voiceloc"]));
    for (const d of deployments(production)) {
      expect(d.spec.template.spec.containers[0]!.image).toBe(`registry.example.com/voiceloc/${d.metadata.name}:0.1.0`);
    }
    const hpa = production.find((m) => m.kind === "HorizontalPodAutoscaler")!;
    expect(hpa.spec).toMatchObject({ minReplicas: 3, maxReplicas: 30 });
    // The patch replaced one limit; the rest of the subtitle container is the base's.
    const sub = deployment(production, "subtitle").spec.template.spec.containers[0]!;
    const baseSub = deployment(base, "subtitle").spec.template.spec.containers[0]!;
    expect(sub.resources?.limits).toEqual({ ...baseSub.resources?.limits, memory: "3Gi" });
    expect(sub.readinessProbe).toEqual(baseSub.readinessProbe);
  });
});

describe("the example Secret", () => {
  const [secret] = readManifests(join(k8s, "base", "secret.example.yaml"));

  it("validates, is named and keyed as the Deployments expect, and is not part of the base", () => {
    expect(schemaErrors([secret!])).toEqual([]);
    const keys = Object.keys((secret as unknown as { stringData: Record<string, string> }).stringData).sort();
    expect(keys).toEqual(["MONGODB_URL", "SIGNING_SECRET"]);
    const refs = deployments(renders.base()).flatMap((d) =>
      d.spec.template.spec.containers.flatMap((c) => ((c as { envFrom?: Array<{ secretRef?: { name: string } }> }).envFrom ?? []).flatMap((e) => (e.secretRef ? [e.secretRef.name] : []))),
    );
    expect(new Set(refs)).toEqual(new Set([secret!.metadata.name]));
    expect(renders.base().some((m) => m.kind === "Secret")).toBe(false);
  });

  it("holds placeholders a process refuses to start with, naming both variables", () => {
    const data = (secret as unknown as { stringData: Record<string, string> }).stringData;
    let problems: string[] = [];
    try {
      loadConfig({ ...data, NATS_URL: "nats://nats:4222" });
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    expect(problems.some((p) => p.startsWith("SIGNING_SECRET"))).toBe(true);
    expect(problems.some((p) => p.startsWith("MONGODB_URL"))).toBe(true);
  });
});

/** Each check fails on a manifest broken the way it guards against (so none of them passes vacuously). */
describe("the checks fail on broken manifests", () => {
  const good = renders.production();

  it("schema: a quantity that is not one, a trigger without metadata", () => {
    const broken = copy(good);
    deployment(broken, "audiobook").spec.template.spec.containers[0]!.resources!.limits!.cpu = "lots";
    const so = broken.find((m) => m.kind === "ScaledObject" && m.metadata.name === "subtitle")!;
    delete (so.spec as { triggers: Array<{ metadata?: unknown }> }).triggers[0]!.metadata;
    const errors = schemaErrors(broken);
    expect(errors.some((e) => e.startsWith("Deployment audiobook") && e.includes("limits/cpu"))).toBe(true);
    expect(errors.some((e) => e.startsWith("ScaledObject subtitle") && e.includes("metadata"))).toBe(true);
    expect(schemaErrors([{ apiVersion: "batch/v1", kind: "Job", metadata: { name: "x" } }])).toHaveLength(1);
  });

  it("containers: no limits, no readiness probe, root, writable root, latest tag", () => {
    const broken = copy(good);
    const c = deployment(broken, "subtitle").spec.template.spec.containers[0]!;
    delete c.resources!.limits;
    delete c.readinessProbe;
    c.securityContext!.readOnlyRootFilesystem = false;
    c.image = "voiceloc/subtitle:latest";
    deployment(broken, "gateway").spec.template.spec.securityContext!.runAsNonRoot = false;
    deployment(broken, "synthesis").spec.template.spec.containers[0]!.image = "voiceloc/synthesis";
    expect(containerViolations(broken).sort()).toEqual(
      [
        "Deployment gateway: pod securityContext.runAsNonRoot is not true",
        "Deployment subtitle, container subtitle: no limits.cpu",
        "Deployment subtitle, container subtitle: no limits.memory",
        "Deployment subtitle, container subtitle: readinessProbe is not GET /readyz",
        "Deployment subtitle, container subtitle: root filesystem is writable",
        "Deployment subtitle, container subtitle: image voiceloc/subtitle:latest is tagged latest",
        "Deployment synthesis, container synthesis: image voiceloc/synthesis has no tag (means latest)",
      ].sort(),
    );
  });

  it("scaling: a worker without its ScaledObject, a consumer name the code does not create, synthesis at zero", () => {
    const broken = copy(good).filter((m) => !(m.kind === "ScaledObject" && m.metadata.name === "voice-stream"));
    const audiobook = broken.find((m) => m.kind === "ScaledObject" && m.metadata.name === "audiobook")!;
    (audiobook.spec as { triggers: Array<{ metadata: Record<string, string> }> }).triggers[0]!.metadata.consumer = "audiobooks";
    (broken.find((m) => m.kind === "ScaledObject" && m.metadata.name === "synthesis")!.spec as { minReplicaCount: number }).minReplicaCount = 0;
    deployment(broken, "gateway").spec.replicas = 3;
    expect(scalingViolations(broken).sort()).toEqual(
      [
        "Deployment gateway: sets replicas although an autoscaler owns the count",
        "worker audiobook: trigger consumer audiobooks, the code's durable is audiobook",
        "worker synthesis: request/reply needs minReplicaCount >= 1 (a request finds no queue to wait in)",
        "worker voice-stream: no KEDA ScaledObject",
      ].sort(),
    );
  });

  it("scaling: a work queue kept shorter than the lag KEDA needs to reach a worker's maxReplicaCount", () => {
    const broken = copy(good);
    (broken.find((m) => m.kind === "ConfigMap")!.data as Record<string, string>).QUEUE_MAX_UNSTARTED_TASKS = "10";
    expect(scalingViolations(broken).sort()).toEqual(
      QUEUE_WORKERS.map(
        (kind) =>
          `worker ${kind}: KEDA sees at most 10 waiting tasks (the gateway's QUEUE_MAX_UNSTARTED_TASKS), enough for 5 of maxReplicaCount 20; set it to at least maxReplicaCount × lagThreshold = 40`,
      ).sort(),
    );
    // the default (1) is a standalone process's, never a cluster's
    delete (broken.find((m) => m.kind === "ConfigMap")!.data as Record<string, string>).QUEUE_MAX_UNSTARTED_TASKS;
    expect(scalingViolations(broken)).toHaveLength(QUEUE_WORKERS.length);
  });

  it("grace period shorter than the drain; a secret in the ConfigMap; a Deployment running another service", () => {
    const broken = copy(good);
    deployment(broken, "audiobook").spec.template.spec.terminationGracePeriodSeconds = 10;
    delete deployment(broken, "voice-stream").spec.template.spec.terminationGracePeriodSeconds;
    (broken.find((m) => m.kind === "ConfigMap")!.data as Record<string, string>).SIGNING_SECRET = "x".repeat(40);
    deployment(broken, "subtitle").spec.template.spec.containers[0]!.env!.find((e) => e.name === "SERVICES")!.value = "audiobook";
    expect(gracePeriodViolations(broken)).toEqual([
      "Deployment audiobook: terminationGracePeriodSeconds 10 < preStop 0 s + SHUTDOWN_TIMEOUT_MS 30000 ms",
      "Deployment voice-stream: no terminationGracePeriodSeconds (Kubernetes' 30 s is not derived from the drain)",
    ]);
    expect(secretViolations(broken)).toEqual(["ConfigMap voiceloc-config holds SIGNING_SECRET"]);
    expect(serviceViolations(broken)).toEqual(["Deployment subtitle: SERVICES is audiobook, not subtitle"]);
  });
});
