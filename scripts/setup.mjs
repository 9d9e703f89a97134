#!/usr/bin/env node
// Makes a fresh Debian machine with Node 20+ ready to run and test the service:
// the pinned pnpm, the workspace packages, and the offline speech engines,
// ffmpeg and nats-server from Debian's packages. Each step is skipped when done.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const say = (line) => process.stderr.write(`[setup] ${line}\n`);

// Installed with --no-install-recommends, so every package a voice needs at run time is listed
// here explicitly, even when Debian only *recommends* it. Audited with
// `apt-cache depends --recommends <pkg>` and by speaking with every voice in a fresh
// `debootstrap bookworm` chroot after installing exactly this list:
// - festvox-hi-nsk only recommends festival-hi, which holds hindi_phones.scm: without it the
//   Hindi voice writes no WAV ("SIOD ERROR: could not open file hindi_phones.scm").
// - festival recommends festvox-kallpc16k (listed); apertium recommends transfuse/zip/unzip,
//   which only document formats need (we translate plain text): not installed.
// Keep deploy/Dockerfile's list in step with this one.
const APT_PACKAGES = [
  "ffmpeg", "nats-server", "espeak-ng", "flite",
  "festival", "festvox-kallpc16k", "festvox-ru", "festvox-hi-nsk", "festival-hi", "festvox-italp16k",
  "apertium", "apertium-eng-spa", "apertium-fr-es", "apertium-es-pt", "apertium-spa-ita", "apertium-urd-hin",
  "pocketsphinx", "pocketsphinx-en-us",
  "fonts-noto-core", "fonts-noto-cjk",
];

// Only for the tests (`npm test` passes `--test`): never installed by `npm start`/`pnpm dev`, never in
// an image (deploy/src/dockerfile.test.ts forbids them there). chromium: the headless browser the
// browser tests drive through playwright-core (`launchBrowser` in packages/testing), Debian's build
// because playwright's own download needs hosts this machine cannot reach. Its hard dependencies
// bring what headless needs (libnss3, fontconfig and fonts, ...): checked in a fresh
// `debootstrap --variant=minbase bookworm` chroot, where `apt-get install --no-install-recommends
// chromium` alone let playwright-core launch it headless and run a page's script.
const TEST_APT_PACKAGES = ["chromium"];

// `--system-only`: install the Debian packages and stop (used to check the list in a fresh chroot).
// `--test`: also the test-only packages.
const systemOnly = process.argv.includes("--system-only");
const forTests = process.argv.includes("--test");
const wanted = forTests ? [...APT_PACKAGES, ...TEST_APT_PACKAGES] : APT_PACKAGES;

function run(cmd, args, options = {}) {
  const result = spawnSync(cmd, args, { stdio: ["ignore", "inherit", "inherit"], cwd: root, ...options });
  if (result.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (exit ${result.status})`);
}

function installedDebs() {
  try {
    const out = execFileSync("dpkg-query", ["-W", "-f", "${Package} ${Status}\\n"], { encoding: "utf8" });
    return new Set(out.split("\n").filter((l) => l.endsWith("install ok installed")).map((l) => l.split(" ")[0]));
  } catch {
    return null;
  }
}

// 1. System packages (Debian/Ubuntu only; needs root).
const debs = installedDebs();
if (debs) {
  const missing = wanted.filter((p) => !debs.has(p));
  if (missing.length > 0) {
    if (process.getuid?.() === 0) {
      say(`installing Debian packages: ${missing.join(" ")}`);
      const quiet = { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } };
      run("apt-get", ["update", "-qq"], quiet);
      run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...missing], quiet);
    } else {
      say(`missing Debian packages (engines that need them stay off): sudo apt-get install ${missing.join(" ")}`);
    }
  }
}

if (systemOnly) process.exit(0);

// 2. The pinned pnpm.
const pinned = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).packageManager.split("@")[1];
const current = spawnSync("pnpm", ["--version"], { encoding: "utf8" });
if (current.status !== 0 || current.stdout.trim() !== pinned) {
  say(`installing pnpm ${pinned}`);
  run("npm", ["install", "-g", `pnpm@${pinned}`]);
}

// 3. Workspace packages, when missing or older than the lockfile.
const marker = join(root, "node_modules", ".modules.yaml");
const lock = join(root, "pnpm-lock.yaml");
if (!existsSync(marker) || statSync(lock).mtimeMs > statSync(marker).mtimeMs) {
  say("installing workspace packages");
  run("pnpm", ["install", "--frozen-lockfile"]);
}
