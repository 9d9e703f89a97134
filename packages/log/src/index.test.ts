import { execFile, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { AsyncLocalStorage } from "node:async_hooks";
import { CONTEXT_IDLE_MS, createLogger, logContextTracking, requestLineWriter, unredactedChild, withLogContext } from "./index.ts";
import { BufferedDestination, type SonicDestination } from "./destination.ts";

function memory(): { lines: () => Array<Record<string, unknown>>; text: () => string; stream: Writable } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString("utf8"));
      done();
    },
  });
  return {
    stream,
    text: () => chunks.join(""),
    lines: () =>
      chunks
        .join("")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("createLogger", () => {
  it("never writes secrets in clear: header credentials, nested secret fields, secret configuration", async () => {
    const out = memory();
    const logger = createLogger({ name: "test", destination: out.stream }).child({ component: "c" });
    logger.info({ req: { headers: { authorization: "Bearer tok-1", "api-key": "key-1", accept: "*/*" } } }, "request");
    logger.info({ headers: { authorization: "Bearer tok-2", "api-key": "key-2" } }, "headers");
    logger.info({ engine: { apiKey: "key-3", api_key: "key-4", secret: "s-5", password: "p-6", model: "m" } }, "nested");
    logger.info({ config: { JWT_SECRET: "j-7", SIGNING_SECRET: "s-8", VOICELOC_API_KEYS: "a:k-9", MONGODB_URL: "mongodb://u:p@h", PORT: 8080 } }, "config");
    await tick();
    const text = out.lines().map((line) => JSON.stringify(line)).join("\n");
    for (const secret of ["tok-1", "key-1", "tok-2", "key-2", "key-3", "key-4", "s-5", "p-6", "j-7", "s-8", "k-9", "u:p@h"]) {
      expect(text).not.toContain(secret);
    }
    const [req, , nested, config] = out.lines();
    expect(req).toMatchObject({ service: "test", component: "c", level: "info", msg: "request", req: { headers: { authorization: "[redacted]", accept: "*/*" } } });
    expect(nested).toMatchObject({ engine: { apiKey: "[redacted]", model: "m" } });
    expect(config).toMatchObject({ config: { JWT_SECRET: "[redacted]", PORT: 8080 } });
  });
});

describe("timestamps", () => {
  it("stamps each line with the time it was written, in ISO 8601 to the millisecond", async () => {
    const out = memory();
    const logger = createLogger({ destination: out.stream });
    const before = Date.now();
    logger.info("first");
    await new Promise((resolve) => setTimeout(resolve, 25));
    logger.info("second");
    const after = Date.now();
    await tick();
    const [first, second] = out.lines().map((line) => Date.parse(String(line.time)));
    expect(first).toBeGreaterThanOrEqual(before);
    expect(second).toBeGreaterThanOrEqual((first ?? 0) + 20);
    expect(second).toBeLessThanOrEqual(after);
  });
});

describe("unredactedChild", () => {
  it("writes its fixed fields to the same destination, with the parent's bindings, and leaves the parent redacting", async () => {
    const out = memory();
    const logger = createLogger({ name: "test", destination: out.stream }).child({ component: "gateway" });
    const lines = unredactedChild(logger, { kind: "request" });
    lines.info({ requestId: "r-1", method: "GET", path: "/v1/audio_books/", status: 200, ms: 0.4, account: "alice" }, "request");
    logger.info({ engine: { apiKey: "key-1" } }, "still redacted");
    await tick();
    const [line, other] = out.lines();
    expect(line).toMatchObject({ service: "test", component: "gateway", kind: "request", requestId: "r-1", status: 200, account: "alice", msg: "request" });
    expect(line?.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Math.abs(Date.parse(String(line?.time)) - Date.now())).toBeLessThan(60_000);
    expect(other).toMatchObject({ engine: { apiKey: "[redacted]" } });
  });

  it("honours the level of the logger it came from", async () => {
    const out = memory();
    const logger = createLogger({ level: "warn", destination: out.stream });
    unredactedChild(logger).info({ status: 200 }, "request");
    unredactedChild(logger).warn({ status: 500 }, "request failed");
    await tick();
    expect(out.lines().map((line) => line.msg)).toEqual(["request failed"]);
  });
});

describe("log ids (withLogContext)", () => {
  const idsOf = (line: Record<string, unknown> | undefined) => ({ requestId: line?.requestId, taskId: line?.taskId, kind: line?.kind });

  it("puts the request's id on every line of every child logged while it is served: after awaits, in timers, in child process callbacks", async () => {
    const out = memory();
    const root = createLogger({ destination: out.stream });
    const store = root.child({ component: "store" });
    const engine = root.child({ component: "engine" }).child({ voice: "v" });
    await withLogContext({ requestId: "req-1" }, async () => {
      store.info("read");
      await new Promise((resolve) => setTimeout(resolve, 1));
      engine.info("after a timer");
      await new Promise<void>((resolve, reject) => {
        const child = execFile(process.execPath, ["-e", ""], (error) => {
          engine.info("child process done");
          if (error) reject(error);
          else resolve();
        });
        child.once("exit", () => store.info("child exited"));
      });
    });
    root.info("outside");
    await tick();
    const lines = out.lines();
    expect(lines.map((l) => l.msg)).toEqual(["read", "after a timer", "child exited", "child process done", "outside"]);
    for (const line of lines.slice(0, 4)) expect(idsOf(line)).toEqual({ requestId: "req-1", taskId: undefined, kind: undefined });
    expect(Object.keys(lines[4] ?? {})).not.toContain("requestId");
  });

  it("adds a task's ids to those around it; a child binding an id itself, or a line naming it, does not repeat it", async () => {
    const out = memory();
    const root = createLogger({ destination: out.stream });
    withLogContext({ requestId: "req-2" }, () =>
      withLogContext({ taskId: "t-1", kind: "audio_book" }, () => {
        root.info("nested");
        root.child({ taskId: "t-1", kind: "audio_book" }).info("bound");
        root.info({ kind: "given" }, "named");
      }),
    );
    await tick();
    const [nested, bound, named] = out.lines();
    expect(idsOf(nested)).toEqual({ requestId: "req-2", taskId: "t-1", kind: "audio_book" });
    expect(idsOf(bound)).toEqual({ requestId: "req-2", taskId: "t-1", kind: "audio_book" });
    expect(named?.kind).toBe("given");
    const boundText = out.text().split("\n")[1] ?? "";
    expect(boundText.match(/"taskId"/g)).toHaveLength(1);
    expect(boundText.match(/"kind"/g)).toHaveLength(1);
  });

  it("keeps the lines of concurrent requests apart, and leaves a timer started outside any request without ids", async () => {
    const out = memory();
    const root = createLogger({ destination: out.stream });
    const background = new Promise<void>((resolve) => setTimeout(() => (root.info("background"), resolve()), 5));
    const serve = (id: string) =>
      withLogContext({ requestId: id }, async () => {
        await new Promise((resolve) => setImmediate(resolve));
        root.info({ id }, "served");
        await background;
        root.info({ id }, "after the timer");
      });
    await Promise.all([serve("a"), serve("b"), serve("c")]);
    await tick();
    const lines = out.lines();
    expect(lines.filter((l) => l.msg !== "background")).toHaveLength(6);
    for (const line of lines.filter((l) => l.msg !== "background")) expect(line.requestId).toBe(line.id);
    expect(Object.keys(lines.find((l) => l.msg === "background") ?? {})).not.toContain("requestId");
  });

  it("costs nothing once no request or task has been open for a while, and the next one's lines still carry its ids", async () => {
    // Node before 24 builds the storage on async_hooks: its hook runs for every async resource of the
    // process while enabled, so it is removed when idle; Node 24's storage has no hook to remove.
    const hookBased = typeof Reflect.get(AsyncLocalStorage.prototype, "_propagate") === "function";
    const out = memory();
    const root = createLogger({ destination: out.stream });
    await withLogContext({ requestId: "req-early" }, async () => {
      await new Promise((resolve) => setImmediate(resolve));
      root.info("early");
    });
    expect(logContextTracking()).toBe(hookBased);
    const deadline = Date.now() + 30_000;
    while (logContextTracking() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(logContextTracking()).toBe(false);
    root.info("between");
    await withLogContext({ taskId: "t-late", kind: "subtitle" }, async () => {
      // an open context keeps the hook however long it runs
      await new Promise((resolve) => setTimeout(resolve, CONTEXT_IDLE_MS + 300));
      expect(logContextTracking()).toBe(hookBased);
      await new Promise<void>((resolve, reject) => execFile(process.execPath, ["-e", ""], (error) => (error ? reject(error) : resolve())));
      root.info("late");
    });
    await tick();
    const lines = out.lines();
    expect(lines.map((l) => l.msg)).toEqual(["early", "between", "late"]);
    expect(idsOf(lines[0])).toEqual({ requestId: "req-early", taskId: undefined, kind: undefined });
    expect(idsOf(lines[1])).toEqual({ requestId: undefined, taskId: undefined, kind: undefined });
    expect(idsOf(lines[2])).toEqual({ requestId: undefined, taskId: "t-late", kind: "subtitle" });
  });
});

describe("BufferedDestination", () => {
  function sink(): { sonic: SonicDestination; writes: string[]; written: Promise<void> } {
    const writes: string[] = [];
    let wrote = () => {};
    const written = new Promise<void>((resolve) => (wrote = resolve));
    const sonic: SonicDestination = {
      write: (text: string) => {
        writes.push(text);
        wrote();
      },
      flush: (cb) => cb?.(),
      flushSync: () => {},
    };
    return { sonic, writes, written };
  }

  it("holds lines until it holds minLength characters, then writes them as one", () => {
    const { sonic, writes } = sink();
    const destination = new BufferedDestination(sonic, { minLength: 100, flushMs: 60_000 });
    for (let i = 0; i < 9; i += 1) destination.write(`${"x".repeat(9)}\n`);
    expect(writes).toEqual([]);
    destination.write(`${"y".repeat(10)}\n`); // 101 characters held
    expect(writes).toEqual([`${`${"x".repeat(9)}\n`.repeat(9)}${"y".repeat(10)}\n`]);
  });

  it("writes a lone line within flushMs, and whatever it holds on flushSync", async () => {
    const quiet = sink();
    const destination = new BufferedDestination(quiet.sonic, { minLength: 1 << 20, flushMs: 20 });
    const before = Date.now();
    destination.write("one\n");
    await quiet.written;
    expect(quiet.writes).toEqual(["one\n"]);
    expect(Date.now() - before).toBeGreaterThanOrEqual(15);
    const exiting = sink();
    const held = new BufferedDestination(exiting.sonic, { minLength: 1 << 20, flushMs: 60_000 });
    held.write("a\n");
    held.write("b\n");
    held.flushSync();
    expect(exiting.writes).toEqual(["a\nb\n"]);
  });
});

describe("standard output (the default destination)", () => {
  const here = dirname(fileURLToPath(import.meta.url));

  /** Runs a script that logs through createLogger() to its stdout; resolves with what it wrote. */
  function run(body: string): Promise<string[]> {
    const script = `import { createLogger } from ${JSON.stringify(join(here, "index.ts"))};\nconst logger = createLogger({ name: "t" });\n${body}\n`;
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: here, stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk: string) => (out += chunk));
      child.on("error", reject);
      child.on("close", () => resolve(out.split("\n").filter(Boolean)));
    });
  }

  it("writes every line, in order, also when the process exits in the same turn it logged them", async () => {
    const lines = await run(`for (let i = 0; i < 2000; i += 1) logger.info({ i }, "line");\nprocess.exit(0);`);
    expect(lines).toHaveLength(2000);
    expect(lines.map((l) => (JSON.parse(l) as { i: number }).i)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
  });

  it("writes what it holds when an uncaught exception ends the process, with the error's fatal line", async () => {
    const lines = await run(
      `process.on("uncaughtExceptionMonitor", (err) => logger.fatal({ err }, "uncaught"));\nfor (let i = 0; i < 100; i += 1) logger.info({ i }, "line");\nsetTimeout(() => { throw new Error("boom"); }, 1);`,
    );
    expect(lines).toHaveLength(101);
    expect(JSON.parse(lines[100] ?? "{}")).toMatchObject({ level: "fatal", msg: "uncaught", err: { message: "boom" } });
  });

  it("writes the lines of many turns, each whole", async () => {
    const lines = await run(
      `let n = 0;\nconst t = setInterval(() => { for (let i = 0; i < 50; i += 1) logger.info({ n: n++, pad: "x".repeat(300) }, "line"); if (n >= 1000) clearInterval(t); }, 1);`,
    );
    expect(lines).toHaveLength(1000);
    expect(lines.every((l) => (JSON.parse(l) as { msg: string }).msg === "line")).toBe(true);
  });
});

