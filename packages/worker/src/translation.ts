/**
 * Translating a task's timed segments once: the translation is stored as the `translation.json`
 * checkpoint, and a redelivery restores it instead of translating again. Here rather than in the
 * engines package because it works on the task's checkpoints (engines cannot depend on the worker).
 */
import { translateSegments, type SegmentTranslator, type TranslateSegmentsRequest } from "@voiceloc/engines";
import { z } from "zod";
import type { TaskCheckpoints } from "./checkpoints.ts";
import { taskFailure } from "./policy.ts";
import type { TaskContext } from "./worker.ts";

/** The checkpoint holding a task's translated segments. */
export const TRANSLATION_CHECKPOINT = "translation.json";

/** `translation.json`: one text per transcript segment ("" where there is nothing to say). */
const TranslationCheckpointSchema = z.object({
  version: z.literal(1),
  source: z.string(),
  target: z.string(),
  texts: z.array(z.string()),
});
type SavedTranslation = z.infer<typeof TranslationCheckpointSchema>;

/** What is translated: the segments' texts, between which languages, in batches of about `batchChars`. */
export type SegmentTranslation = Pick<TranslateSegmentsRequest, "texts" | "source" | "target" | "batchChars" | "onProgress">;

/**
 * The translation an earlier delivery stored for these segments: undefined when there is none, or
 * when it is of other languages or another number of segments (the transcript changed).
 */
export async function readTranslationCheckpoint(
  checkpoints: TaskCheckpoints,
  request: Pick<SegmentTranslation, "source" | "target">,
  segments: number,
): Promise<string[] | undefined> {
  const saved = await checkpoints.readJson(TRANSLATION_CHECKPOINT, TranslationCheckpointSchema);
  const fits = saved !== undefined && saved.source === request.source && saved.target === request.target && saved.texts.length === segments;
  return fits ? saved.texts : undefined;
}

/**
 * The segments' texts in the target language, one per segment: restored from the checkpoint, or
 * translated (several segments per engine call, see translateSegments) and checkpointed. A translator's
 * failure is thrown as the task failure policy classifies it.
 */
export async function translateWithCheckpoint(
  mt: SegmentTranslator,
  request: SegmentTranslation,
  ctx: Pick<TaskContext, "checkpoints" | "signal" | "logger">,
): Promise<string[]> {
  const { texts, source, target } = request;
  const restored = await readTranslationCheckpoint(ctx.checkpoints, request, texts.length);
  if (restored !== undefined) {
    ctx.logger.info("translation restored from its checkpoint");
    return restored;
  }
  let translated: string[];
  try {
    translated = await translateSegments(mt, { ...request, signal: ctx.signal, logger: ctx.logger });
  } catch (error) {
    throw taskFailure(error);
  }
  const record: SavedTranslation = { version: 1, source, target, texts: translated };
  await ctx.checkpoints.putJson(TRANSLATION_CHECKPOINT, record);
  ctx.logger.info({ segments: translated.length }, "segments translated");
  return translated;
}
