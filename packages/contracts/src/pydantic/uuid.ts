/**
 * Reproduces how pydantic-core (2.4x, the `uuid` crate it links) parses a UUID string and the
 * exact `Display` text of the crate's parse error, which Pydantic surfaces as
 * `uuid_parsing` / "Input should be a valid UUID, <error>".
 *
 * The crate dispatches on the UTF-8 *byte* length of the input:
 *   32 → simple, 36 → hyphenated, 38 `{…}` → braced, 45 `urn:uuid:…` → URN; anything else fails.
 * On failure it builds the diagnostic from the slice it was parsing (the body for the braced and
 * URN shapes, the whole input otherwise), stripping `{…}` / `urn:uuid:` again, then reports the
 * first non-hex character (1-based byte index), a wrong simple length, a wrong group count or the
 * first group of the wrong length, in that order.
 */

export type UuidResult = { ok: true; value: string } | { ok: false; error: string };

export interface UuidOptions {
  /**
   * The `uuid` crate shortened its invalid-character text in 2026. `true` reproduces the older
   * text that pydantic-core builds linked before (e.g. Pydantic ≤ 2.12):
   * "invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `x` at 1".
   * Default `false`: "invalid character: found `x` at 1" (Pydantic 2.13).
   */
  legacyMessages?: boolean;
}

const HEX = /^[0-9a-fA-F]$/;
const HYPHENATED = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const SIMPLE = /^[0-9a-fA-F]{32}$/;
const URN = "urn:uuid:";
const BLOCK_STARTS = [0, 9, 14, 19, 24] as const;
const GROUP_LENGTHS = [8, 4, 4, 4, 12] as const;

function utf8Length(text: string): number {
  // counted without encoding (a lone surrogate counts 3 bytes, as its U+FFFD replacement would)
  return Buffer.byteLength(text, "utf8");
}

function canonical(hex32: string): string {
  const h = hex32.toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** `InvalidUuid::into_err` of the crate, applied to `input` (a whole input or a body). */
function describe(input: string, legacy: boolean): string {
  let body = input;
  let offset = 0;
  let simple = true;
  if (input.length >= 2 && input.startsWith("{") && input.endsWith("}")) {
    body = input.slice(1, -1);
    offset = 1;
    simple = false;
  } else if (input.startsWith(URN)) {
    body = input.slice(URN.length);
    offset = URN.length;
    simple = false;
  }

  let hyphens = 0;
  const bounds = [0, 0, 0, 0];
  // Every character before the first offending one is ASCII, so UTF-16 and byte indices agree.
  for (let index = 0; index < body.length; index++) {
    const ch = body[index] ?? "";
    if (ch === "-") {
      if (hyphens < 4) bounds[hyphens] = index;
      hyphens++;
    } else if (!HEX.test(ch)) {
      const cp = body.codePointAt(index) ?? 0;
      const character = String.fromCodePoint(cp);
      const expected = legacy ? "expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], " : "";
      return `invalid character: ${expected}found \`${character}\` at ${index + offset + 1}`;
    }
  }

  // Only ASCII from here on: byte length === string length.
  if (hyphens === 0 && simple) {
    return `invalid length: expected length 32 for simple format, found ${input.length}`;
  }
  if (hyphens !== 4) {
    return `invalid group count: expected 5, found ${hyphens + 1}`;
  }
  for (let i = 0; i < 4; i++) {
    const bound = bounds[i] ?? 0;
    const start = BLOCK_STARTS[i] ?? 0;
    if (bound !== (BLOCK_STARTS[i + 1] ?? 0) - 1) {
      return `invalid group length in group ${i}: expected ${GROUP_LENGTHS[i]}, found ${bound - start}`;
    }
  }
  return `invalid group length in group 4: expected 12, found ${input.length - BLOCK_STARTS[4]}`;
}

/** Parse like `uuid::Uuid::parse_str`; on success the value is the lowercase hyphenated form. */
export function parseUuid(input: string, options: UuidOptions = {}): UuidResult {
  const legacy = options.legacyMessages ?? false;
  const bytes = utf8Length(input);
  if (bytes === 32) {
    return SIMPLE.test(input) ? { ok: true, value: canonical(input) } : { ok: false, error: describe(input, legacy) };
  }
  let body: string | undefined;
  if (bytes === 36) body = input;
  else if (bytes === 38 && input.startsWith("{") && input.endsWith("}")) body = input.slice(1, -1);
  else if (bytes === 45 && input.startsWith(URN)) body = input.slice(URN.length);
  if (body === undefined) return { ok: false, error: describe(input, legacy) };
  if (HYPHENATED.test(body)) return { ok: true, value: canonical(body.replaceAll("-", "")) };
  return { ok: false, error: describe(body, legacy) };
}
