import { describe, expect, it } from "vitest";
import type { LookupAddress } from "node:dns";
import {
  checkHost,
  classifyAddress,
  FetchRefusedError,
  isAllowedHost,
  isMetadataAddress,
  isMetadataHostname,
  isPublicAddress,
  parseAllowedHosts,
  pinnedLookup,
  type Resolver,
} from "./index.ts";

const NOT_PUBLIC: Array<[string, string]> = [
  // IPv4
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["10.0.0.1", "private"],
  ["172.16.0.1", "private"],
  ["172.31.255.255", "private"],
  ["192.168.1.1", "private"],
  ["169.254.1.1", "linkLocal"],
  ["169.254.169.254", "metadata"],
  ["100.64.0.1", "carrierGradeNat"],
  ["100.127.255.255", "carrierGradeNat"],
  ["100.100.100.200", "metadata"],
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "unspecified"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["255.255.255.255", "broadcast"],
  ["240.0.0.1", "reserved"],
  ["192.0.2.1", "reserved"],
  ["198.18.0.1", "reserved"],
  ["203.0.113.5", "reserved"],
  // IPv6
  ["::1", "loopback"],
  ["::", "unspecified"],
  ["fc00::1", "uniqueLocal"],
  ["fd12:3456::1", "uniqueLocal"],
  ["fd00:ec2::254", "metadata"],
  ["fe80::1", "linkLocal"],
  ["fe80::1%eth0", "linkLocal"],
  ["fec0::1", "deprecatedSiteLocal"],
  ["ff02::1", "multicast"],
  ["2001:db8::1", "reserved"],
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"],
  ["100::1", "discard"],
  ["4000::1", "reserved"],
  // IPv4 embedded in IPv6
  ["::ffff:127.0.0.1", "ipv4Mapped:loopback"],
  ["::ffff:7f00:1", "ipv4Mapped:loopback"],
  ["::ffff:10.1.2.3", "ipv4Mapped:private"],
  ["::ffff:169.254.169.254", "ipv4Mapped:metadata"],
  ["::ffff:0:192.168.0.1", "rfc6145:private"],
  ["::127.0.0.1", ":loopback"],
  ["::10.0.0.1", ":private"],
  ["::7f00:1", "ipv4Compatible:loopback"],
  ["::a00:1", "ipv4Compatible:private"],
  ["64:ff9b::127.0.0.1", "rfc6052:loopback"],
  ["64:ff9b::a9fe:a9fe", "rfc6052:metadata"],
  ["64:ff9b::c0a8:101", "rfc6052:private"],
  ["64:ff9b:1::a00:1", "rfc6052"],
  ["2002:7f00:1::1", "6to4:loopback"],
  ["2002:a00:1::1", "6to4:private"],
  // not addresses
  ["localhost", "invalid"],
  ["example.com", "invalid"],
  ["", "invalid"],
];

const PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.1", "172.32.0.1", "2606:4700:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1"];

