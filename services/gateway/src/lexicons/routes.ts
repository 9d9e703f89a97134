/**
 * Pronunciation lexicons (W3C PLS 1.0) as an API resource (`/v1/lexicons`): parsed and checked while the
 * request waits, kept per owner in the store, and named by `lexicons: [id…]` on audio books, synthesis
 * and voice streams (`resolve.ts`).
 */
import { createRoute } from "@hono/zod-openapi";
import { CreateLexiconSchema, LexiconListQuerySchema, LexiconSchema, uuidParam } from "@voiceloc/contracts";
import { LexiconError, parsePls, PLS_LIMITS } from "@voiceloc/engines";
import type { GatewayDeps } from "../deps.ts";
import type { GatewayApp } from "../http/context.ts";
import { respond } from "../http/respond.ts";
import { NotFoundError, ValueError422 } from "../http/errors.ts";
import { listed } from "../http/paging.ts";
import { SECURITY, bodyErrorResponses, createErrorResponses, errorResponses } from "../http/responses.ts";
import { createRouter } from "../http/router.ts";
import { deleteRoute, getRoute, listRoute } from "../http/resource-routes.ts";
import { uuidv7 } from "../records/ids.ts";
import { IdempotencyHeaders, idempotent } from "../records/shared.ts";
import { lexiconRepository, presentLexicon, type LexiconDoc } from "./repository.ts";
import { tagIsOf } from "./resolve.ts";

export const LEXICONS_TAG = {
  name: "Pronunciation lexicons",
  description:
    "W3C Pronunciation Lexicon Specification (PLS) 1.0 lexicons that say how words are spoken: named by `lexicons: [id…]` on audio books, synthesis and voice streams.",
};
const TAGS = [LEXICONS_TAG.name];
const LIST_PATH = "/v1/lexicons";
const IdParam = uuidParam("lexicon_id", "The lexicon's id (a UUID), as returned when it was created.");
const json = <T>(schema: T) => ({ "application/json": { schema } });
const NOT_FOUND = "Lexicon not found";
const MISSING = "No such lexicon for the calling account (another account's id is a 404 too).";

const EXAMPLE_PLS =
  '<?xml version="1.0" encoding="UTF-8"?>\n<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa" xml:lang="en-US">\n' +
  "  <lexeme><grapheme>W3C</grapheme><alias>World Wide Web Consortium</alias></lexeme>\n" +
  "  <lexeme><grapheme>Nguyen</grapheme><phoneme>ŋwiən</phoneme><alias>win</alias></lexeme>\n</lexicon>";

const createLexicon = createRoute({
  method: "post",
  path: LIST_PATH,
  operationId: "create_lexicon",
  summary: "Create Lexicon (extension)",
  description:
    "Stores a pronunciation lexicon (W3C PLS 1.0) and answers **201** with its parsed entries. " +
    `The document is parsed now by a strict XML parser that never reads a DTD or an entity: a DOCTYPE is refused, and so is malformed XML, a root other than PLS's \`<lexicon>\`, a \`<lexeme>\` without \`<grapheme>\` or without \`<alias>\` and \`<phoneme>\`, and more than ${PLS_LIMITS.maxEntries} lexemes: a **422** at \`body.pls\` naming the line. ` +
    "The lexicon's `xml:lang` must be a tag of `language` (`en-US` for English), or it is a **422** at `body.language`. " +
    "Words match as whole words, as written (a lower-case grapheme also matches capitalised); an `<alias>` is said by every voice, a `<phoneme>` in IPA by espeak-ng voices. " +
    "It belongs to the calling account (a sandbox key has a space of its own).",
  tags: TAGS,
  security: SECURITY,
  request: {
    headers: IdempotencyHeaders,
    body: { content: { "application/json": { schema: CreateLexiconSchema, example: { name: "Names", language: "English", pls: EXAMPLE_PLS } } }, required: true },
  },
  responses: {
    201: {
      description: "The lexicon.",
      headers: { Location: { description: "The lexicon's URL.", schema: { type: "string" } } },
      content: json(LexiconSchema),
    },
    ...errorResponses,
    ...createErrorResponses,
    ...bodyErrorResponses,
  },
});

