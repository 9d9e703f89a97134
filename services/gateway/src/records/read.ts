/**
 * The one read core of task records: a record, and a page of a list, as the API answers them (the
 * JSON body and a list's `Link`). The Hono routes (`routes.ts`) and the fast path (`fast-read.ts`)
 * both answer through it, so the two cannot drift apart.
 *
 * Where the store keeps documents as JSON text (the embedded store), each record's answer is made
 * from its text (`RecordViews`): the same text, the same answer (made anew each second, as its signed
 * links are), and the text is not read again while the store's change mark for the kind stays the one
 * it was read under. A list is its records' answers joined (exactly `JSON.stringify` of the presented
 * array), remembered while the change mark stays the same within one second. Without stored text
 * (MongoDB) records are read and presented on every request.
 */
import type { TaskKind } from "@voiceloc/contracts";
import type { StoredText } from "@voiceloc/store";
import { nextPageLink } from "./cursor.ts";
import type { KindDocs, KindTable, TaskKindSpec, TaskRecords, UrlSigner } from "./kinds.ts";
import { TASK_KINDS } from "./kinds.ts";
import type { ListQuery, Page, TaskDoc, TaskRepository } from "./repository.ts";
import { RecordViews, replyOf, type Reply } from "./views.ts";

/** A page of a list: its body and, when more follow, the next page's `Link` field. */
export interface ListAnswer {
  body: string;
  /** The body's bytes (sent as they are: a remembered page is not encoded again). */
  bytes: Buffer;
  link: string | undefined;
}

/** What every kind's record reads need of its repository (any `TaskRepository` of the kind). */
export type RecordDocs = Pick<TaskRepository<TaskDoc>, "get" | "getOwned" | "list">;

/** Reads of one kind's records, as the API answers them. */
export interface RecordReader {
  readonly spec: Omit<TaskKindSpec<TaskDoc, unknown>, "present" | "schema">;
  /** The kind's documents, for callers that need the stored fields (dashboard, live progress). */
  readonly docs: RecordDocs;
  /**
   * The owner's record from its stored text, read synchronously: null when there is none or it is
   * another owner's, undefined when the store keeps no text (then `record`).
   */
  recordNow(owner: string, id: string): Reply | null | undefined;
  /** The owner's record (null: none, or another owner's). */
  record(owner: string, id: string): Promise<Reply | null>;
  /** `list` from stored texts, synchronously; undefined when the store keeps no text. InvalidCursorError for a bad cursor. */
  listNow(owner: string, query: ListQuery): ListAnswer | undefined;
  /** The owner's page of the list. InvalidCursorError for a bad cursor. */
  list(owner: string, query: ListQuery): Promise<ListAnswer>;
  /** A record as a client reads it, whoever owns it (webhook bodies, a stream's final event); null when there is none. */
  presented(id: string): Promise<unknown>;
}

export type RecordReaders = { [K in TaskKind]: RecordReader };

/**
 * Bytes of list answers remembered per kind before the memo starts over: a page of 200 records is
 * about 120 KB, and a client can ask for many different pages (cursors), so the memo is bounded by
 * size, not by count.
 */
const PAGES_MAX_BYTES = 8 * 1024 * 1024;

/** A remembered page, with the collection's change mark and the second it was made in. */
interface RememberedPage {
  answer: ListAnswer;
  mark: number;
  second: number;
}

export interface ReaderOptions {
  signer: UrlSigner;
  /** The API's public address, that a list's `Link` to its next page starts with. */
  publicBaseUrl: string;
}

/** The reader of one kind's records. */
function recordReader<T extends TaskDoc>(spec: TaskKindSpec<T, unknown>, repo: TaskRepository<T>, options: ReaderOptions): RecordReader {
  const { signer, publicBaseUrl } = options;
  const present = (doc: T) => spec.present(doc, signer);
  const views = new RecordViews<T>(present);
  const pages = new Map<string, RememberedPage>();
  let pagesBytes = 0;

  const linkOf = (query: ListQuery, nextCursor: string | null) =>
    nextCursor === null ? undefined : nextPageLink(publicBaseUrl, spec.listPath, { limit: query.limit, taskStatus: query.taskStatus, cursor: nextCursor });
  const answerOf = (body: string, link: string | undefined): ListAnswer => ({ body, bytes: Buffer.from(body), link });

  const recordNow = (owner: string, id: string): Reply | null | undefined => {
    // the mark first: a text read after it is current for as long as the mark stays the same
    const mark = repo.changeMarkSync();
    const known = mark === undefined ? undefined : views.atMark(id, mark, owner);
    if (known !== undefined) return known;
    const text = repo.getTextSync(id);
    if (text === undefined) return undefined;
    return text === null ? null : views.fromText(id, text, owner, mark);
  };

  /** The page from its records' stored texts; undefined where the store keeps none. */
  const pageFromTexts = (owner: string, query: ListQuery, mark: number): ListAnswer | undefined => {
    const page: Page<StoredText> | undefined = repo.listTextSync(owner, query);
    if (page === undefined) return undefined;
    let body = "[";
    for (const [i, [id, text]] of page.items.entries()) {
      // never another owner's: the store selects by owner
      const reply = views.fromText(id, text, owner, mark);
      if (reply === null) return undefined;
      body += i === 0 ? reply.body : `,${reply.body}`;
    }
    body += "]";
    return answerOf(body, linkOf(query, page.nextCursor));
  };

  const listNow = (owner: string, query: ListQuery): ListAnswer | undefined => {
    const mark = repo.changeMarkSync();
    if (mark === undefined) return undefined;
    const second = Math.floor(Date.now() / 1000);
    const key = `${owner}\n${query.limit}\n${query.taskStatus ?? ""}\n${query.cursor ?? ""}`;
    const known = pages.get(key);
    if (known !== undefined && known.mark === mark && known.second === second) return known.answer;
    const answer = pageFromTexts(owner, query, mark);
    if (answer === undefined) return undefined;
    pagesBytes += answer.bytes.length - (known?.answer.bytes.length ?? 0);
    if (pagesBytes > PAGES_MAX_BYTES) {
      pages.clear();
      pagesBytes = answer.bytes.length;
    }
    pages.set(key, { answer, mark, second });
    return answer;
  };

  return {
    spec,
    docs: repo,
    recordNow,
    async record(owner, id) {
      const now = recordNow(owner, id);
      if (now !== undefined) return now;
      const doc = await repo.getOwned(owner, id);
      return doc === null ? null : replyOf(present(doc));
    },
    listNow,
    async list(owner, query) {
      const now = listNow(owner, query);
      if (now !== undefined) return now;
      const page = await repo.list(owner, query);
      return answerOf(JSON.stringify(page.items.map(present)), linkOf(query, page.nextCursor));
    },
    async presented(id) {
      const doc = await repo.get(id);
      return doc === null ? null : present(doc);
    },
  };
}

/** The readers of every kind (one per gateway: they remember answers). */
export function recordReaders(records: TaskRecords, options: ReaderOptions, table: KindTable = TASK_KINDS): RecordReaders {
  const reader = <K extends TaskKind>(kind: K): RecordReader => {
    const spec: TaskKindSpec<KindDocs[K], unknown> = table[kind];
    const repo: TaskRepository<KindDocs[K]> = records[kind];
    return recordReader(spec, repo, options);
  };
  return { audiobook: reader("audiobook"), "voice-stream": reader("voice-stream"), subtitle: reader("subtitle") };
}
