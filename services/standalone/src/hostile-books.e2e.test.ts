/**
 * Hostile EPUBs through the HTTP API, to the shipped entry point (gateway and audio book worker in one
 * process), one after another and then an honest book, all to the same running process: an external
 * entity naming /etc/passwd leaks nothing into the record; a chapter whose headers claim 2 KB but which
 * inflates to 400 MB fails within a minute, in plain words, on its first delivery, the process tree far
 * below 1.5 GB; entry names that climb out of the archive (`../`, absolute) write nothing outside; and the
 * honest book sent after them completes with its chapters.
 */
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { createDeflateRaw } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildZip, freePort, tempDir, type ZipEntry } from "@voiceloc/testing";
import { createEnglishBook, followSampled, logLines, peakResidentBytes, signalAndWait, startService, type SampledRun, type ServiceProcess } from "./testing/processes.ts";

const KEY = "hostile-books-key-alice-1";
const headers = { "API-KEY": KEY };
const GiB = 1024 * 1024 * 1024;
const MB = 1024 * 1024;

const CONTAINER = `<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>`;

/** Two sentences said twice: over the 30 words a page outside a table of contents needs to count as prose. */
const SENTENCES = "The keeper walked along the quiet harbour and counted the boats as they came home. The lamp was lit at dusk. ".repeat(2).trim();

const page = (title: string, body: string, prolog = "") => `<?xml version="1.0" encoding="UTF-8"?>
${prolog}<html xmlns="http://www.w3.org/1999/xhtml"><head><title>${title}</title></head>
<body><h1>${title}</h1><p>${body}</p></body></html>`;

/** An EPUB 3 without a nav (chapter titles from each page's first heading) of the given pages, in spine order. */
function epub(pages: ReadonlyArray<{ href: string; entry?: string; data?: string; deflated?: Buffer; declaredSize?: number }>, opfProlog = ""): Buffer {
  const opf = `<?xml version="1.0" encoding="UTF-8"?>
${opfProlog}<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="uid">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="uid">urn:uuid:hostile</dc:identifier><dc:title>Hostile</dc:title><dc:language>en</dc:language></metadata>
  <manifest>${pages.map((p, i) => `<item id="p${i}" href="${p.href}" media-type="application/xhtml+xml"/>`).join("")}</manifest>
  <spine>${pages.map((_, i) => `<itemref idref="p${i}"/>`).join("")}</spine>
</package>`;
  const entries: ZipEntry[] = [
    { name: "mimetype", data: "application/epub+zip", method: 0 },
    { name: "META-INF/container.xml", data: CONTAINER },
    { name: "OEBPS/content.opf", data: opf },
    ...pages.map((p) => ({
      name: p.entry ?? `OEBPS/${p.href}`,
      ...(p.deflated ? { deflated: p.deflated, method: 8 as const, declaredSize: p.declaredSize } : { data: p.data ?? "" }),
    })),
  ];
  return buildZip(entries);
}

/** `bytes` zeros, deflated as they stream (a few hundred KB for 400 MB), never held whole. */
async function deflatedZeros(bytes: number): Promise<Buffer> {
  const block = Buffer.alloc(MB);
  const blocks = (function* () {
    for (let done = 0; done < bytes; done += block.length) yield block;
  })();
  return buffer(Readable.from(blocks).pipe(createDeflateRaw({ level: 9 })));
}

