import { InvalidWorkerArgumentError } from "./errors.ts";

/**
 * Task event sequence numbers, monotonic across redeliveries without shared state:
 *
 *     seq = deliveryCount * 2^20 + counter
 *
 * where `counter` counts the events published by one delivery, from 0. The bus's delivery count
 * rises with every redelivery, so each event of a later delivery outranks every event of an earlier
 * (possibly still running, stale) delivery, and the gateway's projection, which applies an event only
 * when its seq is higher than the record's, never moves a record back to an older delivery's state.
 * One delivery may publish at most 2^20 events (over 70 hours of progress at 4 events/s); progress
 * beyond that is dropped, and the last counter value is kept for the terminal event.
 */
export const SEQ_DELIVERY_SPAN = 2 ** 20;

export function taskEventSeq(deliveryCount: number, counter: number): number {
  if (!Number.isSafeInteger(deliveryCount) || deliveryCount < 1) {
    throw new InvalidWorkerArgumentError(`deliveryCount must be an integer >= 1, got ${deliveryCount}`);
  }
  if (!Number.isInteger(counter) || counter < 0 || counter >= SEQ_DELIVERY_SPAN) {
    throw new InvalidWorkerArgumentError(`event counter must be an integer in [0, ${SEQ_DELIVERY_SPAN}), got ${counter}`);
  }
  return deliveryCount * SEQ_DELIVERY_SPAN + counter;
}
