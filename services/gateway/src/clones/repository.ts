import type { Collection, Store } from "@voiceloc/store";
import type { ClonedVoiceWire, Language, VoiceProfileWire } from "@voiceloc/contracts";
import { newestFirstPage, type Page } from "../records/repository.ts";

/** The prefix of a cloned voice's name wherever a voice is named (`clone:<id>`). */
export const CLONE_VOICE_PREFIX = "clone:";

/** A cloned voice as stored: its owner, what the engine made and what the API shows. */
export interface CloneDoc {
  id: string;
  /** `Principal.accountId`: a sandbox key's clones live in `sandbox:<account>`, apart from the live ones. */
  account_id: string;
  name: string;
  engine: ClonedVoiceWire["engine"];
  /** The engine's handle of the voice (ElevenLabs' voice_id, the voice library's name, the match engine's choice). */
  ref: string;
  profile: VoiceProfileWire;
  sample_seconds: number;
  languages: Language[];
  date_created: string;
}

/** What a client reads of a clone. */
export function presentClone(doc: CloneDoc) {
  return {
    id: doc.id,
    name: doc.name,
    voice: `${CLONE_VOICE_PREFIX}${doc.id}`,
    engine: doc.engine,
    sample_seconds: doc.sample_seconds,
    languages: doc.languages,
    date_created: doc.date_created,
  };
}

/** The descriptor that travels to the speaking process (synthesis requests, work messages). */
export function cloneDescriptor(doc: CloneDoc): ClonedVoiceWire {
  return { id: doc.id, name: doc.name, engine: doc.engine, ref: doc.ref, profile: doc.profile };
}

/** Cloned voices per owner (collection `voice_clones`). */
export class CloneRepository {
  private constructor(private readonly clones: Collection<CloneDoc>) {}

  static async open(store: Store): Promise<CloneRepository> {
    return new CloneRepository(
      await store.collection<CloneDoc>({ name: "voice_clones", indexes: [{ fields: [["account_id", 1], ["date_created", -1], ["id", -1]] }] }),
    );
  }

  async create(doc: CloneDoc): Promise<void> {
    await this.clones.insert(doc);
  }

  /** The owner's clone; null for an unknown id and for another owner's (one answer for both). */
  async getOwned(accountId: string, id: string): Promise<CloneDoc | null> {
    const doc = await this.clones.get(id);
    return doc && doc.account_id === accountId ? doc : null;
  }

  list(accountId: string, limit: number, cursor: string | undefined): Promise<Page<CloneDoc>> {
    return newestFirstPage(this.clones, { account_id: accountId }, limit, cursor);
  }

  /** The owner's clones, newest first, at most `limit` (the voice catalogue lists them). */
  all(accountId: string, limit = 1_000): Promise<CloneDoc[]> {
    return this.clones.find({ account_id: accountId }, { sort: [["date_created", -1], ["id", -1]], limit });
  }

  /** False when the id is unknown or another owner's. */
  async deleteOwned(accountId: string, id: string): Promise<boolean> {
    return (await this.clones.deleteMany({ id, account_id: accountId })) > 0;
  }
}