describe("hostile EPUBs, then an honest book, to one running audio book service", () => {
  let dir: { path: string; cleanup: () => Promise<void> };
  let service: ServiceProcess;
  let base: string;
  const tag = `zipslip-${process.pid}-${Date.now()}`;

  beforeAll(async () => {
    dir = await tempDir("voiceloc-hostile-books-");
    const entity = `<!DOCTYPE html [<!ENTITY secret SYSTEM "file:///etc/passwd">]>\n`;
    await writeFile(
      join(dir.path, "entity.epub"),
      epub([{ href: "one.xhtml", data: page("Harbour &secret;", `${SENTENCES} &secret;`, entity) }], `<!DOCTYPE package [<!ENTITY secret SYSTEM "file:///etc/passwd">]>\n`),
    );
    const bomb = await deflatedZeros(400 * MB);
    expect(bomb.length).toBeLessThan(2 * MB);
    await writeFile(join(dir.path, "bomb.epub"), epub([{ href: "a.xhtml", data: page("Before", SENTENCES) }, { href: "bomb.xhtml", deflated: bomb, declaredSize: 2048 }]));
    await writeFile(
      join(dir.path, "slip.epub"),
      epub([
        { href: `../../../${tag}.xhtml`, entry: `../../../${tag}.xhtml`, data: page("Outside", SENTENCES) },
        { href: `inside.xhtml`, data: page("Inside", SENTENCES) },
      ]),
    );
    await writeFile(
      join(dir.path, "honest.epub"),
      epub([
        { href: "one.xhtml", data: page("Morning", SENTENCES) },
        { href: "two.xhtml", data: page("Evening", SENTENCES) },
      ]),
    );
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    service = await startService(
      "gateway,audiobook",
      { DATA_DIR: join(dir.path, "data"), MEDIA_ROOT: dir.path, PUBLIC_BASE_URL: base, VOICELOC_API_KEYS: `alice:${KEY}`, CHILD_MEMORY_LIMIT_MB: "1024" },
      port,
    );
  }, 240_000);

  afterAll(async () => {
    if (service) await signalAndWait(service, "SIGTERM");
    await dir?.cleanup();
  });

  /** Creates the book and follows it to its end, sampling the process tree's resident memory meanwhile. */
  const book = (file: string): Promise<SampledRun> =>
    followSampled(
      service,
      () => createEnglishBook(base, KEY, file, file),
      async (id) => (await (await fetch(`${base}/v1/audio_books/${id}`, { headers })).json()) as Record<string, unknown>,
    );

  const titles = (record: Record<string, unknown>) => ((record.chapters as Array<{ title: string }> | null) ?? []).map((c) => c.title);

  it("an external entity to /etc/passwd is never read: the book completes and nothing of the file reaches it", async () => {
    const { record } = await book("entity.epub");
    expect(record.task_status, String(record.task_error)).toBe("completed");
    expect(JSON.stringify(record)).not.toMatch(/root:|\/bin\/(ba)?sh|nologin/);
    expect(titles(record)).toHaveLength(1);
    expect(titles(record)[0]).toMatch(/^Harbour/);
  }, 300_000);

  it("a chapter claiming 2 KB that inflates to 400 MB fails within a minute, in plain words, once, memory bounded", async () => {
    const run = await book("bomb.epub");
    expect(run.record.task_status, JSON.stringify(run.record)).toBe("failed");
    expect(run.record.task_error).toMatch(/^The EPUB file is damaged: .*bomb\.xhtml holds a different amount of data than its header says \(a decompression bomb\?\)\.$/);
    expect(run.elapsed).toBeLessThan(60_000);
    const deliveries = logLines(service)
      .filter((line) => line.taskId === run.id && typeof line.deliveryCount === "number")
      .map((line) => line.deliveryCount as number);
    expect(Math.max(...deliveries)).toBe(1);
    expect(run.peakTree).toBeGreaterThan(0);
    expect(run.peakTree).toBeLessThan(1.5 * GiB);
    expect(await peakResidentBytes(service.child.pid ?? 0)).toBeLessThan(1.5 * GiB);
    process.stdout.write(`EPUB bomb refused in ${run.elapsed} ms; peak resident of the process tree ${(run.peakTree / MB).toFixed(0)} MiB\n`);
  }, 300_000);

  it("entry names that climb out of the archive are names only: only the inside page is read and nothing is written outside", async () => {
    const { record } = await book("slip.epub");
    expect(record.task_status, String(record.task_error)).toBe("completed");
    expect(titles(record)).toEqual(["Inside"]);
    for (const path of [resolve(dir.path, `../../../${tag}.xhtml`), resolve(tmpdir(), `${tag}.xhtml`), resolve(process.cwd(), `../../../${tag}.xhtml`), `/${tag}.xhtml`]) {
      expect(existsSync(path), path).toBe(false);
    }
  }, 300_000);

  it("an honest book sent after them completes with its chapters", async () => {
    const { record } = await book("honest.epub");
    expect(record.task_status, String(record.task_error)).toBe("completed");
    expect(titles(record)).toEqual(["Morning", "Evening"]);
  }, 300_000);
});
