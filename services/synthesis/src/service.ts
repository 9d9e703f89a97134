import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { accountKeySegment, type BlobStore } from "@voiceloc/blobs";
import { createCatalogBus, type Bus, type BusSubscription } from "@voiceloc/bus";
import {
  BUS_CATALOG,
  DEFAULT_SYNTHESIS_MAX_CHARACTERS,
  type CloneCreateReply,
  type SynthesisErrorCode,
  type SynthesizeReply,
  type Voice,
} from "@voiceloc/contracts";
import { TtsError, cloneVoiceName, isLanguage, synthesizeToFile, type TtsErrorCode, type TtsRegistry } from "@voiceloc/engines";
import type { Logger } from "@voiceloc/log";
import { clonedVoiceFromWire } from "@voiceloc/worker";
import { createClone, deleteClone, type SampleFetchSettings } from "./clones.ts";
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

/**
 * Every engine error code, mapped on purpose to a reply code of the catalogue (a new engine code fails to
 * compile until it is mapped here). The messages of engine errors are plain words meant for end users.
 */
export const TTS_ERROR_REPLY: Record<TtsErrorCode, SynthesisErrorCode> = {
  TEXT_EMPTY: "text_empty",
  TEXT_NOT_SPEAKABLE: "text_not_speakable",
  UNKNOWN_VOICE: "unknown_voice",
  VOICE_LANGUAGE_MISMATCH: "voice_language_mismatch",
  LANGUAGE_NOT_SUPPORTED: "language_not_supported",
  ENGINE_UNAVAILABLE: "engine_unavailable",
  ENGINE_CONFIG_INVALID: "engine_unavailable",
  SPEECH_SERVICE_AUTH: "engine_unavailable",
  SPEECH_SERVICE_UNAVAILABLE: "engine_unavailable",
  SPEECH_SERVICE_RATE_LIMITED: "engine_busy",
  SPEECH_SERVICE_TIMEOUT: "engine_busy",
  SYNTHESIS_CANCELLED: "engine_busy",
  SYNTHESIS_FAILED: "engine_failed",
  SYNTHESIS_OUT_OF_MEMORY: "engine_failed",
  SPEECH_SERVICE_REJECTED: "engine_failed",
  SPEECH_SERVICE_BAD_RESPONSE: "engine_failed",
  // never raised while speaking (a sample is checked when a clone is made)
  SAMPLE_UNUSABLE: "engine_failed",
  // the clone was deleted at its engine between the gateway's check and the speech
  CLONE_NOT_FOUND: "unknown_voice",
};

/**
 * The words of a refusal: the engine's own for the client's mistakes (they name the voice, language or
 * text, in plain words), fixed words for engine trouble (an engine's message may carry a program's output).
 */
export function refusalMessage(code: SynthesisErrorCode, engineMessage: string): string {
  switch (code) {
    case "text_empty":
    case "text_too_long":
    case "text_not_speakable":
    case "unknown_voice":
    case "voice_language_mismatch":
    case "language_not_supported":
      return engineMessage;
    case "engine_unavailable":
      return "No working speech engine could take the request.";
    case "engine_busy":
      return "The speech engine is busy or did not finish in time.";
    case "engine_failed":
      return "The speech engine failed on this text.";
    default: {
      const unmapped: never = code;
      return unmapped;
    }
  }
}

