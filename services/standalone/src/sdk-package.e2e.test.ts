/**
 * `@voiceloc/sdk` as a stranger gets it from npm: built, packed with `pnpm pack`, and installed into a
 * fresh strict TypeScript project (`skipLibCheck: false`, NodeNext) that has no `@types/node`. The
 * SDK README's client example must typecheck there with no error, and its compiled JavaScript must
 * save the audio book it promises from a running service.
 *
 * The project's node_modules is put together without a registry, as npm would lay it out: the
 * tarball unpacked as `@voiceloc/sdk`, and each dependency its package.json names linked from the
 * workspace's installed copy (so a dependency it forgot to declare cannot be found), TypeScript the
 * repository's own.
 */
import { execFile } from "node:child_process";
import { mkdir, readFile, readdir, realpath, symlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "@voiceloc/log";
import { probe, resolveFfmpeg } from "@voiceloc/media";
import { freePort, tempDir } from "@voiceloc/testing";
import { signalAndWait, startService, type ServiceProcess } from "./testing/processes.ts";
import { SDK_DIR, sdkReadmeExample } from "./testing/sdk-readme.ts";

const ROOT = join(SDK_DIR, "..", "..");
const KEY = "sdk-package-alice-key-1";
const BOOK = [
  "The lighthouse keeper climbed the stairs every evening before the sun went down.",
  "He polished the great lens and wrote the weather in a small book.",
].join(" ");
const STRICT = { strict: true, skipLibCheck: false, module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", noEmitOnError: true };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command as a stranger's shell would: without the test's NODE_OPTIONS, whose
 * `--conditions=@voiceloc/source` would make node resolve the workspace's TypeScript source.
 */
function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  const { NODE_OPTIONS: _sourceCondition, ...inherited } = process.env;
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: { ...inherited, ...env }, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

const said = (r: Run) => `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;

let dir: { path: string; cleanup: () => Promise<void> };
/** The stranger's project: package.json, tsconfig.json, node_modules, the README example. */
let project: string;
let tsc: string;
let example: string;

beforeAll(async () => {
  dir = await tempDir("voiceloc-sdk-package-");
  project = join(dir.path, "project");
  const modules = join(project, "node_modules");
  await mkdir(join(modules, "@voiceloc", "sdk"), { recursive: true });

  const build = await run("pnpm", ["--filter", "@voiceloc/sdk", "build"], ROOT);
  expect(build.code, said(build)).toBe(0);
  const packs = join(dir.path, "packs");
  const pack = await run("pnpm", ["pack", "--pack-destination", packs], SDK_DIR);
  expect(pack.code, said(pack)).toBe(0);
  const [tarball] = (await readdir(packs)).filter((name) => name.endsWith(".tgz"));
  expect(tarball, said(pack)).toBeDefined();
  const untar = await run("tar", ["-xzf", join(packs, tarball as string), "-C", join(modules, "@voiceloc", "sdk"), "--strip-components=1"], project);
  expect(untar.code, said(untar)).toBe(0);

  const manifest = JSON.parse(await readFile(join(modules, "@voiceloc", "sdk", "package.json"), "utf8")) as { dependencies?: Record<string, string> };
  const dependencies = Object.entries(manifest.dependencies ?? {});
  // What npm would install: registry versions only (pnpm pack resolves `catalog:` and `workspace:`).
  for (const [name, range] of dependencies) expect(range, name).toMatch(/^[\^~]?\d/);
  expect(dependencies.map(([name]) => name)).not.toContain("@types/node");
  for (const [name] of dependencies) {
    const installed = await realpath(join(SDK_DIR, "node_modules", name));
    await mkdir(dirname(join(modules, name)), { recursive: true });
    await symlink(installed, join(modules, name), "dir");
  }
  const typescript = dirname(createRequire(join(ROOT, "package.json")).resolve("typescript/package.json"));
  await symlink(await realpath(typescript), join(modules, "typescript"), "dir");
  tsc = join(modules, "typescript", "bin", "tsc");
  const typescriptVersion = (JSON.parse(await readFile(join(typescript, "package.json"), "utf8")) as { version: string }).version;

  await writeFile(
    join(project, "package.json"),
    JSON.stringify({ name: "stranger", private: true, type: "module", dependencies: { "@voiceloc/sdk": `file:../packs/${tarball}`, typescript: typescriptVersion } }, null, 2),
  );
  await writeFile(join(project, "tsconfig.json"), JSON.stringify({ compilerOptions: { ...STRICT, outDir: "out" }, files: ["example.ts", "globals.d.ts"] }, null, 2));
  // The example reads its settings from `process.env`: that is the program's own use of Node, declared
  // here in one line. Nothing else of Node's types is there, so the SDK's declarations must do without.
  await writeFile(join(project, "globals.d.ts"), "declare const process: { env: Record<string, string | undefined> };\n");
  example = await sdkReadmeExample();
  await writeFile(join(project, "example.ts"), example);
}, 300_000);

afterAll(async () => {
  await dir?.cleanup();
});

describe("@voiceloc/sdk packed and installed in a strict project", () => {
  it("the README example sends only the contract's required fields", () => {
    expect(example).toContain('from "@voiceloc/sdk"');
    expect(example).toMatch(/client\.POST\("\/v1\/audio_books\/"/);
    expect(example).not.toContain("use_voice_clone");
  });

  it("typechecks the README example with no error and without @types/node (skipLibCheck: false)", async () => {
    const check = await run(process.execPath, [tsc, "--noEmit", "-p", "tsconfig.json"], project);
    expect(check.stdout + check.stderr, said(check)).toBe("");
    expect(check.code).toBe(0);
  });

  it("typechecks it in a Node project too: @types/node and no DOM library", async () => {
    // A project of its own inside the first, with @types/node beside it; it finds the SDK in the parent's node_modules.
    const nodeProject = join(project, "with-node-types");
    await mkdir(join(nodeProject, "node_modules", "@types"), { recursive: true });
    const nodeTypes = dirname(createRequire(join(ROOT, "package.json")).resolve("@types/node/package.json"));
    await symlink(await realpath(nodeTypes), join(nodeProject, "node_modules", "@types", "node"), "dir");
    await writeFile(
      join(nodeProject, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { ...STRICT, noEmit: true, lib: ["ES2022"], types: ["node"] }, files: ["../example.ts"] }, null, 2),
    );
    const check = await run(process.execPath, [tsc, "-p", "tsconfig.json"], nodeProject);
    expect(check.stdout + check.stderr, said(check)).toBe("");
    expect(check.code).toBe(0);
  });

  describe("against the running service", () => {
    let service: ServiceProcess | undefined;
    afterAll(async () => {
      if (service) await signalAndWait(service, "SIGTERM");
    });

    it("compiled with that tsc and run with node, the example saves a Spanish MP3 of the book", async () => {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const [started, compiled] = await Promise.all([
        startService("gateway,audiobook", { DATA_DIR: join(dir.path, "data"), PUBLIC_BASE_URL: base, VOICELOC_API_KEYS: `alice:${KEY}`, LOG_LEVEL: "warn" }, port),
        run(process.execPath, [tsc, "-p", "tsconfig.json"], project),
      ]);
      service = started;
      expect(compiled.code, said(compiled)).toBe(0);

      const work = join(dir.path, "work");
      await mkdir(work, { recursive: true });
      await writeFile(join(work, "book.txt"), BOOK);
      const ran = await run(process.execPath, [join(project, "out", "example.js")], work, { VOICELOC_URL: base, VOICELOC_API_KEY: KEY });
      expect(ran.code, `${said(ran)}\nservice:\n${service.output.join("").slice(-4000)}`).toBe(0);
      expect(ran.stdout).toMatch(/uploaded book\.txt as upload:[0-9a-f-]{36}/);
      expect(ran.stdout).toContain("completed 100%");
      expect(ran.stdout).toContain("saved lighthouse.es.mp3");
      const books = (await (await fetch(`${base}/v1/audio_books/`, { headers: { "API-KEY": KEY } })).json()) as Array<Record<string, unknown>>;
      expect(books).toEqual([
        expect.objectContaining({ name: "The lighthouse", file: expect.stringMatching(/^upload:/), target_language: "Spanish", task_status: "completed" }),
      ]);

      const ffmpeg = await resolveFfmpeg({ logger: silentLogger() });
      const info = await probe(join(work, "lighthouse.es.mp3"), { ffprobePath: ffmpeg.ffprobe, ffmpegPath: ffmpeg.ffmpeg });
      expect(info.audio?.codec).toBe("mp3");
      // Two sentences spoken: seconds, not a blip and not minutes.
      expect(info.durationSeconds).toBeGreaterThan(3);
      expect(info.durationSeconds).toBeLessThan(60);
    }, 420_000);
  });
});