describe("classifyAddress", () => {
  it.each(NOT_PUBLIC)("refuses %s (%s)", (address, range) => {
    const verdict = classifyAddress(address);
    expect(verdict.public).toBe(false);
    // IPv4-compatible forms (::a.b.c.d) are reported by ipaddr.js under varying names; the embedded verdict is what counts.
    const expected = range.startsWith(":") ? expect.stringMatching(new RegExp(`^[A-Za-z0-9]+${range}$`)) : range;
    expect(verdict.range).toEqual(expected);
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(PUBLIC)("accepts public %s", (address) => {
    expect(classifyAddress(address).public).toBe(true);
    expect(isPublicAddress(address)).toBe(true);
  });

  it("knows cloud-metadata addresses and names", () => {
    for (const a of ["169.254.169.254", "::ffff:169.254.169.254", "fd00:ec2::254", "100.100.100.200"]) expect(isMetadataAddress(a), a).toBe(true);
    expect(isMetadataAddress("169.254.1.1")).toBe(false);
    for (const h of ["metadata.google.internal", "METADATA.GOOGLE.INTERNAL.", "metadata", "instance-data", "metadata.goog"]) expect(isMetadataHostname(h), h).toBe(true);
    expect(isMetadataHostname("example.com")).toBe(false);
  });
});

describe("allow-list", () => {
  const allowed = parseAllowedHosts(["minio:9000", "Storage.Internal.", "10.0.0.5:8080", "[fd00::5]:9000", "fd00::6", " "]);

  it("parses host, host:port and IPv6 entries", () => {
    expect(allowed).toEqual([
      { host: "minio", port: 9000 },
      { host: "storage.internal" },
      { host: "10.0.0.5", port: 8080 },
      { host: "fd00::5", port: 9000 },
      { host: "fd00::6" },
    ]);
  });

  it("matches by name and port (default ports included)", () => {
    expect(isAllowedHost(new URL("http://minio:9000/b/k"), allowed)).toBe(true);
    expect(isAllowedHost(new URL("http://MINIO.:9000/b/k"), allowed)).toBe(true);
    expect(isAllowedHost(new URL("http://minio:9001/b/k"), allowed)).toBe(false);
    expect(isAllowedHost(new URL("http://minio/b/k"), allowed)).toBe(false);
    expect(isAllowedHost(new URL("https://storage.internal/x"), allowed)).toBe(true);
    expect(isAllowedHost(new URL("http://storage.internal:1234/x"), allowed)).toBe(true);
    expect(isAllowedHost(new URL("http://10.0.0.5:8080/x"), allowed)).toBe(true);
    expect(isAllowedHost(new URL("http://[fd00:0::5]:9000/x"), allowed)).toBe(true);
    expect(isAllowedHost(new URL("http://[fd00::6]/x"), allowed)).toBe(true);
    expect(isAllowedHost(new URL("http://evil.minio:9000/x"), allowed)).toBe(false);
    expect(isAllowedHost(new URL("http://example.com:80/"), parseAllowedHosts(["example.com:80"]))).toBe(true);
    expect(isAllowedHost(new URL("https://example.com/"), parseAllowedHosts(["example.com:443"]))).toBe(true);
  });
});

function table(entries: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolver = async (hostname: string) => {
    calls.push(hostname);
    const found = entries[hostname];
    if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return found.map((address) => ({ address, family: (address.includes(":") ? 6 : 4) as 4 | 6 }));
  };
  return Object.assign(resolver, { calls });
}

/** The code of the FetchRefusedError the promise rejects with; fails the test if it resolves or rejects otherwise. */
async function code(promise: Promise<unknown>): Promise<string> {
  const error: unknown = await promise.then(
    () => undefined,
    (rejection: unknown) => rejection,
  );
  expect(error).toBeInstanceOf(FetchRefusedError);
  return (error as FetchRefusedError).code;
}

describe("checkHost (the SSRF guard, with an injected resolver; no traffic)", () => {
  const resolver = table({
    "public.test": ["93.184.216.34", "2606:2800:220:1::1"],
    "private.test": ["10.0.0.7"],
    "mixed.test": ["93.184.216.34", "127.0.0.1"],
    "mapped.test": ["::ffff:192.168.0.10"],
    "nat64.test": ["64:ff9b::7f00:1"],
    "minio": ["172.18.0.4"],
    "sneaky.test": ["169.254.169.254"],
    "localhost": ["127.0.0.1", "::1"],
    "empty.test": [],
  });
  const guard = { allowedHosts: parseAllowedHosts(["minio:9000", "sneaky.test"]), resolver };

  it("passes a host whose addresses are all public and returns them", async () => {
    expect(await checkHost(new URL("https://public.test/a.wav"), guard)).toEqual([
      { address: "93.184.216.34", family: 4 },
      { address: "2606:2800:220:1::1", family: 6 },
    ]);
    expect(await checkHost(new URL("http://8.8.8.8/"), guard)).toEqual([{ address: "8.8.8.8", family: 4 }]);
  });

  it("refuses hosts that resolve to private, loopback, mapped or NAT64 forms — any one address is enough", async () => {
    for (const host of ["private.test", "mixed.test", "mapped.test", "nat64.test", "localhost"]) {
      expect(await code(checkHost(new URL(`http://${host}/`), guard)), host).toBe("address_not_allowed");
    }
  });

  it("refuses address literals, in every spelling the URL parser folds to them", async () => {
    for (const ref of [
      "http://127.0.0.1/",
      "http://127.1/",
      "http://2130706433/",
      "http://0x7f000001/",
      "http://0177.0.0.1/",
      "http://0.0.0.0/",
      "http://[::1]/",
      "http://[::ffff:127.0.0.1]/",
      "http://[::ffff:7f00:1]/",
      "http://[::127.0.0.1]/",
      "http://[0:0:0:0:0:0:0:1]/",
      "http://[64:ff9b::a9fe:a9fe]/",
      "http://169.254.169.254/latest/meta-data/",
      "http://[fd00:ec2::254]/",
      "http://100.100.100.200/",
      "http://10.1.1.1/",
      "http://192.168.0.1./",
    ]) {
      expect(await code(checkHost(new URL(ref), guard)), ref).toBe("address_not_allowed");
    }
  });

  it("refuses cloud-metadata host names before resolving them", async () => {
    const before = resolver.calls.length;
    expect(await code(checkHost(new URL("http://metadata.google.internal/computeMetadata/v1/"), guard))).toBe("address_not_allowed");
    expect(await code(checkHost(new URL("http://METADATA.GOOGLE.INTERNAL./"), guard))).toBe("address_not_allowed");
    expect(resolver.calls.length).toBe(before);
  });

  it("lets allow-listed hosts through to private addresses, on the listed port only", async () => {
    expect(await checkHost(new URL("http://minio:9000/b/k"), guard)).toEqual([{ address: "172.18.0.4", family: 4 }]);
    expect(await code(checkHost(new URL("http://minio:9001/b/k"), guard))).toBe("address_not_allowed");
  });

  it("never lets an allow-listed host reach a metadata address or name", async () => {
    expect(await code(checkHost(new URL("http://sneaky.test/"), guard))).toBe("address_not_allowed");
    const listed = { allowedHosts: parseAllowedHosts(["metadata.google.internal", "169.254.169.254"]), resolver };
    expect(await code(checkHost(new URL("http://metadata.google.internal/"), listed))).toBe("address_not_allowed");
    expect(await code(checkHost(new URL("http://169.254.169.254/"), listed))).toBe("address_not_allowed");
  });

  it("says host_not_found when the name does not resolve", async () => {
    expect(await code(checkHost(new URL("http://nowhere.test/"), guard))).toBe("host_not_found");
    expect(await code(checkHost(new URL("http://empty.test/"), guard))).toBe("host_not_found");
  });

  it("keeps resolved addresses out of the user-facing message", async () => {
    const refusal = checkHost(new URL("http://private.test/"), guard);
    await expect(refusal).rejects.toBeInstanceOf(FetchRefusedError);
    await expect(refusal).rejects.toThrow("private.test");
    await expect(refusal).rejects.not.toThrow("10.0.0.7");
  });
});

describe("pinnedLookup", () => {
  const lookup = pinnedLookup([
    { address: "93.184.216.34", family: 4 },
    { address: "2606:2800:220:1::1", family: 6 },
  ]);
  function ask(hostname: string, options: { all?: boolean; family?: number }): Promise<unknown> {
    return new Promise((resolve, reject) => {
      lookup(hostname, options, (err, address, family) => (err ? reject(err) : resolve(options.all ? address : [address, family])));
    });
  }

  it("answers with the checked addresses only, whatever name it is asked", async () => {
    expect(await ask("anything.else", {})).toEqual(["93.184.216.34", 4]);
    expect(await ask("anything.else", { all: true })).toEqual([
      { address: "93.184.216.34", family: 4 },
      { address: "2606:2800:220:1::1", family: 6 },
    ] satisfies LookupAddress[]);
    expect(await ask("x", { family: 6 })).toEqual(["2606:2800:220:1::1", 6]);
  });

  it("fails rather than fall back to DNS when no checked address fits", async () => {
    const v4only = pinnedLookup([{ address: "93.184.216.34", family: 4 }]);
    await expect(
      new Promise((resolve, reject) => v4only("x", { family: 6 }, (err, address) => (err ? reject(err) : resolve(address)))),
    ).rejects.toThrow(/no checked address/);
  });
});
