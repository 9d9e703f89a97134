import { randomUUID } from "node:crypto";
import { DuplicateKeyError, type Collection, type Store } from "@voiceloc/store";

/**
 * One taken place of a scope with a limit (an account's live progress streams, a sandbox's tasks in
 * flight): ids are `<scope>:<n>` with n < limit, so taking a place is one insert that the store refuses
 * when the place is taken, and the limit holds across every gateway sharing the store, with no counter
 * in memory (like the dispatch slots of `slots.ts`). `holder` says who holds it, for its release and
 * for telling a claim whose holder is gone.
 */
export interface PlaceDoc {
  id: string;
  scope: string;
  holder: string;
  date_created: string;
}

/** Of a scope's claims, those whose holder is gone (the places are then freed and taken again). */
export type StaleClaims = (claims: PlaceDoc[]) => Promise<PlaceDoc[]>;

export class StorePlaces {
  private constructor(private readonly places: Collection<PlaceDoc>) {}

  static async open(store: Store, name: string): Promise<StorePlaces> {
    return new StorePlaces(await store.collection<PlaceDoc>({ name, indexes: [{ fields: [["scope", 1]] }, { fields: [["holder", 1]] }] }));
  }

  /**
   * Takes one of the `limit` places of `scope` for `holder`: the place's id, or null when every place
   * is held (after freeing the claims `stale` names as gone).
   */
  async claim(scope: string, limit: number, holder: string, stale: StaleClaims): Promise<string | null> {
    for (let round = 0; ; round += 1) {
      const taken = await this.places.find({ scope }, { limit });
      if (taken.length < limit) {
        const used = new Set(taken.map((doc) => doc.id));
        for (let n = 0; n < limit; n += 1) {
          const id = `${scope}:${n}`;
          if (used.has(id)) continue;
          try {
            await this.places.insert({ id, scope, holder, date_created: new Date().toISOString() });
            return id;
          } catch (error) {
            // another gateway took this place meanwhile
            if (!(error instanceof DuplicateKeyError)) throw error;
          }
        }
      }
      if (round > 0) return null;
      const gone = await stale(taken);
      if (gone.length === 0) return null;
      // only the very claim found stale: a place taken again meanwhile stays
      for (const doc of gone) await this.places.deleteMany({ id: doc.id, holder: doc.holder });
    }
  }

  /** Frees the place if `holder` still holds it. */
  async release(id: string, holder: string): Promise<void> {
    await this.places.deleteMany({ id, holder });
  }

  /** Frees every place `holder` holds; returns how many. */
  releaseAll(holder: string): Promise<number> {
    return this.places.deleteMany({ holder });
  }
}

interface LeaseDoc {
  id: string;
  expires_at: string;
}

/**
 * A gateway process's lease in the store: renewed every period while the process runs, so the places
 * it holds are known gone once its lease has expired (a process killed outright never frees them).
 */
export class ProcessLease {
  /** This process, as the holder of its places. */
  readonly id = randomUUID();

  private constructor(
    private readonly leases: Collection<LeaseDoc>,
    private readonly ttlMs: number,
  ) {}

  static async open(store: Store, ttlMs: number): Promise<ProcessLease> {
    return new ProcessLease(await store.collection<LeaseDoc>({ name: "gateway_leases", indexes: [{ fields: [["expires_at", 1]] }] }), ttlMs);
  }

  /** Extends this process's lease by its time to live from now; drops the leases expired long ago. */
  async renew(): Promise<void> {
    const now = Date.now();
    const expires_at = new Date(now + this.ttlMs).toISOString();
    if (await this.leases.updateOne({ id: this.id }, { expires_at })) return;
    try {
      await this.leases.insert({ id: this.id, expires_at });
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error;
      await this.leases.updateOne({ id: this.id }, { expires_at });
    }
    await this.leases.deleteMany({ expires_at: { $lt: new Date(now - 24 * 3_600_000).toISOString() } });
  }

  /** Of these processes, those whose lease has not expired. */
  async alive(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const live = await this.leases.find({ id: { $in: [...new Set(ids)] }, expires_at: { $gt: new Date().toISOString() } });
    return new Set(live.map((doc) => doc.id));
  }

  async end(): Promise<void> {
    await this.leases.deleteMany({ id: this.id });
  }
}

/**
 * The places of live progress streams (SSE_MAX_STREAMS_PER_ACCOUNT per owner), counted across every
 * gateway sharing the store: each open stream holds a place under its process's lease, freed when the
 * stream ends; a process that dies leaves its places to be taken again once its lease has expired.
 */
export class StreamPlaces {
  private constructor(
    private readonly places: StorePlaces,
    private readonly lease: ProcessLease,
  ) {}

  /** `ttlMs`: how long a process's places outlive its last renewal. */
  static async open(store: Store, ttlMs: number): Promise<StreamPlaces> {
    return new StreamPlaces(await StorePlaces.open(store, "stream_places"), await ProcessLease.open(store, ttlMs));
  }

  /** Renews this process's lease (at start, then at least every third of its time to live). */
  renew(): Promise<void> {
    return this.lease.renew();
  }

  /** A place for one more stream of the owner, or null when it holds `limit` across the mesh. */
  claim(ownerId: string, limit: number): Promise<string | null> {
    return this.places.claim(`stream:${ownerId}`, limit, this.lease.id, async (claims) => {
      const live = await this.lease.alive(claims.map((doc) => doc.holder));
      return claims.filter((doc) => doc.holder !== this.lease.id && !live.has(doc.holder));
    });
  }

  release(place: string): Promise<void> {
    return this.places.release(place, this.lease.id);
  }

  /** Frees every place of this process and ends its lease (the process stops). */
  async stop(): Promise<void> {
    await this.places.releaseAll(this.lease.id);
    await this.lease.end();
  }
}
