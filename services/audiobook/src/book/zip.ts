/**
 * A ZIP archive read in memory with yauzl, bounded: the number of entries (from the central
 * directory's count, and again while listing), and the bytes inflated, counted as they stream out of
 * the decompressor, never trusting the sizes the entry headers declare. Only entries asked for are
 * inflated; nothing is ever written to disk, and entry names are only keys (a `../` or absolute name
 * is a name like any other: path resolution happens on hrefs, inside the archive, in epub.ts).
 */
import yauzl from "yauzl";
import { BookInputError } from "./errors.ts";

export interface ArchiveLimits {
  maxEntries: number;
  maxUnpackedBytes: number;
  signal?: AbortSignal;
}

const damaged = (what: string) => new BookInputError("damaged", `The EPUB file is damaged: ${what}.`);

const megabytes = (n: number) => `${Math.round(n / 1_000_000).toLocaleString("en")} MB`;

function tooLarge(limit: number): BookInputError {
  return new BookInputError(
    "too_large",
    `The EPUB unpacks to more than ${megabytes(limit)}, the limit for a book; it may be a decompression bomb.`,
  );
}

export class BookArchive {
  private unpacked = 0;

  private constructor(
    private readonly zip: yauzl.ZipFile,
    private readonly entries: ReadonlyMap<string, yauzl.Entry>,
    private readonly limits: ArchiveLimits,
  ) {}

  /** Lists the archive's entries, refusing more than `maxEntries` before reading them. */
  static async open(bytes: Buffer, limits: ArchiveLimits): Promise<BookArchive> {
    limits.signal?.throwIfAborted();
    let zip: yauzl.ZipFile;
    try {
      zip = await yauzl.fromBufferPromise(bytes, { lazyEntries: true, decodeStrings: false, validateEntrySizes: true });
    } catch {
      throw damaged("it is not a readable ZIP archive");
    }
    const tooMany = () =>
      new BookInputError(
        "too_large",
        `The EPUB holds more than ${limits.maxEntries.toLocaleString("en")} files, the limit for a book.`,
      );
    if (zip.entryCount > limits.maxEntries) throw tooMany();
    const entries = new Map<string, yauzl.Entry>();
    await new Promise<void>((resolve, reject) => {
      let count = 0;
      zip.on("entry", (entry: yauzl.Entry) => {
        if (limits.signal?.aborted) return reject(limits.signal.reason as Error);
        if (++count > limits.maxEntries) return reject(tooMany());
        // decodeStrings is off (so yauzl does not refuse the whole archive over one odd name); decode here.
        const raw = entry.fileName as unknown as Buffer;
        const name = yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, raw, entry.extraFields, false);
        if (!entries.has(name)) entries.set(name, entry);
        zip.readEntry();
      });
      zip.on("end", () => resolve());
      zip.on("error", () => reject(damaged("its list of files cannot be read")));
      zip.readEntry();
    });
    return new BookArchive(zip, entries, limits);
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  /**
   * The inflated bytes of one entry. Every byte counts towards `maxUnpackedBytes` across the whole
   * archive: past it, the stream is destroyed at once and the book refused.
   */
  async read(name: string): Promise<Buffer> {
    const entry = this.entries.get(name);
    if (entry === undefined) throw damaged(`it names ${name}, which is not in the archive`);
    const { signal, maxUnpackedBytes } = this.limits;
    signal?.throwIfAborted();
    if (entry.isEncrypted()) throw new BookInputError("protected", "The EPUB is encrypted, so its text cannot be read.");
    if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) {
      throw damaged(`${name} is compressed with a method EPUB does not allow`);
    }
    // A declared size past the bound is refused before inflating (the real one is counted anyway).
    if (this.unpacked + entry.uncompressedSize > maxUnpackedBytes) throw tooLarge(maxUnpackedBytes);
    const stream = await new Promise<NodeJS.ReadableStream & { destroy(): void }>((resolve, reject) => {
      this.zip.openReadStream(entry, (err, s) => (err ? reject(damaged(`${name} cannot be unpacked`)) : resolve(s)));
    });
    return await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let settled = false;
      const finish = (error: Error | null, value?: Buffer) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener("abort", onAbort);
        if (error) {
          stream.destroy();
          chunks.length = 0;
          reject(error);
        } else resolve(value ?? Buffer.alloc(0));
      };
      const onAbort = () => finish(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
      signal?.addEventListener("abort", onAbort, { once: true });
      stream.on("data", (chunk: Buffer) => {
        this.unpacked += chunk.length;
        if (this.unpacked > maxUnpackedBytes) return finish(tooLarge(maxUnpackedBytes));
        chunks.push(chunk);
      });
      stream.on("error", (error: Error) =>
        finish(
          /too many bytes|too few bytes/u.test(error.message)
            ? damaged(`${name} holds a different amount of data than its header says (a decompression bomb?)`)
            : damaged(`${name} cannot be unpacked`),
        ),
      );
      stream.on("end", () => finish(null, Buffer.concat(chunks)));
    });
  }

  close(): void {
    this.zip.close();
  }
}
