import { describe, expect, it } from "vitest";
import { classifyReference, FetchRefusedError, type FetchRefusedCode } from "./index.ts";

function refusal(ref: string, mediaRoot?: string): FetchRefusedCode {
  try {
    classifyReference(ref, mediaRoot === undefined ? {} : { mediaRoot });
  } catch (error) {
    expect(error).toBeInstanceOf(FetchRefusedError);
    const e = error as FetchRefusedError;
    expect(e.name).toBe("FetchRefusedError");
    expect(e.message.length).toBeGreaterThan(10);
    return e.code;
  }
  throw new Error(`expected ${JSON.stringify(ref)} to be refused`);
}

describe("classifyReference", () => {
  it("classifies relative paths, normalized", () => {
    expect(classifyReference("audio/in.wav")).toEqual({ kind: "path", relative: "audio/in.wav" });
    expect(classifyReference("./audio//in.wav")).toEqual({ kind: "path", relative: "audio/in.wav" });
    expect(classifyReference("./name:with:colons.wav")).toEqual({ kind: "path", relative: "name:with:colons.wav" });
    expect(classifyReference("a..b/c...wav")).toEqual({ kind: "path", relative: "a..b/c...wav" });
  });

  it("accepts an absolute path only under the media root, made relative", () => {
    expect(classifyReference("/srv/media/x/in.wav", { mediaRoot: "/srv/media" })).toEqual({ kind: "path", relative: "x/in.wav" });
    expect(classifyReference("/srv/media/x/in.wav", { mediaRoot: "/srv/media/" })).toEqual({ kind: "path", relative: "x/in.wav" });
    expect(refusal("/srv/mediaX/in.wav", "/srv/media")).toBe("path_outside_media_root");
    expect(refusal("/etc/passwd", "/srv/media")).toBe("path_outside_media_root");
    expect(refusal("/srv/media/in.wav")).toBe("path_outside_media_root"); // no media root given
    expect(refusal("/srv/media", "/srv/media")).toBe("invalid_reference");
    expect(refusal("./")).toBe("invalid_reference");
  });

  it("refuses '..' segments in paths", () => {
    expect(refusal("../etc/passwd")).toBe("path_outside_media_root");
    expect(refusal("audio/../../etc/passwd")).toBe("path_outside_media_root");
    expect(refusal("audio/..")).toBe("path_outside_media_root");
    expect(refusal("/srv/media/../etc/passwd", "/srv/media")).toBe("path_outside_media_root");
  });

  it("refuses NUL bytes and control characters", () => {
    expect(refusal("in\u0000.wav")).toBe("invalid_reference");
    expect(refusal("https://example.com/a\u0000.wav")).toBe("invalid_reference");
    expect(refusal("https://example.com/a\n.wav")).toBe("invalid_reference");
    expect(refusal("")).toBe("invalid_reference");
    expect(refusal("a".repeat(9000))).toBe("invalid_reference");
  });

  it("classifies http(s) URLs", () => {
    expect(classifyReference("https://example.com/a/b.mp3?sig=1")).toEqual({ kind: "http", url: "https://example.com/a/b.mp3?sig=1" });
    expect(classifyReference("HTTP://Example.COM:8080/x")).toEqual({ kind: "http", url: "http://example.com:8080/x" });
    // '..' inside a query is not a path segment
    expect(classifyReference("https://example.com/a?x=../y")).toEqual({ kind: "http", url: "https://example.com/a?x=../y" });
  });

  it("refuses malformed URLs", () => {
    expect(refusal("http://")).toBe("invalid_reference");
    expect(refusal("https://exa mple.com/")).toBe("invalid_reference");
    expect(refusal("http:example.com/a")).toBe("invalid_reference");
    expect(refusal("https://[::1/")).toBe("invalid_reference");
    expect(refusal("http://example.com:99999/")).toBe("invalid_reference");
  });

  it("refuses '..' segments in URLs, raw or percent-encoded", () => {
    expect(refusal("https://example.com/a/../b")).toBe("invalid_reference");
    expect(refusal("https://example.com/a/%2e%2E/b")).toBe("invalid_reference");
    expect(refusal("https://example.com/a\\..\\b")).toBe("invalid_reference");
  });

  it("refuses URLs with credentials", () => {
    expect(refusal("https://user:pw@example.com/a.wav")).toBe("credentials_not_allowed");
    expect(refusal("https://user@example.com/a.wav")).toBe("credentials_not_allowed");
    expect(refusal("http://:pw@example.com/a.wav")).toBe("credentials_not_allowed");
  });

  it("refuses every other scheme", () => {
    for (const ref of [
      "file:///etc/passwd",
      "FILE:/etc/passwd",
      "ftp://example.com/a.wav",
      "data:audio/wav;base64,AAAA",
      "javascript:alert(1)",
      "gopher://example.com:70/_x",
      "dict://example.com:11211/",
      "ldap://example.com/",
      "ws://example.com/",
      "blob:https://example.com/x",
      "jar:file:///x!/y",
      "c:\\windows\\win.ini",
      "s4://bucket/key",
    ]) {
      expect(refusal(ref), ref).toBe("scheme_not_allowed");
    }
  });

  it("classifies s3:// and gs:// object URIs", () => {
    expect(classifyReference("s3://my-bucket/path/to/in.wav")).toEqual({ kind: "object", scheme: "s3", bucket: "my-bucket", key: "path/to/in.wav" });
    expect(classifyReference("gs://my_bucket.example/in file.wav")).toEqual({ kind: "object", scheme: "gs", bucket: "my_bucket.example", key: "in file.wav" });
    expect(classifyReference("S3://bkt/k")).toEqual({ kind: "object", scheme: "s3", bucket: "bkt", key: "k" });
  });

  it("refuses malformed object URIs and '..' in keys", () => {
    expect(refusal("s3://bucket")).toBe("invalid_reference");
    expect(refusal("s3://bucket/")).toBe("invalid_reference");
    expect(refusal("s3://Bad_Bucket!/k")).toBe("invalid_reference");
    expect(refusal("s3:/bucket/k")).toBe("invalid_reference");
    expect(refusal("s3://ab/k")).toBe("invalid_reference");
    expect(refusal("s3://bucket/a/../b")).toBe("invalid_reference");
    expect(refusal("gs://bucket/..")).toBe("invalid_reference");
    expect(refusal(`s3://bucket/${"k".repeat(1025)}`)).toBe("invalid_reference");
  });
});
