/**
 * Markdown (CommonMark, with GitHub tables and strikethrough) to chapters, with markdown-it: no mark
 * is ever spoken. Headings cut chapters (the rule of outline.ts; every level may split); emphasis,
 * strikethrough and inline code are read as their text; links as their text (an autolink, whose
 * text is the address, says nothing); images, raw HTML, code blocks (fenced or indented), link
 * definitions and thematic breaks say nothing; each paragraph, list item and table row is a
 * paragraph (a row's cells read in turn, separated by commas; a task list box says nothing). Entities and escapes are decoded. A
 * YAML front matter block at the top is not spoken; its `title:` names the book.
 *
 * Hostile input: markdown-it's nesting bounds (100 nested blocks, a list level taking two; 20 nested
 * inline marks) keep the parse fast; past it markdown-it drops the rest of the enclosing block, so a book nested that
 * deep is refused in plain words rather than read in part. Only the block structure is parsed up
 * front: each block's inline content is parsed as the walk reaches it, counted as the text grows.
 */
import MarkdownIt from "markdown-it";
import type { Token } from "markdown-it";
import { BookInputError, type TextBudget } from "./errors.ts";
import { chaptersFromBlocks, squash, type Block, type Chapter } from "./outline.ts";

const FRONT_MATTER = /^---[^\S\n]*\n([\s\S]*?)\n(?:---|\.\.\.)[^\S\n]*(?:\n|$)/u;

/** markdown-it's bound on nested blocks (a list level takes two: the list and its item). */
const MAX_BLOCK_NESTING = 100;
/** Its bound on nested inline marks (links, emphasis): a deeper bound makes `[[[[…` quadratic. */
const MAX_INLINE_NESTING = 20;

/**
 * A markdown-it for one book, and whether its block parse met the nesting bound: past it
 * markdown-it drops the rest of the enclosing block (for a list, the rest of the document), so the
 * block tokenizer, which nested lists and quotes call again, notes a call at the bound.
 */
function parser(): { md: ReturnType<typeof MarkdownIt>; tooDeep: () => boolean } {
  const md = new MarkdownIt("default", { html: true, linkify: false, typographer: false, maxNesting: MAX_BLOCK_NESTING });
  // Inline content is parsed block by block during the walk (inlineText), not all up front.
  md.core.ruler.disable(["inline", "text_join"]);
  let deep = false;
  const tokenize = md.block.tokenize.bind(md.block);
  md.block.tokenize = (state, startLine, endLine) => {
    if (state.level >= MAX_BLOCK_NESTING) deep = true;
    tokenize(state, startLine, endLine);
  };
  return { md, tooDeep: () => deep };
}

/** The spoken text of inline tokens: text, entities, escapes and code as text; marks, images and HTML silent. */
function inlineText(tokens: readonly Token[]): string {
  let out = "";
  let silentLink = 0;
  let silentHtml = false;
  for (const token of tokens) {
    switch (token.type) {
      case "text":
      case "text_special":
      case "code_inline":
        if (silentLink === 0 && !silentHtml) out += token.content;
        break;
      case "html_inline":
        // Tags say nothing; a line break is a break; a script or style says nothing up to its end tag.
        if (/^<br\b/iu.test(token.content)) out += "\n";
        else if (/^<(?:script|style|template)\b/iu.test(token.content)) silentHtml = true;
        else if (/^<\/(?:script|style|template)\b/iu.test(token.content)) silentHtml = false;
        break;
      case "softbreak":
        out += silentLink === 0 ? "\n" : "";
        break;
      case "hardbreak":
        out += "\n";
        break;
      case "link_open":
        // An autolink (`<https://…>`) reads its address: say nothing instead.
        if (token.markup === "autolink" || token.markup === "linkify" || silentLink > 0) silentLink++;
        break;
      case "link_close":
        if (silentLink > 0) silentLink--;
        break;
      default:
        // em/strong/s open and close, image (its alt text is not read): silent.
        break;
    }
  }
  return out;
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
  const { md, tooDeep } = parser();
  const env = {};
  const tokens = md.parse(body, env);
  if (tooDeep()) {
    throw new BookInputError(
      "not_text",
      "The Markdown nests lists or quotes too deeply (dozens of levels inside each other) to be read as a book.",
    );
  }
  md.set({ maxNesting: MAX_INLINE_NESTING });
  const blocks: Block[] = [];
  const push = (block: Block) => {
    if (block.kind !== "anchor") budget.add(block.text);
    blocks.push(block);
  };
  let heading = 0;
  let row: string[] | null = null;
  let itemStart = false;
  for (const token of tokens) {
    switch (token.type) {
      case "list_item_open":
        itemStart = true;
        break;
      case "heading_open":
        heading = Number(token.tag.slice(1));
        break;
      case "heading_close":
        heading = 0;
        break;
      case "tr_open":
        row = [];
        break;
      case "tr_close":
        if (row !== null) push({ kind: "text", text: row.filter((c) => c !== "").join(", ") });
        row = null;
        break;
      case "inline": {
        const children: Token[] = [];
        md.inline.parse(token.content, md, env, children);
        let text = inlineText(children);
        // A GitHub task list box (`- [ ] task`) is a mark, not words.
        if (itemStart) text = text.replace(/^\[[ xX]\][^\S\n]+/u, "");
        itemStart = false;
        if (row !== null) row.push(squash(text));
        else if (heading > 0) push({ kind: "heading", level: heading, text: squash(text) });
        else push({ kind: "text", text: text.trim() });
        break;
      }
      default:
        // Structure (paragraphs, lists, quotes, tables) is carried by the inline tokens it holds;
        // fence, code_block, html_block and hr say nothing.
        break;
    }
  }
  const { title, chapters } = chaptersFromBlocks(blocks, 6);
  return { title: declared ?? title, chapters };
}
