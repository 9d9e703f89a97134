/**
 * The single entry point: runs the services named in SERVICES (default: all) in
 * this process. Owns signals; stops services in reverse order of start.
 */
import type { Config } from "@voiceloc/config";
import type { Logger } from "@voiceloc/log";
import type { GatewayHooks } from "./runtime.ts";

// A signal during start-up (engine self-tests can take a while) stops the process once it has started.
// The handlers go in first, before any import or log line: a supervisor that signals as soon as it sees
// output must not meet the default action (death by signal).
let signalledDuringStart: string | undefined;
let startLogger: Logger | undefined;
const early = (signal: string) => {
  signalledDuringStart ??= signal;
  startLogger?.info({ signal }, "signal during start-up; stopping once started");
};
const onEarlyInt = () => early("SIGINT");
const onEarlyTerm = () => early("SIGTERM");
process.on("SIGINT", onEarlyInt);
process.on("SIGTERM", onEarlyTerm);

// Stack traces name the TypeScript source: the compiled output carries source maps, which Node reads
// only for modules loaded after this call, so everything else is imported below it.
process.setSourceMapsEnabled(true);
const { ConfigError, loadConfig, redactConfig } = await import("@voiceloc/config");
const { createLogger } = await import("@voiceloc/log");
const { startRuntime } = await import("./runtime.ts");

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }
  const logger = createLogger({ level: config.logLevel, name: "voiceloc" });
  startLogger = logger;
  // Node still prints the error and exits 1; the line goes out with every line held (flushed at exit).
  process.on("uncaughtExceptionMonitor", (error, origin) => logger.fatal({ err: error, origin }, "uncaught exception; exiting"));
  logger.info({ config: redactConfig(config) }, "starting");
  if (signalledDuringStart !== undefined) early(signalledDuringStart);
  const runtime = await startRuntime(config, logger, testHooks());
  process.off("SIGINT", onEarlyInt);
  process.off("SIGTERM", onEarlyTerm);
  logger.info({ port: runtime.port, services: runtime.services }, "ready");

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "stopping");
    // the lines held so far (the last requests' among them) go out now, not after the stop
    logger.flush();
    const timer = setTimeout(() => {
      logger.error("shutdown timed out; exiting");
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    await runtime.stop();
    logger.info("stopped");
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  if (signalledDuringStart !== undefined) void shutdown(signalledDuringStart);
}

/**
 * Hooks only end-to-end tests set. VOICELOC_TEST_CRASH_AFTER_FINISHING=1: the gateway kills itself
 * (SIGKILL, as `kill -9`) right after projecting a record as finished, before its webhooks are queued
 * (webhook-outbox.e2e.test.ts).
 */
function testHooks(): GatewayHooks {
  if (process.env.VOICELOC_TEST_CRASH_AFTER_FINISHING !== "1") return {};
  return {
    onProjected: (_event, record) => {
      if (record?.task_status === "completed" || record?.task_status === "failed") process.kill(process.pid, "SIGKILL");
    },
  };
}

main().catch((error: unknown) => {
  process.stderr.write(`fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
