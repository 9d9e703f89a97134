import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants as fsConstants } from "node:fs";
import { open } from "node:fs/promises";
import { getPriority, setPriority } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";

export interface RunProcessOptions {
  signal?: AbortSignal | undefined;
  /** Kill the process after this many milliseconds. */
  timeoutMs?: number | undefined;
  /**
   * Written to the child's standard input, which is then closed. Without it stdin is /dev/null. A
   * stream or async iterable is piped with backpressure; when it fails, the child is stopped and the
   * error is the result's `stdinError`.
   */
  stdin?: string | Uint8Array | Readable | AsyncIterable<Uint8Array> | StdinFeeder | undefined;
  /**
   * Standard input is this file, opened read-only (instead of `stdin`). For programs that re-open
   * `/dev/stdin`, like the `apertium` wrapper script: a piped stdin is a socket, which cannot be
   * re-opened (ENXIO); a file can. A file that cannot be opened is the result's `spawnError`.
   */
  stdinFile?: string | undefined;
  /** Called with each piece of standard output as it arrives (before line splitting). */
  onStdout?: ((chunk: Buffer) => void) | undefined;
  /** Keep standard output (up to `maxStdoutBytes`) in the result. */
  collectStdout?: boolean | undefined;
  /** Default 16 MiB. */
  maxStdoutBytes?: number | undefined;
  /** Called for each complete line written to standard output. */
  onStdoutLine?: ((line: string) => void) | undefined;
  /** How many trailing lines of standard error to keep. Default 40. */
  stderrLines?: number | undefined;
  env?: NodeJS.ProcessEnv | undefined;
  cwd?: string | undefined;
  /** Niceness of this child (0–19). Default: `childNiceness()`, set once by the process entry. */
  nice?: number | undefined;
  /**
   * Start the program through `nice` instead of lowering its priority once it runs, so the programs
   * a wrapper script starts at once are nice from their first instruction too.
   */
  niceFromStart?: boolean | undefined;
  /** Address-space limit of this child in bytes (0: none). Default: `childMemoryLimit()`, set once by the process entry. */
  memoryLimitBytes?: number | undefined;
  /**
   * Stop the child once it has used this many seconds of CPU time (RLIMIT_CPU; the result says
   * `timedOut`). Unlike `timeoutMs`, a program starved of the cores by busier ones (it runs niced) is
   * not stopped for the time it spent waiting: pair it with a generous `timeoutMs` for a hung one.
   */
  cpuTimeoutSeconds?: number | undefined;
}

/**
 * Writes a child's standard input itself (e.g. from a reused buffer, waiting for each write to be
 * taken before refilling it); stdin is closed when the promise settles. A rejection stops the child.
 */
export interface StdinFeeder {
  feed(stdin: NodeJS.WritableStream & { write(chunk: Uint8Array, callback: (error?: Error | null) => void): boolean }): Promise<void>;
}

/** Writes `chunk` and resolves once the child's pipe has taken it (so the buffer may be refilled). */
export function writeAll(stdin: { write(chunk: Uint8Array, callback: (error?: Error | null) => void): boolean }, chunk: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    stdin.write(chunk, (error) => (error ? reject(error) : resolve()));
  });
}

export interface ProcessResult {
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  /** Set when the process could not be started at all (ENOENT, EACCES, ...). */
  spawnError?: NodeJS.ErrnoException;
  /** True when the run was ended because `signal` aborted. */
  aborted: boolean;
  /** True when the run was ended because `timeoutMs` elapsed. */
  timedOut: boolean;
  /** Set when the stdin source (or `onStdout`) failed; the child was stopped because of it. */
  stdinError?: unknown;
  stdout: Buffer;
  stdoutTruncated: boolean;
  /** Last lines of standard error, oldest first, blank lines dropped. */
  stderrTail: string[];
  /** The address-space limit the child ran under, in bytes (0: none). */
  memoryLimitBytes: number;
}

const KILL_GRACE_MS = 3_000;

/** Highest niceness Linux allows (lowest priority). */
export const MAX_NICENESS = 19;

let defaultNiceness = 0;

/**
 * Sets the niceness (0 = as this process, up to 19 = lowest CPU priority) that every child process
 * started afterwards through this package runs at: speech engines, translators, recognisers, ffmpeg.
 * Set once by the process entry (ENGINE_NICE), so request handling in this process keeps the cores'
 * attention while the workers' programs use what is left. 0 leaves children at this process's priority.
 */
