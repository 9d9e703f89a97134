/**
 * A reader for deploy/Dockerfile (stages, their instructions, ARG defaults, the Debian packages each
 * stage installs) and for the Debian package list of scripts/setup.mjs, so the tests can compare them.
 */
import { readFileSync } from "node:fs";

export interface Instruction {
  keyword: string;
  args: string;
}

export interface Stage {
  name: string;
  from: string;
  instructions: Instruction[];
}

export interface Dockerfile {
  /** ARGs declared before the first FROM, with their defaults. */
  globalArgs: Record<string, string>;
  stages: Stage[];
}

/** Joins continuation lines, drops comments and blank lines, splits into stages. */
export function parseDockerfile(text: string): Dockerfile {
  const logical: string[] = [];
  let current = "";
  for (const raw of text.split("\n")) {
    const line = raw.trimEnd();
    if (current === "" && (line.trim() === "" || line.trimStart().startsWith("#"))) continue;
    if (current !== "" && line.trimStart().startsWith("#")) continue;
    if (line.endsWith("\\")) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push((current + line).trim());
    current = "";
  }
  if (current !== "") logical.push(current.trim());

  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const line of logical) {
    const space = line.search(/\s/);
    const keyword = (space === -1 ? line : line.slice(0, space)).toUpperCase();
    const args = space === -1 ? "" : line.slice(space + 1).trim().replace(/\s+/g, " ");
    if (keyword === "FROM") {
      const m = /^(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!m) throw new Error(`cannot read FROM ${args}`);
      stages.push({ from: m[1]!, name: m[2] ?? String(stages.length), instructions: [] });
    } else if (stages.length === 0) {
      if (keyword !== "ARG") throw new Error(`${keyword} before the first FROM`);
      const [name, value] = args.split("=", 2);
      globalArgs[name!] = value ?? "";
    } else {
      stages.at(-1)!.instructions.push({ keyword, args });
    }
  }
  return { globalArgs, stages };
}

/** Every package named by `apt-get install` in the stage's RUN instructions; throws on an install without --no-install-recommends. */
export function aptPackages(stage: Stage): string[] {
  const out: string[] = [];
  for (const { keyword, args } of stage.instructions) {
    if (keyword !== "RUN") continue;
    for (const command of args.split(/&&|;|\|\|/)) {
      const words = command.trim().split(" ").filter(Boolean);
      const apt = words.findIndex((w) => w === "apt-get" || w === "apt");
      const install = apt === -1 ? -1 : words.indexOf("install", apt + 1);
      if (install === -1) continue;
      if (!words.includes("--no-install-recommends")) throw new Error(`stage ${stage.name}: apt-get install without --no-install-recommends`);
      out.push(...words.slice(install + 1).filter((w) => !w.startsWith("-")));
    }
  }
  return out;
}

/** The value of the stage's last instruction of that keyword (e.g. USER), or undefined. */
export function last(stage: Stage, keyword: string): string | undefined {
  return stage.instructions.filter((i) => i.keyword === keyword).at(-1)?.args;
}

/** ENV of a stage and the stages it is built FROM, as a map (later wins). */
export function envOf(file: Dockerfile, stage: Stage): Record<string, string> {
  const parent = file.stages.find((s) => s.name === stage.from);
  const env = parent ? envOf(file, parent) : {};
  for (const { keyword, args } of stage.instructions) {
    if (keyword !== "ENV") continue;
    for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)/g)) env[m[1]!] = m[2]!.replace(/^"|"$/g, "");
  }
  return env;
}

/** The instructions of a stage and of the stages it is built FROM (parents first). */
export function inherited(file: Dockerfile, stage: Stage): Instruction[] {
  const parent = file.stages.find((s) => s.name === stage.from);
  return [...(parent ? inherited(file, parent) : []), ...stage.instructions];
}

/** APT_PACKAGES of scripts/setup.mjs: what a machine needs to run every service (and the tests). */
export function setupAptPackages(setupSource: string): string[] {
  const m = /const APT_PACKAGES = \[([\s\S]*?)\];/.exec(setupSource);
  if (!m) throw new Error("APT_PACKAGES not found in scripts/setup.mjs");
  return [...m[1]!.matchAll(/"([^"]+)"/g)].map((x) => x[1]!);
}

/** TEST_APT_PACKAGES of scripts/setup.mjs: installed by `npm test` only (`--test`), never in an image. */
export function setupTestAptPackages(setupSource: string): string[] {
  const m = /const TEST_APT_PACKAGES = \[([\s\S]*?)\];/.exec(setupSource);
  if (!m) throw new Error("TEST_APT_PACKAGES not found in scripts/setup.mjs");
  return [...m[1]!.matchAll(/"([^"]+)"/g)].map((x) => x[1]!);
}

export const readText = (path: string) => readFileSync(path, "utf8");
