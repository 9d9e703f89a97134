/**
 * Python's `repr()` for the values Pydantic quotes in messages (`'French'`), and the
 * "a, b or c" joining pydantic-core uses for `expected` in enum / literal / scheme errors.
 */

// Characters `str.isprintable()` rejects: categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs other than " ".
const NON_PRINTABLE = /[\p{C}\p{Z}]/u;

function escapeCodePoint(cp: number): string {
  if (cp < 0x100) return `\\x${cp.toString(16).padStart(2, "0")}`;
  if (cp < 0x10000) return `\\u${cp.toString(16).padStart(4, "0")}`;
  return `\\U${cp.toString(16).padStart(8, "0")}`;
}

/** `repr(s)` for a Python `str`. */
export function pyStrRepr(value: string): string {
  const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of value) {
    const cp = ch.codePointAt(0) ?? 0;
    if (ch === quote || ch === "\\") out += `\\${ch}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch !== " " && NON_PRINTABLE.test(ch)) out += escapeCodePoint(cp);
    else out += ch;
  }
  return out + quote;
}

/** `repr()` of a JSON-like scalar the way Python prints it. */
export function pyRepr(value: string | number | boolean | null): string {
  if (typeof value === "string") return pyStrRepr(value);
  if (value === null) return "None";
  if (typeof value === "boolean") return value ? "True" : "False";
  return String(value);
}

/** `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'` — pydantic-core's `expected_repr_name`. */
export function joinExpected(values: readonly (string | number | boolean | null)[]): string {
  const reprs = values.map(pyRepr);
  if (reprs.length <= 1) return reprs.join("");
  return `${reprs.slice(0, -1).join(", ")} or ${reprs[reprs.length - 1]}`;
}
