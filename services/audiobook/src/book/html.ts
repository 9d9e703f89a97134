/**
 * HTML and XHTML to blocks of text to speak, with htmlparser2 (a streaming, non-validating parser:
 * it never reads a DTD, so external entities are never fetched and internal ones never expanded).
 *
 * What is spoken: the text of the body, each block element (p, div, li, h1–h6, tr, blockquote…) a
 * paragraph of its own, so blocks end sentences. What is not: the head (its `<title>` names the
 * book), script, style, noscript, template, nav (tables of contents), aside (sidebars, footnotes),
 * figcaption (it describes a picture the listener cannot see), images, svg, math, forms, ruby
 * annotations (rt, rp), code inside pre, hidden elements (`hidden`, `aria-hidden="true"`), and EPUB
 * notes and page breaks (`epub:type` / `role` footnote, endnote, noteref, pagebreak, toc). Entities
 * are decoded (the HTML set); a reference to an entity the parser does not know is dropped, never
 * spoken.
 */
import { Parser } from "htmlparser2";
import type { TextBudget } from "./errors.ts";
import { squash, type Block } from "./outline.ts";

const SKIPPED = new Set([
  "head", "script", "style", "noscript", "template", "nav", "aside", "figcaption", "svg", "math", "iframe",
  "object", "embed", "audio", "video", "canvas", "button", "select", "textarea", "input", "option", "datalist",
  "map", "rt", "rp", "picture", "img",
]);

const BLOCKS = new Set([
  "address", "article", "blockquote", "body", "caption", "center", "dd", "details", "dialog", "dir", "div", "dl",
  "dt", "fieldset", "figure", "footer", "form", "header", "hgroup", "hr", "html", "legend", "li", "main", "menu",
  "ol", "p", "pre", "section", "summary", "table", "tbody", "tfoot", "thead", "tr", "ul",
  "h1", "h2", "h3", "h4", "h5", "h6",
]);

const SKIPPED_SEMANTICS = /(?:^|\s)(?:doc-)?(?:footnotes?|endnotes?|rearnotes?|noteref|pagebreak|page-list|toc|landmarks)(?:\s|$)/iu;

/** Entity references left undecoded (unknown to the parser, e.g. declared in a DTD): never spoken. */
const UNKNOWN_ENTITY = /&[A-Za-z_:][\w.:-]*;/gu;

/**
 * Where a document type declaration with an internal subset (`<!DOCTYPE x [ <!ENTITY …> ]>`) lies,
 * as [start, end): the parser would end it at the first `>` inside the subset and read the rest as
 * text, so it is skipped whole. Scans quotes and brackets in one pass; nothing in it is interpreted.
 * Null when there is none (a plain doctype is left to the parser).
 */
export function doctypeSpan(source: string): [number, number] | null {
  const start = source.search(/<!doctype/iu);
  if (start < 0) return null;
  let depth = 0;
  let subset = false;
  let quote: string | null = null;
  for (let i = start + 9; i < source.length; i++) {
    const c = source[i];
    if (quote !== null) {
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "[") {
      depth++;
      subset = true;
    } else if (c === "]") depth = Math.max(0, depth - 1);
    else if (c === ">" && depth === 0) return subset ? [start, i + 1] : null;
  }
  return [start, source.length];
}

const PIECE = 65_536;

/**
 * Feeds `source` to the parser in pieces (htmlparser2 hands over the text it holds at the end of
 * each, so a bound on the text stops a huge paragraph early), leaving out a doctype's internal subset.
 */
export function feed(parser: Parser, source: string): void {
  const span = doctypeSpan(source);
  const write = (from: number, to: number) => {
    for (let i = from; i < to; i += PIECE) parser.write(source.slice(i, Math.min(i + PIECE, to)));
  };
  if (span === null) write(0, source.length);
  else {
    write(0, span[0]);
    write(span[1], source.length);
  }
  parser.end();
}

export interface HtmlDocument {
  /** The `<title>` of the head, whitespace collapsed; null when absent or empty. */
  title: string | null;
  blocks: Block[];
  /** `epub:type` and `role` values on the html, body and their first-level sectioning elements. */
  semantics: string[];
}

export interface HtmlOptions {
  budget: TextBudget;
  /** Element ids at which a chapter may start: reported as `anchor` blocks (EPUB tables of contents). */
  anchors?: ReadonlySet<string>;
}

interface Open {
  name: string;
  skip: boolean;
}

/** Parses an HTML or XHTML document into blocks (a table row is one: its cells in turn, with commas), counting the text against the budget as it grows. */
export function htmlBlocks(source: string, options: HtmlOptions): HtmlDocument {
  const { budget, anchors } = options;
  const blocks: Block[] = [];
  const semantics: string[] = [];
  const stack: Open[] = [];
  let skipDepth = 0;
  let preDepth = 0;
  let inTitle = false;
  let title = "";
  let buffer = "";
  let heading = 0;

  const flush = () => {
    const text = (preDepth > 0 ? buffer.replace(/[^\S\n]+/gu, " ").trim() : squash(buffer)).replace(/(?:\s*,)+$/u, "");
    buffer = "";
    if (text === "") return;
    if (heading > 0) blocks.push({ kind: "heading", level: heading, text: squash(text) });
    else blocks.push({ kind: "text", text });
  };

  const parser = new Parser(
    {
      onopentag(name, attribs) {
        const epubType = attribs["epub:type"] ?? "";
        const role = attribs.role ?? "";
        if (stack.length <= 3 && /^(?:html|body|section|article|div)$/u.test(name)) {
          for (const v of `${epubType} ${role}`.split(/\s+/u)) if (v !== "") semantics.push(v.toLowerCase());
        }
        const skip =
          SKIPPED.has(name) ||
          (name === "code" && preDepth > 0) ||
          "hidden" in attribs ||
          attribs["aria-hidden"] === "true" ||
          SKIPPED_SEMANTICS.test(epubType) ||
          SKIPPED_SEMANTICS.test(role);
        stack.push({ name, skip });
        if (name === "title" && stack.some((o) => o.name === "head")) inTitle = true;
        if (skip) skipDepth++;
        if (skipDepth > 0) return;
        const id = attribs.id;
        if (anchors !== undefined && id !== undefined && anchors.has(id)) {
          flush();
          blocks.push({ kind: "anchor", id });
        }
        if (BLOCKS.has(name)) {
          flush();
          const level = /^h([1-6])$/u.exec(name);
          if (level) heading = Number(level[1]);
          if (name === "pre") preDepth++;
        } else if (name === "br") {
          buffer += "\n";
        }
      },
      onclosetag(name) {
        const open = stack.pop();
        if (name === "title") inTitle = false;
        if (open === undefined) return;
        if (open.skip) {
          skipDepth--;
          return;
        }
        if (skipDepth > 0) return;
        if (open.name === "td" || open.name === "th") buffer += ", ";
        if (BLOCKS.has(open.name)) {
          flush();
          if (/^h[1-6]$/u.test(open.name)) heading = 0;
          if (open.name === "pre") preDepth = Math.max(0, preDepth - 1);
        }
      },
      ontext(data) {
        const text = data.replace(UNKNOWN_ENTITY, "");
        if (inTitle) {
          title += text;
          return;
        }
        if (skipDepth > 0) return;
        buffer += text;
        // Counted as it arrives (whitespace runs as one), so a huge paragraph stops the parse early.
        budget.add(text.replace(/\s+/gu, " "));
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true, recognizeSelfClosing: true, recognizeCDATA: true },
  );
  feed(parser, source);
  flush();
  const t = squash(title);
  return { title: t === "" ? null : t, blocks, semantics };
}
