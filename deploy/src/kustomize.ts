/**
 * A small kustomize renderer for the tests, limited to what deploy/k8s uses (the kustomize binary is not
 * installed on every machine that runs `pnpm test`). It reads a `kustomization.yaml` and applies, in
 * kustomize's order:
 *   resources   files (every YAML document) and directories (their own kustomization, rendered first)
 *   patches     `- path: file` strategic-merge patches, matched to a resource by apiVersion, kind and name
 *   namespace   set on every namespaced resource
 *   labels      `pairs` added to metadata.labels (includeSelectors and includeTemplates false only)
 *   images      `name` → `newName` / `newTag` / `digest` in every containers / initContainers list
 * Strategic merge: maps merge key by key, `null` removes a key, lists of built-in kinds merge by their
 * Kubernetes merge key (containers, initContainers, env, volumes by `name`; volumeMounts by `mountPath`),
 * every other list (and every list of a custom resource) is replaced.
 * Anything else (generators, inline or targeted patches, `$patch` directives, replicas, components…)
 * is refused with an error naming it, so a manifest never silently renders differently from kustomize.
 * Where kubectl is installed, deploy/src/kustomize.test.ts checks the output equals `kubectl kustomize`.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [key: string]: unknown };
  [key: string]: unknown;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

export class KustomizeError extends Error {
  override name = "KustomizeError";
}

const KUSTOMIZATION_FIELDS = new Set(["apiVersion", "kind", "resources", "namespace", "labels", "images", "patches"]);
const CLUSTER_SCOPED = new Set(["Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PriorityClass", "StorageClass", "PersistentVolume"]);
const MERGE_KEYS: Record<string, string> = { containers: "name", initContainers: "name", env: "name", volumes: "name", volumeMounts: "mountPath" };

/** Reads every YAML document of a file (empty documents skipped). */
export function readManifests(file: string): Manifest[] {
  const docs = parseAllDocuments(readFileSync(file, "utf8"));
  const out: Manifest[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) throw new KustomizeError(`${file}: ${doc.errors[0]!.message}`);
    const value = doc.toJS({ maxAliasCount: 100 }) as unknown;
    if (value === null || value === undefined) continue;
    if (!isObject(value) || typeof value.kind !== "string" || typeof value.apiVersion !== "string" || !isObject(value.metadata) || typeof value.metadata.name !== "string") {
      throw new KustomizeError(`${file}: every document needs apiVersion, kind and metadata.name`);
    }
    out.push(value as unknown as Manifest);
  }
  return out;
}

/** Renders the kustomization in `dir` (as `kubectl kustomize dir` would, within the limits above). */
export function renderKustomization(dir: string): Manifest[] {
  const file = ["kustomization.yaml", "kustomization.yml", "Kustomization"].map((n) => join(dir, n)).find((p) => existsSync(p));
  if (!file) throw new KustomizeError(`${dir}: no kustomization.yaml`);
  const [k] = readYaml(file);
  if (!isObject(k)) throw new KustomizeError(`${file}: not a mapping`);
  for (const field of Object.keys(k)) {
    if (!KUSTOMIZATION_FIELDS.has(field)) throw new KustomizeError(`${file}: "${field}" is not supported by this renderer`);
  }

  const resources: Manifest[] = [];
  for (const entry of list(k.resources, `${file}: resources`)) {
    if (typeof entry !== "string") throw new KustomizeError(`${file}: a resource must be a path`);
    const path = resolve(dir, entry);
    resources.push(...(statSync(path).isDirectory() ? renderKustomization(path) : readManifests(path)));
  }
  const ids = new Set<string>();
  for (const r of resources) {
    const id = idOf(r);
    if (ids.has(id)) throw new KustomizeError(`${file}: ${id} is defined twice`);
    ids.add(id);
  }

  for (const entry of list(k.patches, `${file}: patches`)) {
    if (!isObject(entry) || Object.keys(entry).some((key) => key !== "path") || typeof entry.path !== "string") {
      throw new KustomizeError(`${file}: only "- path: <file>" patches are supported`);
    }
    for (const patch of readManifests(resolve(dir, entry.path))) {
      const target = resources.find((r) => r.apiVersion === patch.apiVersion && r.kind === patch.kind && r.metadata.name === patch.metadata.name);
      if (!target) throw new KustomizeError(`${entry.path}: no resource ${patch.apiVersion} ${patch.kind} ${patch.metadata.name} to patch`);
      const merged = mergeObject(target as unknown as JsonObject, patch as unknown as JsonObject, isBuiltIn(patch.apiVersion), entry.path);
      resources[resources.indexOf(target)] = merged as unknown as Manifest;
    }
  }

  if (k.namespace !== undefined) {
    if (typeof k.namespace !== "string") throw new KustomizeError(`${file}: namespace must be a string`);
    for (const r of resources) if (!CLUSTER_SCOPED.has(r.kind)) r.metadata.namespace = k.namespace;
  }

  for (const entry of list(k.labels, `${file}: labels`)) {
    if (!isObject(entry) || !isObject(entry.pairs)) throw new KustomizeError(`${file}: labels entries need pairs`);
    if (entry.includeSelectors === true || entry.includeTemplates === true) {
      throw new KustomizeError(`${file}: labels with includeSelectors or includeTemplates are not supported`);
    }
    for (const r of resources) {
      r.metadata.labels = { ...(r.metadata.labels ?? {}), ...(entry.pairs as Record<string, string>) };
    }
  }

  for (const entry of list(k.images, `${file}: images`)) {
    if (!isObject(entry) || typeof entry.name !== "string") throw new KustomizeError(`${file}: images entries need a name`);
    for (const r of resources) rewriteImages(r as unknown as Json, entry);
  }
  return resources;
}

