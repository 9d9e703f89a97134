/**
 * Our own rules for the rendered Kubernetes manifests, beyond the schemas: each returns the violations it
 * finds (empty when the manifests follow it), so the tests can show a rule failing on a broken copy.
 */
import { SERVICE_NAMES, loadConfig } from "@voiceloc/config";
import { STREAMS, WORK_QUEUES, type TaskKind } from "@voiceloc/contracts";
import type { Manifest } from "./kustomize.ts";

/** Services that take their work from a JetStream work queue (scaled on its lag, to zero). */
export const QUEUE_WORKERS = Object.keys(WORK_QUEUES) as TaskKind[];

interface Container {
  name: string;
  image?: string;
  env?: Array<{ name: string; value?: string }>;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  livenessProbe?: { httpGet?: { path?: string; port?: number | string } };
  readinessProbe?: { httpGet?: { path?: string; port?: number | string } };
  startupProbe?: unknown;
  lifecycle?: { preStop?: { exec?: { command?: string[] } } };
  securityContext?: {
    runAsNonRoot?: boolean;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}

interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  terminationGracePeriodSeconds?: number;
  automountServiceAccountToken?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type?: string } };
  volumes?: Array<{ name: string; emptyDir?: unknown }>;
}

export interface Deployment extends Manifest {
  spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
}

export const deployments = (ms: Manifest[]): Deployment[] => ms.filter((m): m is Deployment => m.kind === "Deployment");
const byKind = (ms: Manifest[], kind: string) => ms.filter((m) => m.kind === kind);
const spec = (m: Manifest) => m.spec as Record<string, unknown>;

/** The settings a container runs with: every ConfigMap's values, then its own plain env values. */
function settingsOf(configMaps: Manifest[], c: Container): Record<string, string> {
  const configured = Object.assign({}, ...configMaps.map((cm) => (cm.data ?? {}) as Record<string, string>)) as Record<string, string>;
  return { ...configured, ...Object.fromEntries((c.env ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value!])) };
}

/** Every container: requests and limits of cpu and memory, both probes on the health endpoints, hardened. */
export function containerViolations(ms: Manifest[]): string[] {
  const out: string[] = [];
  for (const d of deployments(ms)) {
    const pod = d.spec.template.spec;
    const where = (c: Container) => `Deployment ${d.metadata.name}, container ${c.name}`;
    if (pod.securityContext?.runAsNonRoot !== true) out.push(`Deployment ${d.metadata.name}: pod securityContext.runAsNonRoot is not true`);
    if (pod.securityContext?.runAsUser === 0) out.push(`Deployment ${d.metadata.name}: runs as uid 0`);
    if (pod.securityContext?.seccompProfile?.type !== "RuntimeDefault") out.push(`Deployment ${d.metadata.name}: seccompProfile is not RuntimeDefault`);
    if (pod.automountServiceAccountToken !== false) out.push(`Deployment ${d.metadata.name}: mounts a service account token`);
    for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
      for (const kind of ["requests", "limits"] as const) {
        for (const resource of ["cpu", "memory"]) {
          if (!c.resources?.[kind]?.[resource]) out.push(`${where(c)}: no ${kind}.${resource}`);
        }
      }
      if (c.livenessProbe?.httpGet?.path !== "/healthz") out.push(`${where(c)}: livenessProbe is not GET /healthz`);
      if (c.readinessProbe?.httpGet?.path !== "/readyz") out.push(`${where(c)}: readinessProbe is not GET /readyz`);
      const sc = c.securityContext;
      if (sc?.readOnlyRootFilesystem !== true) out.push(`${where(c)}: root filesystem is writable`);
      if (sc?.allowPrivilegeEscalation !== false) out.push(`${where(c)}: allowPrivilegeEscalation is not false`);
      if (!sc?.capabilities?.drop?.includes("ALL")) out.push(`${where(c)}: capabilities are not dropped (drop: [ALL])`);
      if ((sc?.capabilities?.add ?? []).length > 0) out.push(`${where(c)}: adds capabilities`);
      if (sc?.runAsNonRoot === false) out.push(`${where(c)}: runAsNonRoot is false`);
      const mounts = new Set((c.volumeMounts ?? []).map((m) => m.mountPath));
      // A read-only root needs somewhere to write: engines and ffmpeg use /tmp, DATA_DIR is /data.
      for (const path of ["/tmp", "/data"]) if (!mounts.has(path)) out.push(`${where(c)}: nothing writable mounted at ${path}`);
      out.push(...imageViolations(c.image, where(c)));
    }
  }
  return out;
}

