/**
 * Generated test books: EPUB 3 (nav), EPUB 2 (NCX only), Markdown with every mark, HTML with script
 * and style, and hostile EPUBs (external entities, entity expansion, a decompression bomb, many
 * entries, zip-slip names). Built in code with the test ZIP writer.
 */
import { createDeflateRaw } from "node:zlib";
import { buildZip, type ZipEntry } from "@voiceloc/testing";

/** Prose paragraphs of a chapter: distinct, recognisable sentences ("Chapter two, sentence three."). */
export function prose(label: string, paragraphs = 2, sentences = 4): string[] {
  return Array.from({ length: paragraphs }, (_, p) =>
    Array.from(
      { length: sentences },
      (_, s) => `In ${label} the keeper walked along the quiet harbour and counted boat number ${p * sentences + s + 1} as it came home.`,
    ).join(" "),
  );
}

const CONTAINER = `<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>`;

/** An XHTML content document (EPUB 3 flavour unless a doctype is given). */
export function xhtml(body: string, options: { title?: string; bodyType?: string; doctype?: string } = {}): string {
  const doctype = options.doctype ?? "<!DOCTYPE html>";
  const type = options.bodyType === undefined ? "" : ` epub:type="${options.bodyType}"`;
  return `<?xml version="1.0" encoding="UTF-8"?>
${doctype}
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">
<head><title>${options.title ?? "Page"}</title><link rel="stylesheet" href="../style.css"/>
<style>p { margin: 0 }</style></head>
<body${type}>
${body}
</body>
</html>`;
}

const paras = (ps: readonly string[]) => ps.map((p) => `<p>${p}</p>`).join("\n");

/** The files every EPUB starts with: `mimetype` first and stored, then the container. */
export const epubHead = (): ZipEntry[] => [
  { name: "mimetype", data: "application/epub+zip", method: 0 },
  { name: "META-INF/container.xml", data: CONTAINER },
];

/**
 * EPUB 3 with a nav: a cover page (epub:type cover, an image only), a title page (few words, not in
 * the TOC), a copyright page (epub:type copyright-page, enough words to pass the word rule), three
 * chapter files (the third holding chapters three and four, the fourth by a TOC fragment), a nested
 * TOC section that does not split, footnotes, script and style, and a linear="no" note page.
 */
export function epub3(): Buffer {
  const opf = `<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="uid">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="uid">urn:uuid:12345678-1234-1234-1234-123456789abc</dc:identifier>
    <dc:title>The Lighthouse Keeper</dc:title>
    <dc:language>en</dc:language>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="cover" href="text/cover.xhtml" media-type="application/xhtml+xml"/>
    <item id="cover-image" href="images/cover.jpg" media-type="image/jpeg" properties="cover-image"/>
    <item id="title" href="text/title.xhtml" media-type="application/xhtml+xml"/>
    <item id="copyright" href="text/copyright.xhtml" media-type="application/xhtml+xml"/>
    <item id="c1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/>
    <item id="c2" href="text/ch2.xhtml" media-type="application/xhtml+xml"/>
    <item id="c3" href="text/ch3%20and%204.xhtml" media-type="application/xhtml+xml"/>
    <item id="notes" href="text/notes.xhtml" media-type="application/xhtml+xml"/>
    <item id="css" href="style.css" media-type="text/css"/>
  </manifest>
  <spine>
    <itemref idref="cover"/>
    <itemref idref="title"/>
    <itemref idref="nav"/>
    <itemref idref="copyright"/>
    <itemref idref="c1"/>
    <itemref idref="c2"/>
    <itemref idref="c3"/>
    <itemref idref="notes" linear="no"/>
  </spine>
</package>`;
  const nav = xhtml(
    `<nav epub:type="toc" id="toc"><h1>Contents</h1>
  <ol>
    <li><a href="text/ch1.xhtml">Arrival at the Harbour</a></li>
    <li><a href="text/ch2.xhtml">The <em>Storm</em></a>
      <ol><li><a href="text/ch2.xhtml#after">After the storm</a></li></ol>
    </li>
    <li><a href="text/ch3%20and%204.xhtml">The Engineer</a></li>
    <li><a href="text/ch3%20and%204.xhtml#ch4">Nine Boats</a></li>
  </ol>
</nav>
<nav epub:type="landmarks"><ol>
  <li><a epub:type="cover" href="text/cover.xhtml">Cover</a></li>
  <li><a epub:type="bodymatter" href="text/ch1.xhtml">Start</a></li>
</ol></nav>`,
    { title: "Contents" },
  );
  return buildZip([
    ...epubHead(),
    { name: "OEBPS/content.opf", data: opf },
    { name: "OEBPS/nav.xhtml", data: nav },
    { name: "OEBPS/style.css", data: "body { font-family: serif }" },
    { name: "OEBPS/images/cover.jpg", data: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]) },
    { name: "OEBPS/text/cover.xhtml", data: xhtml(`<div><img src="../images/cover.jpg" alt="The cover of the book"/></div>`, { bodyType: "cover" }) },
    { name: "OEBPS/text/title.xhtml", data: xhtml(`<h1>The Lighthouse Keeper</h1><p>A novel</p>`) },
    {
      name: "OEBPS/text/copyright.xhtml",
      data: xhtml(`<section epub:type="copyright-page">${paras(prose("copyright notice"))}</section>`),
    },
    {
      name: "OEBPS/text/ch1.xhtml",
      data: xhtml(
        `<section epub:type="chapter"><h1>Chapter 1</h1>${paras(prose("chapter one"))}
<p>She checked the lamp<a epub:type="noteref" href="notes.xhtml#n1">1</a> twice.</p>
<aside epub:type="footnote" id="n1"><p>A footnote that is never spoken aloud.</p></aside>
<script>document.write("script text that is never spoken")</script></section>`,
      ),
    },
    {
      name: "OEBPS/text/ch2.xhtml",
      data: xhtml(`<h1>Chapter 2</h1>${paras(prose("chapter two"))}<h2 id="after">After the storm</h2>${paras(prose("the calm"))}`),
    },
    {
      name: "OEBPS/text/ch3 and 4.xhtml",
      data: xhtml(`<h1>Chapter 3</h1>${paras(prose("chapter three"))}<h1 id="ch4">Chapter 4</h1>${paras(prose("chapter four"))}`),
    },
    { name: "OEBPS/text/notes.xhtml", data: xhtml(`<p>Notes that sit outside the reading order and are never spoken.</p>`) },
  ]);
}

