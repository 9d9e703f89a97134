/**
 * Cloned voices in the processes that speak: the wire descriptor to the engines' `ClonedVoice` and back,
 * and a task's own clone (made from its sample for the task, removed at the engine when the task ends).
 */
import type { ClonedVoiceWire, VoiceProfileWire } from "@voiceloc/contracts";
import type { CloneEngine, ClonedVoice, Language, SampleAnalysis, VoiceProfile } from "@voiceloc/engines";
import type { Logger } from "@voiceloc/log";
import { taskFailure } from "./policy.ts";

export function profileToWire(profile: VoiceProfile): VoiceProfileWire {
  return {
    median_pitch_hz: profile.medianPitchHz,
    pitch_low_hz: profile.pitchLowHz,
    pitch_high_hz: profile.pitchHighHz,
    syllables_per_second: profile.syllablesPerSecond,
  };
}

export function profileFromWire(profile: VoiceProfileWire): VoiceProfile {
  return {
    medianPitchHz: profile.median_pitch_hz,
    pitchLowHz: profile.pitch_low_hz,
    pitchHighHz: profile.pitch_high_hz,
    syllablesPerSecond: profile.syllables_per_second,
  };
}

export function clonedVoiceFromWire(wire: ClonedVoiceWire): ClonedVoice {
  return { id: wire.id, name: wire.name, engine: wire.engine, ref: wire.ref, profile: profileFromWire(wire.profile) };
}

export function clonedVoiceToWire(clone: ClonedVoice): ClonedVoiceWire {
  return { id: clone.id, name: clone.name, engine: clone.engine, ref: clone.ref, profile: profileToWire(clone.profile) };
}

/** The id of the clone a task makes from its own sample: the same on every delivery of the task. */
export function taskCloneId(taskId: string): string {
  return `task-${taskId}`;
}

export interface TaskCloneRequest {
  clones: CloneEngine;
  taskId: string;
  /** The clone's name at the engine. */
  name: string;
  /** Checks and measures the sample (fetched by the caller): `analyzeSample`'s answer. */
  analyze: () => Promise<SampleAnalysis>;
  language?: Language | undefined;
  signal: AbortSignal;
  logger: Logger;
}

/**
 * Makes a task's clone from its sample. Failures are task failures: an unusable sample fails the task in
 * its plain words, an outside engine's trouble is retried by the policy. The sample is never logged.
 */
export async function createTaskClone(request: TaskCloneRequest): Promise<ClonedVoice> {
  const { clones, signal } = request;
  let sample: SampleAnalysis;
  try {
    sample = await request.analyze();
  } catch (error) {
    if (signal.aborted) throw error;
    throw taskFailure(error, { scope: "input", context: "The voice sample cannot be cloned" });
  }
  const id = taskCloneId(request.taskId);
  let ref: string;
  try {
    ({ ref } = await clones.create({ id, name: request.name, sample, language: request.language, signal }));
  } catch (error) {
    if (signal.aborted) throw error;
    throw taskFailure(error, { context: "The voice could not be cloned from the sample" });
  }
  request.logger.info({ clone: id, engine: clones.id, seconds: Math.round(sample.seconds * 10) / 10 }, "voice cloned for the task");
  return { id, name: request.name, engine: clones.id, ref, profile: sample.profile };
}

/** Removes a task's clone at its engine; a failure is logged, never the task's (the task's outcome stands). */
export async function removeTaskClone(clones: CloneEngine, clone: ClonedVoice, logger: Logger): Promise<void> {
  try {
    await clones.remove(clone, AbortSignal.timeout(30_000));
    logger.info({ clone: clone.id, engine: clones.id }, "the task's cloned voice was removed at its engine");
  } catch (error) {
    logger.warn({ err: error, clone: clone.id, engine: clones.id }, "the task's cloned voice could not be removed at its engine");
  }
}
