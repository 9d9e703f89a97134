/**
 * What a book file is, from its bytes (never its name).
 *
 * - EPUB: a ZIP whose first local entry is named `mimetype` (the OCF rule: first in the container,
 *   stored; its content, `application/epub+zip`, is checked when the archive is read). Any other ZIP
 *   is refused, as are PDF documents (named, so the user knows why).
 * - HTML / XHTML: after a byte order mark, whitespace and comments, the markup starts with a
 *   doctype, `<html`, `<head` or `<body`, an XML declaration followed (within the first 4 KiB) by
 *   the XHTML namespace, or a block element (h1–h6, p, div, section, article, main) closed later.
 *   Such a file may be in the encoding it declares (decode.ts).
 * - Markdown: decided on the decoded text by its marks (`looksLikeMarkdown`).
 * - Otherwise plain text.
 */

export type SniffedFormat = "epub" | "zip" | "pdf" | "html" | "textual";

const ascii = (bytes: Uint8Array, start: number, end: number) => Buffer.from(bytes.subarray(start, end)).toString("latin1");

/** The container format from the first bytes; "textual" is text, Markdown or a binary decodeText refuses. */
export function sniffBytes(bytes: Uint8Array): SniffedFormat {
  if (bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04) {
    const nameLength = (bytes[26] ?? 0) | ((bytes[27] ?? 0) << 8);
    return nameLength === 8 && ascii(bytes, 30, 38) === "mimetype" ? "epub" : "zip";
  }
  if ((bytes[0] === 0x50 && bytes[1] === 0x4b) || ascii(bytes, 0, 4) === "PK\u0005\u0006") return "zip";
  if (ascii(bytes, 0, 5) === "%PDF-") return "pdf";
  return "textual";
}

/** True when decoded text is an HTML or XHTML document by its opening markup. */
export function looksLikeHtml(text: string): boolean {
  const head = text.slice(0, 4096).replace(/^\uFEFF/u, "");
  const start = head.replace(/^(?:\s|<!--[\s\S]*?-->)*/u, "");
  if (/^<!doctype\s+html[\s>]/iu.test(start) || /^<(?:html|head|body)[\s>]/iu.test(start)) return true;
  if (/^<\?xml[\s?]/iu.test(start)) return head.includes("http://www.w3.org/1999/xhtml");
  // A fragment opening with a block element that it closes later: <h1>…</h1>, <p>…</p>.
  const block = /^<(h[1-6]|p|div|section|article|main)[\s>]/iu.exec(start);
  return block !== null && new RegExp(`</${block[1]}\\s*>`, "iu").test(text.slice(0, 65_536));
}

/** The same test on raw bytes (ASCII markup), before they are decoded. */
export function looksLikeHtmlBytes(bytes: Uint8Array): boolean {
  const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  return looksLikeHtml(Buffer.from(bytes.subarray(start, start + 65_536)).toString("latin1"));
}

/**
 * True when text reads as Markdown. Conservative, so ordinary prose stays plain text: the first
 * 200,000 characters are scanned for strong marks (an ATX heading `# Title`, a setext heading — a
 * text line underlined with `===` or `---`, a fenced code block, an inline link `[text](url)`, a
 * link definition, YAML front matter) and weak ones (`**bold**`, `__bold__`, `*em*`, `` `code` ``,
 * a list item, a `> ` quote, a table row `| a | b |`). It is Markdown with two strong marks, or one
 * strong and one weak, or weak marks of three different kinds.
 */
export function looksLikeMarkdown(text: string): boolean {
  const lines = text.slice(0, 200_000).split(/\r\n?|\n/u);
  let strong = 0;
  const weak = new Set<string>();
  if (/^---\s*$/u.test(lines[0] ?? "") && lines.slice(1, 50).some((l) => /^(?:---|\.\.\.)\s*$/u.test(l)) && /^\w+:\s/u.test(lines[1] ?? "")) strong++;
  let inFence = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    if (/^ {0,3}(?:```|~~~)/u.test(line)) {
      if (!inFence) strong++;
      inFence = !inFence;
      continue;
    }
    if (inFence) continue;
    const previous = lines[i - 1] ?? "";
    if (/^ {0,3}#{1,6}[ \t]+\S/u.test(line)) strong++;
    else if (/^ {0,3}(?:=+|-+)[ \t]*$/u.test(line) && line.trim().length >= 3 && /\p{L}/u.test(previous) && !/^\s*$/u.test(previous)) strong++;
    else if (/^ {0,3}\[[^\]]+\]:\s*\S+/u.test(line)) strong++;
    if (/\[[^\]\n]+\]\([^)\s]+(?:\s+"[^"]*")?\)/u.test(line)) strong++;
    if (/\*\*[^*\s][^*]*\*\*/u.test(line)) weak.add("bold");
    if (/(?:^|\W)__[^_\s][^_]*__(?:\W|$)/u.test(line)) weak.add("bold_");
    if (/(?:^|[\s(])\*[^*\s][^*]*\*(?:[\s.,;:!?)]|$)/u.test(line)) weak.add("em");
    if (/`[^`\n]+`/u.test(line)) weak.add("code");
    if (/^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+\S/u.test(line)) weak.add("list");
    if (/^ {0,3}>[ \t]?\S/u.test(line)) weak.add("quote");
    if (/^\s*\|.*\|\s*$/u.test(line)) weak.add("table");
    if (strong >= 2 || (strong >= 1 && weak.size >= 1) || weak.size >= 3) return true;
  }
  return false;
}