/**
 * EPUB 2 with an NCX only (no nav): XHTML 1.1 doctype and `&nbsp;`, a cover page with only an image
 * (guide type cover), a copyright page (guide type copyright-page), two chapters in the NCX, and an
 * epilogue the NCX does not list, titled by its heading.
 */
export function epub2(): Buffer {
  const doctype = `<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">`;
  const page = (body: string) => xhtml(body, { doctype });
  const opf = `<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="2.0" unique-identifier="uid">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:opf="http://www.idpf.org/2007/opf">
    <dc:title>Northern Light</dc:title><dc:creator opf:role="aut">A. Writer</dc:creator>
    <dc:identifier id="uid">isbn-0000</dc:identifier><dc:language>en</dc:language>
    <meta name="cover" content="cover-image"/>
  </metadata>
  <manifest>
    <item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>
    <item id="cover" href="cover.html" media-type="application/xhtml+xml"/>
    <item id="cover-image" href="cover.png" media-type="image/png"/>
    <item id="copy" href="copy.html" media-type="application/xhtml+xml"/>
    <item id="one" href="one.html" media-type="application/xhtml+xml"/>
    <item id="two" href="two.html" media-type="application/xhtml+xml"/>
    <item id="epilogue" href="epilogue.html" media-type="application/xhtml+xml"/>
  </manifest>
  <spine toc="ncx">
    <itemref idref="cover"/><itemref idref="copy"/><itemref idref="one"/><itemref idref="two"/><itemref idref="epilogue"/>
  </spine>
  <guide>
    <reference type="cover" title="Cover" href="cover.html"/>
    <reference type="copyright-page" title="Copyright" href="copy.html"/>
  </guide>
</package>`;
  const ncx = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE ncx PUBLIC "-//NISO//DTD ncx 2005-1//EN" "http://www.daisy.org/z3986/2005/ncx-2005-1.dtd">
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">
  <head><meta name="dtb:uid" content="isbn-0000"/></head>
  <docTitle><text>Northern Light</text></docTitle>
  <navMap>
    <navPoint id="p1" playOrder="1"><navLabel><text>The First Morning</text></navLabel><content src="one.html"/></navPoint>
    <navPoint id="p2" playOrder="2"><navLabel><text>The Second Morning</text></navLabel><content src="two.html"/></navPoint>
  </navMap>
</ncx>`;
  return buildZip([
    ...epubHead(),
    { name: "OEBPS/content.opf", data: opf },
    { name: "OEBPS/toc.ncx", data: ncx },
    { name: "OEBPS/cover.png", data: Buffer.from([0x89, 0x50, 0x4e, 0x47]) },
    { name: "OEBPS/cover.html", data: page(`<div class="cover"><img src="cover.png" alt="Cover"/></div>`) },
    { name: "OEBPS/copy.html", data: page(paras(prose("the copyright page", 2))) },
    { name: "OEBPS/one.html", data: page(`<h2>One</h2>${paras(prose("the first morning"))}<p>Fish&nbsp;and&nbsp;chips &amp; tea.</p>`) },
    { name: "OEBPS/two.html", data: page(`<h2>Two</h2>${paras(prose("the second morning"))}`) },
    { name: "OEBPS/epilogue.html", data: page(`<h2>Epilogue</h2>${paras(prose("the epilogue"))}`) },
  ]);
}

/** A minimal EPUB 3 around the given chapter documents (path under OEBPS/ → XHTML), nav listing each. */
export function epubOf(chapters: ReadonlyArray<{ path: string; title: string; data?: string | Uint8Array } & Partial<ZipEntry>>, extra: ZipEntry[] = [], opfDoctype = ""): Buffer {
  const items = chapters.map((c, i) => `<item id="c${i}" href="${c.path}" media-type="application/xhtml+xml"/>`).join("\n");
  const refs = chapters.map((_, i) => `<itemref idref="c${i}"/>`).join("");
  const navList = chapters.map((c) => `<li><a href="${c.path}">${c.title}</a></li>`).join("");
  const opf = `<?xml version="1.0" encoding="UTF-8"?>${opfDoctype}
<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>${opfDoctype === "" ? "Generated" : "&x;Generated"}</dc:title></metadata>
<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>${items}</manifest>
<spine>${refs}</spine></package>`;
  return buildZip([
    ...epubHead(),
    { name: "OEBPS/content.opf", data: opf },
    { name: "OEBPS/nav.xhtml", data: xhtml(`<nav epub:type="toc"><ol>${navList}</ol></nav>`) },
    ...chapters.map(({ path, title: _title, ...entry }) => ({ ...entry, name: `OEBPS/${path}` })),
    ...extra,
  ]);
}

/** Raw deflate data that inflates to `bytes` zero bytes (about 1/1000 of that compressed). */
export async function deflatedZeros(bytes: number): Promise<Buffer> {
  const deflate = createDeflateRaw({ level: 9 });
  const out: Buffer[] = [];
  deflate.on("data", (chunk: Buffer) => out.push(chunk));
  const done = new Promise<void>((resolve, reject) => {
    deflate.on("end", resolve);
    deflate.on("error", reject);
  });
  const block = Buffer.alloc(1 << 20);
  for (let left = bytes; left > 0; left -= block.length) {
    const piece = left >= block.length ? block : block.subarray(0, left);
    if (!deflate.write(piece)) await new Promise((r) => deflate.once("drain", r));
  }
  deflate.end();
  await done;
  return Buffer.concat(out);
}

/** Markdown with every mark CommonMark (and GitHub tables) has. */
export const MARKDOWN_BOOK = `---
title: "The Harbour Book"
author: Someone
---

# The Harbour Book

An opening line before any chapter, with **bold**, *italic*, _underscored_ and ~~struck~~ words.

## The First Chapter

The keeper read a [guide to lamps](https://example.com/lamps "Lamps") and a [reference link][ref] by the window.
She saw an image ![a lighthouse at night](lighthouse.png) and kept \`reading\` until dusk.
A hard break follows here  
and the line goes on, with a raw <span class="x">span</span> inside.

> A quoted line from the log book,
> with a **strong** word inside the quote.

- A first item of the list
- A second item with *emphasis*
  1. A nested numbered item
  2. Another nested item
- [ ] A task not yet done

\`\`\`js
const secret = "code that is never spoken";
\`\`\`

    indented code that is never spoken

<div class="aside">
An HTML block that is never spoken.
</div>

***

## The Second Chapter

| Boat | Crew |
|------|------|
| Swift | Four |
| Gull | Three |

The Second Chapter ends with a plain sentence about boats & tides.

### A Small Section

Text of the small section stays inside the second chapter.

The Third Chapter
-----------------

The setext chapter has words too, and a link <https://example.com/autolinked> at the end.

[ref]: https://example.com/reference
`;

/** An HTML book with a head, script, style, nav, aside, a figure, entities and a table. */
export const HTML_BOOK = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Tides &amp; Lights</title>
<style>body { color: black } .x::before { content: "style text" }</style>
<script>var never = "script text never spoken"; if (1 < 2) { console.log("x") }</script>
</head>
<body>
<nav><a href="#one">Contents link never spoken</a></nav>
<h1>Tides &amp; Lights</h1>
<h2 id="one">The Caf&eacute; by the Sea</h2>
<p>The keeper opened the caf&eacute; at dawn&#8212;before the boats<br>went out to sea.</p>
<div>A block in a div ends its sentence</div><div>and this starts another one</div>
<figure><img src="x.png" alt="A picture"><figcaption>A caption never spoken</figcaption></figure>
<aside>A sidebar never spoken</aside>
<h2>Second Light</h2>
<p>Rain fell on the harbour &lt;all night&gt; long.</p>
<table><tr><th>Boat</th><th>Crew</th></tr><tr><td>Swift</td><td>Four</td></tr></table>
<h4>A minor heading</h4>
<p>The last words of the book.</p>
<noscript>Enable scripts, never spoken</noscript>
<template><p>Template text never spoken</p></template>
</body>
</html>`;
