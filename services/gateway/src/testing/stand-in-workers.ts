/**
 * A gateway on the in-process bus whose workers the test plays: the given request handlers stand in for the
 * synthesis service (each named subject answered as the catalogue says), and what the gateway queues for audio
 * books and voice streams is acked and kept in `work`. The gateway's own start provisions those queues.
 */
import { createCatalogBus, createInProcessBus, outcome, type Bus, type BusSubscription, type CatalogBus } from "@voiceloc/bus";
import { BUS_CATALOG, type BusCatalogue, type VoiceInfoSchema, type WorkMessage } from "@voiceloc/contracts";
import type { z } from "@hono/zod-openapi";

type VoiceInfo = z.infer<typeof VoiceInfoSchema>;
import { silentLogger } from "@voiceloc/log";
import { tempDir } from "@voiceloc/testing";
import { ApiKeyRepository } from "../auth/api-keys.ts";
import { startTestGateway, type TestGateway } from "./harness.ts";

export interface StandInWorkers {
  readonly t: TestGateway;
  readonly bus: CatalogBus<BusCatalogue>;
  /** The listening gateway's origin, for requests over the wire. */
  readonly origin: string;
  /** MEDIA_ROOT of the gateway. */
  readonly mediaRoot: string;
  /** A sandbox key of `alice`. */
  readonly sandboxKey: string;
  /** The work messages queued so far, in order. */
  readonly work: WorkMessage[];
  close(): Promise<void>;
}

export async function startWithStandInWorkers(options: {
  readonly prefix: string;
  /** The installed voices `voices` answers with. */
  readonly voices: readonly VoiceInfo[];
  /** Serves the other subjects the test needs (synthesis, cloning) on the bus. */
  readonly serve: (bus: CatalogBus<BusCatalogue>) => Promise<BusSubscription[]>;
  readonly config?: Record<string, string>;
}): Promise<StandInWorkers> {
  const media = await tempDir(options.prefix);
  const rawBus: Bus = createInProcessBus({ logger: silentLogger() });
  const bus = createCatalogBus(rawBus, BUS_CATALOG);
  const subs = await options.serve(bus);
  subs.push(await bus.serve("voices", () => ({ voices: [...options.voices] })));
  const t = await startTestGateway(
    { PORT: "0", HOST: "127.0.0.1", MEDIA_ROOT: media.path, QUEUE_MAX_UNSTARTED_TASKS: "100", ACCOUNT_MAX_TASKS_IN_FLIGHT: "100", ...options.config },
    { bus: rawBus },
  );
  const origin = `http://127.0.0.1:${await t.gateway.start()}`;
  const work: WorkMessage[] = [];
  for (const kind of ["audiobook", "voice-stream"] as const) {
    subs.push(
      await bus.consumeWork(kind, async ({ data }) => {
        work.push(data);
        return outcome.ack();
      }),
    );
  }
  const keys = await ApiKeyRepository.open(t.gateway.deps.store);
  const sandboxKey = (await keys.create("alice", "sandbox", new Date(), "sandbox")).key;
  return {
    t,
    bus,
    origin,
    mediaRoot: media.path,
    sandboxKey,
    work,
    async close() {
      for (const sub of subs) await sub.stop();
      await t.close();
      await rawBus.close();
      await media.cleanup();
    },
  };
}
