/**
 * deploy/Dockerfile without a Docker engine: its stages and packages read and compared with
 * scripts/setup.mjs, and its HEALTHCHECK command run on this machine against a real HTTP server.
 */
import { spawnSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVICE_NAMES } from "@voiceloc/config";
import { aptPackages, envOf, inherited, last, parseDockerfile, readText, setupAptPackages, setupTestAptPackages, type Dockerfile } from "./dockerfile.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const dockerfile = parseDockerfile(readText(join(root, "deploy", "Dockerfile")));
const SETUP = setupAptPackages(readText(join(root, "scripts", "setup.mjs")));
/** Debian packages only the tests need (the browser of the browser tests): never in an image. */
const TEST_ONLY = setupTestAptPackages(readText(join(root, "scripts", "setup.mjs")));
const TARGETS = [...SERVICE_NAMES, "all"] as const;

const stage = (file: Dockerfile, name: string) => {
  const found = file.stages.find((s) => s.name === name);
  if (!found) throw new Error(`no stage ${name}`);
  return found;
};

/** setup's list by what needs it; a package in none of these groups fails the test until it is placed. */
const group = (re: RegExp) => SETUP.filter((p) => re.test(p));
const FFMPEG = group(/^ffmpeg$/);
const VOICES = group(/^(espeak-ng|flite|festival|festvox-.*|festival-.*)$/);
const TRANSLATION = group(/^apertium/);
const RECOGNITION = group(/^pocketsphinx/);
const FONTS = group(/^fonts-/);
/** nats-server is the bus of the mesh, its own service (and the test harness's); no image carries it. */
const NOT_IN_IMAGES = ["nats-server"];

const EXPECTED: Record<(typeof TARGETS)[number], string[]> = {
  gateway: [],
  synthesis: [...FFMPEG, ...VOICES],
  audiobook: [...FFMPEG, ...VOICES, ...TRANSLATION],
  "voice-stream": [...FFMPEG, ...VOICES, ...TRANSLATION, ...RECOGNITION],
  subtitle: [...FFMPEG, ...TRANSLATION, ...RECOGNITION, ...FONTS],
  all: SETUP.filter((p) => !NOT_IN_IMAGES.includes(p)),
};

describe("deploy/Dockerfile", () => {
  it("every package of scripts/setup.mjs belongs to a known group", () => {
    const grouped = new Set([...FFMPEG, ...VOICES, ...TRANSLATION, ...RECOGNITION, ...FONTS, ...NOT_IN_IMAGES]);
    expect(SETUP.filter((p) => !grouped.has(p))).toEqual([]);
    expect(VOICES).toContain("festival-hi");
  });

  it("has a target per service and `all`, each installing exactly the Debian packages it needs, all from setup's list", () => {
    for (const target of TARGETS) {
      const packages = aptPackages(stage(dockerfile, target));
      expect(packages.filter((p) => !SETUP.includes(p)), `${target}: not in scripts/setup.mjs`).toEqual([]);
      expect([...packages].sort(), target).toEqual([...EXPECTED[target]].sort());
    }
    // Nothing installed in the shared runtime stage, so no target inherits a package it does not need.
    expect(aptPackages(stage(dockerfile, "runtime"))).toEqual([]);
  });

  it("no stage installs a test-only package of scripts/setup.mjs, and only `npm test` asks setup for them", () => {
    expect(TEST_ONLY).toContain("chromium");
    expect(TEST_ONLY.filter((p) => SETUP.includes(p))).toEqual([]);
    for (const s of dockerfile.stages) {
      expect(aptPackages(s).filter((p) => TEST_ONLY.includes(p)), s.name).toEqual([]);
    }
    const scripts = (JSON.parse(readText(join(root, "package.json"))) as { scripts: Record<string, string> }).scripts;
    const withTestFlag = Object.entries(scripts).filter(([, command]) => /setup\.mjs[^&]*--test/.test(command)).map(([name]) => name);
    expect(withTestFlag).toEqual(["test"]);
    expect(scripts.start).toMatch(/setup\.mjs/);
  });

  it("every service target runs its service as a non-root user from the built output", () => {
    for (const target of TARGETS) {
      const s = stage(dockerfile, target);
      expect(s.from, target).toBe("runtime");
      const user = last(s, "USER");
      expect(user, target).toMatch(/^[1-9]\d*(:[1-9]\d*)?$/); // numeric, so Kubernetes can verify runAsNonRoot
      expect(s.instructions.some((i) => i.keyword === "COPY" && i.args.includes("--from=build") && i.args.includes("/out /app")), target).toBe(true);
      expect(envOf(dockerfile, s).SERVICES, target).toBe(target === "all" ? undefined : target);
    }
  });

  it("runtime: Node 24 LTS on Debian bookworm slim with a pinned minor, healthcheck, SIGTERM, OCI labels, compiled entry", () => {
    const image = dockerfile.globalArgs.NODE_IMAGE ?? "";
    expect(image).toMatch(/^node:24\.\d+(\.\d+)?-bookworm-slim(@sha256:[0-9a-f]{64})?$/);
    expect(dockerfile.stages.filter((s) => s.from.startsWith("node") || s.from.startsWith("$")).map((s) => s.from)).toEqual(["${NODE_IMAGE}", "${NODE_IMAGE}"]);
    const runtime = inherited(dockerfile, stage(dockerfile, "gateway"));
    const get = (k: string) => runtime.filter((i) => i.keyword === k).map((i) => i.args);
    expect(get("STOPSIGNAL")).toEqual(["SIGTERM"]);
    expect(get("HEALTHCHECK")).toHaveLength(1);
    expect(get("ENTRYPOINT")).toEqual(['["node", "dist/main.js"]']);
    const labels = get("LABEL").join(" ");
    for (const key of ["title", "description", "version", "revision", "created", "base.name"]) {
      expect(labels).toContain(`org.opencontainers.image.${key}=`);
    }
  });

  it("build: compiler only in the build stage, the pinned pnpm, frozen lockfile, production deploy of the standalone entry", () => {
    const build = stage(dockerfile, "build");
    expect(aptPackages(build).sort()).toEqual(["ca-certificates", "g++", "make", "python3"]);
    const pnpm = JSON.parse(readText(join(root, "package.json"))).packageManager as string;
    expect(`pnpm@${build.instructions.find((i) => i.keyword === "ARG" && i.args.startsWith("PNPM_VERSION="))!.args.split("=")[1]}`).toBe(pnpm);
    const run = build.instructions.filter((i) => i.keyword === "RUN").map((i) => i.args).join(" && ");
    expect(run).toContain("pnpm install --frozen-lockfile");
    expect(run).toMatch(/pnpm --filter @voiceloc\/standalone deploy --prod \$\{PNPM_DEPLOY_FLAGS\} \/out/);
  });

  it("no image is tagged latest", () => {
    for (const s of dockerfile.stages) expect(s.from).not.toMatch(/:latest$/);
    expect(dockerfile.globalArgs.NODE_IMAGE).not.toMatch(/latest/);
  });

  it(".dockerignore keeps dependencies, builds, git, data and secrets out of the context", () => {
    const ignored = readText(join(root, ".dockerignore")).split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
    for (const entry of ["**/node_modules", "**/dist", ".git", "data", ".env"]) expect(ignored).toContain(entry);
  });
});

