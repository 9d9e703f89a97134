import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * Host names of cloud instance-metadata services. Refused before any DNS
 * look-up, even when listed in `allowPrivateHosts`.
 */
export const METADATA_HOSTNAMES: ReadonlySet<string> = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "metadata.azure.internal",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.tencentyun.com",
  "metadata.platformequinix.com",
]);

/**
 * Addresses of cloud instance-metadata services (AWS, GCP, Azure, OCI, DO:
 * 169.254.169.254; AWS IPv6: fd00:ec2::254; Alibaba: 100.100.100.200; Oracle
 * alt: 192.0.0.192). Refused even for allow-listed hosts.
 */
const METADATA_ADDRESSES: ReadonlySet<string> = new Set(["169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200", "192.0.0.192"]);

/** Lower case, without the trailing dot and IPv6 brackets. */
export function normalizeHostname(hostname: string): string {
  let host = hostname.toLowerCase();
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  while (host.endsWith(".")) host = host.slice(0, -1);
  return host;
}

export function isMetadataHostname(hostname: string): boolean {
  return METADATA_HOSTNAMES.has(normalizeHostname(hostname));
}

/** What {@link classifyAddress} says of an IP address. */
export interface AddressClass {
  /** True for a public (global unicast) address. */
  public: boolean;
  /** The ipaddr.js range name that decided (`unicast`, `loopback`, `private`, `linkLocal`…), `invalid`, or `metadata`. */
  range: string;
  /** For IPv6 forms that embed an IPv4 address (mapped, compatible, NAT64, 6to4), the embedded address. */
  embedded?: string;
}

function classifyV4(address: ipaddr.IPv4): AddressClass {
  if (METADATA_ADDRESSES.has(address.toString())) return { public: false, range: "metadata" };
  const range = address.range();
  return { public: range === "unicast", range };
}

function v4FromParts(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([(high >> 8) & 0xff, high & 0xff, (low >> 8) & 0xff, low & 0xff]);
}

function withEmbedded(form: string, v4: ipaddr.IPv4): AddressClass {
  const inner = classifyV4(v4);
  return { public: inner.public, range: inner.public ? form : `${form}:${inner.range}`, embedded: v4.toString() };
}

function classifyV6(address: ipaddr.IPv6): AddressClass {
  const normalized = new ipaddr.IPv6(address.parts).toString();
  if (METADATA_ADDRESSES.has(normalized)) return { public: false, range: "metadata" };
  const parts = address.parts;
  const p = (i: number): number => parts[i] ?? 0;
  const range = address.range();
  switch (range) {
    case "ipv4Mapped": // ::ffff:a.b.c.d
    case "rfc6145": // ::ffff:0:a.b.c.d
      return withEmbedded(range, v4FromParts(p(6), p(7)));
    case "rfc6052": // NAT64: only the well-known 64:ff9b::/96 embeds the address in the last 32 bits
      if (p(2) === 0 && p(3) === 0 && p(4) === 0 && p(5) === 0) return withEmbedded(range, v4FromParts(p(6), p(7)));
      return { public: false, range };
    case "6to4": // 2002:AABB:CCDD::/48
      return withEmbedded(range, v4FromParts(p(1), p(2)));
    default:
      break;
  }
  if (range !== "unicast") return { public: false, range };
  // IPv4-compatible ::a.b.c.d (deprecated; :: and ::1 were caught above).
  if (parts.slice(0, 6).every((part) => part === 0)) return withEmbedded("ipv4Compatible", v4FromParts(p(6), p(7)));
  // Global unicast is 2000::/3; anything else left over is unassigned or reserved.
  if ((p(0) & 0xe000) !== 0x2000) return { public: false, range: "reserved" };
  return { public: true, range };
}

/**
 * Classifies one IP address (a literal, as an address, not a host name).
 * Public means global unicast: not loopback, private (RFC 1918), link-local
 * (incl. 169.254.169.254), CGNAT 100.64/10, 0.0.0.0/8, multicast, broadcast,
 * reserved/documentation/benchmarking, unique-local fc00::/7, IPv6
 * link-local, site-local, Teredo, ORCHID…; IPv4-mapped, IPv4-compatible,
 * IPv4-translated, NAT64 (64:ff9b::/96) and 6to4 forms are judged by the IPv4
 * address they carry; a cloud-metadata address is never public.
 */
export function classifyAddress(address: string): AddressClass {
  const bare = normalizeHostname(address);
  const zoneless = bare.split("%", 1)[0] ?? "";
  const family = isIP(zoneless);
  if (family === 0) return { public: false, range: "invalid" };
  const parsed = family === 4 ? ipaddr.IPv4.parse(zoneless) : ipaddr.IPv6.parse(zoneless);
  return parsed.kind() === "ipv4" ? classifyV4(parsed as ipaddr.IPv4) : classifyV6(parsed as ipaddr.IPv6);
}

/** True when `address` is a public (global unicast) IP address; see {@link classifyAddress}. */
export function isPublicAddress(address: string): boolean {
  return classifyAddress(address).public;
}

/** True for a cloud-metadata address, in any of its IPv6 forms. */
export function isMetadataAddress(address: string): boolean {
  const c = classifyAddress(address);
  return c.range === "metadata" || c.range.endsWith(":metadata");
}

/** One parsed `allowPrivateHosts` entry. */
export interface AllowedHost {
  host: string;
  /** Undefined: any port. */
  port?: number;
}

/**
 * Parses allow-list entries: `minio`, `minio:9000`, `10.0.0.5:9000`,
 * `[fd00::5]:9000`, `fd00::5`. Host names are compared after lower-casing and
 * dropping a trailing dot; the port, when given, must match the URL's
 * (default 80/443) port.
 */
export function parseAllowedHosts(entries: readonly string[]): AllowedHost[] {
  const out: AllowedHost[] = [];
  for (const raw of entries) {
    const entry = raw.trim();
    if (entry === "") continue;
    const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
    if (bracketed) {
      out.push(portOf(normalizeHostname(bracketed[1] ?? ""), bracketed[2]));
      continue;
    }
    if (isIP(entry) === 6) {
      out.push({ host: normalizeHostname(entry) });
      continue;
    }
    const withPort = /^([^:]+):(\d{1,5})$/.exec(entry);
    if (withPort) out.push(portOf(normalizeHostname(withPort[1] ?? ""), withPort[2]));
    else out.push({ host: normalizeHostname(entry) });
  }
  return out;
}

function portOf(host: string, port: string | undefined): AllowedHost {
  return port === undefined ? { host } : { host, port: Number(port) };
}

function canonicalHost(host: string): string {
  const bare = normalizeHostname(host);
  return isIP(bare) === 6 ? new ipaddr.IPv6(ipaddr.IPv6.parse(bare).parts).toString() : bare;
}

/** Whether the URL's host (and port) is on the operator's allow-list. */
export function isAllowedHost(url: URL, allowed: readonly AllowedHost[]): boolean {
  const host = canonicalHost(url.hostname);
  const port = url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  return allowed.some((entry) => canonicalHost(entry.host) === host && (entry.port === undefined || entry.port === port));
}
