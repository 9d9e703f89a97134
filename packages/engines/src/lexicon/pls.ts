/**
 * W3C Pronunciation Lexicon Specification 1.0 (PLS) parsing. The parser is saxes, a strict, non-validating
 * XML parser: it never fetches or expands a DTD, so an external entity (`SYSTEM "file:///etc/passwd"`) or
 * an entity declared in an internal subset (billion laughs) is an undefined entity and the document is
 * refused; a document with a DOCTYPE is refused outright. Size and entry count are bounded.
 */
import { SaxesParser, type SaxesTagNS } from "saxes";

const PLS_NS = "http://www.w3.org/2005/01/pronunciation-lexicon";

/** Bounds of one lexicon. */
export const PLS_LIMITS = {
  /** Characters of the PLS document. */
  maxChars: 512 * 1024,
  /** `<lexeme>` elements. */
  maxEntries: 5_000,
  /** Characters of one grapheme, alias or phoneme. */
  maxFieldChars: 500,
} as const;

/** One `<lexeme>`: the written forms it matches and how to say them. */
export interface LexiconEntry {
  graphemes: string[];
  /** Text spoken instead (`<alias>`); null when the lexeme has none. */
  alias: string | null;
  /** Pronunciation (`<phoneme>`); null when the lexeme has none. */
  phoneme: string | null;
  /** The phoneme's alphabet (`alphabet` of the `<phoneme>`, else of the `<lexicon>`). */
  alphabet: string | null;
}

export interface ParsedLexicon {
  /** The `xml:lang` of the `<lexicon>` element (a BCP 47 tag), as written. */
  xmlLang: string;
  /** The lexicon's default phonetic alphabet (`alphabet` attribute). */
  alphabet: string;
  entries: LexiconEntry[];
}

/** A document that is not a usable PLS lexicon: `line` (1-based) is where the parser stopped, when it knows. */
export class LexiconError extends Error {
  override readonly name = "LexiconError";
  constructor(
    message: string,
    readonly line: number | null = null,
  ) {
    super(message);
  }
}

type Field = "grapheme" | "alias" | "phoneme";

/** Parses a PLS 1.0 document; throws `LexiconError` in plain words (with the line) when it is not one. */
export function parsePls(xml: string): ParsedLexicon {
  if (xml.length > PLS_LIMITS.maxChars) {
    throw new LexiconError(`the lexicon is ${xml.length} characters long; at most ${PLS_LIMITS.maxChars} are accepted`);
  }
  const parser = new SaxesParser({ xmlns: true, position: true });
  let failure: LexiconError | null = null;
  const fail = (message: string) => {
    failure ??= new LexiconError(`line ${parser.line}: ${message}`, parser.line);
  };
  let root: { xmlLang: string; alphabet: string } | null = null;
  const entries: LexiconEntry[] = [];
  let current: { graphemes: string[]; alias: string | null; phoneme: string | null; alphabet: string | null } | null = null;
  let field: { name: Field; text: string; alphabet: string | null } | null = null;
  const stack: string[] = [];

  parser.on("doctype", () => fail("a DOCTYPE is not accepted in a lexicon (no DTD or entity is ever read)"));
  parser.on("opentag", (tag: SaxesTagNS) => {
    stack.push(tag.local);
    if (failure) return;
    if (stack.length === 1) {
      if (tag.local !== "lexicon" || tag.uri !== PLS_NS) return fail(`the root element must be <lexicon xmlns="${PLS_NS}">, not <${tag.name}>`);
      const attrs = tag.attributes;
      const xmlLang = attrs["xml:lang"]?.value;
      const alphabet = attrs.alphabet?.value;
      if (!xmlLang) return fail("<lexicon> needs an xml:lang attribute (the lexicon's language, e.g. en-US)");
      if (!alphabet) return fail('<lexicon> needs an alphabet attribute (e.g. alphabet="ipa")');
      root = { xmlLang, alphabet };
      return;
    }
    if (tag.uri !== PLS_NS) return; // foreign elements are ignored, as PLS allows
    const parent = stack[stack.length - 2];
    if (tag.local === "lexeme") {
      if (parent !== "lexicon") return fail("<lexeme> must be a child of <lexicon>");
      if (entries.length >= PLS_LIMITS.maxEntries) return fail(`the lexicon has more than ${PLS_LIMITS.maxEntries} lexemes`);
      current = { graphemes: [], alias: null, phoneme: null, alphabet: null };
      return;
    }
    if (tag.local === "grapheme" || tag.local === "alias" || tag.local === "phoneme") {
      if (parent !== "lexeme" || !current) return fail(`<${tag.local}> must be a child of <lexeme>`);
      field = { name: tag.local, text: "", alphabet: tag.local === "phoneme" ? (tag.attributes.alphabet?.value ?? null) : null };
      return;
    }
    if (tag.local !== "meta" && tag.local !== "metadata" && tag.local !== "example") fail(`<${tag.local}> is not a PLS 1.0 element`);
  });
  parser.on("text", (text: string) => {
    if (field) field.text += text;
  });
  parser.on("cdata", (text: string) => {
    if (field) field.text += text;
  });
  parser.on("closetag", (tag: SaxesTagNS) => {
    stack.pop();
    if (failure) return;
    if (field && tag.local === field.name && tag.uri === PLS_NS) {
      const value = field.text.replace(/\s+/g, " ").trim();
      if (value.length === 0) fail(`<${field.name}> is empty`);
      else if (value.length > PLS_LIMITS.maxFieldChars) fail(`<${field.name}> is longer than ${PLS_LIMITS.maxFieldChars} characters`);
      else if (current && field.name === "grapheme") current.graphemes.push(value);
      // PLS: the first alias / phoneme of a lexeme is the preferred one
      else if (current && field.name === "alias") current.alias ??= value;
      else if (current && field.name === "phoneme" && current.phoneme === null) {
        current.phoneme = value;
        current.alphabet = field.alphabet;
      }
      field = null;
      return;
    }
    if (current && tag.local === "lexeme" && tag.uri === PLS_NS) {
      if (current.graphemes.length === 0) fail("a <lexeme> has no <grapheme>");
      else if (current.alias === null && current.phoneme === null) fail(`the <lexeme> of '${current.graphemes[0]}' has neither <alias> nor <phoneme>`);
      else entries.push({ ...current, alphabet: current.phoneme === null ? null : (current.alphabet ?? root?.alphabet ?? null) });
      current = null;
    }
  });
  parser.on("error", (error: Error) => {
    // saxes prefixes its messages with "line:column: "
    fail(error.message.replace(/^\d+:\d+:\s*/, ""));
  });
  try {
    parser.write(xml).close();
  } catch (error) {
    fail(error instanceof Error ? error.message.replace(/^\d+:\d+:\s*/, "") : "the lexicon is not well-formed XML");
  }
  if (failure) throw failure;
  if (!root) throw new LexiconError("the document has no <lexicon> element");
  if (entries.length === 0) throw new LexiconError("the lexicon has no <lexeme>");
  const { xmlLang, alphabet } = root as { xmlLang: string; alphabet: string };
  return { xmlLang, alphabet, entries };
}
