/**
 * Generated EPUB books for tests: a ZIP written from the PKWARE APPNOTE (local headers, central
 * directory, end record; entries stored or deflated), with `mimetype` first and stored as OCF asks,
 * and either an EPUB 3 navigation document or an EPUB 2 NCX only.
 */
import { crc32, deflateRawSync } from "node:zlib";

export interface TestZipEntry {
  name: string;
  data: string | Uint8Array;
  /** 0: stored; 8 (default): deflated. */
  method?: 0 | 8;
}

const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n & 0xffff);
  return b;
};
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
};

/** The bytes of a ZIP archive holding `entries` in order. */
export function buildTestZip(entries: readonly TestZipEntry[]): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, "utf8");
    const raw = Buffer.from(entry.data);
    const method = entry.method ?? 8;
    const body = method === 8 ? deflateRawSync(raw) : raw;
    const common = [u16(20), u16(0x0800), u16(method), u16(0), u16(0x21), u32(crc32(raw)), u32(body.length), u32(raw.length), u16(name.length)];
    const local = Buffer.concat([u32(0x04034b50), ...common, u16(0), name]);
    central.push(Buffer.concat([u32(0x02014b50), u16(20), ...common, u16(0), u16(0), u16(0), u16(0), u32(0), u32(offset), name]));
    parts.push(local, body);
    offset += local.length + body.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.concat([u32(0x06054b50), u16(0), u16(0), u16(entries.length), u16(entries.length), u32(directory.length), u32(offset), u16(0)]);
  return Buffer.concat([...parts, directory, end]);
}

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
  const toc: TestZipEntry =
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
  return buildTestZip([
    { name: "mimetype", data: "application/epub+zip", method: 0 },
    { name: "META-INF/container.xml", data: CONTAINER },
    { name: "OEBPS/content.opf", data: opf },
    toc,
    ...files.map((f) => ({ name: `OEBPS/${f.href}`, data: page(f.chapter, version) })),
  ]);
}
