/**
 * Pydantic's `HttpUrl` (pydantic-core's URL validator over the `url` crate, WHATWG URL parsing):
 *
 *   1. more than 2083 UTF-8 bytes            → url_too_long  (checked before parsing)
 *   2. ""                                     → url_parsing "input is empty"
 *   3. WHATWG parse error                     → url_parsing "<url::ParseError Display>"
 *   4. scheme other than http / https         → url_scheme
 *
 * Acceptance and normalisation come from Node's WHATWG `URL` (the same standard the `url` crate
 * implements); only when it rejects the input do we work out which `url::ParseError` the crate
 * reports, following the parser's order: scheme, then host, then port.
 */
import { domainToASCII, domainToUnicode } from "node:url";
import { violatesBidiRule } from "./bidi.ts";
import type { PydanticError } from "./types.ts";

export const HTTP_URL_MAX_LENGTH = 2083;

export type UrlResult = { ok: true; value: string } | { ok: false; error: PydanticError };

const SPECIAL = new Set(["http", "https", "ws", "wss", "ftp", "file"]);
// Forbidden host code points that can still be inside an opaque host's authority slice.
const FORBIDDEN_OPAQUE = /[\u0000\u0009\u000a\u000d #/<>?@[\\\]^|]/;

const encoder = new TextEncoder();

function parsingError(error: string): PydanticError {
  return { type: "url_parsing", msg: `Input should be a valid URL, ${error}`, ctx: { error } };
}

const SCHEME_ERROR: PydanticError = {
  type: "url_scheme",
  msg: "URL scheme should be 'http' or 'https'",
  ctx: { expected_schemes: "'http' or 'https'" },
};

function parses(candidate: string): boolean {
  try {
    new URL(candidate);
    return true;
  } catch {
    return false;
  }
}

/** rust-url's `parse_port`: digits up to a terminator, at most 65535. */
function portError(port: string | undefined, terminators: RegExp): string | undefined {
  if (port === undefined) return undefined;
  const digits = port.split(terminators, 1)[0] ?? "";
  if (!/^[0-9]*$/.test(digits) || Number(digits) > 65535) return "invalid port number";
  return undefined;
}

/** Splits `host[:port]` (IPv6 brackets respected). */
function splitHostPort(hostPort: string): { host: string; port: string | undefined } {
  let inBrackets = false;
  for (let i = 0; i < hostPort.length; i++) {
    const ch = hostPort[i];
    if (ch === "[") inBrackets = true;
    else if (ch === "]") inBrackets = false;
    else if (ch === ":" && !inBrackets) return { host: hostPort.slice(0, i), port: hostPort.slice(i + 1) };
  }
  return { host: hostPort, port: undefined };
}

function ipv6Error(host: string): string | undefined {
  if (!host.endsWith("]") || !parses(`http://${host}/`)) return "invalid IPv6 address";
  return undefined;
}

/** WHATWG "ends in a number" for an ASCII domain. */
function endsInANumber(domain: string): boolean {
  const labels = domain.split(".");
  if (labels[labels.length - 1] === "") {
    if (labels.length === 1) return false;
    labels.pop();
  }
  const last = labels[labels.length - 1] ?? "";
  return /^[0-9]+$/.test(last) || /^0[xX][0-9a-fA-F]*$/.test(last);
}

/** A special-scheme host the WHATWG host parser rejected: which `url::ParseError`. */
function domainError(host: string): string {
  // Node's domainToASCII runs the whole host parser (percent-decoding, UTS #46 mapping, forbidden
  // code points, IPv4). Appending a label that is not a number isolates the IDNA part.
  const probe = domainToASCII(`${host}.x`);
  if (probe === "") return "invalid international domain name";
  const mapped = probe.slice(0, -2);
  if (violatesBidiRule(domainToUnicode(probe).slice(0, -2))) return "invalid international domain name";
  if (mapped === "") return "empty host";
  if (endsInANumber(mapped)) return "invalid IPv4 address";
  return "invalid international domain name";
}

type Classified = { parsed: false; error: string } | { parsed: true };

/** Which `url::ParseError` the `url` crate reports for an input WHATWG `URL` rejected. */
export function classifyUrl(raw: string): Classified {
  const failed = (error: string): Classified => ({ parsed: false, error });
  // WHATWG pre-processing: trim C0 controls and spaces, drop tabs and newlines.
  const input = raw.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, "").replace(/[\t\n\r]/g, "");
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(input);
  if (!scheme) return failed("relative URL without a base");
  const name = scheme[0].slice(0, -1).toLowerCase();
  const rest = input.slice(scheme[0].length);

  if (name === "file") {
    // No credentials and no port in a file URL: the whole authority is the host.
    const host = rest.replace(/^[/\\]*/, "").split(/[/\\?#]/, 1)[0] ?? "";
    if (host === "") return failed("empty host");
    if (host.startsWith("[")) return failed(ipv6Error(host) ?? "invalid IPv6 address");
    return failed(domainError(host));
  }

  if (SPECIAL.has(name)) {
    const authority = rest.replace(/^[/\\]*/, "").split(/[/\\?#]/, 1)[0] ?? "";
    const at = authority.lastIndexOf("@");
    const { host, port } = splitHostPort(at >= 0 ? authority.slice(at + 1) : authority);
    if (host === "") return failed("empty host");
    if (host.startsWith("[")) return failed(ipv6Error(host) ?? portError(port, /[/\\?#]/) ?? "invalid IPv6 address");
    const ascii = domainToASCII(host);
    if (ascii === "") return failed(domainError(host));
    if (violatesBidiRule(domainToUnicode(ascii))) return failed("invalid international domain name");
    return failed(portError(port, /[/\\?#]/) ?? "invalid international domain name");
  }

  // Non-special scheme: only an authority ("//…") can fail, and rust-url ends a port at "\" too.
  if (!rest.startsWith("//")) return { parsed: true };
  const authority = rest.slice(2).split(/[/?#]/, 1)[0] ?? "";
  const at = authority.lastIndexOf("@");
  const { host, port } = splitHostPort(at >= 0 ? authority.slice(at + 1) : authority);
  if (host.startsWith("[")) {
    const error = ipv6Error(host);
    if (error !== undefined) return failed(error);
  } else if (FORBIDDEN_OPAQUE.test(host)) {
    return failed("invalid domain character");
  }
  if (host === "" && (port !== undefined || at >= 0)) return failed("empty host");
  const badPort = portError(port, /\\/);
  return badPort === undefined ? { parsed: true } : failed(badPort);
}

/** The `url::ParseError` text for an input WHATWG parsing rejected (see {@link classifyUrl}). */
export function urlParseError(raw: string): string {
  const result = classifyUrl(raw);
  return result.parsed ? "relative URL without a base" : result.error;
}

/** Validate like Pydantic's `HttpUrl`; the value is the normalised URL (`str(HttpUrl(...))`). */
export function validateHttpUrl(input: string): UrlResult {
  if (encoder.encode(input).length > HTTP_URL_MAX_LENGTH) {
    return {
      ok: false,
      error: {
        type: "url_too_long",
        msg: `URL should have at most ${HTTP_URL_MAX_LENGTH} characters`,
        ctx: { max_length: HTTP_URL_MAX_LENGTH },
      },
    };
  }
  if (input === "") return { ok: false, error: parsingError("input is empty") };
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    const result = classifyUrl(input);
    // `parsed` only happens for non-special schemes the url crate is more lenient with.
    return { ok: false, error: result.parsed ? SCHEME_ERROR : parsingError(result.error) };
  }
  if (SPECIAL.has(url.protocol.slice(0, -1)) && violatesBidiRule(domainToUnicode(url.hostname))) {
    return { ok: false, error: parsingError("invalid international domain name") };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { ok: false, error: SCHEME_ERROR };
  return { ok: true, value: url.href };
}
