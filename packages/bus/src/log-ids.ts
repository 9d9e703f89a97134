import { currentLogIds, type LogIds } from "@voiceloc/log";

/**
 * The ids of the request or task a message is sent for, as message headers: a request to another
 * process (a speech request to the synthesis service) carries them, and the serving side writes its
 * lines under them, as if it ran in the sender's process.
 */
const HEADER_OF = { requestId: "Voiceloc-Request-Id", taskId: "Voiceloc-Task-Id", kind: "Voiceloc-Task-Kind" } as const satisfies Record<keyof LogIds, string>;
const FIELDS = Object.keys(HEADER_OF) as Array<keyof LogIds>;

/** Header names a core message's ids travel in. */
export const LOG_ID_HEADERS: readonly string[] = Object.values(HEADER_OF);

/** The current request's or task's ids as headers (undefined outside any). */
export function logIdHeaders(): Record<string, string> | undefined {
  const ids = currentLogIds();
  if (ids === undefined) return undefined;
  let headers: Record<string, string> | undefined;
  for (const field of FIELDS) {
    const value = ids[field];
    if (value !== undefined) (headers ??= {})[HEADER_OF[field]] = value;
  }
  return headers;
}

/** A message's ids, from its headers (undefined when it carries none). */
export function logIdsOf(headers: Record<string, string> | undefined): LogIds | undefined {
  if (headers === undefined) return undefined;
  let ids: { -readonly [F in keyof LogIds]: string } | undefined;
  for (const field of FIELDS) {
    const value = headers[HEADER_OF[field]];
    // ids are short printable text; anything else is not ours to log
    if (value !== undefined && value.length <= 200 && /^[\x21-\x7e]+$/.test(value)) (ids ??= {})[field] = value;
  }
  return ids;
}
