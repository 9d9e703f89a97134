/**
 * FastAPI's handling of a JSON request body, including the exact 422 item it writes when
 * `json.loads` fails:
 *
 *   {"type":"json_invalid","loc":["body",<pos>],"msg":"JSON decode error","input":{},
 *    "ctx":{"error":"<JSONDecodeError.msg>"}}
 *
 * The fast path is `JSON.parse`. Only when it throws does a small scanner, a port of CPython's C
 * decoder (Modules/_json.c: scan_once_unicode, scanstring_unicode, _parse_object_unicode,
 * _parse_array_unicode, _match_number_unicode, plus json.decoder.JSONDecoder.decode), find
 * Python's message and position. Node's own JSON.parse messages differ across versions and are
 * never used.
 */
import type { ValidationErrorItem } from "./types.ts";

export type JsonBodyResult = { ok: true; value: unknown } | { ok: false; item: ValidationErrorItem };

export interface JsonDecodeError {
  /** `json.JSONDecodeError.msg`, e.g. "Expecting value". */
  msg: string;
  /** `json.JSONDecodeError.pos`: an index in Unicode code points, like Python's `str`. */
  pos: number;
}

export interface PythonJsonOptions {
  /**
   * CPython ≤ 3.12 has no "Illegal trailing comma before end of object/array" messages: `{"a":1,}`
   * reports "Expecting property name enclosed in double quotes" at the `}` and `[1,]` reports
   * "Expecting value" at the `]`. Default `false` (CPython 3.13+ behaviour).
   */
  legacyTrailingComma?: boolean;
}

class DecodeFailure extends Error {
  constructor(
    readonly detail: string,
    readonly index: number,
  ) {
    super(detail);
  }
}

const isWs = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isHex = (c: number): boolean =>
  isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/** UTF-16 index → code point index (how Python, and so FastAPI, counts positions in a `str`). */
export function codePointIndex(text: string, utf16Index: number): number {
  let pos = 0;
  for (let i = 0; i < utf16Index && i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < utf16Index) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    pos++;
  }
  return pos;
}

class Scanner {
  private readonly len: number;

  constructor(
    private readonly s: string,
    private readonly legacyTrailingComma: boolean,
  ) {
    this.len = s.length;
  }

  private at(i: number): number {
    return i < this.len ? this.s.charCodeAt(i) : -1;
  }

  private skipWs(i: number): number {
    while (i < this.len && isWs(this.s.charCodeAt(i))) i++;
    return i;
  }

  /** json.decoder.JSONDecoder.decode */
  decode(): void {
    const start = this.skipWs(0);
    const end = this.skipWs(this.scanValue(start));
    if (end !== this.len) throw new DecodeFailure("Extra data", end);
  }

  /** scanstring_unicode; `end` is the index after the opening quote. Returns the index after the closing quote. */
  private scanString(end: number): number {
    const begin = end - 1;
    let next = end;
    for (;;) {
      let c = -1;
      for (; next < this.len; next++) {
        c = this.s.charCodeAt(next);
        if (c === 0x22 || c === 0x5c) break;
        if (c <= 0x1f) throw new DecodeFailure("Invalid control character at", next);
      }
      if (next >= this.len) throw new DecodeFailure("Unterminated string starting at", begin);
      next++;
      if (c === 0x22) return next;
      // Backslash escape.
      if (next === this.len) throw new DecodeFailure("Unterminated string starting at", begin);
      const esc = this.s.charCodeAt(next);
      if (esc !== 0x75 /* u */) {
        // " \ / b f n r t
        if (![0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74].includes(esc)) {
          throw new DecodeFailure("Invalid \\escape", next - 1);
        }
        next++;
        continue;
      }
      // \uXXXX: CPython's check is `end >= len`, so a complete escape that is the very last thing
      // in the document is still reported as an invalid escape (at the `u`). A surrogate pair is
      // checked escape by escape with the same result, so it needs no special case here.
      const uIndex = next;
      const digitsEnd = uIndex + 1 + 4;
      if (digitsEnd >= this.len) throw new DecodeFailure("Invalid \\uXXXX escape", uIndex);
      for (let i = uIndex + 1; i < digitsEnd; i++) {
        if (!isHex(this.s.charCodeAt(i))) throw new DecodeFailure("Invalid \\uXXXX escape", uIndex);
      }
      next = digitsEnd;
    }
  }

  /** _match_number_unicode; returns the end index, or throws StopIteration-equivalent. */
  private matchNumber(start: number): number {
    const endIdx = this.len - 1;
    let idx = start;
    if (this.at(idx) === 0x2d /* - */) {
      idx++;
      if (idx > endIdx) throw new DecodeFailure("Expecting value", start);
    }
    const first = this.at(idx);
    if (first >= 0x31 && first <= 0x39) {
      idx++;
      while (idx <= endIdx && isDigit(this.at(idx))) idx++;
    } else if (first === 0x30) {
      idx++;
    } else {
      throw new DecodeFailure("Expecting value", start);
    }
    if (idx < endIdx && this.at(idx) === 0x2e && isDigit(this.at(idx + 1))) {
      idx += 2;
      while (idx <= endIdx && isDigit(this.at(idx))) idx++;
    }
    if (idx < endIdx && (this.at(idx) === 0x65 || this.at(idx) === 0x45)) {
      const eStart = idx;
      idx++;
      if (idx < endIdx && (this.at(idx) === 0x2d || this.at(idx) === 0x2b)) idx++;
      while (idx <= endIdx && isDigit(this.at(idx))) idx++;
      if (!isDigit(this.at(idx - 1))) idx = eStart;
    }
    return idx;
  }

