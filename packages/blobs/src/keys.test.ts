import { describe, expect, it } from "vitest";
import { InvalidBlobKeyError } from "./errors.ts";
import { ACCOUNT_KEY_SEGMENT_LENGTH, MAX_BLOB_KEY_LENGTH, accountKeySegment, isValidBlobKey, validateBlobKey, validateBlobPrefix } from "./keys.ts";

describe("validateBlobKey", () => {
  it.each([
    "a",
    "tasks/123/chunks/0001.wav",
    "A-Z_a.z/0-9",
    "x/..y/y..",
    ".hidden/file",
    "a".repeat(MAX_BLOB_KEY_LENGTH),
  ])("accepts %j", (key) => {
    expect(validateBlobKey(key)).toBe(key);
    expect(isValidBlobKey(key)).toBe(true);
  });

  it.each([
    ["", "empty"],
    ["../x", "contains a .. segment"],
    ["a/../../b", "contains a .. segment"],
    ["a/..", "contains a .. segment"],
    ["..", "contains a .. segment"],
    ["/etc/passwd", "absolute (starts with /)"],
    ["a\\b", "contains a backslash"],
    ["..\\x", "contains a backslash"],
    ["a\u0000b", "contains NUL"],
    ["a\tb", "contains a control character"],
    ["a\u007fb", "contains a control character"],
    ["a//b", "empty path segment (//)"],
    ["a/", "empty path segment (//)"],
    ["./a", "contains a . segment"],
    ["a b", "contains a character outside [A-Za-z0-9._/-]"],
    ["a%2e%2e/b", "contains a character outside [A-Za-z0-9._/-]"],
    ["caf\u00e9", "contains a character outside [A-Za-z0-9._/-]"],
    ["a:b", "contains a character outside [A-Za-z0-9._/-]"],
    ["a".repeat(MAX_BLOB_KEY_LENGTH + 1), `longer than ${MAX_BLOB_KEY_LENGTH} characters`],
  ])("refuses %j: %s", (key, reason) => {
    expect(isValidBlobKey(key)).toBe(false);
    let error: unknown;
    try {
      validateBlobKey(key);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidBlobKeyError);
    expect(error).toMatchObject({ name: "InvalidBlobKeyError", code: "invalid_blob_key", reason });
    // control characters never reach the message raw
    expect((error as Error).message).not.toMatch(/[\u0000-\u001f]/);
  });
});

describe("validateBlobPrefix", () => {
  it.each(["", "tasks/", "tasks/1/chunks/", "tasks/1", "t"])("accepts %j", (prefix) => {
    expect(validateBlobPrefix(prefix)).toBe(prefix);
  });

  it.each(["/", "../", "a/../", "a//", "/tasks/", "a\\", "a/./"])("refuses %j", (prefix) => {
    expect(() => validateBlobPrefix(prefix)).toThrow(InvalidBlobKeyError);
  });
});

describe("accountKeySegment", () => {
  const ids = ["alice", "carol@example.com", "..", ".", "a/b", "a", "A", "a\\b", "%2e%2e", "a b", "ünïcödé", "\uD800", "\uDFFF", "x".repeat(128)];

  it.each(ids)("makes one valid key segment of fixed length for %j", (id) => {
    const segment = accountKeySegment(id);
    expect(segment).toMatch(new RegExp(`^[0-9a-f]{${ACCOUNT_KEY_SEGMENT_LENGTH}}$`));
    expect(validateBlobKey(`speech/${segment}/file.mp3`)).toBe(`speech/${segment}/file.mp3`);
    expect(accountKeySegment(id)).toBe(segment);
  });

  it("gives every distinct id its own segment (a/b is not a's folder; case and lone surrogates count)", () => {
    const segments = ids.map(accountKeySegment);
    expect(new Set(segments).size).toBe(ids.length);
    expect(accountKeySegment("a/b")).not.toBe(accountKeySegment("a"));
    expect(`speech/${accountKeySegment("a/b")}/x`.startsWith(`speech/${accountKeySegment("a")}/`)).toBe(false);
  });

  it("is stable across releases (keys already stored keep their folder)", () => {
    expect(accountKeySegment("alice")).toBe("dfb6f541ef82e9100159f12a84e635d4");
  });
});
