import { isSandboxOwner, type TaskKind } from "@voiceloc/contracts";
import type { Store } from "@voiceloc/store";
import { TooManyRequestsError } from "../http/errors.ts";
import { StorePlaces, type PlaceDoc } from "../mesh/places.ts";
import { FINISHED_STATUSES, type TaskDoc, type TaskRepository } from "./repository.ts";

/** A place whose record is not stored this long after it was taken belongs to a creation that failed. */
const UNSTORED_GRACE_MS = 60_000;

/**
 * The sandbox's tasks in flight (SANDBOX_MAX_TASKS_IN_FLIGHT unfinished tasks of all kinds per sandbox
 * owner), counted across every gateway sharing the store: a new task takes a place (one insert the
 * store refuses when taken) before its record is stored, so concurrent creations never pass the limit.
 * A place is held by its task (`<kind>:<id>`) and needs no release: it is taken again once that task
 * has finished (or its record was never stored).
 */
export class SandboxTasks {
  private constructor(
    private readonly places: StorePlaces,
    private readonly records: Record<TaskKind, Pick<TaskRepository<TaskDoc>, "get">>,
    readonly limit: number,
  ) {}

  static async open(store: Store, records: Record<TaskKind, Pick<TaskRepository<TaskDoc>, "get">>, limit: number): Promise<SandboxTasks> {
    return new SandboxTasks(await StorePlaces.open(store, "sandbox_places"), records, limit);
  }

  /** Takes a place for the owner's new task; false when `limit` unfinished tasks hold them all. */
  admit(ownerId: string, kind: TaskKind, taskId: string): Promise<boolean> {
    return this.places.claim(`sandbox:${ownerId}`, this.limit, `${kind}:${taskId}`, (claims) => this.finished(claims)).then((place) => place !== null);
  }

  /** Frees the place of a task whose record could not be stored. */
  async release(kind: TaskKind, taskId: string): Promise<void> {
    await this.places.releaseAll(`${kind}:${taskId}`);
  }

  /** The claims whose task has finished, or whose record was never stored. */
  private async finished(claims: PlaceDoc[]): Promise<PlaceDoc[]> {
    const unstoredBefore = new Date(Date.now() - UNSTORED_GRACE_MS).toISOString();
    const done: PlaceDoc[] = [];
    for (const claim of claims) {
      const at = claim.holder.indexOf(":");
      const kind = claim.holder.slice(0, at) as TaskKind;
      const doc = await this.records[kind]?.get(claim.holder.slice(at + 1));
      if (doc ? FINISHED_STATUSES.includes(doc.task_status) : claim.date_created < unstoredBefore) done.push(claim);
    }
    return done;
  }
}

/**
 * Stores a new task record; a sandbox owner's (`sandbox:<account>`) only after its task took one of
 * the sandbox's places in flight, and a 429 when none is free. Call it after the idempotent replay:
 * a request already answered is answered again whatever the places.
 */
export async function storeTask<T extends TaskDoc>(sandbox: SandboxTasks | undefined, kind: TaskKind, repo: Pick<TaskRepository<T>, "create">, doc: T): Promise<void> {
  if (!sandbox || !isSandboxOwner(doc.account_id)) {
    await repo.create(doc);
    return;
  }
  if (!(await sandbox.admit(doc.account_id, kind, doc.id))) {
    throw new TooManyRequestsError(
      `Sandbox keys may have at most ${sandbox.limit} unfinished tasks at once (SANDBOX_MAX_TASKS_IN_FLIGHT), and that many are queued or processing: retry when one has finished, or use a live key.`,
      5,
    );
  }
  try {
    await repo.create(doc);
  } catch (error) {
    // a place left behind is taken again once the grace for an unstored record has passed
    await sandbox.release(kind, doc.id).catch(() => undefined);
    throw error;
  }
}
