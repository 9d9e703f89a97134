/**
 * Generated EPUB books for tests: a ZIP written from the PKWARE APPNOTE (local headers, central
 * directory, end record; entries stored or deflated), with `mimetype` first and stored as OCF asks,
 * and either an EPUB 3 navigation document or an EPUB 2 NCX only.
 */
import { buildZip, type ZipEntry } from "./zip.ts";

/** The ZIP writer of these books (see zip.ts, which can also make headers lie). */
export { buildZip as buildTestZip, type ZipEntry as TestZipEntry } from "./zip.ts";

export interface TestBookChapter {
  title: string;
  paragraphs: readonly string[];
}

const escapeXml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

const CONTAINER = `<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>`;

function page(chapter: TestBookChapter, version: 2 | 3): string {
  const doctype = version === 3 ? "<!DOCTYPE html>" : `<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">`;
  return `<?xml version="1.0" encoding="UTF-8"?>
${doctype}
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>${escapeXml(chapter.title)}</title></head>
<body><h1>${escapeXml(chapter.title)}</h1>
${chapter.paragraphs.map((p) => `<p>${escapeXml(p)}</p>`).join("\n")}
</body></html>`;
}

/**
 * An EPUB of `chapters` in order, one XHTML file each: version 3 lists them in a navigation document
 * (`nav.xhtml`, `epub:type="toc"`), version 2 only in an NCX (`toc.ncx`, no nav).
 */
export function makeTestEpub(options: { version: 2 | 3; title: string; chapters: readonly TestBookChapter[] }): Buffer {
  const { version, chapters } = options;
  const files = chapters.map((c, i) => ({ id: `c${i + 1}`, href: `text/chapter-${i + 1}.xhtml`, chapter: c }));
  const navItem = version === 3 ? `<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>` : `<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>`;
  const opf = `<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="${version}.0" unique-identifier="uid">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="uid">urn:uuid:0b6a1e9c-2a61-4f4e-9b0e-${version}00000000000</dc:identifier>
    <dc:title>${escapeXml(options.title)}</dc:title><dc:language>en</dc:language>
  </metadata>
  <manifest>${navItem}${files.map((f) => `<item id="${f.id}" href="${f.href}" media-type="application/xhtml+xml"/>`).join("")}</manifest>
  <spine${version === 2 ? ` toc="ncx"` : ""}>${files.map((f) => `<itemref idref="${f.id}"/>`).join("")}</spine>
</package>`;
  const toc: ZipEntry =
    version === 3
      ? {
          name: "OEBPS/nav.xhtml",
          data: `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head><title>Contents</title></head>
<body><nav epub:type="toc" id="toc"><h1>Contents</h1><ol>${files.map((f) => `<li><a href="${f.href}">${escapeXml(f.chapter.title)}</a></li>`).join("")}</ol></nav></body></html>`,
        }
      : {
          name: "OEBPS/toc.ncx",
          data: `<?xml version="1.0" encoding="UTF-8"?>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">
  <head><meta name="dtb:uid" content="uid"/></head><docTitle><text>${escapeXml(options.title)}</text></docTitle>
  <navMap>${files.map((f, i) => `<navPoint id="p${i + 1}" playOrder="${i + 1}"><navLabel><text>${escapeXml(f.chapter.title)}</text></navLabel><content src="${f.href}"/></navPoint>`).join("")}</navMap>
</ncx>`,
        };
  return buildZip([
    { name: "mimetype", data: "application/epub+zip", method: 0 },
    { name: "META-INF/container.xml", data: CONTAINER },
    { name: "OEBPS/content.opf", data: opf },
    toc,
    ...files.map((f) => ({ name: `OEBPS/${f.href}`, data: page(f.chapter, version) })),
  ]);
}