const listLexicons = listRoute({
  path: LIST_PATH,
  operationId: "list_lexicons",
  summary: "List Lexicons (extension)",
  description: "The caller's pronunciation lexicons, newest first, paged like the other lists (`limit`, `cursor`, the `Link` header).",
  tags: TAGS,
  query: LexiconListQuerySchema,
  item: LexiconSchema,
  page: "A page of lexicons.",
});

const getLexicon = getRoute({
  path: `${LIST_PATH}/{lexicon_id}`,
  operationId: "get_lexicon",
  summary: "Get Lexicon (extension)",
  description: "One of the caller's lexicons with its parsed entries. Another account's id is a 404, as an unknown one.",
  tags: TAGS,
  params: IdParam,
  missing: MISSING,
  item: LexiconSchema,
  found: "The lexicon.",
});

const deleteLexicon = deleteRoute({
  path: `${LIST_PATH}/{lexicon_id}`,
  operationId: "delete_lexicon",
  summary: "Delete Lexicon (extension)",
  description:
    "Deletes the lexicon and answers **204**. Tasks already created with it keep the entries they were given; new requests that name it are a **422** at `lexicons`.",
  tags: TAGS,
  params: IdParam,
  missing: MISSING,
  deleted: "Deleted.",
});

export function lexiconRoutes(deps: GatewayDeps): GatewayApp {
  const app = createRouter();
  const now = () => (deps.now ? deps.now() : new Date());
  const repo = () => lexiconRepository(deps.store);

  app.openapi(createLexicon, async (c) => {
    const body = c.req.valid("json");
    const { "idempotency-key": key } = c.req.valid("header");
    const owner = c.get("principal").accountId;
    let parsed;
    try {
      parsed = parsePls(body.pls);
    } catch (error) {
      if (error instanceof LexiconError) throw new ValueError422(["body", "pls"], `not a usable PLS 1.0 lexicon: ${error.message}`, body.pls);
      throw error;
    }
    if (!tagIsOf(parsed.xmlLang, body.language)) {
      throw new ValueError422(["body", "language"], `the lexicon's xml:lang '${parsed.xmlLang}' is not a tag of ${body.language}; give the language the lexicon is written for`, body.language);
    }
    return idempotent(c, deps, `POST ${LIST_PATH}`, key, async () => {
      const id = deps.newId ? deps.newId() : uuidv7();
      const doc: LexiconDoc = {
        id,
        account_id: owner,
        name: body.name,
        language: body.language,
        xml_lang: parsed.xmlLang,
        entries: parsed.entries,
        pls: body.pls,
        date_created: now().toISOString(),
      };
      await (await repo()).create(doc);
      return { status: 201, body: presentLexicon(doc), location: `${LIST_PATH}/${id}` };
    }) as Promise<never>;
  });

  app.openapi(listLexicons, async (c) => {
    const owner = c.get("principal").accountId;
    const lexicons = await repo();
    const items = await listed(c, deps, LIST_PATH, c.req.valid("query"), (limit, cursor) => lexicons.list(owner, limit, cursor));
    return respond(c, 200, items.map(presentLexicon));
  });

  app.openapi(getLexicon, async (c) => {
    const doc = await (await repo()).getOwned(c.get("principal").accountId, c.req.valid("param").lexicon_id);
    if (!doc) throw new NotFoundError(NOT_FOUND);
    return respond(c, 200, presentLexicon(doc));
  });

  app.openapi(deleteLexicon, async (c) => {
    const deleted = await (await repo()).deleteOwned(c.get("principal").accountId, c.req.valid("param").lexicon_id);
    if (!deleted) throw new NotFoundError(NOT_FOUND);
    return c.body(null, 204);
  });

  return app;
}
