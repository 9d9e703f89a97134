import { DuplicateKeyError, type Collection, type Store } from "@voiceloc/store";
import type { TaskKind } from "@voiceloc/contracts";

/**
 * One claim of a place in flight: an account may have at most `limit` tasks of each kind
 * published and unfinished. Slot ids are `<kind>:<n>:<account>` with n < limit, and `task_id` is a
 * unique index, so a claim is one insert that the store refuses when the place is taken or the
 * task already holds one: the rule holds across every gateway sharing the store, with no counter
 * in memory.
 */
export interface SlotDoc {
  id: string;
  kind: TaskKind;
  account_id: string;
  task_id: string;
  date_created: string;
}

export const SLOTS_COLLECTION = "dispatch_slots";

export class DispatchSlots {
  private constructor(
    private readonly slots: Collection<SlotDoc>,
    readonly limit: number,
  ) {}

  /** `limit` comes from ACCOUNT_MAX_TASKS_IN_FLIGHT (validated ≥ 1 by the config); anything below 1 counts as 1. */
  static async open(store: Store, limit: number): Promise<DispatchSlots> {
    const slots = await store.collection<SlotDoc>({
      name: SLOTS_COLLECTION,
      indexes: [
        { fields: [["task_id", 1]], unique: true },
        { fields: [["kind", 1], ["account_id", 1]] },
        { fields: [["date_created", 1]] },
      ],
    });
    return new DispatchSlots(slots, Math.max(1, Math.floor(limit)));
  }

  /**
   * Claims a place for the task; true when it holds one (now or already), false when the
   * account's places for this kind are all taken.
   */
  async claim(kind: TaskKind, accountId: string, taskId: string): Promise<boolean> {
    if (await this.slots.findOne({ task_id: taskId })) return true;
    // a cheap look first; the inserts below are what decides
    if ((await this.slots.count({ kind, account_id: accountId })) >= this.limit) return false;
    for (let n = 0; n < this.limit; n += 1) {
      try {
        await this.slots.insert({ id: `${kind}:${n}:${accountId}`, kind, account_id: accountId, task_id: taskId, date_created: new Date().toISOString() });
        return true;
      } catch (error) {
        if (!(error instanceof DuplicateKeyError)) throw error;
        // place n is taken, or another gateway claimed one for this very task meanwhile
        if (await this.slots.findOne({ task_id: taskId })) return true;
      }
    }
    return false;
  }

  /** Frees the task's place; returns the slot it held (null when it held none). */
  async release(taskId: string): Promise<SlotDoc | null> {
    const slot = await this.slots.findOne({ task_id: taskId });
    if (!slot) return null;
    await this.slots.deleteMany({ id: slot.id, task_id: taskId });
    return slot;
  }

  /** Slots claimed before `olderThan` (for the sweep to check against their records). */
  async claimedBefore(olderThan: string, limit: number): Promise<SlotDoc[]> {
    return this.slots.find({ date_created: { $lt: olderThan } }, { sort: [["date_created", 1]], limit });
  }

  async inFlight(kind: TaskKind, accountId: string): Promise<number> {
    return this.slots.count({ kind, account_id: accountId });
  }
}
