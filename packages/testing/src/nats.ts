import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants as fsConstants } from "node:fs";
import { connect as tcpConnect } from "node:net";
import { delimiter, join } from "node:path";
import { freePort, tempDir } from "./tmp.ts";

/** A nats-server child process started for a test file. */
export interface NatsServerHandle {
  /** `nats://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** JetStream store directory (a temp dir removed by stop()). */
  storeDir: string;
  /** Kills the server and removes the store directory. Idempotent. */
  stop(): Promise<void>;
  /** Kills the server and starts it again on the same port and store dir (JetStream state survives). */
  restart(): Promise<void>;
  /** Stops the server (SIGTERM) but keeps its port and store dir for resume(): an outage. */
  halt(): Promise<void>;
  /** Starts a halted server again on the same port and store dir. */
  resume(): Promise<void>;
}

export interface StartNatsServerOptions {
  /** Path of the binary; default NATS_SERVER_BIN, then PATH, then /usr/sbin/nats-server. */
  bin?: string;
  /** Enable JetStream (default true). */
  jetstream?: boolean;
  /** Extra command-line arguments. */
  args?: string[];
  /** How long to wait for the server to accept connections (default 30 s). */
  startTimeoutMs?: number;
}

export type NatsServerErrorCode = "nats_server_not_found" | "nats_server_start_failed";

export class NatsServerError extends Error {
  readonly code: NatsServerErrorCode;
  constructor(code: NatsServerErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NatsServerError";
    this.code = code;
  }
}

const FALLBACK_PATHS = ["/usr/sbin/nats-server", "/usr/local/bin/nats-server", "/usr/bin/nats-server"];

function isExecutable(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The nats-server binary: NATS_SERVER_BIN, else the first on PATH, else a well-known location; undefined if none. */
export function findNatsServer(env: Record<string, string | undefined> = process.env): string | undefined {
  const fromEnv = env["NATS_SERVER_BIN"];
  if (fromEnv) return isExecutable(fromEnv) ? fromEnv : undefined;
  for (const dir of (env["PATH"] ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, "nats-server");
    if (isExecutable(candidate)) return candidate;
  }
  return FALLBACK_PATHS.find(isExecutable);
}

// Children still running when the test process exits are killed, so a crashed test leaves no server behind.
const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  liveChildren.add(child);
  child.once("exit", () => liveChildren.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const c of liveChildren) c.kill("SIGKILL");
    });
  }
}

/** Resolves when a TCP connection to the port yields an INFO line (with jetstream:true when required). */
function probe(port: number, needJetStream: boolean): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: "127.0.0.1", port });
    let buffer = "";
    const done = (ok: boolean) => {
      socket.removeAllListeners();
      socket.on("error", () => undefined);
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2_000, () => done(false));
    socket.on("error", () => done(false));
    socket.on("data", (chunk) => {
      buffer += chunk.toString("utf8");
      const end = buffer.indexOf("\r\n");
      if (end === -1) return;
      const line = buffer.slice(0, end);
      if (!line.startsWith("INFO ")) return done(false);
      if (!needJetStream) return done(true);
      try {
        const info = JSON.parse(line.slice(5)) as { jetstream?: boolean };
        done(info.jetstream === true);
      } catch {
        done(false);
      }
    });
  });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Running {
  child: ChildProcess;
  exited: Promise<void>;
}

async function launch(
  bin: string,
  port: number,
  storeDir: string,
  options: StartNatsServerOptions,
): Promise<Running> {
  const jetstream = options.jetstream ?? true;
  const args = ["-a", "127.0.0.1", "-p", String(port)];
  if (jetstream) args.push("-js", "-sd", storeDir);
  args.push(...(options.args ?? []));

  const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  track(child);
  let output = "";
  let ready = false;
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString("utf8")).slice(-8_000);
    if (output.includes("Server is ready")) ready = true;
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  let exitInfo: string | undefined;
  let spawnError: unknown;
  child.once("error", (error) => {
    spawnError = error;
  });
  const exited = new Promise<void>((resolve) => {
    child.once("exit", (code, signal) => {
      exitInfo = `exit code ${code ?? "none"}, signal ${signal ?? "none"}`;
      resolve();
    });
  });

  const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
  for (;;) {
    if (spawnError !== undefined || exitInfo !== undefined) {
      throw new NatsServerError(
        "nats_server_start_failed",
        `nats-server (${bin}) failed to start on port ${port}: ${exitInfo ?? String(spawnError)}\n${output}`,
        { cause: spawnError },
      );
    }
    if (ready && (await probe(port, jetstream))) return { child, exited };
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await exited;
      throw new NatsServerError(
        "nats_server_start_failed",
        `nats-server did not become ready on port ${port} in time\n${output}`,
      );
    }
    await sleep(50);
  }
}

async function terminate(running: Running): Promise<void> {
  const { child, exited } = running;
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Starts `nats-server -a 127.0.0.1 -p <free port> -js -sd <temp dir>` and waits until it accepts
 * connections with JetStream enabled.
 */
export async function startNatsServer(options: StartNatsServerOptions = {}): Promise<NatsServerHandle> {
  const bin = options.bin ?? findNatsServer();
  if (bin === undefined) {
    throw new NatsServerError(
      "nats_server_not_found",
      "nats-server not found: set NATS_SERVER_BIN or put nats-server on PATH",
    );
  }
  const store = await tempDir("voiceloc-nats-");
  let port = 0;
  let running: Running | undefined;
  let lastError: unknown;
  // The free port can be taken between probing and binding; try a few.
  for (let attempt = 0; attempt < 3 && running === undefined; attempt++) {
    port = await freePort();
    try {
      running = await launch(bin, port, store.path, options);
    } catch (error) {
      lastError = error;
    }
  }
  if (running === undefined) {
    await store.cleanup();
    throw lastError;
  }

  let current: Running | undefined = running;
  let stopped = false;
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir: store.path,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (current) await terminate(current);
      current = undefined;
      await store.cleanup();
    },
    async restart() {
      if (stopped) throw new NatsServerError("nats_server_start_failed", "server was stopped");
      if (current) await terminate(current);
      current = undefined;
      current = await launch(bin, port, store.path, options);
    },
    async halt() {
      if (stopped) throw new NatsServerError("nats_server_start_failed", "server was stopped");
      if (current) await terminate(current);
      current = undefined;
    },
    async resume() {
      if (stopped) throw new NatsServerError("nats_server_start_failed", "server was stopped");
      if (current) return;
      current = await launch(bin, port, store.path, options);
    },
  };
}
