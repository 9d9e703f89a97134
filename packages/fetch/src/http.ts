import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import type { Logger } from "@voiceloc/log";
import type { AllowedHost } from "./address.ts";
import { normalizeHostname } from "./address.ts";
import { classifyHttp } from "./classify.ts";
import { FetchRefusedError } from "./errors.ts";
import { checkHost, pinnedLookup, type ResolvedAddress, type Resolver } from "./guard.ts";
import { tooLarge, writeCapped } from "./sink.ts";

export interface HttpFetchSettings {
  allowedHosts: readonly AllowedHost[];
  resolver: Resolver;
  maxBytes: number;
  maxRedirects: number;
  signal: AbortSignal;
  ca?: string | Buffer | Array<string | Buffer>;
  logger: Logger;
}

export interface HttpFetched {
  size: number;
  contentType?: string;
  /** The URL the body came from, after redirects. */
  finalUrl: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = "voiceloc-fetch/0.1";

/** What may be logged of a URL: never the path or query (they may hold signed tokens). */
function origin(url: URL): string {
  return `${url.protocol}//${url.host}`;
}

function requestOnce(url: URL, addresses: readonly ResolvedAddress[], settings: HttpFetchSettings): Promise<IncomingMessage> {
  const hostname = normalizeHostname(url.hostname);
  const https = url.protocol === "https:";
  const options: RequestOptions & { servername?: string; ca?: HttpFetchSettings["ca"] } = {
    method: "GET",
    hostname,
    port: url.port !== "" ? Number(url.port) : https ? 443 : 80,
    path: `${url.pathname}${url.search}`,
    headers: { host: url.host, "user-agent": USER_AGENT, accept: "*/*", "accept-encoding": "identity" },
    // A fresh agent per request: no pooled socket, opened for another name or check, is ever reused.
    agent: false,
    lookup: pinnedLookup(addresses),
    signal: settings.signal,
  };
  if (https) {
    if (isIP(hostname) === 0) options.servername = hostname;
    if (settings.ca !== undefined) options.ca = settings.ca;
  }
  return new Promise((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(options, resolve);
    req.on("error", reject);
    req.end();
  });
}

function statusMessage(url: URL, status: number): string {
  return `The server ${url.host} answered HTTP ${status}${status === 404 ? " (not found)" : status === 401 || status === 403 ? " (access denied)" : ""}.`;
}

/**
 * GETs `start` (already classified) into `dest`, re-running the SSRF guard on
 * every hop and pinning each connection to the addresses it checked.
 */
export async function fetchHttp(start: string, dest: string, settings: HttpFetchSettings): Promise<HttpFetched> {
  let url = new URL(start);
  for (let hop = 0; ; hop += 1) {
    const addresses = await checkHost(url, { allowedHosts: settings.allowedHosts, resolver: settings.resolver, signal: settings.signal });
    settings.logger.debug({ hop, origin: origin(url), addresses: addresses.map((a) => a.address) }, "fetch: connecting");
    const res = await requestOnce(url, addresses, settings);
    const status = res.statusCode ?? 0;
    const location = res.headers.location;

    if (REDIRECTS.has(status) && location !== undefined) {
      res.resume();
      res.destroy();
      if (hop >= settings.maxRedirects) {
        throw new FetchRefusedError("too_many_redirects", `The URL redirected more than ${settings.maxRedirects} times.`);
      }
      let next: URL;
      try {
        next = new URL(location, url);
      } catch (cause) {
        throw new FetchRefusedError("invalid_reference", `The server ${url.host} redirected to a malformed URL.`, { cause });
      }
      if (next.protocol !== "http:" && next.protocol !== "https:") {
        throw new FetchRefusedError("scheme_not_allowed", `The server ${url.host} redirected to a "${next.protocol}" URL; only http and https redirects are followed.`);
      }
      url = new URL(classifyHttp(next.href, next.protocol === "https:" ? "https" : "http").url);
      continue;
    }

    if (status < 200 || status > 299) {
      res.resume();
      res.destroy();
      throw new FetchRefusedError("http_status", statusMessage(url, status), { status });
    }

    const declared = Number(res.headers["content-length"]);
    if (Number.isFinite(declared) && declared > settings.maxBytes) {
      res.destroy();
      throw tooLarge(settings.maxBytes);
    }
    const size = await writeCapped(res, dest, settings.maxBytes, settings.signal);
    const contentType = res.headers["content-type"];
    return contentType === undefined ? { size, finalUrl: url.href } : { size, contentType, finalUrl: url.href };
  }
}