describe("the image's HEALTHCHECK, run on this machine", () => {
  const healthcheck = (() => {
    const line = inherited(dockerfile, stage(dockerfile, "gateway")).find((i) => i.keyword === "HEALTHCHECK")!.args;
    const json = line.slice(line.indexOf("CMD ") + 4);
    return JSON.parse(json) as string[];
  })();
  let status = 200;
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer((req, res) => {
      res.writeHead(req.url === "/healthz" ? status : 404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const run = async (env: Record<string, string>) => {
    const [cmd, ...args] = healthcheck;
    // spawnSync would block the event loop serving the request: run it asynchronously.
    const { spawn } = await import("node:child_process");
    return new Promise<number | null>((resolve) => {
      const child = spawn(cmd!, args, { env: { PATH: process.env.PATH ?? "", ...env }, stdio: "ignore" });
      child.on("exit", (code) => resolve(code));
    });
  };

  it("is node fetching /healthz on PORT", () => {
    expect(healthcheck[0]).toBe("node");
    expect(healthcheck.join(" ")).toContain("/healthz");
    expect(spawnSync("node", ["--version"]).status).toBe(0);
  });

  it("exits 0 while /healthz answers 200, 1 on 503, 1 when nothing listens", async () => {
    status = 200;
    expect(await run({ PORT: String(port) })).toBe(0);
    status = 503;
    expect(await run({ PORT: String(port) })).toBe(1);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const unused = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expect(await run({ PORT: String(unused) })).toBe(1);
  });
});

describe("the Dockerfile checks fail on a broken Dockerfile", () => {
  const original = readText(join(root, "deploy", "Dockerfile"));

  it("a recommends-style install, a package outside setup's list, root user", () => {
    const noRecommends = parseDockerfile(original.replace("apt-get install -y --no-install-recommends ffmpeg \\\n      apertium", "apt-get install -y ffmpeg \\\n      apertium"));
    expect(() => aptPackages(stage(noRecommends, "subtitle"))).toThrow(/--no-install-recommends/);
    const extra = parseDockerfile(original.replace("pocketsphinx pocketsphinx-en-us fonts-noto-core fonts-noto-cjk \\\n && rm -rf /var/lib/apt/lists/*\nENV SERVICES=subtitle", "pocketsphinx pocketsphinx-en-us fonts-noto-core fonts-noto-cjk curl \\\n && rm -rf /var/lib/apt/lists/*\nENV SERVICES=subtitle"));
    expect(aptPackages(stage(extra, "subtitle")).filter((p) => !SETUP.includes(p))).toEqual(["curl"]);
    const browser = parseDockerfile(original.replace("fonts-noto-core fonts-noto-cjk \\\n && rm -rf /var/lib/apt/lists/*\nENV SERVICES=subtitle", "fonts-noto-core fonts-noto-cjk chromium \\\n && rm -rf /var/lib/apt/lists/*\nENV SERVICES=subtitle"));
    expect(aptPackages(stage(browser, "subtitle")).filter((p) => TEST_ONLY.includes(p))).toEqual(["chromium"]);
    const root0 = parseDockerfile(original.replace(/ENV SERVICES=gateway\nCOPY --from=build --chown=0:0 \/out \/app\nUSER 1000:1000/, "ENV SERVICES=gateway\nCOPY --from=build --chown=0:0 /out /app\nUSER root"));
    expect(last(stage(root0, "gateway"), "USER")).not.toMatch(/^[1-9]\d*(:[1-9]\d*)?$/);
  });
});
