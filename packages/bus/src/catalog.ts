/**
 * The bus typed by a catalogue (like trigger.dev's worker catalogue): every work queue, event family and
 * request subject is declared once with its payload schema, reply schema and closed set of reply error
 * codes; `createCatalogBus(bus, catalogue)` then publishes, consumes, serves and requests by name, so a
 * wrong payload or an error code outside the contract fails to compile. It is a layer over the untyped
 * `Bus` (both adapters), which stays as it is.
 *
 * The catalogue's shape is structural: `@voiceloc/contracts` declares the concrete one with zod schemas,
 * this package never imports it.
 */
import { CodedError } from "@voiceloc/errors";
import { InvalidArgumentError, RemoteError, errorMessage } from "./errors.ts";
import type {
  Bus,
  BusSubscription,
  ConsumeWorkOptions,
  DeadLetterHandler,
  EventHandler,
  PublishResult,
  Schema,
  SubscribeEventsOptions,
  WorkHandler,
  WorkQueueSpec,
} from "./types.ts";

/** Codes any request may be answered with besides its contract's own: a payload the server refused to parse, or a bug. */
export const SYSTEM_REPLY_CODES = ["invalid_request", "internal"] as const;
export type SystemReplyCode = (typeof SYSTEM_REPLY_CODES)[number];

/** The plain words replied for an `internal` failure (the real error stays in the server's log). */
export const INTERNAL_REPLY_MESSAGE = "The service failed while handling the request.";

/** A work queue: its durable consumer settings and the payload every message carries. */
export interface WorkContract<T> {
  readonly queue: WorkQueueSpec;
  readonly payload: Schema<T>;
  /** Deduplication id of a message (the task id). */
  messageId(payload: T): string;
}

/** A family of events: the pattern subscribers use and the subject each event is published on. */
export interface EventContract<T> {
  /** Subscription pattern covering every event of the family, e.g. `events.task.>`. */
  readonly pattern: string;
  readonly payload: Schema<T>;
  /** The concrete subject of one event, derived from its payload. */
  subject(payload: T): string;
  /** Deduplication id of one event, when it has one. */
  messageId?(payload: T): string;
}

/** A request/reply subject served by a queue group. */
export interface RequestContract<Req, Res, Code extends string> {
  readonly subject: string;
  /** Queue group of the servers: each request goes to one of them. */
  readonly queue: string;
  readonly request: Schema<Req>;
  readonly reply: Schema<Res>;
  /** The closed set of refusals a server may reply with (besides the system codes). */
  readonly errors: readonly Code[];
  /** Default timeout of a request. */
  readonly timeoutMs: number;
}

export interface BusCatalog {
  readonly work: { readonly [name: string]: WorkContract<unknown> };
  readonly events: { readonly [name: string]: EventContract<unknown> };
  readonly requests: { readonly [name: string]: RequestContract<unknown, unknown, string> };
}

/* ------------------------------------------------------------------ type helpers */

type Parsed<S> = S extends Schema<infer T> ? T : never;

export type WorkName<C extends BusCatalog> = keyof C["work"] & string;
export type EventName<C extends BusCatalog> = keyof C["events"] & string;
export type RequestName<C extends BusCatalog> = keyof C["requests"] & string;

/** The payload of a work queue. */
export type WorkPayload<C extends BusCatalog, K extends WorkName<C>> = Parsed<C["work"][K]["payload"]>;
/** The payload of an event family. */
export type EventPayload<C extends BusCatalog, K extends EventName<C>> = Parsed<C["events"][K]["payload"]>;
/** The request payload of a request subject. */
export type RequestPayload<C extends BusCatalog, K extends RequestName<C>> = Parsed<C["requests"][K]["request"]>;
/** The reply of a request subject. */
export type ReplyPayload<C extends BusCatalog, K extends RequestName<C>> = Parsed<C["requests"][K]["reply"]>;
/** The contract's own refusal codes of a request subject. */
export type RefusalCode<C extends BusCatalog, K extends RequestName<C>> = C["requests"][K]["errors"][number];
/** Every code a request may fail with: the contract's refusals and the system codes. Map it with `Record<ReplyErrorCode<…>, …>`. */
export type ReplyErrorCode<C extends BusCatalog, K extends RequestName<C>> = RefusalCode<C, K> | SystemReplyCode;