/** Length in code points, as the HTTP edge counts it (Pydantic's `max_length`). */
function characters(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

export interface SynthesisServiceOptions {
  bus: Bus;
  blobs: BlobStore;
  speech: SpeechStack;
  logger: Logger;
  /** At most this many syntheses at once in this process (engines are CPU-bound). */
  concurrency?: number;
  /** Longest text of one request, in characters (SYNTHESIS_MAX_CHARACTERS); longer is refused as `text_too_long`. */
  maxCharacters?: number;
  /**
   * Where voice samples may come from (`clone.create`): the same settings the task workers fetch their
   * inputs with, under the requesting account's rights. Without them no clone can be made.
   */
  fetch?: SampleFetchSettings | undefined;
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

  const maxCharacters = options.maxCharacters ?? DEFAULT_SYNTHESIS_MAX_CHARACTERS;
  const catalog = createCatalogBus(bus, BUS_CATALOG);

  return {
    name: "synthesis",
    async start() {
      subscriptions.push(
        await catalog.serve(
          "synthesize",
          async (request, { refuse }) => {
            const log = logger.child({ requestId: request.request_id, account: request.account_id });
            const length = characters(request.text);
            if (length > maxCharacters) {
              return refuse(
                "text_too_long",
                `The text has ${length} characters; one request may have at most ${maxCharacters} (SYNTHESIS_MAX_CHARACTERS).`,
              );
            }
            // A clone made by an engine this server does not run is refused by synthesizeToFile (CLONE_NOT_FOUND → unknown_voice).
            const clone = request.clone ? clonedVoiceFromWire(request.clone) : undefined;
            await acquire();
            const work = await mkdtemp(join(tmpdir(), "voiceloc-speech-"));
            const started = performance.now();
            try {
              const outPath = join(work, `speech.${request.format}`);
              let result;
              try {
                result = await synthesizeToFile(
                  { registry: speech.registry, media: speech.media, logger: log, clones: speech.clones },
                  { text: request.text, language: request.language, voice: request.voice ?? undefined, clone, format: request.format, outPath, lexicons: request.lexicons },
                );
              } catch (error) {
                if (!(error instanceof TtsError)) throw error;
                const code = TTS_ERROR_REPLY[error.code];
                log.info({ err: error, engineCode: error.code, code }, "synthesis refused");
                return refuse(code, refusalMessage(code, error.message));
              }
              // The account id is encoded into one key segment: any allowed id (`carol@example.com`, `..`,
              // `a/b`) makes a valid key that no other account's keys share.
              const key = `speech/${accountKeySegment(request.account_id)}/${randomUUID()}.${request.format}`;
              await blobs.put(key, { path: result.path });
              log.info({ key, voice: result.voice, ms: Math.round(performance.now() - started), seconds: result.durationSeconds }, "synthesised");
              const reply: SynthesizeReply = { key, duration_seconds: result.durationSeconds, voice: clone ? cloneVoiceName(clone) : result.voice };
              return reply;
            } finally {
              release();
              await rm(work, { recursive: true, force: true });
            }
          },
          { onInternalError: (error) => logger.error({ err: error }, "synthesis failed") },
        ),
      );
      subscriptions.push(await catalog.serve("voices", () => ({ voices: voiceCatalog(speech.registry) })));
      // Cloned voices: made here because the engines are here; the request waits while the sample is checked.
      const cloneDeps = { speech, blobs, fetch: options.fetch };
      subscriptions.push(
        await catalog.serve(
          "clone.create",
          async (request, { refuse }) => {
            const log = logger.child({ requestId: request.request_id, account: request.account_id, clone: request.id });
            await acquire();
            try {
              const outcome = await createClone(cloneDeps, request, log);
              if (!outcome.ok) return refuse(outcome.code, outcome.message);
              const reply: CloneCreateReply = outcome.reply;
              return reply;
            } finally {
              release();
            }
          },
          { onInternalError: (error) => logger.error({ err: error }, "cloning failed") },
        ),
      );
      subscriptions.push(
        await catalog.serve(
          "clone.delete",
          async (request, { refuse }) => {
            const log = logger.child({ requestId: request.request_id, account: request.account_id, clone: request.clone.id });
            const outcome = await deleteClone(cloneDeps, request, log);
            return outcome.ok ? { deleted: outcome.deleted } : refuse(outcome.code, outcome.message);
          },
          { onInternalError: (error) => logger.error({ err: error }, "deleting a cloned voice failed") },
        ),
      );
      logger.info({ languages: speech.registry.capabilities().languages, maxCharacters, cloning: speech.clones?.id ?? "off" }, "synthesis service ready");
    },
    async stop() {
      for (const sub of subscriptions.splice(0).reverse()) await sub.stop();
    },
  };
}
