import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { delimiter, join } from "node:path";
import type { Logger } from "@voiceloc/log";
import { FfmpegNotFoundError } from "./errors.ts";
import { runProcess } from "./process.ts";

export type FfmpegSource = "configured" | "system" | "bundled";

export interface FfmpegBinaries {
  ffmpeg: string;
  ffprobe: string;
  /** ffmpeg's version string, e.g. "5.1.9-0+deb12u1". */
  version: string;
  /** Where ffmpeg came from. */
  source: FfmpegSource;
  ffprobeVersion: string;
  ffprobeSource: FfmpegSource;
}

export interface ResolveFfmpegOptions {
  /** FFMPEG_PATH from configuration; used as is when given. */
  ffmpegPath?: string | undefined;
  /** FFPROBE_PATH from configuration; used as is when given. */
  ffprobePath?: string | undefined;
  logger: Logger;
  /** Directories searched for system binaries, in PATH syntax. Default: the process's PATH. */
  searchPath?: string | undefined;
  /** Oldest system major version accepted from PATH. Default 5. */
  minimumMajor?: number | undefined;
}

export interface ParsedVersion {
  version: string;
  /** Major release number, undefined for git snapshot builds ("N-12345-g…"). */
  major: number | undefined;
  /** Last year of the copyright line, a hint of age for snapshot builds. */
  year: number | undefined;
}

/** Reads the first line of `ffmpeg -version` / `ffprobe -version`. */
export function parseVersionOutput(output: string): ParsedVersion | undefined {
  const first = output.split("\n", 1)[0] ?? "";
  const match = /^ff(?:mpeg|probe) version (\S+)/.exec(first);
  if (!match?.[1]) return undefined;
  const version = match[1];
  const major = /^n?(\d+)\.\d+/.exec(version);
  const year = /Copyright \(c\) \d{4}-(\d{4})/.exec(first);
  return {
    version,
    major: major?.[1] === undefined ? undefined : Number(major[1]),
    year: year?.[1] === undefined ? undefined : Number(year[1]),
  };
}

/** True when the build is at least `minimumMajor` (snapshot builds: copyright year 2022 or later, when 5.0 came out). */
export function isRecentEnough(parsed: ParsedVersion, minimumMajor: number): boolean {
  if (parsed.major !== undefined) return parsed.major >= minimumMajor;
  return parsed.year !== undefined && parsed.year >= 2017 + minimumMajor;
}

async function readVersion(binary: string): Promise<ParsedVersion | undefined> {
  const result = await runProcess(binary, ["-version"], { collectStdout: true, maxStdoutBytes: 256 * 1024, timeoutMs: 15_000 });
  if (result.spawnError || result.exitCode !== 0) return undefined;
  return parseVersionOutput(result.stdout.toString("utf8"));
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function findOnPath(
  name: "ffmpeg" | "ffprobe",
  searchPath: string,
  minimumMajor: number,
  logger: Logger,
): Promise<{ path: string; version: string } | undefined> {
  const file = process.platform === "win32" ? `${name}.exe` : name;
  const seen = new Set<string>();
  for (const dir of searchPath.split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, file);
    if (seen.has(candidate) || !(await isExecutable(candidate))) continue;
    seen.add(candidate);
    const parsed = await readVersion(candidate);
    if (parsed === undefined) {
      logger.debug({ candidate }, `${name} on PATH did not report a version; skipped`);
    } else if (isRecentEnough(parsed, minimumMajor)) {
      return { path: candidate, version: parsed.version };
    } else {
      logger.info({ candidate, version: parsed.version }, `${name} on PATH is older than version ${minimumMajor}; skipped`);
    }
  }
  return undefined;
}

async function bundledPath(name: "ffmpeg" | "ffprobe", logger: Logger): Promise<string | undefined> {
  try {
    const module = name === "ffmpeg" ? await import("@ffmpeg-installer/ffmpeg") : await import("@ffprobe-installer/ffprobe");
    const path: unknown = module.default.path;
    return typeof path === "string" && path !== "" ? path : undefined;
  } catch (error) {
    logger.debug({ err: error }, `no bundled ${name} for this platform`);
    return undefined;
  }
}

async function resolveOne(
  name: "ffmpeg" | "ffprobe",
  configured: string | undefined,
  envName: string,
  options: ResolveFfmpegOptions,
): Promise<{ path: string; version: string; source: FfmpegSource }> {
  const { logger } = options;
  const minimumMajor = options.minimumMajor ?? 5;
  if (configured !== undefined && configured !== "") {
    const parsed = await readVersion(configured);
    if (parsed === undefined) {
      throw new FfmpegNotFoundError(`${envName} is set to "${configured}", but no working ${name} could be run from there.`);
    }
    if (!isRecentEnough(parsed, minimumMajor)) {
      logger.warn({ path: configured, version: parsed.version }, `the configured ${name} is older than version ${minimumMajor}; untrusted media should be decoded by a current build`);
    }
    return { path: configured, version: parsed.version, source: "configured" };
  }
  const system = await findOnPath(name, options.searchPath ?? process.env.PATH ?? "", minimumMajor, logger);
  if (system) return { ...system, source: "system" };
  const bundled = await bundledPath(name, logger);
  if (bundled !== undefined) {
    const parsed = await readVersion(bundled);
    if (parsed !== undefined) {
      if (name === "ffmpeg") {
        logger.warn(
          { path: bundled, version: parsed.version },
          "using the ffmpeg bundled by @ffmpeg-installer/ffmpeg, a 2018 build that will decode untrusted media; install ffmpeg 5 or newer or set FFMPEG_PATH",
        );
      } else {
        logger.info({ path: bundled, version: parsed.version }, "using the ffprobe bundled by @ffprobe-installer/ffprobe");
      }
      return { path: bundled, version: parsed.version, source: "bundled" };
    }
  }
  throw new FfmpegNotFoundError(
    `No usable ${name} was found: install ${name} ${minimumMajor} or newer (for example the "ffmpeg" system package) or set ${envName}.`,
  );
}

/**
 * Finds ffmpeg and ffprobe: the configured paths when given, else system binaries of version ≥ 5
 * on the search path, else the npm-bundled builds (with a warning for the 2018 ffmpeg).
 */
export async function resolveFfmpeg(options: ResolveFfmpegOptions): Promise<FfmpegBinaries> {
  const ffmpeg = await resolveOne("ffmpeg", options.ffmpegPath, "FFMPEG_PATH", options);
  const ffprobe = await resolveOne("ffprobe", options.ffprobePath, "FFPROBE_PATH", options);
  options.logger.debug({ ffmpeg, ffprobe }, "media tools resolved");
  return {
    ffmpeg: ffmpeg.path,
    ffprobe: ffprobe.path,
    version: ffmpeg.version,
    source: ffmpeg.source,
    ffprobeVersion: ffprobe.version,
    ffprobeSource: ffprobe.source,
  };
}
