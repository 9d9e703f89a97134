import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupFunction } from "node:net";
import { isIP } from "node:net";
import { classifyAddress, isAllowedHost, isMetadataHostname, normalizeHostname, type AllowedHost } from "./address.ts";
import { FetchRefusedError } from "./errors.ts";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses. Injectable for tests. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver (getaddrinfo: /etc/hosts, Docker's DNS…), every address, in the system's order. */
export const systemResolver: Resolver = async (hostname) => {
  const found = await dnsLookup(hostname, { all: true, verbatim: true });
  return found.map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }));
};

export interface GuardOptions {
  allowedHosts: readonly AllowedHost[];
  resolver: Resolver;
  signal?: AbortSignal;
}

const NOT_PUBLIC = "a loopback, private, link-local or otherwise non-public address";

function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * The SSRF guard for one hop: refuses cloud-metadata host names, resolves the
 * host once and refuses it unless every address is public (or the host is on
 * the allow-list — which still never admits a metadata address). Returns the
 * checked addresses: the connection must go to these and nowhere else (see
 * {@link pinnedLookup}), so a DNS answer that changes between check and
 * connect cannot be used.
 */
export async function checkHost(url: URL, options: GuardOptions): Promise<ResolvedAddress[]> {
  const host = normalizeHostname(url.hostname);
  if (isMetadataHostname(host)) {
    throw new FetchRefusedError("address_not_allowed", `The host "${host}" is a cloud metadata service; fetching from it is not allowed.`);
  }
  const allowed = isAllowedHost(url, options.allowedHosts);
  let addresses: ResolvedAddress[];
  const literal = isIP(host);
  if (literal !== 0) {
    addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await abortable(options.resolver(host), options.signal);
    } catch (cause) {
      if (options.signal?.aborted) throw cause;
      throw new FetchRefusedError("host_not_found", `The host "${host}" could not be resolved.`, { cause });
    }
    if (addresses.length === 0) throw new FetchRefusedError("host_not_found", `The host "${host}" could not be resolved.`);
  }
  for (const { address } of addresses) {
    const verdict = classifyAddress(address);
    const metadata = verdict.range === "metadata" || verdict.range.endsWith(":metadata");
    if (verdict.public || (allowed && !metadata && verdict.range !== "invalid")) continue;
    const cause = new Error(`${host} -> ${address} (${verdict.range})`);
    const message =
      literal !== 0
        ? `The address ${host} is ${metadata ? "a cloud metadata service" : NOT_PUBLIC}; fetching from it is not allowed.`
        : `The host "${host}" resolves to ${metadata ? "a cloud metadata service" : NOT_PUBLIC}; fetching from it is not allowed.`;
    throw new FetchRefusedError("address_not_allowed", message, { cause });
  }
  return addresses;
}

/**
 * A `lookup` for net/tls/http that answers with the already-checked addresses
 * only, whatever it is asked: the socket connects to what the guard vetted,
 * while Host and SNI keep the original name.
 */
export function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
    const first = wanted[0];
    if (first === undefined) {
      const error: NodeJS.ErrnoException = new Error("no checked address of the requested family");
      error.code = "ENOTFOUND";
      callback(error, "", 0);
      return;
    }
    if (options.all === true) callback(null, wanted.map((a) => ({ address: a.address, family: a.family })));
    else callback(null, first.address, first.family);
  };
}