  private literal(idx: number, word: string): boolean {
    if (idx + word.length - 1 >= this.len) return false;
    return this.s.startsWith(word, idx);
  }

  /** Reads `"key" :` plus whitespace, starting at `idx` (which must hold the quote). */
  private scanKey(idx: number): number {
    if (this.at(idx) !== 0x22) {
      throw new DecodeFailure("Expecting property name enclosed in double quotes", idx);
    }
    idx = this.skipWs(this.scanString(idx + 1));
    if (this.at(idx) !== 0x3a /* : */) throw new DecodeFailure("Expecting ':' delimiter", idx);
    return this.skipWs(idx + 1);
  }

  /**
   * scan_once_unicode without recursion (an explicit stack of open containers), so a deeply nested
   * malformed document cannot overflow the JS stack. Returns the index after the value.
   */
  private scanValue(start: number): number {
    const stack: number[] = []; // 0x5b for an open array, 0x7b for an open object
    let idx = start;
    for (;;) {
      // --- one value at idx ---
      if (idx >= this.len) throw new DecodeFailure("Expecting value", idx);
      const c = this.s.charCodeAt(idx);
      if (c === 0x22) {
        idx = this.scanString(idx + 1);
      } else if (c === 0x7b) {
        idx = this.skipWs(idx + 1);
        if (this.at(idx) === 0x7d) {
          idx++;
        } else {
          stack.push(0x7b);
          idx = this.scanKey(idx);
          continue;
        }
      } else if (c === 0x5b) {
        idx = this.skipWs(idx + 1);
        if (this.at(idx) === 0x5d) {
          idx++;
        } else {
          stack.push(0x5b);
          continue;
        }
      } else if (c === 0x6e && this.literal(idx, "null")) {
        idx += 4;
      } else if (c === 0x74 && this.literal(idx, "true")) {
        idx += 4;
      } else if (c === 0x66 && this.literal(idx, "false")) {
        idx += 5;
      } else {
        // NaN / Infinity / -Infinity are refused on purpose (see index docs): they fall through to
        // the number matcher and fail there, exactly as CPython would without those constants.
        idx = this.matchNumber(idx);
      }

      // --- after a value: close containers / find the next value ---
      for (;;) {
        const top = stack[stack.length - 1];
        if (top === undefined) return idx;
        const close = top === 0x5b ? 0x5d : 0x7d;
        idx = this.skipWs(idx);
        if (this.at(idx) === close) {
          stack.pop();
          idx++;
          continue;
        }
        if (this.at(idx) !== 0x2c /* , */) throw new DecodeFailure("Expecting ',' delimiter", idx);
        const comma = idx;
        idx = this.skipWs(idx + 1);
        if (!this.legacyTrailingComma && this.at(idx) === close) {
          throw new DecodeFailure(
            top === 0x5b
              ? "Illegal trailing comma before end of array"
              : "Illegal trailing comma before end of object",
            comma,
          );
        }
        if (top === 0x7b) idx = this.scanKey(idx);
        break;
      }
    }
  }
}

/**
 * Python's `json.loads(text)` error for a document, or `undefined` when Python would accept it.
 * NaN, Infinity and -Infinity are reported as "Expecting value" (see {@link parseJsonBody}).
 */
export function pythonJsonError(text: string, options: PythonJsonOptions = {}): JsonDecodeError | undefined {
  try {
    new Scanner(text, options.legacyTrailingComma ?? false).decode();
    return undefined;
  } catch (error) {
    if (error instanceof DecodeFailure) return { msg: error.detail, pos: codePointIndex(text, error.index) };
    throw error;
  }
}

/** The item FastAPI writes for a body `json.loads` rejects. */
export function jsonInvalidItem(error: JsonDecodeError): ValidationErrorItem {
  return {
    type: "json_invalid",
    loc: ["body", error.pos],
    msg: "JSON decode error",
    input: {},
    ctx: { error: error.msg },
  };
}

/**
 * Parse a request body the way FastAPI does for a JSON content type.
 *
 * - `text` is the body already decoded as UTF-8 by a WHATWG `TextDecoder` (what
 *   `Request.text()` / Hono's `c.req.text()` give: one leading BOM removed).
 * - An empty body is not parsed at all (FastAPI: `if body_bytes:`): the result is
 *   `{ ok: true, value: undefined }`, which {@link toValidationDetail} reports as
 *   `{"type":"missing","loc":["body"],"msg":"Field required","input":null}`. So is a literal `null`.
 * - Anything else goes through `JSON.parse`; on failure, through the CPython scanner.
 * - `NaN`, `Infinity` and `-Infinity` (which Python accepts) are refused with Python's
 *   "Expecting value" at the literal; accepting them would only move the failure to a 500 when
 *   FastAPI tries to echo them in a 422 (`allow_nan=False`).
 */
export function parseJsonBody(text: string, options: PythonJsonOptions = {}): JsonBodyResult {
  if (text === "") return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    const error = pythonJsonError(text, options) ?? { msg: "Expecting value", pos: 0 };
    return { ok: false, item: jsonInvalidItem(error) };
  }
}
