import type { Logger } from "@voiceloc/log";
import type { Language } from "../languages.ts";

/** What translateSegments needs of a translator: the registry or one engine. */
export interface SegmentTranslator {
  translate(request: { text: string; source: Language; target: Language; signal?: AbortSignal | undefined }): Promise<string>;
}

export interface TranslateSegmentsRequest {
  texts: readonly string[];
  source: Language;
  target: Language;
  signal?: AbortSignal | undefined;
  /** Characters per call, about (segments are never split). Default 2,000. */
  batchChars?: number | undefined;
  /** Called after each call with the segments translated so far. */
  onProgress?: ((done: number, total: number) => void) | undefined;
  logger?: Logger | undefined;
}

/** Paragraph breaks the segments are joined by, and split on again. */
const PARAGRAPH_BREAK = /[^\S\n]*\n[^\S\n]*\n\s*/;

/**
 * Translates timed segments (a transcript's), keeping one translation per segment: several segments per
 * call, joined by paragraph breaks, when the engine keeps the breaks; one by one when it merges them.
 * Errors of the translator are thrown as they are.
 */
export async function translateSegments(mt: SegmentTranslator, request: TranslateSegmentsRequest): Promise<string[]> {
  const { texts, source, target, signal } = request;
  const limit = request.batchChars ?? 2_000;
  const one = async (text: string): Promise<string> => (await mt.translate({ text, source, target, signal })).trim();
  const batches: number[][] = [];
  let current: number[] = [];
  let chars = 0;
  texts.forEach((text, index) => {
    if (current.length > 0 && chars + text.length > limit) {
      batches.push(current);
      current = [];
      chars = 0;
    }
    current.push(index);
    chars += text.length + 2;
  });
  if (current.length > 0) batches.push(current);

  const out: string[] = texts.map(() => "");
  let done = 0;
  for (const batch of batches) {
    const items = batch.map((i) => texts[i] ?? "");
    let results: string[] | undefined;
    if (items.length > 1) {
      const parts = (await one(items.join("\n\n"))).split(PARAGRAPH_BREAK).map((p) => p.trim());
      if (parts.length === items.length && parts.every((p) => p !== "")) results = parts;
      else request.logger?.debug({ expected: items.length, got: parts.length }, "translator merged segments; translating them one by one");
    }
    if (results === undefined) {
      results = [];
      for (const item of items) results.push(await one(item));
    }
    batch.forEach((index, k) => {
      out[index] = results[k] ?? "";
    });
    done += batch.length;
    request.onProgress?.(done, texts.length);
  }
  return out;
}
