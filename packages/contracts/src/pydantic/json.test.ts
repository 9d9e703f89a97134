/**
 * Positions and messages are CPython's `json.JSONDecodeError.pos` / `.msg` (the C decoder that
 * `json.loads` uses). The tables from "CPython's own test suite" are Lib/test/test_json/test_fail.py
 * (3.13+); the rest were captured with `json.loads`.
 */
import { describe, expect, it } from "vitest";
import { codePointIndex, parseJsonBody, pythonJsonError } from "./json.ts";

function invalid(pos: number, error: string) {
  return {
    ok: false,
    item: { type: "json_invalid", loc: ["body", pos], msg: "JSON decode error", input: {}, ctx: { error } },
  };
}

describe("parseJsonBody", () => {
  it("returns the parsed value on the fast path", () => {
    expect(parseJsonBody('{"a": [1, 2.5, "x"], "b": null}')).toEqual({ ok: true, value: { a: [1, 2.5, "x"], b: null } });
    expect(parseJsonBody("null")).toEqual({ ok: true, value: null });
  });

  it("treats an empty body as no body (FastAPI does not call json.loads)", () => {
    expect(parseJsonBody("")).toEqual({ ok: true, value: undefined });
  });

  it.each([
    ['{"a":}', 5, "Expecting value"],
    ['{"a" 1}', 5, "Expecting ':' delimiter"],
    ["{'a':1}", 1, "Expecting property name enclosed in double quotes"],
    ["[1,2", 4, "Expecting ',' delimiter"],
    ['{"a":1} x', 8, "Extra data"],
  ])("%s → FastAPI's json_invalid item", (text, pos, error) => {
    expect(parseJsonBody(text)).toEqual(invalid(pos, error));
  });

  it("writes exactly FastAPI's body", () => {
    const result = parseJsonBody('{"a":}');
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(JSON.stringify({ detail: [result.item] })).toBe(
        '{"detail":[{"type":"json_invalid","loc":["body",5],"msg":"JSON decode error","input":{},"ctx":{"error":"Expecting value"}}]}',
      );
    }
  });

  it("refuses NaN / Infinity / -Infinity (Python would accept them, then fail to echo them)", () => {
    expect(parseJsonBody("NaN")).toEqual(invalid(0, "Expecting value"));
    expect(parseJsonBody("Infinity")).toEqual(invalid(0, "Expecting value"));
    expect(parseJsonBody('{"a": -Infinity}')).toEqual(invalid(6, "Expecting value"));
  });

  it("does not strip a BOM left in the text (as after a second BOM in the bytes)", () => {
    expect(parseJsonBody("\ufeff{}")).toEqual(invalid(0, "Expecting value"));
  });

  it("survives very deep malformed nesting", () => {
    expect(parseJsonBody("[".repeat(200_000))).toEqual(invalid(200_000, "Expecting value"));
    expect(parseJsonBody(`${"[".repeat(100_000)}1,]`)).toEqual(invalid(100_001, "Illegal trailing comma before end of array"));
  });
});