/** What a request came back with: the parsed reply, or one error code of the contract (never a free string). */
export type RequestResult<Res, Code extends string> =
  | { readonly ok: true; readonly reply: Res }
  | { readonly ok: false; readonly code: Code | SystemReplyCode; readonly message: string };

/* ------------------------------------------------------------------ serving */

/** A server's deliberate refusal, returned by a typed handler through `ctx.refuse(code, message)`. */
export class Refusal<Code extends string = string> {
  readonly code: Code;
  readonly message: string;
  constructor(code: Code, message: string) {
    this.code = code;
    this.message = message;
  }
}

export interface TypedRequestContext<Code extends string> {
  subject: string;
  /** A refusal with one of the contract's codes; return it from the handler. */
  refuse(code: Code, message: string): Refusal<Code>;
}

export type TypedRequestHandler<Req, Res, Code extends string> = (
  request: Req,
  ctx: TypedRequestContext<Code>,
) => Promise<Res | Refusal<Code>> | Res | Refusal<Code>;

/**
 * Carries a reply error through the untyped `serve`, which replies `{ error: { code, message } }`; the
 * code is one of the contract's (checked against it at run time, so typed as a string here).
 */
class ReplyError extends CodedError<string> {
  override name = "ReplyError";
}

/* ------------------------------------------------------------------ the typed bus */

export interface CatalogBus<C extends BusCatalog> {
  readonly catalog: C;
  /** The untyped bus underneath (provisioning, close). */
  readonly bus: Bus;
  /** Parses the payload through the queue's schema, then publishes it deduplicated by its message id. */
  publishWork<K extends WorkName<C>>(name: K, payload: WorkPayload<C, K>): Promise<PublishResult>;
  consumeWork<K extends WorkName<C>>(name: K, handler: WorkHandler<WorkPayload<C, K>>, options?: ConsumeWorkOptions): Promise<BusSubscription>;
  onDeadLetter<K extends WorkName<C>>(name: K, handler: DeadLetterHandler): Promise<BusSubscription>;
  /** Parses the event through its schema, then publishes it on the subject derived from it. */
  publishEvent<K extends EventName<C>>(name: K, payload: EventPayload<C, K>): Promise<PublishResult>;
  subscribeEvents<K extends EventName<C>>(name: K, handler: EventHandler<EventPayload<C, K>>, options?: SubscribeEventsOptions): Promise<BusSubscription>;
  /**
   * Serves a request subject in its queue group. The handler returns the reply or `ctx.refuse(code, …)`
   * with a code of the contract; anything it throws is replied as `internal` with plain words (the error
   * itself is handed to `onInternalError` for logging), never as its own message or code.
   */
  serve<K extends RequestName<C>>(
    name: K,
    handler: TypedRequestHandler<RequestPayload<C, K>, ReplyPayload<C, K>, RefusalCode<C, K>>,
    options?: { onInternalError?: (error: unknown) => void },
  ): Promise<BusSubscription>;
  /**
   * Sends a request and parses the reply. A refusal comes back as `{ ok: false, code }` with a code of the
   * contract (a code outside it is reported as `internal`); transport failures (timeout, no responders,
   * an unreadable reply, a closed bus) throw the bus's errors.
   */
  request<K extends RequestName<C>>(
    name: K,
    payload: RequestPayload<C, K>,
    options?: { timeoutMs?: number },
  ): Promise<RequestResult<ReplyPayload<C, K>, RefusalCode<C, K>>>;
}

