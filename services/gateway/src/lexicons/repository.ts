import type { Collection, Store } from "@voiceloc/store";
import type { Language, LexiconWire } from "@voiceloc/contracts";
import { newestFirstPage, type Page } from "../records/repository.ts";

/** A pronunciation lexicon as stored: its owner, the parsed entries and the document as sent. */
export interface LexiconDoc {
  id: string;
  /** `Principal.accountId`: a sandbox key's lexicons live in `sandbox:<account>`, apart from the live ones. */
  account_id: string;
  name: string;
  language: Language;
  /** The PLS `xml:lang`, as written. */
  xml_lang: string;
  entries: LexiconWire["entries"];
  pls: string;
  date_created: string;
}

/** What a client reads of a lexicon. */
export function presentLexicon(doc: LexiconDoc) {
  return { id: doc.id, name: doc.name, language: doc.language, entries: doc.entries, date_created: doc.date_created };
}

/** The descriptor that travels to the speaking process (synthesis requests, work messages). */
export function lexiconDescriptor(doc: LexiconDoc): LexiconWire {
  return { id: doc.id, name: doc.name, entries: doc.entries };
}

/** Pronunciation lexicons per owner (collection `lexicons`). */
export class LexiconRepository {
  private constructor(private readonly lexicons: Collection<LexiconDoc>) {}

  static async open(store: Store): Promise<LexiconRepository> {
    return new LexiconRepository(
      await store.collection<LexiconDoc>({ name: "lexicons", indexes: [{ fields: [["account_id", 1], ["date_created", -1], ["id", -1]] }] }),
    );
  }

  async create(doc: LexiconDoc): Promise<void> {
    await this.lexicons.insert(doc);
  }

  /** The owner's lexicon; null for an unknown id and for another owner's (one answer for both). */
  async getOwned(accountId: string, id: string): Promise<LexiconDoc | null> {
    const doc = await this.lexicons.get(id);
    return doc && doc.account_id === accountId ? doc : null;
  }

  list(accountId: string, limit: number, cursor: string | undefined): Promise<Page<LexiconDoc>> {
    return newestFirstPage(this.lexicons, { account_id: accountId }, limit, cursor);
  }

  /** False when the id is unknown or another owner's. */
  async deleteOwned(accountId: string, id: string): Promise<boolean> {
    return (await this.lexicons.deleteMany({ id, account_id: accountId })) > 0;
  }
}

const opened = new WeakMap<Store, Promise<LexiconRepository>>();

/** The lexicon repository of a store, opened once per store on first use. */
export function lexiconRepository(store: Store): Promise<LexiconRepository> {
  let repo = opened.get(store);
  if (!repo) {
    repo = LexiconRepository.open(store);
    repo.catch(() => opened.delete(store));
    opened.set(store, repo);
  }
  return repo;
}