export function setChildNiceness(nice: number): void {
  if (!Number.isInteger(nice) || nice < 0 || nice > MAX_NICENESS) {
    throw new RangeError(`The niceness of child processes must be a whole number from 0 to ${MAX_NICENESS}.`);
  }
  defaultNiceness = nice;
}

/** The niceness children are started at (see setChildNiceness). */
export function childNiceness(): number {
  return defaultNiceness;
}

let defaultMemoryLimit = 0;

/**
 * The smallest address-space limit accepted. Debian's ffmpeg needs about 300 MiB of address space just to
 * map its libraries, and a 1080p burn-in about 1 GiB: a limit is a bound on hostile files, not a diet.
 */
export const MIN_CHILD_MEMORY_BYTES = 256 * 1024 * 1024;

/**
 * Sets the address-space limit (RLIMIT_AS, in bytes; 0 = none) of every child process started
 * afterwards through this package: ffmpeg, ffprobe, speech engines, translators, recognisers. A child
 * that asks for more memory gets an allocation failure (and stops) instead of growing until the kernel
 * kills it or the machine swaps: an untrusted file can never take the machine's memory. Set once by
 * the process entry (CHILD_MEMORY_LIMIT_MB).
 */
export function setChildMemoryLimit(bytes: number): void {
  if (!Number.isSafeInteger(bytes) || bytes < 0 || (bytes > 0 && bytes < MIN_CHILD_MEMORY_BYTES)) {
    throw new RangeError(`The memory limit of child processes must be 0 (none) or a whole number of bytes of at least ${MIN_CHILD_MEMORY_BYTES}.`);
  }
  defaultMemoryLimit = bytes;
}

/** The address-space limit children are started with, in bytes (0: none; see setChildMemoryLimit). */
export function childMemoryLimit(): number {
  return defaultMemoryLimit;
}

/** The shell that applies the limit before it replaces itself with the program (`exec`: same pid). */
const LIMIT_SHELL = "/bin/sh";
/** The limiting shell's `$0`: it names the shell in what the shell prints. */
const LIMIT_SHELL_NAME = "voiceloc-limit";
/**
 * The shell script that applies the limits: `$1` is the address-space limit in KiB, `$2` the CPU time
 * limit in seconds ("-" for none), the rest the program and its arguments. glibc's per-thread malloc
 * arenas reserve 64 MiB of address space each: at most two keep the limit about memory, not about cores.
 */
function limitScript(memory: boolean, cpu: boolean): string {
  return [
    ...(memory ? ['ulimit -v "$1" || exit 125'] : []),
    // soft at the limit (SIGXCPU, which ends the program), hard 5 s later (SIGKILL, for one that ignores it)
    ...(cpu ? ['ulimit -S -t "$2" && ulimit -H -t "$(($2 + 5))" || exit 125'] : []),
    "shift 2",
    ...(memory ? ['export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"'] : []),
    'exec "$@"',
  ].join("; ");
}
/** What the shell prints when `exec` cannot start the program (dash: "voiceloc-limit: 1: exec: x: not found"). */
const LIMIT_EXEC_FAILED = new RegExp(`^${LIMIT_SHELL_NAME}: (?:\\d+: )?exec: `, "m");

const executableCache = new Map<string, string | undefined>();

/** The file `command` would run as (PATH searched for a bare name), or undefined when there is none. */
function findExecutable(command: string, env: NodeJS.ProcessEnv | undefined): string | undefined {
  const path = (env ?? process.env).PATH ?? "";
  const key = `${command}\0${path}`;
  if (executableCache.has(key)) return executableCache.get(key);
  const candidates = command.includes("/") ? [command] : path.split(delimiter).filter((dir) => dir !== "" && isAbsolute(dir)).map((dir) => join(dir, command));
  let found: string | undefined;
  for (const candidate of candidates) {
    try {
      accessSync(candidate, fsConstants.X_OK);
      found = candidate;
      break;
    } catch {
      /* not here */
    }
  }
  if (executableCache.size > 256) executableCache.clear();
  executableCache.set(key, found);
  return found;
}

/**
 * How to start `command` under an address-space limit: through `/bin/sh -c 'ulimit -v …; exec "$@"'`,
 * so the program itself (same pid, same signals) runs limited. A program that does not exist (or the
 * limit 0) is started directly, so a missing program is still the spawn error it always was.
 */