/** `apiVersion kind namespace/name`: what kustomize (and kubectl) identify a resource by. */
export function idOf(r: Manifest): string {
  return `${r.apiVersion} ${r.kind} ${r.metadata.namespace ?? "~"}/${r.metadata.name}`;
}

function readYaml(file: string): unknown[] {
  return parseAllDocuments(readFileSync(file, "utf8")).map((d) => d.toJS() as unknown);
}

function list(value: unknown, where: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new KustomizeError(`${where} must be a list`);
  return value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Core (`v1`) and `*.k8s.io` or dotless groups (`apps/v1`, `policy/v1`): kinds with merge keys. */
function isBuiltIn(apiVersion: string): boolean {
  const group = apiVersion.includes("/") ? apiVersion.split("/")[0]! : "";
  return group === "" || !group.includes(".") || group.endsWith(".k8s.io");
}

function mergeObject(base: JsonObject, patch: JsonObject, builtIn: boolean, where: string): JsonObject {
  const out: JsonObject = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$")) throw new KustomizeError(`${where}: the directive ${key} is not supported`);
    if (value === null) {
      delete out[key];
      continue;
    }
    const current = out[key];
    if (isObject(value) && isObject(current)) {
      out[key] = mergeObject(current as JsonObject, value as JsonObject, builtIn, where);
    } else if (Array.isArray(value) && Array.isArray(current) && builtIn && MERGE_KEYS[key]) {
      out[key] = mergeList(current, value, MERGE_KEYS[key]!, builtIn, where);
    } else {
      out[key] = structuredClone(value);
    }
  }
  return out;
}

/** As kustomize orders it: the patch's items (merged into the base's item of the same key), then the base's other items. */
function mergeList(base: Json[], patch: Json[], mergeKey: string, builtIn: boolean, where: string): Json[] {
  const keyOf = (item: Json) => {
    if (!isObject(item) || item[mergeKey] === undefined) throw new KustomizeError(`${where}: a list item without its merge key ${mergeKey}`);
    return item[mergeKey];
  };
  const patched = patch.map((item) => {
    const existing = base.find((b) => keyOf(b) === keyOf(item));
    return existing === undefined ? structuredClone(item) : mergeObject(existing as JsonObject, item as JsonObject, builtIn, where);
  });
  const patchKeys = new Set(patch.map(keyOf));
  return [...patched, ...base.filter((b) => !patchKeys.has(keyOf(b)))];
}

function rewriteImages(node: Json, entry: Record<string, unknown>): void {
  if (Array.isArray(node)) {
    for (const item of node) rewriteImages(item, entry);
    return;
  }
  if (!isObject(node)) return;
  for (const [key, value] of Object.entries(node)) {
    if ((key === "containers" || key === "initContainers") && Array.isArray(value)) {
      for (const container of value) {
        if (isObject(container) && typeof container.image === "string") container.image = rewriteImage(container.image, entry);
      }
    }
    rewriteImages(value as Json, entry);
  }
}

function rewriteImage(image: string, entry: Record<string, unknown>): string {
  const at = image.indexOf("@");
  const withoutDigest = at === -1 ? image : image.slice(0, at);
  const digest = at === -1 ? undefined : image.slice(at + 1);
  const colon = withoutDigest.lastIndexOf(":");
  const hasTag = colon > withoutDigest.lastIndexOf("/");
  const name = hasTag ? withoutDigest.slice(0, colon) : withoutDigest;
  const tag = hasTag ? withoutDigest.slice(colon + 1) : undefined;
  if (name !== entry.name) return image;
  const newName = typeof entry.newName === "string" ? entry.newName : name;
  if (typeof entry.digest === "string") return `${newName}@${entry.digest}`;
  const newTag = typeof entry.newTag === "string" ? entry.newTag : tag;
  return `${newName}${newTag === undefined ? "" : `:${newTag}`}${digest === undefined || entry.newTag !== undefined ? "" : `@${digest}`}`;
}
