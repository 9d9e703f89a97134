import { spawn } from "node:child_process";
import { mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getPriority } from "node:os";
import { childMemoryLimit, childNiceness, limitedCommand, limitedSpawnError } from "@voiceloc/media";

export interface FileStdinResult {
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  /** Set when the process could not be started (ENOENT, EACCES, ...). */
  spawnError?: NodeJS.ErrnoException;
  aborted: boolean;
  timedOut: boolean;
  stdout: Buffer;
  stdoutTruncated: boolean;
  /** Last lines of standard error, blank lines dropped. */
  stderrTail: string[];
  /** The address-space limit the program ran under, in bytes (0: none; CHILD_MEMORY_LIMIT_MB). */
  memoryLimitBytes: number;
}

export interface FileStdinOptions {
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  maxStdoutBytes?: number;
  /** A private directory for the input file (created and removed per call when not given). */
  scratchDir?: string;
}

const KILL_GRACE_MS = 3_000;
let sequence = 0;

/** Creates a private (0700) temporary directory. */
export function makeScratchDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), "voiceloc-mt-"));
}

/**
 * Runs a program (argument array, no shell) with `input` as its standard input and collects its
 * output. Standard input is a file descriptor of a private temporary file rather than a pipe:
 * Node gives children a socket for a piped stdin, and the `apertium` wrapper script re-opens
 * `/dev/stdin`, which fails for sockets (ENXIO) but works for files. Never rejects for process
 * failures; they are described in the result.
 */
export async function runWithFileStdin(command: string, args: readonly string[], input: string, options: FileStdinOptions): Promise<FileStdinResult> {
  const empty = { exitCode: null, exitSignal: null, timedOut: false, stdout: Buffer.alloc(0), stdoutTruncated: false, stderrTail: [], memoryLimitBytes: 0 };
  if (options.signal?.aborted) return { ...empty, aborted: true };
  const ownDir = options.scratchDir === undefined;
  const dir = options.scratchDir ?? (await makeScratchDir());
  const file = join(dir, `input-${process.pid}-${++sequence}.txt`);
  try {
    await writeFile(file, input, { encoding: "utf8", mode: 0o600 });
    const handle = await open(file, "r");
    try {
      return await spawnWithStdin(command, args, handle.fd, options);
    } finally {
      await handle.close();
    }
  } finally {
    await (ownDir ? rm(dir, { recursive: true, force: true }) : rm(file, { force: true }));
  }
}

function spawnWithStdin(command: string, args: readonly string[], stdinFd: number, options: FileStdinOptions): Promise<FileStdinResult> {
  return new Promise((resolve) => {
    const maxStdout = options.maxStdoutBytes ?? 64 * 1024 * 1024;
    const stdoutChunks: Buffer[] = [];
    let stdoutBytes = 0;
    let stdoutTruncated = false;
    let stderrText = "";
    let aborted = false;
    let timedOut = false;
    let settled = false;
    let killTimer: NodeJS.Timeout | undefined;

    // ENGINE_NICE: through `nice`, so the programs a wrapper script starts at once are nice from their first instruction.
    const increment = Math.max(0, childNiceness() - getPriority());
    const viaNice = increment > 0;
    // CHILD_MEMORY_LIMIT_MB: the program (and what a wrapper script starts) runs under the address-space limit.
    const memoryLimitBytes = childMemoryLimit();
    const launch = viaNice ? limitedCommand("nice", ["-n", String(increment), command, ...args], memoryLimitBytes) : limitedCommand(command, args, memoryLimitBytes);
    const child = spawn(launch.command, launch.args, { stdio: [stdinFd, "pipe", "pipe"], windowsHide: true });

    const stop = (): void => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      killTimer = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
      killTimer.unref();
    };
    const onAbort = (): void => {
      aborted = true;
      stop();
    };
    const timeoutTimer = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    timeoutTimer.unref();
    options.signal?.addEventListener("abort", onAbort, { once: true });

    const finish = (exitCode: number | null, exitSignal: NodeJS.Signals | null, spawnError?: NodeJS.ErrnoException): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timeoutTimer);
      if (killTimer) clearTimeout(killTimer);
      options.signal?.removeEventListener("abort", onAbort);
      const stderrTail = stderrText
        .split(/\r?\n/)
        .map((l) => l.trimEnd())
        .filter((l) => l !== "")
        .slice(-20)
        .map((l) => (l.length > 500 ? `${l.slice(0, 500)}…` : l));
      resolve({
        exitCode,
        exitSignal,
        ...(spawnError ? { spawnError } : {}),
        aborted,
        timedOut,
        stdout: Buffer.concat(stdoutChunks),
        stdoutTruncated,
        stderrTail,
        memoryLimitBytes: launch.limited ? memoryLimitBytes : 0,
      });
    };

    child.on("error", (error: NodeJS.ErrnoException) => finish(null, null, error));
    child.stdout?.on("data", (chunk: Buffer) => {
      if (stdoutBytes + chunk.length > maxStdout) {
        stdoutTruncated = true;
        stop();
        return;
      }
      stdoutChunks.push(chunk);
      stdoutBytes += chunk.length;
    });
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      stderrText = (stderrText + chunk).slice(-16_384);
    });
    child.on("close", (exitCode, exitSignal) => {
      const shellError = launch.limited ? limitedSpawnError(viaNice ? "nice" : command, exitCode, stderrText) : undefined;
      if (shellError !== undefined) {
        finish(null, null, shellError);
        return;
      }
      // `nice` could not start the program (127: not found, 126: not executable): the same as a failed spawn.
      if (viaNice && (exitCode === 127 || exitCode === 126) && /(^|\n)nice: /.test(stderrText)) {
        const error: NodeJS.ErrnoException = new Error(`spawn ${command} ${exitCode === 127 ? "ENOENT" : "EACCES"}`);
        error.code = exitCode === 127 ? "ENOENT" : "EACCES";
        finish(null, null, error);
        return;
      }
      finish(exitCode, exitSignal);
    });
  });
}
