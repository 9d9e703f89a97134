/**
 * A connection string that talks to the one server it names, without
 * replica-set discovery. A container whose replica set was initiated with a
 * bare `rs.initiate()` advertises its member under the container's own host
 * name, which does not resolve outside Docker: discovery would then find no
 * reachable primary. `directConnection=true` keeps the driver on the mapped
 * port (and it still sees the primary, so writes work).
 */
export function directConnectionUrl(url: string): string {
  if (/[?&]directConnection=/i.test(url)) return url;
  const query = url.indexOf("?");
  if (query >= 0) return `${url}${query === url.length - 1 ? "" : "&"}directConnection=true`;
  // mongodb://host:port or mongodb://host:port/db
  const slashes = url.indexOf("//");
  const path = url.indexOf("/", slashes + 2);
  return path >= 0 ? `${url}?directConnection=true` : `${url}/?directConnection=true`;
}
