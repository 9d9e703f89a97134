import { describe, expect, it } from "vitest";
import { joinExpected, pyRepr, pyStrRepr } from "./repr.ts";

describe("pyStrRepr (Python repr of str)", () => {
  it.each([
    ["French", "'French'"],
    ["it's", `"it's"`],
    ['a"b', `'a"b'`],
    [`it's "x"`, `'it\\'s "x"'`],
    ["a\\b", "'a\\\\b'"],
    ["a\nb\r\t", "'a\\nb\\r\\t'"],
    ["\u0000\u007f\u0085\u00a0", "'\\x00\\x7f\\x85\\xa0'"],
    ["\u2028\ufeff\u200b", "'\\u2028\\ufeff\\u200b'"],
    ["\u{e0001}", "'\\U000e0001'"],
    ["é😀 ", "'é😀 '"],
  ])("%j → %s", (value, expected) => {
    expect(pyStrRepr(value)).toBe(expected);
  });
});

describe("joinExpected", () => {
  it("joins like pydantic-core", () => {
    expect(joinExpected(["a"])).toBe("'a'");
    expect(joinExpected(["a", "b"])).toBe("'a' or 'b'");
    expect(joinExpected(["French", "English", "Urdu"])).toBe("'French', 'English' or 'Urdu'");
    expect(joinExpected([1, true, null])).toBe("1, True or None");
    expect(pyRepr(2.5)).toBe("2.5");
  });
});
