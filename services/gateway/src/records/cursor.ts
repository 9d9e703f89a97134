/** Opaque keyset cursor for newest-first lists: base64url of [date_created, id]. */
export function encodeCursor(dateCreated: string, id: string): string {
  return Buffer.from(JSON.stringify([dateCreated, id]), "utf8").toString("base64url");
}

export function decodeCursor(cursor: string): [string, string] | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === "string" &&
      typeof value[1] === "string" &&
      !Number.isNaN(Date.parse(value[0]))
    ) {
      return [value[0], value[1]];
    }
  } catch {
    // fall through
  }
  return null;
}

/**
 * A list's `Link` field to its next page (RFC 8288, `<url>; rel="next"`): the list's `path` under the
 * public `baseUrl`, with the page size, the status filter if any, and the next page's cursor.
 */
export function nextPageLink(baseUrl: string, path: string, page: { limit: number; taskStatus?: string | undefined; cursor: string }): string {
  const params = new URLSearchParams();
  params.set("limit", String(page.limit));
  if (page.taskStatus) params.set("task_status", page.taskStatus);
  params.set("cursor", page.cursor);
  return `<${baseUrl}${path}?${params.toString()}>; rel="next"`;
}
