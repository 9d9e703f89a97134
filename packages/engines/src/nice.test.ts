/**
 * ENGINE_NICE: the programs the engines start (here espeak-ng through the shared process runner, and
 * the Apertium pipeline through it too, started through `nice` with a file for stdin) really run at
 * the configured niceness, read from /proc while they work, every thread of them. Linux only (the
 * images are Linux).
 */
import { readdir, readFile } from "node:fs/promises";
import { getPriority } from "node:os";
import { fileURLToPath } from "node:url";
import { silentLogger } from "@voiceloc/log";
import { childNiceness, runProcess, setChildNiceness } from "@voiceloc/media";
import { afterEach, describe, expect, it } from "vitest";
import { createEspeakEngine } from "./espeak.ts";
import { createApertiumEngine } from "./mt/apertium.ts";

const logger = silentLogger();

interface ProcStat {
  pid: number;
  comm: string;
  ppid: number;
  nice: number;
}

/** /proc/<pid>/stat (or a thread's): comm is in parentheses, nice is field 19. */
async function readStat(path: string): Promise<ProcStat | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return undefined; // exited meanwhile
  }
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  const rest = text.slice(close + 2).split(" ");
  return { pid: Number(text.slice(0, open).trim()), comm: text.slice(open + 1, close), ppid: Number(rest[1]), nice: Number(rest[16]) };
}

/** Niceness of every thread of `pid` (threads inherit niceness individually on Linux). */
async function threadNiceness(pid: number): Promise<number[]> {
  const tids = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  const stats = await Promise.all(tids.map((tid) => readStat(`/proc/${pid}/task/${tid}/stat`)));
  return stats.flatMap((s) => (s === undefined ? [] : [s.nice]));
}

/** Descendants of this test process, whatever their depth (a wrapper script's children included). */
async function descendants(): Promise<ProcStat[]> {
  const pids = (await readdir("/proc")).filter((name) => /^\d+$/.test(name));
  const stats = (await Promise.all(pids.map((pid) => readStat(`/proc/${pid}/stat`)))).filter((s): s is ProcStat => s !== undefined);
  const mine = new Set([process.pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const s of stats) {
      if (!mine.has(s.pid) && mine.has(s.ppid)) {
        mine.add(s.pid);
        grew = true;
      }
    }
  }
  return stats.filter((s) => s.pid !== process.pid && mine.has(s.pid));
}

/**
 * Runs `work` and, while it runs, records the niceness of each thread of every descendant whose
 * name matches `comm`. Returns what was seen once the work is done.
 */
async function watchWhile(comm: RegExp, work: Promise<unknown>): Promise<Map<number, number[]>> {
  const seen = new Map<number, number[]>();
  let done = false;
  const finished = work.finally(() => {
    done = true;
  });
  while (!done) {
    for (const child of await descendants()) {
      if (!comm.test(child.comm)) continue;
      const threads = await threadNiceness(child.pid);
      if (threads.length > 0) seen.set(child.pid, threads);
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  await finished;
  return seen;
}

/** Enough text for espeak-ng to work for a while on any machine. */
const LONG_TEXT = "The keeper of the lighthouse climbed the narrow stairs every evening and lit the great lamp. ".repeat(100);

describe("engine child processes run at the configured niceness (ENGINE_NICE)", () => {
  const before = childNiceness();
  afterEach(() => setChildNiceness(before));
  const own = getPriority();

  it.runIf(own < 10)("espeak-ng runs at niceness 10 when set to 10, every thread of it", async () => {
    const espeak = await createEspeakEngine({ logger });
    setChildNiceness(10);
    const seen = await watchWhile(/^espeak-ng$/, espeak.synthesize({ text: LONG_TEXT, language: "English" }));
    expect(seen.size).toBeGreaterThan(0);
    for (const threads of seen.values()) expect(threads.every((n) => n === 10)).toBe(true);
  });

  it("with 0 (off) the engine runs at this process's own priority", async () => {
    const espeak = await createEspeakEngine({ logger });
    setChildNiceness(0);
    const seen = await watchWhile(/^espeak-ng$/, espeak.synthesize({ text: LONG_TEXT, language: "English" }));
    expect(seen.size).toBeGreaterThan(0);
    for (const threads of seen.values()) expect(threads.every((n) => n === own)).toBe(true);
  });

  it.runIf(own < 12)("the Apertium translator and the programs of its pipeline run at the configured niceness", async () => {
    const apertium = await createApertiumEngine({ logger });
    setChildNiceness(12);
    const text = "The keeper of the lighthouse climbed the narrow stairs every evening. ".repeat(200);
    const seen = await watchWhile(/^(apertium|lt-proc|cg-proc|apertium-.*|lrx-proc|bash|sh)$/, apertium.translate({ text, source: "English", target: "Spanish" }));
    expect(seen.size).toBeGreaterThan(0);
    for (const threads of seen.values()) expect(threads.every((n) => n === 12)).toBe(true);
  });

  it("a translator program that is missing is reported as not started (ENOENT), through `nice` as without it", async () => {
    for (const nice of [0, 10]) {
      setChildNiceness(nice);
      const result = await runProcess("/no/such/apertium", ["eng-spa"], { stdinFile: fileURLToPath(import.meta.url), niceFromStart: true, timeoutMs: 30_000 });
      expect(result.spawnError?.code).toBe("ENOENT");
    }
  });

  it("refuses a niceness outside 0–19", () => {
    expect(() => setChildNiceness(20)).toThrow(RangeError);
    expect(() => setChildNiceness(-1)).toThrow(RangeError);
    expect(() => setChildNiceness(2.5)).toThrow(RangeError);
  });
});
