/**
 * Reading what an outside service answers without trusting its size: a body longer than the bound is
 * cancelled as soon as it is known to be (by its Content-Length, or while it streams), never buffered.
 */

/** The body as UTF-8 text; undefined when it is (or says it is) longer than `limit` bytes; "" when there is none. */
export async function readBoundedText(response: Response, limit: number): Promise<string | undefined> {
  if (response.body === null) return "";
  if (Number(response.headers.get("content-length") ?? "0") > limit) {
    await response.body.cancel().catch(() => undefined);
    return undefined;
  }
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}
