import {
  checkHost,
  checkReference,
  isAllowedHost,
  isFetchRefusedError,
  parseAllowedHosts,
  systemResolver,
  type ResolvedAddress,
  type Resolver,
} from "@voiceloc/fetch";

export interface WebhookUrlPolicy {
  /** FETCH_ALLOW_PRIVATE_HOSTS: hosts (and ports) reachable although private, over http too. */
  allowPrivateHosts: readonly string[];
  resolver?: Resolver;
}

const NOT_PUBLIC =
  "the URL's host is (or resolves to) a loopback, private, link-local or otherwise non-public address; webhooks are sent only to public addresses and to hosts the operator allow-listed (FETCH_ALLOW_PRIVATE_HOSTS)";

/** Why the URL cannot take webhooks, in plain words, from what is known without the network; null when acceptable. */
export function webhookUrlShapeProblem(raw: string, policy: WebhookUrlPolicy): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "not a valid absolute URL";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "the URL must start with https://";
  const allowed = isAllowedHost(url, parseAllowedHosts(policy.allowPrivateHosts));
  if (url.protocol === "http:" && !allowed) return "the URL must use https:// (http:// only for hosts the operator allow-listed)";
  if (url.hash !== "") return "the URL must not have a #fragment";
  try {
    // the same checks as file references: shape, credentials, IP literals and names that are not public, metadata
    checkReference(url.href, { allowPrivateHosts: policy.allowPrivateHosts });
  } catch (error) {
    if (isFetchRefusedError(error)) return error.code === "address_not_allowed" ? NOT_PUBLIC : error.message;
    throw error;
  }
  return null;
}

export type ResolvedUrl = { ok: true; url: URL; addresses: ResolvedAddress[] } | { ok: false; problem: string; unresolved?: boolean };

/**
 * The SSRF guard of `@voiceloc/fetch` for a webhook URL: the shape, then the host resolved once and
 * every address checked (public, or an allow-listed host; metadata never). The connection must go to
 * the returned addresses only (`pinnedLookup`), so a DNS answer that changes in between is not used.
 */
export async function resolveWebhookUrl(raw: string, policy: WebhookUrlPolicy, signal?: AbortSignal): Promise<ResolvedUrl> {
  const shape = webhookUrlShapeProblem(raw, policy);
  if (shape !== null) return { ok: false, problem: shape };
  const url = new URL(raw);
  try {
    const addresses = await checkHost(url, {
      allowedHosts: parseAllowedHosts(policy.allowPrivateHosts),
      resolver: policy.resolver ?? systemResolver,
      ...(signal ? { signal } : {}),
    });
    return { ok: true, url, addresses };
  } catch (error) {
    if (isFetchRefusedError(error)) {
      if (error.code === "host_not_found") return { ok: false, problem: `the host "${url.hostname}" could not be resolved`, unresolved: true };
      return { ok: false, problem: error.code === "address_not_allowed" ? NOT_PUBLIC : error.message };
    }
    if (signal?.aborted) return { ok: false, problem: "the host name could not be resolved in time", unresolved: true };
    throw error;
  }
}

/**
 * The check at registration: the shape, then the name resolved (bounded): a name that resolves to a
 * private address is refused now; one that does not resolve yet is accepted (DNS may come later) and
 * checked again at every delivery.
 */
export async function webhookUrlProblem(raw: string, policy: WebhookUrlPolicy): Promise<string | null> {
  const resolved = await resolveWebhookUrl(raw, policy, AbortSignal.timeout(3_000));
  if (resolved.ok || resolved.unresolved === true) return null;
  return resolved.problem;
}
