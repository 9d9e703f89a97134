import { NoRespondersError, RequestTimeoutError, createCatalogBus, type Bus, type ReplyErrorCode } from "@voiceloc/bus";
import { BUS_CATALOG, type AudioFormat, type BusCatalogue, type ClonedVoiceWire, type Language, type LexiconWire, type Voice } from "@voiceloc/contracts";
import { HttpProblem, ServiceUnavailableError, ValueError422 } from "../http/errors.ts";

export interface SynthesisRequest {
  text: string;
  language: Language;
  /** The language as the client wrote it (a name or an ISO code), echoed as the 422 `input`. */
  languageInput?: string;
  voice: string | null;
  /** The caller's clone when `voice` is `clone:<id>` (resolved by the route), so the service needs no store. */
  clone?: ClonedVoiceWire | null;
  /** The caller's pronunciation lexicons named by `lexicons` (resolved by the route). */
  lexicons?: LexiconWire[];
  format: AudioFormat;
  accountId: string;
  requestId: string;
}

export interface Synthesizer {
  /** Longest text of one request in characters (SYNTHESIS_MAX_CHARACTERS); unset: only the schema's limit. */
  readonly maxCharacters?: number;
  /** Returns the blob key of the audio and its measured duration. */
  synthesize(request: SynthesisRequest): Promise<{ key: string; durationSeconds: number }>;
}

/** Every code the synthesis service may answer with: its refusals and the bus's system codes. */
export type SynthesisReplyCode = ReplyErrorCode<BusCatalogue, "synthesize">;

type Answer = (failure: { message: string }, request: SynthesisRequest) => HttpProblem;

const field =
  (name: "text" | "voice" | "language"): Answer =>
  (failure, request) =>
    new ValueError422(["body", name], failure.message, name === "language" ? (request.languageInput ?? request.language) : request[name]);

/**
 * The HTTP answer to each synthesis code, chosen on purpose (a new code fails to compile until it is
 * mapped here): the client's mistakes are 422s pointing at the field, with the service's words (they name
 * the voice, language or text); engine trouble is a 503 (retry later) or 502 in fixed plain words, never an
 * engine's output.
 */
export const SYNTHESIS_ANSWERS: Record<SynthesisReplyCode, Answer> = {
  text_empty: field("text"),
  text_too_long: field("text"),
  text_not_speakable: field("text"),
  unknown_voice: field("voice"),
  voice_language_mismatch: field("voice"),
  language_not_supported: field("language"),
  engine_unavailable: () =>
    new ServiceUnavailableError("Speech synthesis is not available right now: no working speech engine could take the request. Retry later.", 30),
  engine_busy: () => new ServiceUnavailableError("Speech synthesis is busy: the speech engine did not finish in time. Retry shortly.", 5),
  engine_failed: () =>
    new HttpProblem(502, "synthesis_failed", "Speech synthesis failed: the speech engine could not speak this text. Nothing was stored."),
  invalid_request: () =>
    new HttpProblem(502, "synthesis_failed", "Speech synthesis failed: the synthesis service did not accept the request (its version differs from the gateway's)."),
  internal: () => new HttpProblem(502, "synthesis_failed", "Speech synthesis failed inside the synthesis service. Nothing was stored; retry later."),
};

/** The voice catalogue has no refusals of its own: only the bus's system codes. */
const VOICES_ANSWERS: Record<ReplyErrorCode<BusCatalogue, "voices">, () => HttpProblem> = {
  invalid_request: () => new HttpProblem(502, "voices_failed", "The voice catalogue could not be read: the synthesis service did not accept the request."),
  internal: () => new HttpProblem(502, "voices_failed", "The voice catalogue could not be read: the synthesis service failed. Retry later."),
};

export interface VoiceCatalog {
  voices(): Promise<Voice[]>;
}

export interface BusSynthesisOptions {
  timeoutMs?: number;
  catalogTtlMs?: number;
  /** Longest text of one request (SYNTHESIS_MAX_CHARACTERS); the route refuses longer text with a 422. */
  maxCharacters?: number;
}

/** Speech synthesis and the voice catalogue, asked of the synthesis service over the bus. */
export function busSynthesis(bus: Bus, options: BusSynthesisOptions = {}): Synthesizer & VoiceCatalog {
  const catalog = createCatalogBus(bus, BUS_CATALOG);
  const timeoutMs = options.timeoutMs ?? BUS_CATALOG.requests.synthesize.timeoutMs;
  const ttl = options.catalogTtlMs ?? 30_000;
  let cached: { at: number; voices: Voice[] } | undefined;

  const unavailable = (error: unknown): never => {
    if (error instanceof NoRespondersError) {
      throw new ServiceUnavailableError("Speech synthesis is not available: no synthesis service is running. Retry shortly.", 5);
    }
    if (error instanceof RequestTimeoutError) {
      throw new ServiceUnavailableError("Speech synthesis timed out: the synthesis service is busy. Retry shortly.", 5);
    }
    throw error;
  };

  return {
    ...(options.maxCharacters === undefined ? {} : { maxCharacters: options.maxCharacters }),
    async synthesize(request: SynthesisRequest) {
      const result = await catalog
        .request(
          "synthesize",
          {
            text: request.text,
            language: request.language,
            voice: request.voice,
            ...(request.clone ? { clone: request.clone } : {}),
            ...(request.lexicons && request.lexicons.length > 0 ? { lexicons: request.lexicons } : {}),
            format: request.format,
            account_id: request.accountId,
            request_id: request.requestId,
          },
          { timeoutMs },
        )
        .catch(unavailable);
      if (!result.ok) throw SYNTHESIS_ANSWERS[result.code](result, request);
      return { key: result.reply.key, durationSeconds: result.reply.duration_seconds };
    },
    async voices() {
      if (cached && Date.now() - cached.at < ttl) return cached.voices;
      const result = await catalog.request("voices", {}).catch(unavailable);
      if (!result.ok) throw VOICES_ANSWERS[result.code]();
      cached = { at: Date.now(), voices: result.reply.voices };
      return result.reply.voices;
    },
  };
}
