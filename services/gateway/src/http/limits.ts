/**
 * Bounds on what a client can make the gateway hold or echo: JSON nesting of request bodies and
 * the `input` echoed in 422 items. Documented in docs/api.md ("Hostile input") and the OpenAPI description.
 */

/** Deepest nesting of arrays and objects accepted in a JSON request body. */
export const MAX_JSON_DEPTH = 64;

/** Bounds of the `input` echoed in a 422 item. */
export const ECHO_LIMITS = {
  /** Containers nested deeper than this are replaced by {@link TRUNCATED}. */
  depth: 3,
  /** Longest string echoed, in characters (code points); longer ones are cut and end with `…`. */
  stringLength: 200,
  /** Array items / object members echoed per container; the rest are left out. */
  items: 20,
  /** Values echoed in one `input` in all; past this, containers become {@link TRUNCATED}. */
  nodes: 100,
} as const;

/** What stands in for a part of an echoed input that was cut. */
export const TRUNCATED = "…";

/**
 * Where (as a UTF-16 index) a JSON text opens its container number `maxDepth + 1`, or `undefined`
 * when it never nests deeper than `maxDepth`. Counts `[` and `{` outside strings; works on
 * malformed text too (it only bounds the nesting, the decoder reports other problems).
 */
export function excessNestingAt(text: string, maxDepth = MAX_JSON_DEPTH): number | undefined {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      depth++;
      if (depth > maxDepth) return i;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      if (depth > 0) depth--;
    }
  }
  return undefined;
}

function cutString(value: string): string {
  if (value.length <= ECHO_LIMITS.stringLength) return value;
  const points = Array.from(value.slice(0, ECHO_LIMITS.stringLength * 2)).slice(0, ECHO_LIMITS.stringLength);
  return points.length < ECHO_LIMITS.stringLength ? value : `${points.join("")}${TRUNCATED}`;
}

/**
 * A copy of a value echoed as a 422 item's `input`, bounded in depth, string length, items per
 * container and values in all (see {@link ECHO_LIMITS}), so a deep or huge body can neither
 * overflow the stack nor be echoed back in full. Recursion depth is bounded by `ECHO_LIMITS.depth`.
 */
export function boundedInput(value: unknown): unknown {
  let budget: number = ECHO_LIMITS.nodes;
  const copy = (v: unknown, depth: number): unknown => {
    budget--;
    if (typeof v === "string") return cutString(v);
    if (v === null || typeof v !== "object") return v;
    if (depth >= ECHO_LIMITS.depth || budget <= 0) return TRUNCATED;
    if (Array.isArray(v)) {
      const out: unknown[] = [];
      for (const item of v.slice(0, ECHO_LIMITS.items)) {
        if (budget <= 0) break;
        out.push(copy(item, depth + 1));
      }
      return out;
    }
    const out: Record<string, unknown> = {};
    let count = 0;
    for (const key in v) {
      if (!Object.hasOwn(v, key)) continue;
      if (count++ >= ECHO_LIMITS.items || budget <= 0) break;
      Object.defineProperty(out, cutString(key), {
        value: copy((v as Record<string, unknown>)[key], depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  };
  return copy(value, 0);
}

/** 422 items with every `input` bounded (see {@link boundedInput}). */
export function boundedItems<T extends { input?: unknown }>(items: readonly T[]): T[] {
  return items.map((item) => ("input" in item ? { ...item, input: boundedInput(item.input) } : item));
}
