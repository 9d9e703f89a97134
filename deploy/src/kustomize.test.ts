import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { idOf, KustomizeError, renderKustomization, type Manifest } from "./kustomize.ts";

const k8s = join(dirname(fileURLToPath(import.meta.url)), "..", "k8s");
const scratch = mkdtempSync(join(tmpdir(), "voiceloc-kustomize-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let counter = 0;
/** Writes files under a fresh directory; returns its path. */
function tree(files: Record<string, string>): string {
  const root = join(scratch, String(counter++));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const BASE_DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata: { name: web, labels: { app: web } }
spec:
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers:
        - name: web
          image: example/web:1.0
          args: [a, b]
          env: [{ name: A, value: "1" }, { name: B, value: "2" }]
          resources: { limits: { cpu: "1", memory: 1Gi } }
        - name: side
          image: example/side@sha256:abc
`;

describe("the kustomize renderer", () => {
  it("merges a strategic patch: containers and env by name, other lists replaced, null removes", () => {
    const dir = tree({
      "base/kustomization.yaml": "resources: [web.yaml]\n",
      "base/web.yaml": BASE_DEPLOYMENT,
      "over/kustomization.yaml": "resources: [../base]\npatches:\n  - path: p.yaml\n",
      "over/p.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: { name: web }
spec:
  template:
    spec:
      containers:
        - name: web
          args: [c]
          env: [{ name: B, value: "3" }, { name: C, value: "4" }]
          resources: { limits: { memory: 2Gi, cpu: null } }
`,
    });
    const [web] = renderKustomization(join(dir, "over")) as Array<Manifest & { spec: { template: { spec: { containers: Array<Record<string, unknown>> } } } }>;
    const [main, side] = web!.spec.template.spec.containers;
    expect(main).toEqual({
      name: "web",
      image: "example/web:1.0",
      args: ["c"],
      // kustomize's order: the patch's items first, then the base's others.
      env: [
        { name: "B", value: "3" },
        { name: "C", value: "4" },
        { name: "A", value: "1" },
      ],
      resources: { limits: { memory: "2Gi" } },
    });
    expect(side).toEqual({ name: "side", image: "example/side@sha256:abc" });
  });

  it("sets the namespace, adds labels to metadata only, rewrites images by name", () => {
    const dir = tree({
      "kustomization.yaml": `resources: [web.yaml]
namespace: prod
labels:
  - pairs: { tier: front }
images:
  - { name: example/web, newName: registry.test/web, newTag: "2.0" }
  - { name: example/side, digest: "sha256:def" }
`,
      "web.yaml": BASE_DEPLOYMENT,
    });
    const [web] = renderKustomization(dir) as Array<Manifest & { spec: Record<string, never> }>;
    expect(web!.metadata).toEqual({ name: "web", namespace: "prod", labels: { app: "web", tier: "front" } });
    const spec = web!.spec as unknown as { selector: unknown; template: { metadata: unknown; spec: { containers: Array<{ image: string }> } } };
    expect(spec.selector).toEqual({ matchLabels: { app: "web" } });
    expect(spec.template.metadata).toEqual({ labels: { app: "web" } });
    expect(spec.template.spec.containers.map((c) => c.image)).toEqual(["registry.test/web:2.0", "example/side@sha256:def"]);
  });

  it("refuses what it does not implement, and a patch that matches nothing", () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ "kustomization.yaml": "resources: [web.yaml]\nconfigMapGenerator: []\n", "web.yaml": BASE_DEPLOYMENT }, /configMapGenerator/],
      [{ "kustomization.yaml": "resources: [web.yaml]\npatches:\n  - path: p.yaml\n    target: { kind: Deployment }\n", "web.yaml": BASE_DEPLOYMENT, "p.yaml": "" }, /only "- path/],
      [{ "kustomization.yaml": "resources: [web.yaml]\nlabels:\n  - pairs: { a: b }\n    includeSelectors: true\n", "web.yaml": BASE_DEPLOYMENT }, /includeSelectors/],
      [
        { "kustomization.yaml": "resources: [web.yaml]\npatches:\n  - path: p.yaml\n", "web.yaml": BASE_DEPLOYMENT, "p.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: api }\n" },
        /no resource apps\/v1 Deployment api/,
      ],
      [
        { "kustomization.yaml": "resources: [web.yaml]\npatches:\n  - path: p.yaml\n", "web.yaml": BASE_DEPLOYMENT, "p.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: web }\n$patch: delete\n" },
        /\$patch/,
      ],
      [{ "kustomization.yaml": "resources: [web.yaml, web.yaml]\n", "web.yaml": BASE_DEPLOYMENT }, /defined twice/],
    ];
    for (const [files, message] of cases) {
      expect(() => renderKustomization(tree(files))).toThrow(KustomizeError);
      expect(() => renderKustomization(tree(files))).toThrow(message);
    }
  });
});

/** kubectl embeds kustomize; where it is installed, our renderer must agree with it exactly. */
const kubectl = spawnSync("kubectl", ["version", "--client"], { encoding: "utf8" });
const kubectlReason = kubectl.error ? "kubectl is not installed" : kubectl.status !== 0 ? `kubectl version failed: ${kubectl.stderr.trim()}` : undefined;

if (kubectlReason) {
  process.stdout.write(`[@voiceloc/deploy] comparison with kubectl kustomize skipped: ${kubectlReason}\n`);
  describe.skip(`the renderer agrees with kubectl kustomize (skipped: ${kubectlReason})`, () => {
    it.skip(`needs kubectl: ${kubectlReason}`, () => undefined);
  });
} else {
  describe("the renderer agrees with kubectl kustomize", () => {
    for (const dir of ["base", "overlays/production"]) {
      it(`deploy/k8s/${dir}`, () => {
        const out = execFileSync("kubectl", ["kustomize", join(k8s, dir)], { encoding: "utf8" });
        const theirs = parseAllDocuments(out).map((d) => d.toJS() as Manifest);
        const ours = renderKustomization(join(k8s, dir));
        const byId = (ms: Manifest[]) => Object.fromEntries(ms.map((m) => [idOf(m), m]));
        expect(byId(ours)).toEqual(byId(theirs));
      });
    }
  });
}
