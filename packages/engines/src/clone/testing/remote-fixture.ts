/**
 * What the tests of the remote cloning engines (ElevenLabs, the voice library) share: a temp dir with a low
 * and a high tone sample, the stand-in of the service, a logger whose lines are checked after each test to
 * carry neither the secret nor the sample's bytes, and the helpers to name a voice and catch a failure.
 */
import { join } from "node:path";
import { createLogger, type Logger } from "@voiceloc/log";
import { makeToneWav, tempDir } from "@voiceloc/testing";
import { afterEach, expect } from "vitest";
import { TtsError } from "../../errors.ts";
import type { ClonedVoice, CloneEngineId, SampleAnalysis } from "../types.ts";

/** A sample's profile the remote engines do not read. */
export const NO_PROFILE = { medianPitchHz: null, pitchLowHz: null, pitchHighHz: null, syllablesPerSecond: null };

export function sample(wavPath: string, seconds: number): SampleAnalysis {
  return { seconds, wavPath, profile: NO_PROFILE };
}

export function clonedVoice(engine: CloneEngineId, id: string, ref: string): ClonedVoice {
  return { id, name: `Voice ${id}`, engine, ref, profile: NO_PROFILE };
}

/** The TtsError `promise` fails with (the test fails when it does not). */
export async function failure(promise: Promise<unknown>): Promise<TtsError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(TtsError);
    return error as TtsError;
  }
  throw new Error("expected a failure");
}

/** A debug logger whose lines, after each test, must hold neither `secret` nor a WAV's bytes. */
export function secretFreeLogger(secret: string): Logger {
  const lines: string[] = [];
  afterEach(() => {
    const log = lines.join("\n");
    expect(log).not.toContain(secret);
    expect(log).not.toContain("RIFF");
    lines.length = 0;
  });
  return createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(line) } });
}

export interface RemoteCloneFixture<S extends { close(): Promise<void> }> {
  readonly standIn: S;
  readonly dir: string;
  /** Four seconds of a low and of a high tone. */
  readonly lowSample: SampleAnalysis;
  readonly highSample: SampleAnalysis;
  close(): Promise<void>;
}

export async function startRemoteCloneFixture<S extends { close(): Promise<void> }>(
  prefix: string,
  startStandIn: () => Promise<S>,
  tones: { readonly lowHz: number; readonly highHz: number },
): Promise<RemoteCloneFixture<S>> {
  const { path: dir, cleanup } = await tempDir(prefix);
  const standIn = await startStandIn();
  return {
    standIn,
    dir,
    lowSample: sample(await makeToneWav(4, join(dir, "low.wav"), { frequency: tones.lowHz }), 4),
    highSample: sample(await makeToneWav(4, join(dir, "high.wav"), { frequency: tones.highHz }), 4),
    async close() {
      await standIn.close();
      await cleanup();
    },
  };
}