export function limitedCommand(
  command: string,
  args: readonly string[],
  limitBytes: number,
  env?: NodeJS.ProcessEnv,
  cpuSeconds?: number,
): { command: string; args: string[]; limited: boolean } {
  const memory = limitBytes > 0;
  const cpu = cpuSeconds !== undefined && cpuSeconds > 0;
  if ((!memory && !cpu) || process.platform === "win32" || findExecutable(command, env) === undefined) return { command, args: [...args], limited: false };
  const memoryKiB = memory ? String(Math.floor(limitBytes / 1024)) : "-";
  const cpuLimit = cpu ? String(Math.max(1, Math.ceil(cpuSeconds))) : "-";
  return { command: LIMIT_SHELL, args: ["-c", limitScript(memory, cpu), LIMIT_SHELL_NAME, memoryKiB, cpuLimit, command, ...args], limited: true };
}

/** What `nice` prints when it cannot start the program ("nice: 'x': No such file or directory"). */
const NICE_EXEC_FAILED = /(^|\n)nice: /;

/**
 * A spawn error for a program a launcher (the limiting shell, or `nice`) could not start: it exits 127
 * (not found) or 126 (not executable) and says so in its own words.
 */
function launchError(command: string, exitCode: number | null, stderr: string, said: RegExp): NodeJS.ErrnoException | undefined {
  if ((exitCode !== 127 && exitCode !== 126) || !said.test(stderr)) return undefined;
  const code = exitCode === 127 ? "ENOENT" : "EACCES";
  const error: NodeJS.ErrnoException = new Error(`spawn ${command} ${code}`);
  error.code = code;
  error.syscall = `spawn ${command}`;
  error.path = command;
  return error;
}

/** What allocation failures look like in the diagnostics of the programs this service runs. */
const OUT_OF_MEMORY_TEXT = /Cannot allocate memory|failed to map segment from shared object|malloc of size \d+ failed|out of memory|std::bad_alloc|failed to allocate|memory allocation failed|MemoryError|ENOMEM/i;

/**
 * What a program under an address-space limit may say instead, when the allocation that failed was a
 * thread's stack or a library's own (x264 opening at 1080p under 400 MiB fails one run in six with no
 * allocation message at all, only "Error while opening encoder"). Read only when a limit applied.
 */
const LIMITED_FAILURE_TEXT = /Error while opening encoder|pthread_create|Resource temporarily unavailable/i;
/** An encoder that names its cause ("width not divisible by 2", an invalid or unsupported setting) did not run out of memory. */
const NAMED_CAUSE_TEXT = /not divisible|invalid (?:argument|value|option|dimensions)|not supported|unsupported/i;

/** Signals a program dies of when it runs out of memory: killed by the kernel, or crashed on a failed allocation. */
const MEMORY_DEATHS: readonly NodeJS.Signals[] = ["SIGKILL", "SIGSEGV", "SIGABRT", "SIGBUS"];

/**
 * True when a finished child ran out of memory: it said an allocation failed, or it was killed by a
 * signal this package did not send (the kernel's OOM killer sends SIGKILL; a program whose allocation
 * failed under its limit often dies of SIGSEGV or SIGABRT). A stop for a timeout or an abort is not.
 */
export function ranOutOfMemory(
  result: Pick<ProcessResult, "exitCode" | "exitSignal" | "aborted" | "timedOut" | "stderrTail"> & { memoryLimitBytes?: number },
): boolean {
  if (result.aborted || result.timedOut || result.exitCode === 0) return false;
  if (result.exitSignal !== null && MEMORY_DEATHS.includes(result.exitSignal)) return true;
  if (result.stderrTail.some((line) => OUT_OF_MEMORY_TEXT.test(line))) return true;
  if ((result.memoryLimitBytes ?? 0) === 0 || result.stderrTail.some((line) => NAMED_CAUSE_TEXT.test(line))) return false;
  return result.stderrTail.some((line) => LIMITED_FAILURE_TEXT.test(line));
}

/** Plain words for a child that ran out of memory, naming the limit when there was one. */
export function outOfMemoryReason(limitBytes: number): string {
  return limitBytes > 0
    ? `it needed more memory than the ${Math.round(limitBytes / (1024 * 1024))} MiB this server allows one program (CHILD_MEMORY_LIMIT_MB)`
    : "it needed more memory than the server has";
}

