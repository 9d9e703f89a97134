import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BlobStore } from "@voiceloc/blobs";
import type { Bus, BusSubscription } from "@voiceloc/bus";
import {
  SUBJECTS,
  SynthesizeRequestSchema,
  VoicesRequestSchema,
  type SynthesizeReply,
  type Voice,
  type VoicesReply,
} from "@voiceloc/contracts";
import { isLanguage, synthesizeToFile, type TtsRegistry } from "@voiceloc/engines";
import type { Logger } from "@voiceloc/log";
import type { SpeechStack } from "./engines.ts";

/** The preset voices of the installed engines, best first per language, each language's default marked. */
export function voiceCatalog(registry: TtsRegistry): Voice[] {
  const table = registry.capabilities();
  return table.voices
    .filter((v) => isLanguage(v.language))
    .map((v) => ({
      name: v.name,
      language: v.language,
      engine: v.engine,
      gender: v.gender ?? null,
      description: v.description,
      default: table.defaults[v.language] === v.name,
    }));
}

/** A reply error whose code the gateway maps to a 422 (the client asked for something no engine does). */
class SynthesisRequestError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = "SynthesisRequestError";
    this.code = code;
  }
}

const CLIENT_ERRORS: Record<string, string> = {
  UNKNOWN_VOICE: "unknown_voice",
  VOICE_LANGUAGE_MISMATCH: "voice_language_mismatch",
  LANGUAGE_NOT_SUPPORTED: "language_not_supported",
  TEXT_NOT_SPEAKABLE: "text_not_speakable",
};

export interface SynthesisServiceOptions {
  bus: Bus;
  blobs: BlobStore;
  speech: SpeechStack;
  logger: Logger;
  /** At most this many syntheses at once in this process (engines are CPU-bound). */
  concurrency?: number;
}

export interface SynthesisService {
  readonly name: "synthesis";
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Speech synthesis on request/reply: synthesise, encode, store the audio as a blob,
 * reply with its key and the duration measured from the file.
 */
export function createSynthesisService(options: SynthesisServiceOptions): SynthesisService {
  const { bus, blobs, speech } = options;
  const logger = options.logger.child({ component: "synthesis" });
  const subscriptions: BusSubscription[] = [];
  const limit = Math.max(1, options.concurrency ?? 2);
  let active = 0;
  const waiting: Array<() => void> = [];
  const acquire = async () => {
    if (active < limit) {
      active += 1;
      return;
    }
    await new Promise<void>((resolve) => waiting.push(resolve));
  };
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else active -= 1;
  };

  return {
    name: "synthesis",
    async start() {
      subscriptions.push(
        await bus.serve(
          SUBJECTS.synthesize,
          SynthesizeRequestSchema,
          async (request): Promise<SynthesizeReply> => {
            const log = logger.child({ requestId: request.request_id, account: request.account_id });
            await acquire();
            const work = await mkdtemp(join(tmpdir(), "voiceloc-speech-"));
            const started = performance.now();
            try {
              const outPath = join(work, `speech.${request.format}`);
              let result;
              try {
                result = await synthesizeToFile(
                  { registry: speech.registry, media: speech.media, logger: log },
                  { text: request.text, language: request.language, voice: request.voice ?? undefined, format: request.format, outPath },
                );
              } catch (error) {
                const code = (error as { code?: unknown }).code;
                const mapped = typeof code === "string" ? CLIENT_ERRORS[code] : undefined;
                if (mapped && error instanceof Error) throw new SynthesisRequestError(mapped, error.message);
                throw error;
              }
              const key = `speech/${request.account_id}/${randomUUID()}.${request.format}`;
              await blobs.put(key, { path: result.path });
              log.info({ key, voice: result.voice, ms: Math.round(performance.now() - started), seconds: result.durationSeconds }, "synthesised");
              return { key, duration_seconds: result.durationSeconds, voice: result.voice };
            } finally {
              release();
              await rm(work, { recursive: true, force: true });
            }
          },
          { queue: "synthesis" },
        ),
      );
      subscriptions.push(
        await bus.serve(SUBJECTS.voices, VoicesRequestSchema, (): VoicesReply => ({ voices: voiceCatalog(speech.registry) }), {
          queue: "synthesis-voices",
        }),
      );
      logger.info({ languages: speech.registry.capabilities().languages }, "synthesis service ready");
    },
    async stop() {
      for (const sub of subscriptions.splice(0).reverse()) await sub.stop();
    },
  };
}
