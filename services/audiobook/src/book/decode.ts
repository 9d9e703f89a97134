/**
 * The text of a markup file: decodeText's rules (UTF-8, UTF-16 with a byte order mark, binary
 * refused), and, for a file that is not UTF-8 but declares its encoding at the top (an XML
 * declaration's `encoding="…"` or a `<meta charset>`), that encoding when the platform decodes it
 * (windows-1252, ISO-8859-x, Shift_JIS, GBK, KOI8-R…). Refusals are BookInputErrors.
 */
import { BookTextError, decodeText } from "../text.ts";
import { BookInputError } from "./errors.ts";

const DECLARED = /<\?xml[^>]*\bencoding\s*=\s*["']([\w.:-]+)["']|<meta[^>]*\bcharset\s*=\s*["']?([\w.:-]+)/iu;

function refusal(error: unknown): unknown {
  if (error instanceof BookTextError && !(error instanceof BookInputError)) {
    return new BookInputError(error.code === "empty" ? "empty" : "not_text", error.message);
  }
  return error;
}

/** decodeText, its refusal as a BookInputError. */
export function decodePlain(bytes: Uint8Array): string {
  try {
    return decodeText(bytes);
  } catch (error) {
    throw refusal(error);
  }
}

/** A markup file's text: UTF-8/UTF-16 as decodeText, else the encoding it declares. */
export function decodeMarkup(bytes: Uint8Array): string {
  try {
    return decodeText(bytes);
  } catch (error) {
    const head = Buffer.from(bytes.subarray(0, 1024)).toString("latin1");
    const label = DECLARED.exec(head);
    const encoding = label?.[1] ?? label?.[2];
    if (encoding !== undefined && !bytes.includes(0)) {
      try {
        const decoder = new TextDecoder(encoding, { fatal: true });
        if (decoder.encoding !== "utf-8" && !decoder.encoding.startsWith("utf-16")) return decoder.decode(bytes);
      } catch {
        // Unknown label or invalid bytes for it: refused below like any other undecodable file.
      }
    }
    throw refusal(error);
  }
}
