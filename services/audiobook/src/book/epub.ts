/**
 * EPUB 2 and 3 books to chapters.
 *
 * `META-INF/container.xml` names the package (OPF): its `dc:title` names the book, its manifest the
 * files and its spine their reading order. Chapter titles come from the EPUB 3 navigation document
 * (the manifest item with `properties="nav"`, its `<nav epub:type="toc">` list), else from the
 * EPUB 2 NCX (the spine's `toc` item, or the manifest's `application/x-dtbncx+xml` item). A document
 * the table of contents points at starts a chapter titled by the shallowest entry pointing at it;
 * further entries of that depth pointing inside it (`chapter.xhtml#part-2`) start chapters at their
 * element. A document it does not point at starts a chapter titled by its first h1–h3 heading, or
 * without a heading continues the chapter before it.
 *
 * Skipped, as carrying no prose to speak: spine items marked `linear="no"`; the navigation document;
 * anything that is not (X)HTML; documents the EPUB 3 landmarks or the EPUB 2 guide mark as cover,
 * table of contents, title page, copyright page, index or list of illustrations/tables; documents whose
 * body (or its first section) carries such an `epub:type` or `role`; and documents the table of
 * contents does not point at with fewer than 30 words (a cover image, a title page, a dedication).
 * A chapter's opening heading is its title and is not repeated in its text; chapters with nothing to
 * say are dropped. Encrypted (DRM) text is refused in plain words.
 */
import { decodeMarkup } from "./decode.ts";
import { BookInputError, type TextBudget } from "./errors.ts";
import { htmlBlocks } from "./html.ts";
import { chapterText, chapterTitle, type Block, type Chapter } from "./outline.ts";
import { attr, childrenNamed, descendants, parseXml, textOf, type XmlElement } from "./xml.ts";
import { BookArchive } from "./zip.ts";

export interface EpubOptions {
  budget: TextBudget;
  maxEntries: number;
  maxUnpackedBytes: number;
  signal?: AbortSignal;
}

interface TocEntry {
  title: string;
  path: string;
  fragment: string;
  depth: number;
}

interface ManifestItem {
  id: string;
  path: string;
  mediaType: string;
  properties: string[];
}

const SKIPPED_TYPES = new Set([
  "cover", "toc", "titlepage", "title-page", "halftitlepage", "copyright-page", "copyright", "landmarks", "loi",
  "lot", "index", "colophon", "page-list", "doc-toc", "doc-index", "doc-colophon", "doc-cover",
]);

const MIN_WORDS_OUTSIDE_TOC = 30;

const damaged = (what: string) => new BookInputError("damaged", `The EPUB file is damaged: ${what}.`);

/** An href resolved against the file it appears in, as a name inside the archive (never outside it). */
export function resolveHref(base: string, href: string): { path: string; fragment: string } | null {
  const origin = "http://book.invalid";
  let url: URL;
  try {
    url = new URL(href.trim(), `${origin}/${encodeURI(base)}`);
  } catch {
    return null;
  }
  if (url.origin !== origin) return null;
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  return { path: decode(url.pathname.slice(1)), fragment: decode(url.hash.slice(1)) };
}

async function readText(archive: BookArchive, path: string): Promise<string> {
  const bytes = await archive.read(path);
  try {
    return decodeMarkup(bytes);
  } catch (error) {
    if (error instanceof BookInputError) throw new BookInputError(error.reason, `The EPUB's file ${path} cannot be read: ${error.message}`);
    throw error;
  }
}

const wordCount = (text: string) => text.match(/[\p{L}\p{N}]+/gu)?.length ?? 0;

/** The entries of an EPUB 3 `<nav epub:type="toc">` (or of its `landmarks` nav), with their depth. */
function navEntries(nav: XmlElement, base: string): TocEntry[] {
  const entries: TocEntry[] = [];
  const walkList = (list: XmlElement, depth: number) => {
    for (const li of childrenNamed(list, "li")) {
      const label = li.children.find((c): c is XmlElement => typeof c !== "string" && (c.name === "a" || c.name === "span"));
      const href = label ? attr(label, "href") : undefined;
      const target = href !== undefined ? resolveHref(base, href) : null;
      if (label && target) entries.push({ title: textOf(label), path: target.path, fragment: target.fragment, depth });
      for (const sub of childrenNamed(li, "ol")) walkList(sub, depth + 1);
    }
  };
  for (const list of childrenNamed(nav, "ol")) walkList(list, 1);
  return entries;
}

