/**
 * Pronunciation lexicons through the gateway: `/v1/lexicons` (PLS parsed and checked while the request
 * waits: malformed XML with its line, external entities, a language that does not match), per owner and
 * sandbox apart, and `lexicons: [id…]` resolved to the caller's own lexicons for synthesis, audio books
 * and voice streams (the entries reach the synthesis request and the work messages the workers receive).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SynthesizeRequest } from "@voiceloc/contracts";
import { ALICE_KEY, BOB_KEY, type TestGateway } from "../testing/harness.ts";
import { startWithStandInWorkers, type StandInWorkers } from "../testing/stand-in-workers.ts";

const NS = "http://www.w3.org/2005/01/pronunciation-lexicon";
const pls = (body: string, lang = "en-US") => `<?xml version="1.0" encoding="UTF-8"?>\n<lexicon version="1.0" xmlns="${NS}" alphabet="ipa" xml:lang="${lang}">\n${body}\n</lexicon>`;
const ALIAS = pls("<lexeme><grapheme>Zxqv</grapheme><grapheme>ZXQV</grapheme><alias>lighthouse</alias></lexeme>");
const PHONEME_ONLY = pls("<lexeme><grapheme>Nguyen</grapheme><phoneme>ŋwiən</phoneme></lexeme>");

let t: TestGateway;
let sandboxKey: string;
let mesh: StandInWorkers;
const syntheses: SynthesizeRequest[] = [];

beforeAll(async () => {
  mesh = await startWithStandInWorkers({
    prefix: "voiceloc-lexicons-media-",
    voices: [
      { name: "flite:slt", language: "English", engine: "flite", gender: "female", description: "a preset", default: true },
      { name: "espeak:en-us", language: "English", engine: "espeak", gender: null, description: "a preset", default: false },
      { name: "espeak:es", language: "Spanish", engine: "espeak", gender: null, description: "a preset", default: true },
    ],
    serve: async (bus) => [
      await bus.serve("synthesize", (request) => {
        syntheses.push(request);
        return { key: `speech/stand-in/${syntheses.length}.mp3`, duration_seconds: 1.5, voice: request.voice ?? "flite:slt" };
      }),
    ],
  });
  ({ t, sandboxKey } = mesh);
});

afterAll(async () => {
  await mesh?.close();
});

interface LexiconBody {
  id: string;
  name: string;
  language: string;
  entries: Array<{ graphemes: string[]; alias: string | null; phoneme: string | null; alphabet: string | null }>;
  date_created: string;
}
interface Item422 {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
}
const json = async <T>(res: Response): Promise<T> => (await res.json()) as T;
const detail = async (res: Response) => (await json<{ detail: Item422[] }>(res)).detail;

async function create(body: Record<string, unknown>, key: string = ALICE_KEY): Promise<Response> {
  return t.request("POST", "/v1/lexicons", { body, key });
}
async function lexicon(doc = ALIAS, language = "English", key: string = ALICE_KEY): Promise<LexiconBody> {
  const res = await create({ name: "Names", language, pls: doc }, key);
  expect(res.status).toBe(201);
  return json<LexiconBody>(res);
}

async function eventually<T>(read: () => T, what: string): Promise<NonNullable<T>> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = read();
    if (value !== undefined && value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("/v1/lexicons", () => {
  it("stores a PLS lexicon and answers 201 with its entries and Location; reads, lists and deletes it", async () => {
    const res = await create({ name: "Names", language: "English", pls: ALIAS });
    expect(res.status).toBe(201);
    const body = await json<LexiconBody>(res);
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "Names",
      language: "English",
      entries: [{ graphemes: ["Zxqv", "ZXQV"], alias: "lighthouse", phoneme: null, alphabet: null }],
      date_created: expect.any(String),
    });
    expect(res.headers.get("location")).toBe(`/v1/lexicons/${body.id}`);
    expect(await json(await t.request("GET", `/v1/lexicons/${body.id}`))).toEqual(body);
    const list = await json<LexiconBody[]>(await t.request("GET", "/v1/lexicons?limit=200"));
    expect(list.map((l) => l.id)).toContain(body.id);
    expect((await t.request("DELETE", `/v1/lexicons/${body.id}`)).status).toBe(204);
    expect((await t.request("GET", `/v1/lexicons/${body.id}`)).status).toBe(404);
    expect((await t.request("DELETE", `/v1/lexicons/${body.id}`)).status).toBe(404);
  });

  it("pages the list newest first with a Link header", async () => {
    const made = [await lexicon(), await lexicon(), await lexicon()];
    const first = await t.request("GET", "/v1/lexicons?limit=2");
    expect(first.status).toBe(200);
    const page = await json<LexiconBody[]>(first);
    expect(page.map((l) => l.id)).toEqual([made[2]!.id, made[1]!.id]);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.get("link") ?? "")?.[1];
    expect(next).toBeDefined();
    const second = await json<LexiconBody[]>(await t.request("GET", new URL(next!).pathname + new URL(next!).search));
    expect(second[0]?.id).toBe(made[0]!.id);
  });

  it("keeps each account's and the sandbox's lexicons apart: another's id is a 404", async () => {
    const alices = await lexicon();
    expect((await t.request("GET", `/v1/lexicons/${alices.id}`, { key: BOB_KEY })).status).toBe(404);
    expect((await t.request("DELETE", `/v1/lexicons/${alices.id}`, { key: BOB_KEY })).status).toBe(404);
    expect((await t.request("GET", `/v1/lexicons/${alices.id}`, { key: sandboxKey })).status).toBe(404);
    const listed = await json<LexiconBody[]>(await t.request("GET", "/v1/lexicons?limit=200", { key: BOB_KEY }));
    expect(listed.map((l) => l.id)).not.toContain(alices.id);
    expect((await t.request("GET", `/v1/lexicons/${alices.id}`)).status).toBe(200);
  });

  it("refuses malformed PLS with a 422 at body.pls naming the parser's line", async () => {
    const res = await create({ name: "Broken", language: "English", pls: pls("<lexeme><grapheme>a</grapheme>\n<alias>b</alias></lexem>") });
    expect(res.status).toBe(422);
    const [item] = await detail(res);
    expect(item).toMatchObject({ type: "value_error", loc: ["body", "pls"] });
    expect(item?.msg).toMatch(/line 4: /);
  });

  it("never reads an external entity or expands a billion laughs: both are 422s that leak nothing", async () => {
    const xxe = `<?xml version="1.0"?>\n<!DOCTYPE lexicon [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<lexicon version="1.0" xmlns="${NS}" alphabet="ipa" xml:lang="en"><lexeme><grapheme>a</grapheme><alias>&x;</alias></lexeme></lexicon>`;
    const res = await create({ name: "XXE", language: "English", pls: xxe });
    expect(res.status).toBe(422);
    const text = JSON.stringify(await res.json());
    expect(text).toMatch(/DOCTYPE/);
    expect(text).not.toMatch(/root:x:0/);
    const laughs = `<?xml version="1.0"?>\n<!DOCTYPE lexicon [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>\n<lexicon version="1.0" xmlns="${NS}" alphabet="ipa" xml:lang="en"><lexeme><grapheme>a</grapheme><alias>&c;</alias></lexeme></lexicon>`;
    const refused = await create({ name: "Laughs", language: "English", pls: laughs });
    expect(refused.status).toBe(422);
    expect((await detail(refused))[0]?.loc).toEqual(["body", "pls"]);
  });

  it("refuses a lexicon whose xml:lang is not the language given", async () => {
    const res = await create({ name: "French", language: "English", pls: pls("<lexeme><grapheme>a</grapheme><alias>b</alias></lexeme>", "fr-FR") });
    expect(res.status).toBe(422);
    const [item] = await detail(res);
    expect(item).toMatchObject({ loc: ["body", "language"], msg: expect.stringContaining("'fr-FR' is not a tag of English") });
    expect((await create({ name: "British", language: "English", pls: pls("<lexeme><grapheme>a</grapheme><alias>b</alias></lexeme>", "en-GB") })).status).toBe(201);
  });
});

describe("lexicons: [id…] on requests that speak", () => {
  it("synthesis carries the caller's lexicon entries to the synthesis service", async () => {
    const lex = await lexicon();
    const res = await t.request("POST", "/v1/speech/synthesize", { body: { text: "The Zxqv.", language: "English", lexicons: [lex.id] } });
    expect(res.status).toBe(200);
    expect(syntheses.at(-1)?.lexicons).toEqual([{ id: lex.id, name: "Names", entries: lex.entries }]);
    expect((await t.request("POST", "/v1/speech/synthesize", { body: { text: "No lexicon.", language: "English" } })).status).toBe(200);
    expect(syntheses.at(-1)?.lexicons).toBeUndefined();
  });

  it("another account's, a sandbox's and an unknown id are the one 422 at body.lexicons[i]", async () => {
    const mine = await lexicon();
    const bobs = await lexicon(ALIAS, "English", BOB_KEY);
    const before = syntheses.length;
    for (const [key, id] of [
      [ALICE_KEY, bobs.id],
      [sandboxKey, mine.id],
      [ALICE_KEY, "0193f1c2-a7b4-7cc2-a1f0-4e4ab2b1a4d0"],
    ] as const) {
      const res = await t.request("POST", "/v1/speech/synthesize", { key, body: { text: "The Zxqv.", language: "English", lexicons: key === ALICE_KEY ? [mine.id, id] : [id] } });
      expect(res.status).toBe(422);
      const [item] = await detail(res);
      expect(item).toMatchObject({ loc: ["body", "lexicons", key === ALICE_KEY ? 1 : 0], input: id });
      expect(item?.msg).toMatch(/unknown lexicon/);
    }
    expect(syntheses.length).toBe(before);
  });

  it("a lexicon of another language than the speech is a 422; more than 5 lexicons or a non-UUID are 422s", async () => {
    const english = await lexicon();
    const res = await t.request("POST", "/v1/speech/synthesize", { body: { text: "Hola.", language: "Spanish", lexicons: [english.id] } });
    expect(res.status).toBe(422);
    expect((await detail(res))[0]).toMatchObject({ loc: ["body", "lexicons", 0], msg: expect.stringContaining("is for English, but this speech is in Spanish") });
    const six = await t.request("POST", "/v1/speech/synthesize", { body: { text: "Hi.", language: "English", lexicons: Array(6).fill(english.id) } });
    expect(six.status).toBe(422);
    expect((await detail(six))[0]).toMatchObject({ type: "too_long", loc: ["body", "lexicons"] });
    const notUuid = await t.request("POST", "/v1/speech/synthesize", { body: { text: "Hi.", language: "English", lexicons: ["nope"] } });
    expect(notUuid.status).toBe(422);
    expect((await detail(notUuid))[0]?.loc).toEqual(["body", "lexicons", 0]);
  });

  it("a phoneme-only entry is a 422 naming it with a voice that takes no phonemes, and accepted with an espeak-ng voice", async () => {
    const lex = await lexicon(PHONEME_ONLY);
    const flite = await t.request("POST", "/v1/speech/synthesize", { body: { text: "Mr Nguyen.", language: "English", lexicons: [lex.id] } });
    expect(flite.status).toBe(422);
    expect((await detail(flite))[0]).toMatchObject({ loc: ["body", "lexicons"], msg: expect.stringContaining("'Nguyen' (lexicon 'Names')") });
    const espeak = await t.request("POST", "/v1/speech/synthesize", { body: { text: "Mr Nguyen.", language: "English", voice: "espeak:en-us", lexicons: [lex.id] } });
    expect(espeak.status).toBe(200);
    expect(syntheses.at(-1)?.lexicons?.[0]?.entries[0]?.phoneme).toBe("ŋwiən");
  });

  it("audio books and voice streams carry the resolved lexicons in their work messages", async () => {
    const lex = await lexicon();
    const book = await t.request("POST", "/v1/audio_books/", {
      body: { file: "https://example.com/book.txt", name: "Book", source_language: "English", target_language: "English", lexicons: [lex.id] },
    });
    expect(book.status).toBe(201);
    const bookId = (await json<{ id: string }>(book)).id;
    const bookWork = await eventually(() => mesh.work.find((w) => w.task_id === bookId), "the audio book's work message");
    expect(bookWork.kind === "audiobook" && bookWork.lexicons).toEqual([{ id: lex.id, name: "Names", entries: lex.entries }]);

    const stream = await t.request("POST", "/v1/voices/streams", {
      body: { file: "https://example.com/talk.wav", source_language: "English", target_language: "English", lexicons: [lex.id] },
    });
    expect(stream.status).toBe(201);
    const streamId = (await json<{ id: string }>(stream)).id;
    const streamWork = await eventually(() => mesh.work.find((w) => w.task_id === streamId), "the voice stream's work message");
    expect(streamWork.kind === "voice-stream" && streamWork.lexicons).toEqual([{ id: lex.id, name: "Names", entries: lex.entries }]);

    const foreign = await t.request("POST", "/v1/audio_books/", {
      key: BOB_KEY,
      body: { file: "https://example.com/book.txt", name: "Book", source_language: "English", target_language: "English", lexicons: [lex.id] },
    });
    expect(foreign.status).toBe(422);
    expect((await detail(foreign))[0]?.loc).toEqual(["body", "lexicons", 0]);
  });
});