describe("requestLineWriter", () => {
  const samples = [
    { requestId: "0b7c1e9a-2f4d-4b8e-9c1a-3d5e7f9a1b2c", method: "GET", path: "/v1/audio_books/0b7c1e9a-2f4d-4b8e-9c1a-3d5e7f9a1b2c", status: 200, ms: 0.4, account: "alice" },
    { requestId: "given-id", method: "POST", path: '/v1/"odd"\\path\u0001', status: 422, ms: 12, account: "sandbox:ünïcode" },
    { requestId: "x", method: "GET", path: "/healthz", status: 200, ms: 0, account: undefined },
    { requestId: "y", method: "DELETE", path: "/v1/uploads/u", status: 503, ms: 30000.5, account: "bob" },
    // every character class the writer's plain-text shortcut must leave to JSON.stringify
    { requestId: "del\u007f", method: "GET", path: "/v1/\u2028é~ !#[]", status: 404, ms: 1.25, account: "tab\there" },
  ];

  it("writes byte for byte the line pino writes for the same fields", async () => {
    const viaPino = memory();
    const viaWriter = memory();
    const a = unredactedChild(createLogger({ name: "gateway", destination: viaPino.stream }).child({ component: "gateway" }));
    const write = requestLineWriter(createLogger({ name: "gateway", destination: viaWriter.stream }).child({ component: "gateway" }));
    for (const fields of samples) {
      if (fields.status >= 500) a.error(fields, "request failed");
      else a.info(fields, "request");
      write(fields);
    }
    await tick();
    const strip = (l: Record<string, unknown>) => ({ ...l, time: "t" });
    expect(viaWriter.lines().map(strip)).toEqual(viaPino.lines().map(strip));
    const untimed = (text: string) => text.replace(/"time":"[^"]*"/g, '"time":"t"');
    expect(untimed(viaWriter.text())).toBe(untimed(viaPino.text()));
    expect(viaWriter.lines()).toHaveLength(5);
    expect(viaWriter.lines()[1]).toMatchObject({ level: "info", service: "gateway", component: "gateway", path: '/v1/"odd"\\path\u0001', msg: "request" });
    expect(viaWriter.lines()[3]).toMatchObject({ level: "error", msg: "request failed" });
    expect(Object.keys(viaWriter.lines()[2] as object)).not.toContain("account");
  });

  it("honours the logger's level", async () => {
    const out = memory();
    const write = requestLineWriter(createLogger({ level: "error", destination: out.stream }));
    for (const fields of samples) write(fields);
    await tick();
    expect(out.lines().map((l) => l.status)).toEqual([503]);
  });
});
