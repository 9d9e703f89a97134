/**
 * URL edge cases (expectations captured from Pydantic 2.13 `TypeAdapter(HttpUrl)`), most of them
 * found by differential fuzzing against pydantic-core: the `url` crate and Node's WHATWG `URL`
 * agree on what parses, so only the reason for a rejection has to be reconstructed.
 */
import { describe, expect, it } from "vitest";
import { validateHttpUrl } from "./url.ts";

function outcome(input: string): unknown {
  const result = validateHttpUrl(input);
  return result.ok ? result : { ok: false, ...result.error };
}

const CASES: [string, unknown][] = [
  ["http://\u00ad:0/", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, empty host", "ctx": {"error": "empty host"}}],
  ["http://\uff11.\uff12.\uff13.\uff12\uff15\uff16", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid IPv4 address", "ctx": {"error": "invalid IPv4 address"}}],
  ["http://a.1", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid IPv4 address", "ctx": {"error": "invalid IPv4 address"}}],
  ["http://0x100.0.0.0", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid IPv4 address", "ctx": {"error": "invalid IPv4 address"}}],
  ["http://1.2.3.4:99999", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid port number", "ctx": {"error": "invalid port number"}}],
  ["http://[::1]:99999", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid port number", "ctx": {"error": "invalid port number"}}],
  ["http://[::1]x", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid IPv6 address", "ctx": {"error": "invalid IPv6 address"}}],
  ["http://a:b:c", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid port number", "ctx": {"error": "invalid port number"}}],
  ["http://a b:99999", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid international domain name", "ctx": {"error": "invalid international domain name"}}],
  ["http://ex%41mple.com", {"ok": true, "value": "http://example.com/"}],
  ["http://%2541", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid international domain name", "ctx": {"error": "invalid international domain name"}}],
  ["http://a%zz", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid international domain name", "ctx": {"error": "invalid international domain name"}}],
  ["http://fa\u00df.de", {"ok": true, "value": "http://xn--fa-hia.de/"}],
  ["http://\u05d0.1", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid international domain name", "ctx": {"error": "invalid international domain name"}}],
  ["http://\u0645\u062b\u0627\u0644.com", {"ok": true, "value": "http://xn--mgbh0fb.com/"}],
  ["http://1\u0645\u062b\u0627\u0644.com", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid international domain name", "ctx": {"error": "invalid international domain name"}}],
  ["file://a b", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid international domain name", "ctx": {"error": "invalid international domain name"}}],
  ["foo://a b", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid domain character", "ctx": {"error": "invalid domain character"}}],
  ["foo://:80", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, empty host", "ctx": {"error": "empty host"}}],
  ["foo://a.com:65535\\x", {"ok": false, "type": "url_scheme", "msg": "URL scheme should be 'http' or 'https'", "ctx": {"expected_schemes": "'http' or 'https'"}}],
  ["foo://[::1", {"ok": false, "type": "url_parsing", "msg": "Input should be a valid URL, invalid IPv6 address", "ctx": {"error": "invalid IPv6 address"}}],
  ["http:\\\\x.com\\y", {"ok": true, "value": "http://x.com/y"}],
  [" http://x.com\t/a\n", {"ok": true, "value": "http://x.com/a"}],
  ["javascript:alert(1)", {"ok": false, "type": "url_scheme", "msg": "URL scheme should be 'http' or 'https'", "ctx": {"expected_schemes": "'http' or 'https'"}}],
  ["http://user:pw@host:8080/p?q=1#f", {"ok": true, "value": "http://user:pw@host:8080/p?q=1#f"}],
];

describe("validateHttpUrl", () => {
  it.each(CASES)("%j", (input, expected) => {
    expect(outcome(input)).toEqual(expected);
  });

  it("measures the 2083 limit in UTF-8 bytes, before parsing", () => {
    const tooLong = { ok: false, type: "url_too_long", msg: "URL should have at most 2083 characters", ctx: { max_length: 2083 } };
    expect(outcome("http://" + "\u00e9".repeat(1039))).toEqual(tooLong);
    expect(outcome("x".repeat(2084))).toEqual(tooLong);
    expect(outcome("http://" + "a".repeat(2076))).toEqual({ ok: true, value: "http://" + "a".repeat(2076) + "/" });
  });
});