describe("pythonJsonError", () => {
  const cases: [string, string, number][] = [
    [" ", "Expecting value", 1],
    ['["a\\qb"]', "Invalid \\escape", 3],
    ['{"a": "\\x"}', "Invalid \\escape", 7],
    ['"\u0001"', "Invalid control character at", 1],
    ['"abc', "Unterminated string starting at", 0],
    ['["a\\', "Unterminated string starting at", 1],
    ['"\\u12', "Invalid \\uXXXX escape", 2],
    ['["\\u1234', "Invalid \\uXXXX escape", 3],
    ['"\\ud800\\uzzzz"', "Invalid \\uXXXX escape", 8],
    ["nul", "Expecting value", 0],
    ["tru", "Expecting value", 0],
    ["True", "Expecting value", 0],
    ["[1 2]", "Expecting ',' delimiter", 3],
    ["[-]", "Expecting value", 1],
    ["-", "Expecting value", 0],
    ["1.", "Extra data", 1],
    ["1e", "Extra data", 1],
    ["1e+", "Extra data", 1],
    ['{"a":1}}', "Extra data", 7],
    ["[[[[[", "Expecting value", 5],
    ['{"a": [1, {"b": null}], "c": }', "Expecting value", 29],
    ['\t\n {"a" : 1 ,\n "b" 2}', "Expecting ':' delimiter", 19],
  ];
  it.each(cases)("%j → %s at %i", (text, msg, pos) => {
    expect(pythonJsonError(text)).toEqual({ msg, pos });
  });

  it("counts positions in code points, like a Python str", () => {
    expect(pythonJsonError('"😀\u0001"')).toEqual({ msg: "Invalid control character at", pos: 2 });
    expect(pythonJsonError('["😀", 01]')).toEqual({ msg: "Expecting ',' delimiter", pos: 7 });
    expect(pythonJsonError('{"😀😀": tru}')).toEqual({ msg: "Expecting value", pos: 7 });
  });

  it("accepts what Python accepts", () => {
    expect(pythonJsonError('"\\u1234"')).toBeUndefined();
    expect(pythonJsonError('{"a": [1, -0.5e+3, true, false, null, "\\ud83d\\ude00"]}')).toBeUndefined();
  });

  describe("CPython's own test suite (test_fail.py)", () => {
    const truncated: [string, string, number][] = [
      ["", "Expecting value", 0],
      ["[", "Expecting value", 1],
      ["[42", "Expecting ',' delimiter", 3],
      ["[42,", "Expecting value", 4],
      ['["', "Unterminated string starting at", 1],
      ['["spam', "Unterminated string starting at", 1],
      ['["spam"', "Expecting ',' delimiter", 7],
      ['["spam",', "Expecting value", 8],
      ["{", "Expecting property name enclosed in double quotes", 1],
      ['{"', "Unterminated string starting at", 1],
      ['{"spam', "Unterminated string starting at", 1],
      ['{"spam"', "Expecting ':' delimiter", 7],
      ['{"spam":', "Expecting value", 8],
      ['{"spam":42', "Expecting ',' delimiter", 10],
      ['{"spam":42,', "Expecting property name enclosed in double quotes", 11],
      ['"', "Unterminated string starting at", 0],
      ['"spam', "Unterminated string starting at", 0],
    ];
    const unexpected: [string, string, number][] = [
      ["[,", "Expecting value", 1],
      ['{"spam":[}', "Expecting value", 9],
      ["[42:", "Expecting ',' delimiter", 3],
      ['[42 "spam"', "Expecting ',' delimiter", 4],
      ["[42,]", "Illegal trailing comma before end of array", 3],
      ['{"spam":[42}', "Expecting ',' delimiter", 11],
      ['["]', "Unterminated string starting at", 1],
      ['["spam":', "Expecting ',' delimiter", 7],
      ['["spam",]', "Illegal trailing comma before end of array", 7],
      ["{:", "Expecting property name enclosed in double quotes", 1],
      ["{,", "Expecting property name enclosed in double quotes", 1],
      ["{42", "Expecting property name enclosed in double quotes", 1],
      ["[{]", "Expecting property name enclosed in double quotes", 2],
      ['{"spam",', "Expecting ':' delimiter", 7],
      ['{"spam"}', "Expecting ':' delimiter", 7],
      ['[{"spam"]', "Expecting ':' delimiter", 8],
      ['{"spam":}', "Expecting value", 8],
      ['[{"spam":]', "Expecting value", 9],
      ['{"spam":42 "ham"', "Expecting ',' delimiter", 11],
      ['[{"spam":42]', "Expecting ',' delimiter", 11],
      ['{"spam":42,}', "Illegal trailing comma before end of object", 10],
      ['{"spam":42 , }', "Illegal trailing comma before end of object", 11],
      ["[123  , ]", "Illegal trailing comma before end of array", 6],
    ];
    const extra: [string, string, number][] = [
      ["[]]", "Extra data", 2],
      ["{}}", "Extra data", 2],
      ["[],[]", "Extra data", 2],
      ["{},{}", "Extra data", 2],
      ['42,"spam"', "Extra data", 2],
      ['"spam",42', "Extra data", 6],
    ];
    const linecol: [string, string, number][] = [
      ["!", "Expecting value", 0],
      [" !", "Expecting value", 1],
      ["\n!", "Expecting value", 1],
      ["\n  \n\n     !", "Expecting value", 10],
    ];
    it.each([...truncated, ...unexpected, ...extra, ...linecol])("%j → %s at %i", (text, msg, pos) => {
      expect(pythonJsonError(text)).toEqual({ msg, pos });
    });
  });

  it("reproduces CPython ≤ 3.12 trailing-comma messages on request", () => {
    const legacy = { legacyTrailingComma: true };
    expect(pythonJsonError('{"a":1,}', legacy)).toEqual({ msg: "Expecting property name enclosed in double quotes", pos: 7 });
    expect(pythonJsonError("[1,]", legacy)).toEqual({ msg: "Expecting value", pos: 3 });
    expect(parseJsonBody("[1,]", legacy)).toEqual(invalid(3, "Expecting value"));
    expect(parseJsonBody("[1,]")).toEqual(invalid(2, "Illegal trailing comma before end of array"));
  });
});

describe("codePointIndex", () => {
  it("counts positions as Python does: a character outside the BMP (two UTF-16 units) is one", () => {
    expect(codePointIndex("abc", 2)).toBe(2);
    expect(codePointIndex("😀x", 2)).toBe(1);
    expect(codePointIndex("😀x", 3)).toBe(2);
    // an index inside a pair, a lone surrogate and an index past the end
    expect(codePointIndex("😀x", 1)).toBe(1);
    expect(codePointIndex("\ud800x", 2)).toBe(2);
    expect(codePointIndex("ab", 10)).toBe(2);
  });
});