/**
 * Lowers the CPU priority of a just-spawned child to `nice` (default: childNiceness()). Called right
 * after spawn, before the child has read its input or started threads (threads inherit it). Never
 * raises a priority (a child already nicer, e.g. because this process is, stays so) and never throws:
 * a child that exited at once or a refused call leaves the child as it is.
 */
export function lowerChildPriority(child: Pick<ChildProcess, "pid">, nice: number = defaultNiceness): void {
  if (nice <= 0 || child.pid === undefined) return;
  try {
    if (getPriority(child.pid) < nice) setPriority(child.pid, Math.min(nice, MAX_NICENESS));
  } catch {
    /* the child is gone already, or the call was refused: it keeps the priority it inherited */
  }
}

/** Keeps the last `limit` lines of a stream without growing with its size. */
class LineTail {
  private readonly lines: string[] = [];
  private partial = "";
  constructor(private readonly limit: number) {}

  push(chunk: string): void {
    const parts = (this.partial + chunk).split(/\r\n|\r|\n/);
    this.partial = parts.pop() ?? "";
    if (this.partial.length > 4096) this.partial = this.partial.slice(-4096);
    for (const part of parts) this.add(part);
  }

  /** The lines kept so far and the unfinished one, as text (the stream goes on). */
  peek(): string {
    return [...this.lines, this.partial].join("\n");
  }

  finish(): string[] {
    if (this.partial !== "") this.add(this.partial);
    this.partial = "";
    return [...this.lines];
  }

  private add(line: string): void {
    const trimmed = line.trimEnd();
    if (trimmed === "") return;
    this.lines.push(trimmed.length > 2000 ? `${trimmed.slice(0, 2000)}…` : trimmed);
    if (this.lines.length > this.limit) this.lines.shift();
  }
}

function isPipeClosed(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === "EPIPE" || code === "ERR_STREAM_PREMATURE_CLOSE" || code === "ERR_STREAM_DESTROYED";
}

/**
 * Runs a program with an argument array (never through a shell) and resolves once it has exited.
 * It never rejects: failures are described in the result so callers can map them to their own errors.
 */
export function runProcess(command: string, args: readonly string[], options: RunProcessOptions = {}): Promise<ProcessResult> {
  const file = options.stdinFile;
  if (file === undefined) return spawnAndCollect(command, args, options, undefined);
  return open(file, "r").then(
    (handle) => spawnAndCollect(command, args, options, handle.fd).finally(() => handle.close()),
    (error: NodeJS.ErrnoException): ProcessResult => ({
      exitCode: null,
      exitSignal: null,
      spawnError: error,
      aborted: false,
      timedOut: false,
      stdout: Buffer.alloc(0),
      stdoutTruncated: false,
      stderrTail: [],
      memoryLimitBytes: 0,
    }),
  );
}

