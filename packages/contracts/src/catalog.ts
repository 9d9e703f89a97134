/**
 * The bus catalogue: every subject with its payload schema, reply schema and closed set of reply error
 * codes, declared once. `createCatalogBus(bus, BUS_CATALOG)` from `@voiceloc/bus` types publish, consume,
 * serve and request by it (like trigger.dev's worker catalogue), so a wrong payload or a refusal code outside
 * the contract fails to compile. The shapes are structural: this package does not depend on the bus.
 */
import {
  AudioBookWorkSchema,
  CLONE_ERROR_CODES,
  CloneCreateReplySchema,
  CloneCreateRequestSchema,
  CloneDeleteReplySchema,
  CloneDeleteRequestSchema,
  CapabilitiesRequestSchema,
  CapabilitiesSchema,
  SUBJECTS,
  SYNTHESIS_ERROR_CODES,
  STREAMS,
  SubtitleWorkSchema,
  SynthesizeReplySchema,
  SynthesizeRequestSchema,
  TaskEventSchema,
  VoiceStreamWorkSchema,
  VoicesReplySchema,
  VoicesRequestSchema,
  WEBHOOK_QUEUE,
  WORK_QUEUES,
  type AudioBookWork,
  type CapabilityKind,
  type SubtitleWork,
  type TaskEvent,
  type VoiceStreamWork,
} from "./bus.ts";
import { WebhookDeliveryWorkSchema, type WebhookDeliveryWork } from "./webhooks.ts";
import { AUDIOBOOK_COVER_ERROR_CODES, AUDIOBOOK_COVER_SUBJECT, AudioBookCoverReplySchema, AudioBookCoverRequestSchema } from "./audiobook-cover.ts";

const NO_REFUSALS = [] as const;

function capabilityRequest(kind: CapabilityKind) {
  return {
    subject: SUBJECTS.capabilities(kind),
    queue: `capabilities-${kind}`,
    request: CapabilitiesRequestSchema,
    reply: CapabilitiesSchema,
    errors: NO_REFUSALS,
    timeoutMs: 10_000,
  } as const;
}

/** The catalogue request of a kind's capability table. */
export const capabilityRequestName = <K extends CapabilityKind>(kind: K): `capabilities.${K}` => `capabilities.${kind}`;

export const BUS_CATALOG = {
  /** Work queues `work.<kind>`; a message is deduplicated by its task id. */
  work: {
    audiobook: { queue: WORK_QUEUES.audiobook, payload: AudioBookWorkSchema, messageId: (work: AudioBookWork) => work.task_id },
    "voice-stream": { queue: WORK_QUEUES["voice-stream"], payload: VoiceStreamWorkSchema, messageId: (work: VoiceStreamWork) => work.task_id },
    subtitle: { queue: WORK_QUEUES.subtitle, payload: SubtitleWorkSchema, messageId: (work: SubtitleWork) => work.task_id },
    /** Webhook deliveries (consumed by the gateways), one message per endpoint, record and event. */
    webhook: {
      queue: WEBHOOK_QUEUE,
      payload: WebhookDeliveryWorkSchema,
      messageId: (work: WebhookDeliveryWork) => `${work.webhook_id}:${work.message_id}`,
    },
  },
  events: {
    /** Progress of a task on `events.task.<kind>.<task id>`, deduplicated by task id and sequence. */
    task: {
      pattern: SUBJECTS.allTaskEvents,
      payload: TaskEventSchema,
      subject: (event: TaskEvent) => SUBJECTS.taskEvent(event.kind, event.task_id),
      messageId: (event: TaskEvent) => `${event.task_id}:${event.seq}`,
    },
  },
  requests: {
    /** Speak a text, store the audio as a blob, reply with its key and measured duration. */
    synthesize: {
      subject: SUBJECTS.synthesize,
      queue: "synthesis",
      request: SynthesizeRequestSchema,
      reply: SynthesizeReplySchema,
      errors: SYNTHESIS_ERROR_CODES,
      timeoutMs: 120_000,
    },
    /** The preset voices of the synthesis service's engines. */
    voices: {
      subject: SUBJECTS.voices,
      queue: "synthesis-voices",
      request: VoicesRequestSchema,
      reply: VoicesReplySchema,
      errors: NO_REFUSALS,
      timeoutMs: 10_000,
    },
    /** Make a cloned voice from a sample (served by the synthesis service, which holds the cloning engine). */
    "clone.create": {
      subject: SUBJECTS.cloneCreate,
      queue: "synthesis-clones",
      request: CloneCreateRequestSchema,
      reply: CloneCreateReplySchema,
      errors: CLONE_ERROR_CODES,
      timeoutMs: 120_000,
    },
    /** Delete a cloned voice at its engine (a voice already gone answers `deleted: false`). */
    "clone.delete": {
      subject: SUBJECTS.cloneDelete,
      queue: "synthesis-clones",
      request: CloneDeleteRequestSchema,
      reply: CloneDeleteReplySchema,
      errors: CLONE_ERROR_CODES,
      timeoutMs: 60_000,
    },
    /**
     * A finished audio book re-wrapped with a new cover (or none): served by the audio book service,
     * which fetches and checks the cover as the account; no speech is made again (audiobook-cover.ts).
     */
    "audiobook.cover": {
      subject: AUDIOBOOK_COVER_SUBJECT,
      queue: "audiobook-cover",
      request: AudioBookCoverRequestSchema,
      reply: AudioBookCoverReplySchema,
      errors: AUDIOBOOK_COVER_ERROR_CODES,
      timeoutMs: 120_000,
    },
    /**
     * The capability table of one kind of work, answered by every process that runs it (one queue group
     * per kind), holding only what that kind uses: the gateway checks a creation against its kind's table.
     */
    "capabilities.synthesis": capabilityRequest("synthesis"),
    "capabilities.audiobook": capabilityRequest("audiobook"),
    "capabilities.voice-stream": capabilityRequest("voice-stream"),
    "capabilities.subtitle": capabilityRequest("subtitle"),
  },
  /** Streams every work queue and event family lives on. */
  streams: [STREAMS.work, STREAMS.events],
} as const;

export type BusCatalogue = typeof BUS_CATALOG;
