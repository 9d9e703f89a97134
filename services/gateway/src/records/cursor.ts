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
