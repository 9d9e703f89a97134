import { isIP } from "node:net";
import { classifyAddress, isAllowedHost, isMetadataHostname, normalizeHostname, parseAllowedHosts } from "./address.ts";
import { classifyReference, type ClassifiedReference } from "./classify.ts";
import { FetchRefusedError } from "./errors.ts";
import { notConfigured } from "./object.ts";

export interface CheckReferenceOptions {
  /** The media root (see {@link classifyReference}). */
  mediaRoot?: string;
  /** The same allow-list as `FetchOptions.allowPrivateHosts` (FETCH_ALLOW_PRIVATE_HOSTS). */
  allowPrivateHosts?: readonly string[];
  /** Whether s3:// references can be fetched (an S3-compatible store is configured). */
  s3?: boolean;
  /** Whether gs:// references can be fetched (GCS HMAC access is configured). */
  gs?: boolean;
}

const NOT_PUBLIC = "a loopback, private, link-local or otherwise non-public address";

/**
 * Everything that can be said of a reference without the disk or the network, for a 422 at
 * request time: {@link classifyReference}, then for http(s) URLs the host when it is written as
 * an IP literal (in any spelling the URL parser folds: `2130706433`, `0177.0.0.1`, `0x7f.1`,
 * `[::ffff:127.0.0.1]`…) that is not public, `localhost` and `*.localhost`, and cloud-metadata
 * names; for s3:// and gs:// a store that is not configured. Hosts on the allow-list pass
 * (metadata names and addresses never do). Names that resolve to private addresses are refused
 * later, when the worker fetches (see `checkHost`).
 */
export function checkReference(ref: string, options: CheckReferenceOptions = {}): ClassifiedReference {
  const classified = classifyReference(ref, options.mediaRoot === undefined ? {} : { mediaRoot: options.mediaRoot });
  switch (classified.kind) {
    case "path":
    case "upload":
      return classified;
    case "object":
      if (options[classified.scheme] !== true) throw notConfigured(classified.scheme);
      return classified;
    case "http":
      checkLiteralHost(new URL(classified.url), options.allowPrivateHosts ?? []);
      return classified;
    default: {
      const never: never = classified;
      return never;
    }
  }
}

function checkLiteralHost(url: URL, allowPrivateHosts: readonly string[]): void {
  const host = normalizeHostname(url.hostname);
  if (isMetadataHostname(host)) {
    throw new FetchRefusedError("address_not_allowed", `The host "${host}" is a cloud metadata service; fetching from it is not allowed.`);
  }
  const allowed = isAllowedHost(url, parseAllowedHosts(allowPrivateHosts));
  if (isIP(host) !== 0) {
    const verdict = classifyAddress(host);
    const metadata = verdict.range === "metadata" || verdict.range.endsWith(":metadata");
    if (verdict.public || (allowed && !metadata)) return;
    throw new FetchRefusedError(
      "address_not_allowed",
      `The address ${host} is ${metadata ? "a cloud metadata service" : NOT_PUBLIC}; fetching from it is not allowed.`,
      { cause: new Error(`${host} (${verdict.range})`) },
    );
  }
  if (!allowed && (host === "localhost" || host.endsWith(".localhost"))) {
    throw new FetchRefusedError("address_not_allowed", `The host "${host}" is ${NOT_PUBLIC}; fetching from it is not allowed.`);
  }
}
