/**
 * Starts the services named in SERVICES in this process, sharing one bus connection
 * and one blob store; returns a handle that stops them in reverse order.
 */
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import type { Server } from "node:http";
import type { Config, ServiceName } from "@voiceloc/config";
import type { Logger } from "@voiceloc/log";
import { blobRootFor, createFsBlobStore, createNatsBlobStore, type BlobStore } from "@voiceloc/blobs";
import { connectNats, createInProcessBus, createNatsBus, type Bus } from "@voiceloc/bus";
import { createGateway, type GatewayOptions } from "@voiceloc/gateway";
import { BUS_CATALOG } from "@voiceloc/contracts";
import { createSynthesisService } from "@voiceloc/synthesis";
import { createAudioBookService } from "@voiceloc/audiobook";
import { createVoiceStreamService } from "@voiceloc/voice-stream";
import { createSubtitleService } from "@voiceloc/subtitle";
import { createEngineStack, serveCapabilities, type EngineStack } from "./engines.ts";
import { httpMetrics, metricsHandler, setupTracing, watchQueues } from "@voiceloc/telemetry";
import { setChildMemoryLimit, setChildNiceness, setMaxVideoPixels } from "@voiceloc/media";

interface Part {
  name: string;
  stop(): Promise<void>;
  /** Task workers: stopped together, each letting running tasks finish for a grace period. */
  worker?: true;
}

export interface Runtime {
  /** The HTTP port this process listens on (gateway, or health endpoints of a worker-only process). */
  port: number;
  services: ServiceName[];
  stop(): Promise<void>;
}

/** What the entry point may add to the gateway it starts (test hooks of end-to-end tests). */
export type GatewayHooks = Pick<GatewayOptions, "onProjected">;

