import { DuplicateKeyError, type Collection, type Filter, type Store } from "@voiceloc/store";
import type { TaskKind } from "@voiceloc/contracts";

/**
 * One claim of a numbered place by a task. A claim is one insert of `<group>:<n>` with n < the
 * group's limit, and `task_id` is a unique index, so the store refuses it when the place is taken or
 * the task already holds one: a limit holds across every gateway sharing the store, with no counter
 * in memory.
 */
export interface SlotDoc {
  id: string;
  kind: TaskKind;
  account_id: string;
  task_id: string;
  date_created: string;
}

/** Places in flight: per account and kind, tasks published and unfinished. */
export const SLOTS_COLLECTION = "dispatch_slots";
/** Places in the queue: per kind (all accounts), tasks published and not yet started by a worker. */
export const QUEUE_PLACES_COLLECTION = "dispatch_queue_places";
/** When each account last had a task of a kind published (its last turn). */
export const TURNS_COLLECTION = "dispatch_turns";

/** An account's last turn for a kind: id `<kind>:<account>`. */
export interface TurnDoc {
  id: string;
  kind: TaskKind;
  account_id: string;
  at: string;
}

/** Numbered places in one collection, claimed by tasks: at most `limit` per group. */
class Places {
  private constructor(
    private readonly docs: Collection<SlotDoc>,
    readonly limit: number,
  ) {}

  static async open(store: Store, name: string, limit: number): Promise<Places> {
    const docs = await store.collection<SlotDoc>({
      name,
      indexes: [
        { fields: [["task_id", 1]], unique: true },
        { fields: [["kind", 1], ["account_id", 1]] },
        { fields: [["date_created", 1]] },
      ],
    });
    return new Places(docs, Math.max(1, Math.floor(limit)));
  }

  /**
   * Claims a place of the group (`<prefix>:<n>…`, documents matching `group`) for the task; true when
   * it holds one (now or already), false when the group's places are all taken.
   */
  async claim(group: Filter, placeId: (n: number) => string, claim: Omit<SlotDoc, "id" | "date_created">): Promise<boolean> {
    if (await this.docs.findOne({ task_id: claim.task_id })) return true;
    // a cheap look first; the inserts below are what decides
    if ((await this.docs.count(group)) >= this.limit) return false;
    for (let n = 0; n < this.limit; n += 1) {
      try {
        await this.docs.insert({ id: placeId(n), ...claim, date_created: new Date().toISOString() });
        return true;
      } catch (error) {
        if (!(error instanceof DuplicateKeyError)) throw error;
        // place n is taken, or another gateway claimed one for this very task meanwhile
        if (await this.docs.findOne({ task_id: claim.task_id })) return true;
      }
    }
    return false;
  }

  /** Frees the task's place; returns the place it held (null when it held none). */
  async release(taskId: string): Promise<SlotDoc | null> {
    const place = await this.docs.findOne({ task_id: taskId });
    if (!place) return null;
    await this.docs.deleteMany({ id: place.id, task_id: taskId });
    return place;
  }

  claimedBefore(olderThan: string, limit: number): Promise<SlotDoc[]> {
    return this.docs.find({ date_created: { $lt: olderThan } }, { sort: [["date_created", 1]], limit });
  }

  count(group: Filter): Promise<number> {
    return this.docs.count(group);
  }
}

export interface DispatchLimits {
  /** ACCOUNT_MAX_TASKS_IN_FLIGHT: tasks of one kind one account may have published and unfinished. */
  accountInFlight: number;
  /** QUEUE_MAX_UNSTARTED_TASKS: tasks of one kind (all accounts) published and not yet started by a worker. */
  queueUnstarted: number;
}

/**
 * The two limits on handing a task to the workers, both claims in the store: a place in flight of its
 * account (freed when the task finishes), and a place in the queue of its kind (freed when a worker
 * starts it, or it finishes). The second keeps the first-in-first-out work queue short, so the
 * scheduler, not the queue, decides whose task goes next; each account's last turn per kind is kept
 * here too, for every gateway's scheduler to read.
 */
export class DispatchSlots {
  private constructor(
    private readonly inFlightPlaces: Places,
    private readonly queuePlaces: Places,
    private readonly turns: Collection<TurnDoc>,
  ) {}

  /** The limits come from the config (validated ≥ 1); anything below 1 counts as 1. */
  static async open(store: Store, limits: DispatchLimits): Promise<DispatchSlots> {
    return new DispatchSlots(
      await Places.open(store, SLOTS_COLLECTION, limits.accountInFlight),
      await Places.open(store, QUEUE_PLACES_COLLECTION, limits.queueUnstarted),
      await store.collection<TurnDoc>({ name: TURNS_COLLECTION, indexes: [] }),
    );
  }

  /** Places in flight per account and kind. */
  get limit(): number {
    return this.inFlightPlaces.limit;
  }

  /**
   * Claims a place in flight for the task; true when it holds one (now or already), false when the
   * account's places for this kind are all taken.
   */
  claim(kind: TaskKind, accountId: string, taskId: string): Promise<boolean> {
    return this.inFlightPlaces.claim({ kind, account_id: accountId }, (n) => `${kind}:${n}:${accountId}`, { kind, account_id: accountId, task_id: taskId });
  }

  /** Claims a place in the kind's queue for the task; true when it holds one (now or already), false when the queue is full. */
  claimQueued(kind: TaskKind, accountId: string, taskId: string): Promise<boolean> {
    return this.queuePlaces.claim({ kind }, (n) => `${kind}:${n}`, { kind, account_id: accountId, task_id: taskId });
  }

  /** Whether every place of the kind's queue is taken (a look: `claimQueued` decides). */
  async queueFull(kind: TaskKind): Promise<boolean> {
    return (await this.queuePlaces.count({ kind })) >= this.queuePlaces.limit;
  }

  /** Frees the task's place in the queue (a worker started it, it finished, or it never went out); returns that place (null when it held none). */
  leaveQueue(taskId: string): Promise<SlotDoc | null> {
    return this.queuePlaces.release(taskId);
  }

  /** Frees the task's place in flight; returns the slot it held (null when it held none). */
  release(taskId: string): Promise<SlotDoc | null> {
    return this.inFlightPlaces.release(taskId);
  }

  /** Places in flight claimed before `olderThan` (for the sweep to check against their records). */
  claimedBefore(olderThan: string, limit: number): Promise<SlotDoc[]> {
    return this.inFlightPlaces.claimedBefore(olderThan, limit);
  }

  /** Places in the queue claimed before `olderThan` (for the sweep: a start or finish whose event was lost). */
  queuedBefore(olderThan: string, limit: number): Promise<SlotDoc[]> {
    return this.queuePlaces.claimedBefore(olderThan, limit);
  }

  inFlight(kind: TaskKind, accountId: string): Promise<number> {
    return this.inFlightPlaces.count({ kind, account_id: accountId });
  }

  /** When the account last had a task of the kind published; "" when never (or the record of it is gone). */
  async lastTurn(kind: TaskKind, accountId: string): Promise<string> {
    return (await this.turns.get(`${kind}:${accountId}`))?.at ?? "";
  }

  /** Notes that the account had a task of the kind published at `at`. */
  async tookTurn(kind: TaskKind, accountId: string, at: string): Promise<void> {
    const id = `${kind}:${accountId}`;
    if (await this.turns.updateOne({ id }, { at })) return;
    try {
      await this.turns.insert({ id, kind, account_id: accountId, at });
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error;
      // another gateway noted a turn of the same account meanwhile
      await this.turns.updateOne({ id }, { at });
    }
  }
}
