/**
 * Markdown (CommonMark with GitHub tables) to chapters, with marked's lexer: no mark is ever spoken.
 * Headings cut chapters (the rule of outline.ts, every level may split); emphasis, strikethrough and
 * inline code are read as their text; links as their text (an autolink, whose text is the address,
 * says nothing); images, raw HTML, code blocks, link
 * definitions and thematic breaks say nothing; list items and table rows are paragraphs (a row's
 * cells read one after another, separated by commas). Entities are decoded. A YAML front matter
 * block at the top is not spoken; its `title:` names the book.
 */
import { decodeHTML } from "entities";
import { Lexer, type MarkedToken, type Token } from "marked";
import type { TextBudget } from "./errors.ts";
import { chaptersFromBlocks, squash, type Block, type Chapter } from "./outline.ts";

const FRONT_MATTER = /^---[^\S\n]*\n([\s\S]*?)\n(?:---|\.\.\.)[^\S\n]*(?:\n|$)/u;

const isAddress = (text: string, href: string) =>
  text.trim() === href.trim() || `mailto:${text.trim()}` === href.trim() || /^(?:[a-z][a-z0-9+.-]*:\/\/|www\.)\S+$/iu.test(text.trim());

function inline(tokens: readonly Token[] | undefined): string {
  if (tokens === undefined) return "";
  let out = "";
  for (const token of tokens as readonly MarkedToken[]) {
    switch (token.type) {
      case "text":
        out += token.tokens !== undefined && token.tokens.length > 0 ? inline(token.tokens) : decodeHTML(token.text);
        break;
      case "escape":
      case "codespan":
        out += decodeHTML(token.text);
        break;
      case "strong":
      case "em":
      case "del":
        out += inline(token.tokens);
        break;
      case "link":
        // An autolink (its text is the address) says nothing: an address read aloud is noise.
        if (!isAddress(token.text, token.href)) out += inline(token.tokens);
        break;
      case "br":
        out += "\n";
        break;
      default:
        // image, html, checkbox, and anything an extension adds: silent.
        break;
    }
  }
  return out;
}

function collect(tokens: readonly Token[], blocks: Block[], budget: TextBudget): void {
  const push = (block: Block) => {
    if (block.kind !== "anchor") budget.add(block.text);
    blocks.push(block);
  };
  for (const token of tokens as readonly MarkedToken[]) {
    switch (token.type) {
      case "heading":
        push({ kind: "heading", level: token.depth, text: squash(inline(token.tokens)) });
        break;
      case "paragraph":
        push({ kind: "text", text: inline(token.tokens).trim() });
        break;
      case "text":
        push({ kind: "text", text: (token.tokens !== undefined && token.tokens.length > 0 ? inline(token.tokens) : decodeHTML(token.text)).trim() });
        break;
      case "list":
        for (const item of token.items) collect(item.tokens, blocks, budget);
        break;
      case "blockquote":
        collect(token.tokens, blocks, budget);
        break;
      case "table":
        for (const row of [token.header, ...token.rows]) {
          const cells = row.map((cell) => squash(inline(cell.tokens))).filter((c) => c !== "");
          push({ kind: "text", text: cells.join(", ") });
        }
        break;
      default:
        // code (fenced or indented), html blocks, link definitions, thematic breaks, space: silent.
        break;
    }
  }
}

/** The book title from a YAML front matter block (`title: …`), and the source without that block. */
function frontMatter(source: string): { title: string | null; body: string } {
  const match = FRONT_MATTER.exec(source);
  if (!match) return { title: null, body: source };
  const line = /^title:[^\S\n]*(.*)$/mu.exec(match[1] ?? "");
  const raw = (line?.[1] ?? "").trim().replace(/^(["'])(.*)\1$/u, "$2");
  return { title: raw === "" ? null : raw, body: source.slice(match[0].length) };
}

/** Reads a Markdown book: its title (front matter, else the heading that opens it) and chapters. */
export function readMarkdown(source: string, budget: TextBudget): { title: string | null; chapters: Chapter[] } {
  const { title: declared, body } = frontMatter(source.replace(/^\uFEFF/u, ""));
  const tokens = new Lexer({ gfm: true }).lex(body);
  const blocks: Block[] = [];
  collect(tokens, blocks, budget);
  const { title, chapters } = chaptersFromBlocks(blocks, 6);
  return { title: declared ?? title, chapters };
}