/** An image must name a version: a tag other than `latest`, or a digest. */
export function imageViolations(image: string | undefined, where: string): string[] {
  if (!image) return [`${where}: no image`];
  if (image.includes("@sha256:")) return [];
  const last = image.slice(image.lastIndexOf("/") + 1);
  if (!last.includes(":")) return [`${where}: image ${image} has no tag (means latest)`];
  if (last.endsWith(":latest")) return [`${where}: image ${image} is tagged latest`];
  return [];
}

/** One Deployment per service, selected by its component label, running that service. */
export function serviceViolations(ms: Manifest[]): string[] {
  const out: string[] = [];
  for (const name of SERVICE_NAMES) {
    const d = deployments(ms).find((x) => x.metadata.name === name);
    if (!d) {
      out.push(`no Deployment for the ${name} service`);
      continue;
    }
    const c = d.spec.template.spec.containers[0]!;
    const services = c.env?.find((e) => e.name === "SERVICES")?.value;
    if (services !== name) out.push(`Deployment ${name}: SERVICES is ${services ?? "unset"}, not ${name}`);
    const selector = d.spec.selector.matchLabels;
    for (const [k, v] of Object.entries(selector)) {
      if (d.spec.template.metadata.labels[k] !== v) out.push(`Deployment ${name}: the selector ${k}=${v} does not select its own pods`);
    }
  }
  return out;
}

/**
 * The grace period matches the drain: at least preStop + SHUTDOWN_TIMEOUT_MS (the process exits by then),
 * at most 15 s more (a pod that hangs is not kept for long).
 */
export function gracePeriodViolations(ms: Manifest[], configMaps: Manifest[] = byKind(ms, "ConfigMap")): string[] {
  const out: string[] = [];
  for (const d of deployments(ms)) {
    const pod = d.spec.template.spec;
    const c = pod.containers[0]!;
    const env = settingsOf(configMaps, c);
    const shutdownMs = loadConfig({ SHUTDOWN_TIMEOUT_MS: env.SHUTDOWN_TIMEOUT_MS }).shutdownTimeoutMs;
    const preStop = c.lifecycle?.preStop?.exec?.command;
    const preStopSeconds = preStop?.[0] === "sleep" ? Number(preStop[1]) : 0;
    const needed = preStopSeconds + Math.ceil(shutdownMs / 1000);
    const grace = pod.terminationGracePeriodSeconds;
    if (grace === undefined) {
      out.push(`Deployment ${d.metadata.name}: no terminationGracePeriodSeconds (Kubernetes' 30 s is not derived from the drain)`);
      continue;
    }
    if (grace < needed) out.push(`Deployment ${d.metadata.name}: terminationGracePeriodSeconds ${grace} < preStop ${preStopSeconds} s + SHUTDOWN_TIMEOUT_MS ${shutdownMs} ms`);
    if (grace > needed + 15) out.push(`Deployment ${d.metadata.name}: terminationGracePeriodSeconds ${grace} is far above the drain (${needed} s)`);
  }
  return out;
}

/**
 * Autoscaling: the gateway has a Service and an HPA; every worker a KEDA ScaledObject; queue workers on
 * the lag of the stream and durable consumer the code creates, scaled to zero; synthesis (request/reply)
 * never below one. An autoscaled Deployment sets no replicas (apply would fight the autoscaler). Every
 * Deployment has a PodDisruptionBudget. The gateways keep at most QUEUE_MAX_UNSTARTED_TASKS of a kind in
 * its work queue (the rest wait in the store), so that is the most lag KEDA sees: it must reach
 * maxReplicaCount × lagThreshold, or a queue worker never scales to its maximum.
 */
