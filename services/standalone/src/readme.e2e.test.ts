/**
 * The README's "Try it", run as written. The blocks are found by the HTML comments before them:
 * `try-it:start` (the command that starts the service), `try-it:start-prints` (what it logs),
 * `try-it:run` (commands typed in a second terminal), each followed by `try-it:prints` (what the
 * terminal then shows). The service starts with the environment the start line sets, on a free port
 * and a data directory of the test's own (every service in one process, from source, as the other
 * end-to-end tests start it). Each `run` block is a shell script run in a terminal (`script`, so the
 * CLI draws its progress as it does for a user) in a fresh directory inside the checkout, where
 * `pnpm voiceloc` works, with the environment of a new terminal: only the port differs, so
 * `localhost:8080` in the blocks and the CLI's default `VOICELOC_URL` point at the test's port.
 *
 * What a block prints is compared by shape, line by line: `…` stands for any text (a line of only
 * `…`, for any lines), a run of digits for any number, a run of spaces for any spaces.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "@voiceloc/log";
import { createMediaToolkit, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { checkResponsesOf, freePort, tempDir } from "@voiceloc/testing";
import { signalAndWait, startService, untilLogged, type ServiceProcess } from "./testing/processes.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");
const ALL_SERVICES = "gateway,audiobook,voice-stream,subtitle,synthesis";

interface Block {
  marker: string;
  body: string;
}

/** The fenced blocks that follow a `<!-- try-it:<marker> -->` comment, in order. */
function tryItBlocks(markdown: string): Block[] {
  return [...markdown.matchAll(/<!-- try-it:([a-z-]+) -->\n```[a-z]*\n([\s\S]*?)\n```/g)].map((m) => ({ marker: m[1] as string, body: m[2] as string }));
}

/** The fenced block right under a heading (`## Set up`). */
function blockUnder(markdown: string, heading: string): string {
  const section = markdown.slice(markdown.indexOf(`\n${heading}\n`));
  return /```[a-z]*\n([\s\S]*?)\n```/.exec(section)?.[1] ?? "";
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** One line of a sample as a pattern: `…` any text, digits any number, spaces any spaces. */
function linePattern(sample: string): RegExp {
  const source = sample
    .split(/(…|\d+| +)/)
    .map((part) => (part === "…" ? ".*" : /^\d+$/.test(part) ? "\\d+" : /^ +$/.test(part) ? " +" : escapeRegExp(part)))
    .join("");
  return new RegExp(`^${source}$`);
}

/** Whether the lines have the sample's shape; a sample line of only `…` takes any number of lines. */
function hasShape(lines: string[], sample: string[]): boolean {
  const [head, ...rest] = sample;
  if (head === undefined) return lines.length === 0;
  if (head.trim() === "…") return lines.some((_, i) => hasShape(lines.slice(i), rest)) || hasShape([], rest);
  return lines.length > 0 && linePattern(head).test(lines[0] as string) && hasShape(lines.slice(1), rest);
}

/**
 * The lines a terminal shows for what a program wrote to it: a carriage return or "cursor to column
 * 1" starts a line over (a progress bar redrawn in place shows its last drawing), other escape
 * sequences draw nothing.
 */
function screenLines(raw: string): string[] {
  const escapes = /\x1b\[[0-9;?]*[A-Za-z]|\x1b[78]/g;
  return raw
    .split(/\r?\n/)
    .map((line) => line.split(/\r|\x1b\[1G/).map((part) => part.replace(escapes, "")).filter((part) => part !== "").at(-1) ?? "")
    .filter((line) => line.trim() !== "");
}

interface Run {
  code: number | null;
  raw: string;
  lines: string[];
}

const blocks = tryItBlocks(README);
const start = blocks.find((b) => b.marker === "start");
const startPrints = blocks.find((b) => b.marker === "start-prints");
const runs = blocks.flatMap((b, i) => (b.marker === "run" ? [{ commands: b.body, prints: blocks[i + 1]?.marker === "prints" ? blocks[i + 1]?.body : undefined }] : []));

let dir: { path: string; cleanup: () => Promise<void> };
let work: string;
let port: number;
let service: ServiceProcess;
let media: MediaToolkit;
const outputs: Run[] = [];

/** The environment of a new terminal: none of the variables a test runner or pnpm sets, no VOICELOC_ settings. */
function terminalEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || /^(npm_|pnpm_|VOICELOC_|VITEST)/i.test(name) || name === "INIT_CWD") continue;
    env[name] = value;
  }
  return { ...env, TERM: "xterm-256color", VOICELOC_URL: `http://localhost:${port}` };
}

function atTestPort(text: string): string {
  return text.replaceAll("localhost:8080", `localhost:${port}`);
}