function spawnAndCollect(command: string, args: readonly string[], options: RunProcessOptions, stdinFd: number | undefined): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const stderr = new LineTail(options.stderrLines ?? 40);
    const stdoutChunks: Buffer[] = [];
    let stdoutBytes = 0;
    let stdoutTruncated = false;
    const maxStdout = options.maxStdoutBytes ?? 16 * 1024 * 1024;
    let stdoutPartial = "";
    let aborted = false;
    let timedOut = false;
    let stdinError: { error: unknown } | undefined;
    let settled = false;
    let killTimer: NodeJS.Timeout | undefined;
    let timeoutTimer: NodeJS.Timeout | undefined;
    const memoryLimitBytes = options.memoryLimitBytes ?? defaultMemoryLimit;
    const nice = options.nice ?? defaultNiceness;
    // `nice -n` adds to this process's own niceness
    const niceIncrement = options.niceFromStart === true ? Math.max(0, Math.min(nice, MAX_NICENESS) - getPriority()) : 0;
    const viaNice = niceIncrement > 0;
    const program = viaNice ? { command: "nice", args: ["-n", String(niceIncrement), command, ...args] } : { command, args };
    const launch = limitedCommand(program.command, program.args, memoryLimitBytes, options.env, options.cpuTimeoutSeconds);

    const base = {
      get stdout() {
        return Buffer.concat(stdoutChunks);
      },
    };

    const finish = (result: Omit<ProcessResult, "stdout" | "stdoutTruncated" | "stderrTail" | "aborted" | "timedOut" | "memoryLimitBytes">): void => {
      if (settled) return;
      settled = true;
      if (killTimer) clearTimeout(killTimer);
      if (timeoutTimer) clearTimeout(timeoutTimer);
      options.signal?.removeEventListener("abort", onAbort);
      if (options.onStdoutLine && stdoutPartial !== "") options.onStdoutLine(stdoutPartial);
      resolve({
        ...result,
        aborted,
        // over its CPU time (RLIMIT_CPU): the kernel's SIGXCPU is our time limit at work
        timedOut: timedOut || (options.cpuTimeoutSeconds !== undefined && launch.limited && result.exitSignal === "SIGXCPU"),
        ...(stdinError === undefined ? {} : { stdinError: stdinError.error }),
        stdout: base.stdout,
        stdoutTruncated,
        stderrTail: stderr.finish(),
        memoryLimitBytes: launch.limited ? memoryLimitBytes : 0,
      });
    };

    if (options.signal?.aborted) {
      aborted = true;
      finish({ exitCode: null, exitSignal: null });
      return;
    }

    const child = spawn(launch.command, launch.args, {
      stdio: [stdinFd ?? (options.stdin === undefined ? "ignore" : "pipe"), "pipe", "pipe"],
      env: options.env,
      cwd: options.cwd,
      windowsHide: true,
    });
    if (!viaNice) lowerChildPriority(child, nice);

    const stop = (): void => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      killTimer = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
      killTimer.unref();
    };
    function onAbort(): void {
      aborted = true;
      stop();
    }
    options.signal?.addEventListener("abort", onAbort, { once: true });
    if (options.timeoutMs !== undefined) {
      timeoutTimer = setTimeout(() => {
        timedOut = true;
        stop();
      }, options.timeoutMs);
      timeoutTimer.unref();
    }

    child.on("error", (error: NodeJS.ErrnoException) => {
      finish({ exitCode: null, exitSignal: null, spawnError: error });
    });
    const fail = (error: unknown): void => {
      stdinError ??= { error };
      stop();
    };
    child.stdout?.on("data", (chunk: Buffer) => {
      if (options.onStdout && stdinError === undefined) {
        try {
          options.onStdout(chunk);
        } catch (error) {
          fail(error);
        }
      }
      if (options.collectStdout) {
        if (stdoutBytes + chunk.length > maxStdout) stdoutTruncated = true;
        else {
          stdoutChunks.push(chunk);
          stdoutBytes += chunk.length;
        }
      }
      if (options.onStdoutLine) {
        const parts = (stdoutPartial + chunk.toString("utf8")).split(/\r?\n/);
        stdoutPartial = parts.pop() ?? "";
        for (const line of parts) options.onStdoutLine(line);
      }
    });
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => stderr.push(chunk));
    if (child.stdin) {
      child.stdin.on("error", () => {
        /* the child exited before reading all input; its exit status tells the story */
      });
      const input = options.stdin;
      if (typeof input === "string" || input instanceof Uint8Array) child.stdin.end(input);
      else if (input !== undefined && "feed" in input) {
        const sink = child.stdin;
        input.feed(sink).then(
          () => sink.end(),
          (error: unknown) => {
            sink.destroy();
            if (!isPipeClosed(error)) fail(error);
          },
        );
      } else if (input !== undefined) {
        const source = input instanceof Readable ? input : Readable.from(input, { objectMode: false });
        pipeline(source, child.stdin).catch((error: unknown) => {
          // The child closing its stdin early is its own story (its exit status tells it); a failing source is ours.
          if (source.errored || !(isPipeClosed(error))) fail(source.errored ?? error);
        });
      }
    }
    child.on("close", (exitCode, exitSignal) => {
      // The limiting shell or `nice` could not start the program (the shell's: it vanished since it was
      // found): a spawn error, as without them.
      const said = stderr.peek();
      const spawnError =
        (launch.limited ? launchError(program.command, exitCode, said, LIMIT_EXEC_FAILED) : undefined) ??
        (viaNice ? launchError(command, exitCode, said, NICE_EXEC_FAILED) : undefined);
      finish(spawnError === undefined ? { exitCode, exitSignal } : { exitCode: null, exitSignal: null, spawnError });
    });
  });
}
