/** Pieces shared by the adapters for OpenAI-compatible HTTP services (speech, transcription, chat). */

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The human-readable part of an error body: OpenAI's `{ error: { message } }`, or `{ detail }`, or
 * plain text (an HTML error page says nothing useful and is dropped). Control characters removed,
 * at most 300 characters.
 */
export function serviceMessage(body: string): string | undefined {
  let message: unknown;
  try {
    const json: unknown = JSON.parse(body);
    if (isRecord(json)) {
      // FastAPI servers (Kokoro-FastAPI) put OpenAI's error object under `detail`.
      const detail = isRecord(json.detail) ? json.detail.message : json.detail;
      message = isRecord(json.error) ? json.error.message : typeof json.error === "string" ? json.error : detail;
    }
  } catch {
    message = body.trimStart().startsWith("<") ? undefined : body;
  }
  if (typeof message !== "string") return undefined;
  const clean = message.replace(/[\u0000-\u001F\u007F]+/g, " ").trim();
  return clean === "" ? undefined : clean.length > 300 ? `${clean.slice(0, 300)}…` : clean;
}
