export type {
  Bus,
  BusSubscription,
  ConsumeWorkOptions,
  DeadLetter,
  DeadLetterHandler,
  EventContext,
  EventHandler,
  PublishEventOptions,
  PublishResult,
  RequestHandler,
  RequestOptions,
  Schema,
  ServeOptions,
  StopOptions,
  StreamSpec,
  SubscribeEventsOptions,
  Topology,
  WorkContext,
  WorkHandler,
  WorkOutcome,
  WorkQueueSpec,
} from "./types.ts";
export { outcome } from "./types.ts";
export {
  BusClosedError,
  BusError,
  InvalidArgumentError,
  LeaseExpiredError,
  NoRespondersError,
  NotProvisionedError,
  ProvisionError,
  PublishError,
  RemoteError,
  RequestTimeoutError,
  StoppingError,
  type BusErrorCode,
} from "./errors.ts";
export { DEFAULT_BACKOFF_MS } from "./core.ts";
export { createNatsBus, type NatsBusOptions } from "./nats.ts";
export { createInProcessBus, type InProcessBusOptions } from "./inprocess.ts";
export { deadLetterStreamName, deadLetterSubject, maxDeliveriesAdvisorySubject } from "./engine.ts";
