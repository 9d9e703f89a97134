import { NoRespondersError, RequestTimeoutError, createCatalogBus, type Bus, type ReplyErrorCode } from "@voiceloc/bus";
import { BUS_CATALOG, type BusCatalogue, type ClonedVoiceWire, type CloneCreateReply, type Language } from "@voiceloc/contracts";
import { HttpProblem, ServiceUnavailableError, ValueError422 } from "../http/errors.ts";

export interface CloneRequest {
  id: string;
  name: string;
  /** The file reference as the client sent it (checked by its shape already; fetched by the serving side as the account). */
  sample: string;
  language: Language | null;
  accountId: string;
  requestId: string;
}

/** Makes and deletes cloned voices at the engine of the service that holds it (the synthesis service). */
export interface CloneMaker {
  /** The voice as made; throws the HTTP answer of a refusal (422 at `sample`, 502/503 for engine trouble). */
  create(request: CloneRequest): Promise<CloneCreateReply>;
  /** Deletes the voice at its engine; `false` when the engine no longer had it. Throws 502/503 when the engine cannot be reached. */
  remove(clone: ClonedVoiceWire, accountId: string, requestId: string): Promise<boolean>;
}

/** Every code `clone.create` / `clone.delete` may answer with: their refusals and the bus's system codes. */
export type CloneReplyCode = ReplyErrorCode<BusCatalogue, "clone.create">;

type Answer = (failure: { message: string }, sample: string | null) => HttpProblem;

const atSample: Answer = (failure, sample) => new ValueError422(["body", "sample"], failure.message, sample);

/** The answer when this server makes no clones (CLONE_ENGINE=off), worded like a missing capability. */
export const CLONING_OFF = "voice cloning is not available: this server makes no cloned voices (CLONE_ENGINE=off)";

/**
 * The HTTP answer to each code, chosen on purpose (a new code fails to compile until it is mapped here):
 * the sample's problems are 422s at `sample` in the service's plain words; engine trouble is a 503 with
 * `Retry-After` or a 502 in fixed words, never an engine's output.
 */
export const CLONE_ANSWERS: Record<CloneReplyCode, Answer> = {
  sample_not_available: atSample,
  sample_unusable: atSample,
  cloning_unavailable: (_failure, sample) => new ValueError422(["body", "sample"], CLONING_OFF, sample),
  engine_unavailable: () => new ServiceUnavailableError("Voice cloning is not available right now: the cloning engine cannot be reached. Retry later.", 30),
  engine_busy: () => new ServiceUnavailableError("Voice cloning is busy: the cloning engine did not answer in time. Retry shortly.", 5),
  engine_failed: () => new HttpProblem(502, "cloning_failed", "Voice cloning failed: the cloning engine could not do it. Nothing was stored."),
  invalid_request: () =>
    new HttpProblem(502, "cloning_failed", "Voice cloning failed: the synthesis service did not accept the request (its version differs from the gateway's)."),
  internal: () => new HttpProblem(502, "cloning_failed", "Voice cloning failed inside the synthesis service. Nothing was stored; retry later."),
};

/**
 * The answers to a deletion's refusals: the sample's codes cannot come back from one (the service's
 * version differs: a 502), and a server that makes no clones any more cannot delete the voice at its
 * engine: 503, the record is kept so nothing is left at the engine unseen.
 */
const versionDiffers = () => CLONE_ANSWERS.invalid_request({ message: "" }, null);
export const CLONE_DELETE_ANSWERS: Record<CloneReplyCode, () => HttpProblem> = {
  sample_not_available: versionDiffers,
  sample_unusable: versionDiffers,
  cloning_unavailable: () =>
    new ServiceUnavailableError(
      "The voice cannot be deleted at its engine now: this server makes no cloned voices (CLONE_ENGINE=off). The clone is kept; delete it again once cloning is configured.",
    ),
  engine_unavailable: () => CLONE_ANSWERS.engine_unavailable({ message: "" }, null),
  engine_busy: () => CLONE_ANSWERS.engine_busy({ message: "" }, null),
  engine_failed: () => new HttpProblem(502, "cloning_failed", "The voice could not be deleted at its engine (the engine failed). The clone is kept; retry later."),
  invalid_request: versionDiffers,
  internal: () => new HttpProblem(502, "cloning_failed", "The voice could not be deleted: the synthesis service failed. The clone is kept; retry later."),
};

/** Cloned voices made and deleted by the synthesis service over the bus. */
export function busCloneMaker(bus: Bus): CloneMaker {
  const catalog = createCatalogBus(bus, BUS_CATALOG);
  const unavailable = (error: unknown): never => {
    if (error instanceof NoRespondersError) {
      throw new ServiceUnavailableError("Voice cloning is not available: no synthesis service is running. Retry shortly.", 5);
    }
    if (error instanceof RequestTimeoutError) {
      throw new ServiceUnavailableError("Voice cloning timed out: the synthesis service is busy. Retry shortly.", 5);
    }
    throw error;
  };
  return {
    async create(request) {
      const result = await catalog
        .request("clone.create", {
          id: request.id,
          name: request.name,
          sample: request.sample,
          language: request.language,
          account_id: request.accountId,
          request_id: request.requestId,
        })
        .catch(unavailable);
      if (!result.ok) throw CLONE_ANSWERS[result.code](result, request.sample);
      return result.reply;
    },
    async remove(clone, accountId, requestId) {
      const result = await catalog.request("clone.delete", { clone, account_id: accountId, request_id: requestId }).catch(unavailable);
      if (!result.ok) throw CLONE_DELETE_ANSWERS[result.code]();
      return result.reply.deleted;
    },
  };
}