/** Runs a block as a shell script in a terminal in the work directory. */
async function runInTerminal(commands: string): Promise<Run> {
  const script = join(dir.path, `block-${outputs.length + 1}.sh`);
  await writeFile(script, `${atTestPort(commands)}\n`);
  return new Promise((resolve, reject) => {
    execFile(
      "script",
      ["-q", "-e", "-c", `bash -e '${script}'`, "/dev/null"],
      { cwd: work, env: terminalEnv(), timeout: 300_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout) => {
        const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
        if (error && code === null) return reject(error);
        resolve({ code, raw: stdout, lines: screenLines(stdout) });
      },
    );
  });
}

function explain(run: Run, sample: string): string {
  return `exit ${run.code}\nthe terminal showed:\n${run.lines.join("\n")}\nthe README shows:\n${sample}\nservice:\n${service.output.join("").slice(-4000)}`;
}

beforeAll(async () => {
  expect(start?.body, "README: a try-it:start block").toBeDefined();
  const env = /^((?:[A-Z_]+="[^"]*"\s+)*)npm start$/.exec((start?.body ?? "").trim());
  expect(env, `the try-it starts the service with npm start: ${start?.body}`).not.toBeNull();
  const seeded = Object.fromEntries([...(env?.[1] ?? "").matchAll(/([A-Z_]+)="([^"]*)"/g)].map((m) => [m[1] as string, m[2] as string]));
  dir = await tempDir("voiceloc-readme-e2e-");
  // Inside the checkout: `pnpm voiceloc` finds the repository's package.json from there.
  await mkdir(join(ROOT, "test-artifacts"), { recursive: true });
  work = await mkdtemp(join(ROOT, "test-artifacts", "readme-try-it-"));
  media = createMediaToolkit(await resolveFfmpeg({ logger: silentLogger() }), silentLogger());
  port = await freePort();
  service = await startService(ALL_SERVICES, { ...seeded, DATA_DIR: join(dir.path, "data") }, port, 240_000);
  // The README's commands name it localhost: the links they print are checked against its document too.
  checkResponsesOf(`http://localhost:${port}`);
}, 300_000);

afterAll(async () => {
  if (service) await signalAndWait(service, "SIGTERM");
  if (work) await rm(work, { recursive: true, force: true });
  await dir?.cleanup();
});

describe("README: Set up", () => {
  it("has exactly two set-up commands, npm start and npm test", () => {
    const commands = blockUnder(README, "## Set up")
      .split("\n")
      .map((line) => line.replace(/#.*$/, "").trim())
      .filter(Boolean);
    expect(commands).toEqual(["npm start", "npm test"]);
  });
});

describe("README: Try it, as written", () => {
  it("has the blocks: the start, what it logs, and commands each followed by what they print", () => {
    expect(startPrints).toBeDefined();
    expect(runs.length).toBeGreaterThan(0);
    for (const run of runs) expect(run.prints, `no try-it:prints after:\n${run.commands}`).toBeDefined();
  });

  it("the started service logs the line the README shows", async () => {
    await untilLogged([service], (logged) => logged.some((l) => l.msg === "ready"));
    const lines = service.output.join("").split("\n").filter(Boolean);
    const sample = (startPrints?.body ?? "").split("\n");
    // The service goes on logging after it: anything may follow.
    expect(hasShape(lines, [...sample, "…"]), `service logged:\n${lines.join("\n")}\nthe README shows:\n${startPrints?.body}`).toBe(true);
  });

  it.each(runs.map((run, i) => ({ n: i + 1, ...run })))("commands $n exit 0 and print what the README shows", async ({ commands, prints }) => {
    const run = await runInTerminal(commands);
    outputs.push(run);
    const sample = atTestPort(prints ?? "");
    expect(run.code, explain(run, sample)).toBe(0);
    expect(hasShape(run.lines, sample.split("\n")), explain(run, sample)).toBe(true);
  }, 300_000);

  it("leaves the Spanish audio book it names: an MP3 of the spoken text", async () => {
    const command = runs.map((r) => r.commands).join("\n").split("\n").find((line) => /voiceloc audiobook /.test(line)) ?? "";
    expect(command).toMatch(/--to Spanish/);
    const out = /(?:-o|--output) (\S+)/.exec(command)?.[1] as string;
    const info = await media.probe(join(work, out));
    expect(info.audio?.codec).toBe("mp3");
    // Two English sentences spoken in Spanish: seconds of speech, not a blip nor minutes.
    expect(info.durationSeconds).toBeGreaterThan(2);
    expect(info.durationSeconds).toBeLessThan(30);
  });

  it("the links it prints download the audio they promise", async () => {
    const printed = outputs.flatMap((o) => o.lines).join("\n");
    const links = [...printed.matchAll(/"(?:localized_file|audio_url)":"([^"]+)"/g)].map((m) => m[1] as string);
    expect(links.length).toBeGreaterThanOrEqual(2);
    for (const link of links) {
      const res = await fetch(link);
      expect(res.status, link).toBe(200);
      const file = join(dir.path, `download-${links.indexOf(link)}.mp3`);
      await writeFile(file, Buffer.from(await res.arrayBuffer()));
      const info = await media.probe(file);
      expect(info.audio?.codec).toBe("mp3");
      expect(info.durationSeconds).toBeGreaterThan(0.5);
    }
  });
});