export function scalingViolations(ms: Manifest[], configMaps: Manifest[] = byKind(ms, "ConfigMap")): string[] {
  const out: string[] = [];
  const scaled = byKind(ms, "ScaledObject");
  const hpas = byKind(ms, "HorizontalPodAutoscaler");
  const pdbs = byKind(ms, "PodDisruptionBudget");
  const svc = byKind(ms, "Service").find((s) => s.metadata.name === "gateway");
  const gateway = deployments(ms).find((d) => d.metadata.name === "gateway");
  if (!svc) out.push("no Service for the gateway");
  else if (gateway) {
    const selector = spec(svc).selector as Record<string, string>;
    if (!Object.entries(selector).every(([k, v]) => gateway.spec.template.metadata.labels[k] === v)) out.push("the gateway Service does not select the gateway pods");
  }
  const hpa = hpas.find((h) => (spec(h).scaleTargetRef as { name: string }).name === "gateway");
  if (!hpa) out.push("no HorizontalPodAutoscaler for the gateway");
  else if (((spec(hpa).minReplicas as number | undefined) ?? 1) < 2) out.push("the gateway HPA allows fewer than 2 replicas");
  const gatewayContainer = gateway?.spec.template.spec.containers[0];
  const queueLimit = loadConfig({ QUEUE_MAX_UNSTARTED_TASKS: gatewayContainer ? settingsOf(configMaps, gatewayContainer).QUEUE_MAX_UNSTARTED_TASKS : undefined }).scheduling
    .queueMaxUnstartedTasks;

  for (const d of deployments(ms)) {
    const name = d.metadata.name;
    if (d.spec.replicas !== undefined) out.push(`Deployment ${name}: sets replicas although an autoscaler owns the count`);
    const pdb = pdbs.find((p) => {
      const labels = ((spec(p).selector as { matchLabels?: Record<string, string> }).matchLabels ?? {}) as Record<string, string>;
      return Object.entries(labels).every(([k, v]) => d.spec.template.metadata.labels[k] === v) && Object.keys(labels).length > 0;
    });
    if (!pdb) out.push(`Deployment ${name}: no PodDisruptionBudget`);
    if (name === "gateway") continue;
    const so = scaled.find((s) => (spec(s).scaleTargetRef as { name: string }).name === name);
    if (!so) {
      out.push(`worker ${name}: no KEDA ScaledObject`);
      continue;
    }
    const triggers = spec(so).triggers as Array<{ type: string; metadata: Record<string, string> }>;
    const min = (spec(so).minReplicaCount as number | undefined) ?? 0;
    if ((QUEUE_WORKERS as string[]).includes(name)) {
      const queue = WORK_QUEUES[name as TaskKind];
      const t = triggers.find((x) => x.type === "nats-jetstream");
      if (!t) {
        out.push(`worker ${name}: no nats-jetstream trigger`);
        continue;
      }
      if (t.metadata.stream !== STREAMS.work.name || t.metadata.stream !== queue.stream) out.push(`worker ${name}: trigger stream ${t.metadata.stream}, the code uses ${queue.stream}`);
      if (t.metadata.consumer !== queue.name) out.push(`worker ${name}: trigger consumer ${t.metadata.consumer}, the code's durable is ${queue.name}`);
      for (const field of ["account", "lagThreshold", "natsServerMonitoringEndpoint"]) {
        if (!t.metadata[field]) out.push(`worker ${name}: trigger without ${field}`);
      }
      const lag = Number(t.metadata.lagThreshold);
      if (!(lag > 0)) out.push(`worker ${name}: lagThreshold must be a positive number`);
      // KEDA's default maxReplicaCount
      const max = (spec(so).maxReplicaCount as number | undefined) ?? 100;
      if (queueLimit < max * lag) {
        out.push(
          `worker ${name}: KEDA sees at most ${queueLimit} waiting tasks (the gateway's QUEUE_MAX_UNSTARTED_TASKS), enough for ${Math.ceil(queueLimit / lag)} of maxReplicaCount ${max}; set it to at least maxReplicaCount × lagThreshold = ${max * lag}`,
        );
      }
      if (min !== 0) out.push(`worker ${name}: a queue worker should scale to zero (minReplicaCount ${min})`);
    } else if (min < 1) {
      out.push(`worker ${name}: request/reply needs minReplicaCount >= 1 (a request finds no queue to wait in)`);
    }
  }
  return out;
}

/** Secrets stay out of ConfigMaps and plain env values; a Secret in the rendered output is never applied by accident. */
export function secretViolations(ms: Manifest[]): string[] {
  const out: string[] = [];
  const secretNames = ["SIGNING_SECRET", "MONGODB_URL", "JWT_SECRET", "OPENAI_API_KEY", "S3_SECRET_ACCESS_KEY", "GCS_HMAC_SECRET", "VOICELOC_API_KEYS"];
  for (const cm of byKind(ms, "ConfigMap")) {
    for (const key of Object.keys((cm.data ?? {}) as object)) if (secretNames.includes(key)) out.push(`ConfigMap ${cm.metadata.name} holds ${key}`);
  }
  for (const d of deployments(ms)) {
    for (const c of d.spec.template.spec.containers) {
      for (const e of c.env ?? []) if (secretNames.includes(e.name) && e.value !== undefined) out.push(`Deployment ${d.metadata.name}: ${e.name} given as a plain value`);
    }
  }
  for (const s of byKind(ms, "Secret")) out.push(`Secret ${s.metadata.name} is part of the rendered manifests (create it out of band)`);
  return out;
}