function ncxEntries(ncx: XmlElement, base: string): TocEntry[] {
  const entries: TocEntry[] = [];
  const walk = (parent: XmlElement, depth: number) => {
    for (const point of childrenNamed(parent, "navpoint")) {
      const label = childrenNamed(point, "navlabel")[0];
      const src = childrenNamed(point, "content")[0];
      const target = src ? resolveHref(base, attr(src, "src") ?? "") : null;
      if (target) entries.push({ title: label ? textOf(label) : "", path: target.path, fragment: target.fragment, depth });
      walk(point, depth + 1);
    }
  };
  for (const map of descendants(ncx, "navmap")) walk(map, 1);
  return entries;
}

const navOfType = (doc: XmlElement, type: string) =>
  descendants(doc, "nav").find((n) => (attr(n, "epub:type") ?? attr(n, "role") ?? "").split(/\s+/u).some((t) => t === type || t === `doc-${type}`));

/** Reads an EPUB: its title and chapters in spine order. */
export async function readEpub(bytes: Buffer, options: EpubOptions): Promise<{ title: string | null; chapters: Chapter[] }> {
  const { budget, signal } = options;
  const archive = await BookArchive.open(bytes, options);
  try {
    if (!archive.has("mimetype")) throw damaged("it has no mimetype file");
    const mimetype = (await archive.read("mimetype")).toString("latin1").trim();
    if (mimetype !== "application/epub+zip") {
      throw new BookInputError("not_text", "The file is a ZIP archive but not an EPUB book (its mimetype file does not say application/epub+zip).");
    }
    if (!archive.has("META-INF/container.xml")) throw damaged("it has no META-INF/container.xml");
    const container = parseXml(await readText(archive, "META-INF/container.xml"));
    const rootfiles = descendants(container, "rootfile");
    const rootfile = rootfiles.find((r) => attr(r, "media-type") === "application/oebps-package+xml") ?? rootfiles[0];
    const opfPath = rootfile ? resolveHref("", attr(rootfile, "full-path") ?? "")?.path : undefined;
    if (opfPath === undefined || opfPath === "" || !archive.has(opfPath)) throw damaged("its container does not name a package file in the archive");
    const opf = parseXml(await readText(archive, opfPath));

    const titleElement = descendants(opf, "title")[0];
    const bookTitle = titleElement ? textOf(titleElement) : "";

    const manifest = new Map<string, ManifestItem>();
    for (const item of descendants(opf, "item")) {
      const id = attr(item, "id");
      const target = resolveHref(opfPath, attr(item, "href") ?? "");
      if (id === undefined || target === null || manifest.has(id)) continue;
      manifest.set(id, { id, path: target.path, mediaType: (attr(item, "media-type") ?? "").toLowerCase(), properties: (attr(item, "properties") ?? "").split(/\s+/u) });
    }
    const spine = descendants(opf, "spine")[0];
    if (spine === undefined) throw damaged("its package has no spine (reading order)");
    const itemrefs = childrenNamed(spine, "itemref");

    const skipped = new Set<string>();
    for (const reference of descendants(opf, "reference")) {
      const target = resolveHref(opfPath, attr(reference, "href") ?? "");
      if (target && SKIPPED_TYPES.has((attr(reference, "type") ?? "").toLowerCase())) skipped.add(target.path);
    }

    await refuseEncrypted(archive, itemrefs.map((r) => manifest.get(attr(r, "idref") ?? "")?.path).filter((p): p is string => p !== undefined));

    // The table of contents: EPUB 3 nav, else EPUB 2 NCX.
    let toc: TocEntry[] = [];
    const navItem = [...manifest.values()].find((i) => i.properties.includes("nav"));
    if (navItem && archive.has(navItem.path)) {
      const nav = parseXml(await readText(archive, navItem.path), "xhtml");
      const tocNav = navOfType(nav, "toc") ?? descendants(nav, "nav")[0];
      if (tocNav) toc = navEntries(tocNav, navItem.path);
      const landmarks = navOfType(nav, "landmarks");
      if (landmarks) {
        for (const a of descendants(landmarks, "a")) {
          const target = resolveHref(navItem.path, attr(a, "href") ?? "");
          const types = (attr(a, "epub:type") ?? "").toLowerCase().split(/\s+/u);
          if (target && types.some((t) => SKIPPED_TYPES.has(t))) skipped.add(target.path);
        }
      }
    }
    if (toc.length === 0) {
      const ncxItem = manifest.get(attr(spine, "toc") ?? "") ?? [...manifest.values()].find((i) => i.mediaType === "application/x-dtbncx+xml");
      if (ncxItem && archive.has(ncxItem.path)) toc = ncxEntries(parseXml(await readText(archive, ncxItem.path)), ncxItem.path);
    }
    const tocByPath = new Map<string, TocEntry[]>();
    for (const entry of toc) {
      if (entry.title === "") continue;
      tocByPath.set(entry.path, [...(tocByPath.get(entry.path) ?? []), entry]);
    }

    const chapters: Array<{ title: string | null; paragraphs: string[] }> = [];
    for (const itemref of itemrefs) {
      signal?.throwIfAborted();
      const item = manifest.get(attr(itemref, "idref") ?? "");
      if (item === undefined || !archive.has(item.path)) continue;
      if ((attr(itemref, "linear") ?? "yes").toLowerCase() === "no") continue;
      if (!/^(?:application\/xhtml\+xml|text\/html)$/u.test(item.mediaType)) continue;
      if (item.properties.includes("nav") || skipped.has(item.path)) continue;

      const entries = tocByPath.get(item.path) ?? [];
      const depth = Math.min(...entries.map((e) => e.depth));
      const primary = entries.filter((e) => e.depth === depth);
      const anchorTitles = new Map<string, string>();
      for (const e of primary) if (e.fragment !== "" && !anchorTitles.has(e.fragment)) anchorTitles.set(e.fragment, e.title);
      const startEntry = primary.find((e) => e.fragment === "");

      const doc = htmlBlocks(await readText(archive, item.path), { budget, anchors: new Set(anchorTitles.keys()) });
      if (doc.semantics.some((t) => SKIPPED_TYPES.has(t))) continue;
      if (entries.length === 0) {
        const words = doc.blocks.reduce((n, b) => n + (b.kind === "anchor" ? 0 : wordCount(b.text)), 0);
        if (words < MIN_WORDS_OUTSIDE_TOC) continue;
      }

      // Segments: the document's start, then one per table-of-contents anchor met.
      const segments: Array<{ title: string | null | undefined; blocks: Block[] }> = [{ title: startEntry?.title, blocks: [] }];
      for (const block of doc.blocks) {
        if (block.kind === "anchor") {
          const title = anchorTitles.get(block.id);
          if (title !== undefined) {
            segments.push({ title, blocks: [] });
            anchorTitles.delete(block.id);
          }
          continue;
        }
        segments[segments.length - 1]?.blocks.push(block);
      }
      // An entry whose element was not found titles the document's start when nothing else does.
      const [unmet] = anchorTitles.values();
      if (segments[0] !== undefined && segments[0].title === undefined && unmet !== undefined) segments[0].title = unmet;
      for (const [index, segment] of segments.entries()) {
        let title = segment.title;
        const firstContent = segment.blocks.findIndex((b) => b.kind !== "anchor" && /[\p{L}\p{N}]/u.test(b.text));
        const opening = segment.blocks[firstContent];
        const opensWithHeading = opening?.kind === "heading";
        if (title === undefined && index === 0 && entries.length === 0) {
          // Not in the table of contents: a heading starts a chapter; no heading continues the last one.
          const heading = segment.blocks.find((b) => b.kind === "heading" && b.level <= 3);
          if (heading?.kind === "heading" && opensWithHeading) title = heading.text;
        }
        const paragraphs = segment.blocks
          .filter((b, i) => b.kind !== "anchor" && !(i === firstContent && opensWithHeading && (title ?? null) !== null))
          .map((b) => (b.kind === "anchor" ? "" : b.text));
        if (title === undefined && index === 0 && chapters.length > 0) {
          chapters[chapters.length - 1]?.paragraphs.push(...paragraphs);
          continue;
        }
        chapters.push({ title: title === undefined || title === null ? null : chapterTitle(title), paragraphs });
      }
    }
    const result: Chapter[] = [];
    for (const c of chapters) {
      const text = chapterText(c.paragraphs);
      if (/[\p{L}\p{N}]/u.test(text)) result.push({ title: c.title, text });
    }
    return { title: bookTitle === "" ? null : chapterTitle(bookTitle), chapters: result };
  } finally {
    archive.close();
  }
}

/** Font obfuscation (IDPF, Adobe) is no DRM: those fonts are never read anyway. */
const FONT_OBFUSCATION = new Set(["http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#rc"]);

/** Refuses an EPUB whose reading-order documents `META-INF/encryption.xml` lists as encrypted. */
async function refuseEncrypted(archive: BookArchive, spinePaths: readonly string[]): Promise<void> {
  if (!archive.has("META-INF/encryption.xml")) return;
  const encryption = parseXml(await readText(archive, "META-INF/encryption.xml"));
  const spine = new Set(spinePaths);
  for (const data of descendants(encryption, "encrypteddata")) {
    const method = descendants(data, "encryptionmethod")[0];
    if (FONT_OBFUSCATION.has((method ? (attr(method, "algorithm") ?? "") : "").toLowerCase())) continue;
    for (const reference of descendants(data, "cipherreference")) {
      const target = resolveHref("", attr(reference, "uri") ?? "");
      if (target && spine.has(target.path)) {
        throw new BookInputError("protected", "The EPUB is protected by DRM (its text is encrypted), so it cannot be read aloud.");
      }
    }
  }
}