function lookup<T>(table: { readonly [name: string]: T }, kind: string, name: string): T {
  const entry = Object.hasOwn(table, name) ? table[name] : undefined;
  if (entry === undefined) throw new InvalidArgumentError(`the bus catalogue has no ${kind} called "${name}"`);
  return entry;
}

function parseOut<T>(schema: Schema<T>, payload: unknown, what: string): T {
  try {
    return schema.parse(payload);
  } catch (error) {
    throw new InvalidArgumentError(`${what}: the payload does not match its contract (${errorMessage(error)})`, { cause: error });
  }
}

/** Types the bus by the catalogue. */
export function createCatalogBus<const C extends BusCatalog>(bus: Bus, catalog: C): CatalogBus<C> {
  const work = (name: string) => lookup(catalog.work, "work queue", name);
  const events = (name: string) => lookup(catalog.events, "event", name);
  const requests = (name: string) => lookup(catalog.requests, "request", name);

  // Written once over `unknown` payloads; the one cast at the end gives each method its entry's types.
  const untyped: CatalogBus<BusCatalog> = {
    catalog,
    bus,

    async publishWork(name, payload) {
      const contract = work(name);
      const parsed = parseOut(contract.payload, payload, `work ${name}`);
      return bus.publishWork(contract.queue.subject, parsed, { msgId: contract.messageId(parsed) });
    },

    async consumeWork(name, handler, options) {
      const contract = work(name);
      return bus.consumeWork(contract.queue, contract.payload, handler, options);
    },

    async onDeadLetter(name, handler) {
      return bus.onDeadLetter(work(name).queue, handler);
    },

    async publishEvent(name, payload) {
      const contract = events(name);
      const parsed = parseOut(contract.payload, payload, `event ${name}`);
      const msgId = contract.messageId?.(parsed);
      return bus.publishEvent(contract.subject(parsed), parsed, msgId === undefined ? {} : { msgId });
    },

    async subscribeEvents(name, handler, options) {
      const contract = events(name);
      return bus.subscribeEvents(contract.pattern, contract.payload, handler, options);
    },

    async serve(name, handler, options = {}) {
      const contract = requests(name);
      const allowed = new Set<string>(contract.errors);
      const internal = (error: unknown) => {
        options.onInternalError?.(error);
        return new ReplyError("internal", INTERNAL_REPLY_MESSAGE, { cause: error });
      };
      return bus.serve(
        contract.subject,
        contract.request,
        async (request, ctx) => {
          let result: unknown;
          try {
            result = await handler(request, { subject: ctx.subject, refuse: (code, message) => new Refusal(code, message) });
          } catch (error) {
            throw internal(error);
          }
          if (result instanceof Refusal) {
            if (allowed.has(result.code)) throw new ReplyError(result.code, result.message);
            throw internal(new InvalidArgumentError(`refusal code "${result.code}" is not in the contract of ${name}`));
          }
          // Checked on the way out too: a reply outside the contract is a bug, not an answer.
          try {
            return contract.reply.parse(result);
          } catch (error) {
            throw internal(error);
          }
        },
        { queue: contract.queue },
      );
    },

    async request(name, payload, options = {}) {
      const contract = requests(name);
      const parsed = parseOut(contract.request, payload, `request ${name}`);
      try {
        const reply = await bus.request(contract.subject, parsed, { timeoutMs: options.timeoutMs ?? contract.timeoutMs, schema: contract.reply });
        return { ok: true, reply };
      } catch (error) {
        if (!(error instanceof RemoteError)) throw error;
        const code = error.remoteCode;
        if (contract.errors.includes(code) || (SYSTEM_REPLY_CODES as readonly string[]).includes(code)) {
          return { ok: false, code, message: error.message };
        }
        return { ok: false, code: "internal", message: INTERNAL_REPLY_MESSAGE };
      }
    },
  };
  return untyped as unknown as CatalogBus<C>;
}