export async function startRuntime(config: Config, rootLogger: Logger, gatewayHooks: GatewayHooks = {}): Promise<Runtime> {
  const parts: Part[] = [];
  const stopOne = async (part: Part) => {
    try {
      await part.stop();
    } catch (error) {
      rootLogger.error({ err: error, part: part.name }, "error while stopping");
    }
  };
  // Reverse order of start; the task workers together, so their grace periods overlap and the
  // whole stop fits in SHUTDOWN_TIMEOUT_MS (a task cut short is redelivered and resumes).
  const stopAll = async () => {
    const ordered = parts.splice(0).reverse();
    for (let i = 0; i < ordered.length; ) {
      const part = ordered[i]!;
      if (!part.worker) {
        await stopOne(part);
        i += 1;
        continue;
      }
      let end = i;
      while (end < ordered.length && ordered[end]!.worker) end += 1;
      await Promise.all(ordered.slice(i, end).map(stopOne));
      i = end;
    }
  };
  /** Grace for running tasks: half the shutdown timeout less a second; the bus then waits at most 5 s more. */
  const stopGraceMs = Math.max(0, Math.floor(config.shutdownTimeoutMs / 2) - 1_000);
  try {
    const ackWait = config.workAckWaitMs === undefined ? {} : { workAckWaitMs: config.workAckWaitMs };
    // Tracing only with OTEL_EXPORTER_OTLP_ENDPOINT (stopped last: flushes the spans of the others' stop).
    if (config.telemetry.otlpEndpoint) {
      const stopTracing = setupTracing({ serviceName: config.telemetry.serviceName, endpoint: config.telemetry.otlpEndpoint, headers: config.telemetry.otlpHeaders });
      parts.push({ name: "tracing", stop: stopTracing });
    }
    const bus: Bus = config.natsUrl
      ? await createNatsBus({ url: config.natsUrl, logger: rootLogger.child({ component: "bus" }), name: `voiceloc-${config.services.join("+")}`, ...ackWait })
      : createInProcessBus({ logger: rootLogger.child({ component: "bus" }), ...ackWait });
    parts.push({ name: "bus", stop: () => bus.close({ graceMs: 5_000 }) });
    // Queue backlog in /metrics: every work queue where the gateway runs, else the queues this process consumes.
    const watched = Object.entries(BUS_CATALOG.work)
      .filter(([kind]) => config.services.includes("gateway") || (config.services as string[]).includes(kind))
      .map(([, contract]) => contract.queue);
    const unwatch = watchQueues(async () => (await Promise.all(watched.map((q) => bus.queueStats([q]).catch(() => [])))).flat());
    parts.push({ name: "queue metrics", stop: async () => unwatch() });

    let blobs: BlobStore;
    if (config.blobStore === "nats" && config.natsUrl) {
      // its own connection, reconnecting forever like the bus's (the client's default gives up after 10 tries)
      const logger = rootLogger.child({ component: "blobs" });
      const nc = await connectNats({ servers: config.natsUrl, name: `voiceloc-blobs-${config.services.join("+")}`, logger });
      parts.push({ name: "blobs connection", stop: async () => (nc.isClosed() ? undefined : nc.drain()) });
      blobs = await createNatsBlobStore({ nc, bucket: "voiceloc-blobs", logger });
    } else {
      blobs = createFsBlobStore({ root: blobRootFor(config.dataDir) });
    }
    parts.push({ name: "blobs", stop: () => blobs.close() });

    const workers = config.services.filter((s) => s !== "gateway");
    let engines: EngineStack | undefined;
    if (workers.length > 0) {
      // Engines and ffmpeg yield the cores to request handling (ENGINE_NICE).
      setChildNiceness(config.engineNice);
      // No child may take the machine's memory, nor any decoder a picture over the limit, whatever a file claims.
      setChildMemoryLimit(config.childMemoryLimitBytes);
      setMaxVideoPixels(config.maxVideoPixels);
      engines = await createEngineStack(config, rootLogger);
      const stack = engines;
      const table = stack.capabilities();
      // Speech synthesis's table, answered live from the engines (each task worker answers its own while it runs).
      const subs = await serveCapabilities(bus, stack, config.services.includes("synthesis") ? ["synthesis"] : []);
      parts.push({ name: "capabilities", stop: async () => { await Promise.all(subs.map((s) => s.stop())); } });
      rootLogger.info(
        { synthesis: table.synthesis.languages, recognition: table.recognition.languages, translationPairs: table.translation.pairs.length },
        "engines ready",
      );
    }

    // Where task inputs and voice samples come from (under each task's or request's account).
    const fetchSettings = {
      mediaRoot: config.mediaRoot,
      mediaRootScope: config.mediaRootScope,
      allowPrivateHosts: config.fetch.allowPrivateHosts,
      maxBytes: config.fetch.maxBytes,
      ...(config.fetch.s3 ? { s3: config.fetch.s3 } : {}),
      ...(config.fetch.gs ? { gs: config.fetch.gs } : {}),
    };
    if (config.services.includes("synthesis") && engines) {
      const synthesis = createSynthesisService({
        bus,
        blobs,
        speech: engines,
        logger: rootLogger,
        concurrency: config.synthesisConcurrency,
        maxCharacters: config.synthesisMaxCharacters,
        fetch: fetchSettings,
      });
      await synthesis.start();
      parts.push(synthesis);
    }

    if (config.services.includes("audiobook") && engines) {
      const stack = engines;
      const audiobook = createAudioBookService({
        bus,
        blobs,
        tts: engines.registry,
        mt: engines.mt,
        media: engines.media,
        clones: engines.clones,
        fetch: fetchSettings,
        logger: rootLogger,
        stopGraceMs,
        capabilities: () => stack.capabilities("audiobook"),
        concurrency: config.workerConcurrency,
        maxBookCharacters: config.maxBookCharacters,
        sandboxMaxBookCharacters: config.sandbox.maxBookCharacters,
      });
      await audiobook.start();
      parts.push({ name: audiobook.name, worker: true, stop: () => audiobook.stop() });
    }
    if (config.services.includes("voice-stream") && engines) {
      const stack = engines;
      const voiceStream = createVoiceStreamService({
        bus,
        blobs,
        tts: engines.registry,
        mt: engines.mt,
        stt: engines.stt,
        media: engines.media,
        clones: engines.clones,
        fetch: fetchSettings,
        logger: rootLogger,
        stopGraceMs,
        capabilities: () => stack.capabilities("voice-stream"),
        concurrency: config.workerConcurrency,
        maxMediaSeconds: config.maxMediaSeconds,
        sandboxMaxMediaSeconds: config.sandbox.maxMediaSeconds,
      });
      await voiceStream.start();
      parts.push({ name: voiceStream.name, worker: true, stop: () => voiceStream.stop() });
    }
    if (config.services.includes("subtitle") && engines) {
      const stack = engines;
      const subtitle = createSubtitleService({
        bus,
        blobs,
        mt: engines.mt,
        stt: engines.stt,
        media: engines.media,
        fetch: fetchSettings,
        logger: rootLogger,
        stopGraceMs,
        capabilities: () => stack.capabilities("subtitle"),
        concurrency: config.workerConcurrency,
        maxSeconds: config.subtitleMaxSeconds,
        sandboxMaxSeconds: config.sandbox.maxMediaSeconds,
        maxPixels: config.maxVideoPixels,
        sandboxMaxPixels: config.sandbox.maxVideoPixels,
      });
      await subtitle.start();
      parts.push({ name: subtitle.name, worker: true, stop: () => subtitle.stop() });
    }

    let port: number;
    if (config.services.includes("gateway")) {
      const gateway = await createGateway({
        config,
        logger: rootLogger,
        bus,
        blobs,
        readinessChecks: [{ name: "bus", check: () => busReady(bus) }],
        ...gatewayHooks,
      });
      parts.push(gateway);
      port = await gateway.start();
    } else {
      const health = await serveHealth(config, rootLogger, bus);
      parts.push(health);
      port = health.port;
    }
    return { port, services: config.services, stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/** Asks nothing of the workers; one round trip to the bus (NATS: PING/PONG with the server). */
async function busReady(bus: Bus): Promise<void> {
  await bus.ping({ timeoutMs: 2_000 });
}

/** `/healthz` and `/readyz` for a process that runs workers only. */
async function serveHealth(config: Config, logger: Logger, bus: Bus): Promise<Part & { port: number }> {
  const app = new Hono();
  app.use("*", httpMetrics());
  app.get("/metrics", metricsHandler({ token: config.telemetry.metricsToken }));
  app.get("/healthz", (c) => c.json({ status: "ok", services: config.services }));
  app.get("/readyz", async (c) => {
    try {
      await busReady(bus);
      return c.json({ status: "ready", checks: { bus: "ok" } });
    } catch (error) {
      return c.json({ status: "not ready", checks: { bus: error instanceof Error ? error.message : "failed" } }, 503);
    }
  });
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port: config.port, hostname: config.host }, (info) => {
      logger.info({ port: info.port, services: config.services }, "health endpoints listening");
      resolve({
        name: "health",
        port: info.port,
        stop: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeIdleConnections();
          }),
      });
    }) as Server;
    server.once("error", reject);
  });
}
