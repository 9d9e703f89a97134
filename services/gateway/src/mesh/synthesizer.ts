import { NoRespondersError, RemoteError, RequestTimeoutError, type Bus } from "@voiceloc/bus";
import { SUBJECTS, SynthesizeReplySchema, VoicesReplySchema, type Voice } from "@voiceloc/contracts";
import { HttpProblem, ServiceUnavailableError } from "../http/errors.ts";
import { ValueError422 } from "../http/errors.ts";
import type { SynthesisRequest, Synthesizer } from "../routes/speech.ts";

/** Where each synthesis refusal points in the request body. */
const CLIENT_ERROR_FIELD: Record<string, string> = {
  unknown_voice: "voice",
  voice_language_mismatch: "voice",
  language_not_supported: "language",
  text_not_speakable: "text",
  text_empty: "text",
};

export interface VoiceCatalog {
  voices(): Promise<Voice[]>;
}

/** Speech synthesis and the voice catalogue, asked of the synthesis service over the bus. */
export function busSynthesis(bus: Bus, options: { timeoutMs?: number; catalogTtlMs?: number } = {}): Synthesizer & VoiceCatalog {
  const timeoutMs = options.timeoutMs ?? 120_000;
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
    async synthesize(request: SynthesisRequest) {
      try {
        const reply = await bus.request(
          SUBJECTS.synthesize,
          {
            text: request.text,
            language: request.language,
            voice: request.voice,
            format: request.format,
            account_id: request.accountId,
            request_id: request.requestId,
          },
          { timeoutMs, schema: SynthesizeReplySchema },
        );
        return { key: reply.key, durationSeconds: reply.duration_seconds };
      } catch (error) {
        if (error instanceof RemoteError) {
          const field = CLIENT_ERROR_FIELD[error.remoteCode];
          if (field) {
            const input = field === "voice" ? request.voice : field === "language" ? request.language : request.text;
            throw new ValueError422(["body", field], error.message, input);
          }
          throw new HttpProblem(502, "synthesis_failed", `Speech synthesis failed: ${error.message}`);
        }
        return unavailable(error);
      }
    },
    async voices() {
      if (cached && Date.now() - cached.at < ttl) return cached.voices;
      try {
        const reply = await bus.request(SUBJECTS.voices, {}, { timeoutMs: 10_000, schema: VoicesReplySchema });
        cached = { at: Date.now(), voices: reply.voices };
        return reply.voices;
      } catch (error) {
        return unavailable(error);
      }
    },
  };
}
