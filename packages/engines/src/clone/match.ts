import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "@voiceloc/log";
import { audioEncodeArgs, FfmpegFailedError, GLOBAL_ARGS, inputArgs, safePath, WAV_DEMUXERS, type MediaToolkit } from "@voiceloc/media";
import { outputPath } from "../cli.ts";
import { LanguageNotSupportedError } from "../errors.ts";
import type { Language } from "../languages.ts";
import type { TtsRegistry } from "../registry.ts";
import { SELF_TEST_SENTENCES } from "../samples.ts";
import type { SynthesisResult, VoiceInfo } from "../types.ts";
import { readWavInfo } from "../wav.ts";
import { measureSpeech, type SpeechMeasure } from "./analyze.ts";
import type { CloneEngine, CloneSynthesizeRequest, ClonedVoice } from "./types.ts";

/** The `match` engine's speech is aimed this close to the clone's median pitch (the promise is 10 %). */
const PITCH_AIM = 0.04;
/** …and this close to its speaking rate (the promise is 15 %). */
const RATE_AIM = 0.08;
/** Pitch is moved by at most two octaves either way, the tempo by at most a factor of two. */
const PITCH_RATIO_RANGE = [0.25, 4] as const;
const TEMPO_RANGE = [0.5, 2] as const;
/** Every call answers mono WAV at this rate, whichever voice spoke (chunks of one text are joined as they are). */
export const MATCH_SAMPLE_RATE = 22_050;
/** Shapings tried at most per call (the first, then corrections from what was measured). */
const MAX_ATTEMPTS = 3;
/** A chunk's own rate is trusted when it has this many syllables in this much speech; otherwise the voice's. */
const RATE_MIN_SYLLABLES = 5;
const RATE_MIN_SPEECH_SECONDS = 1.5;
/**
 * Of a pitch change by a factor P, formants move by P^FORMANT_SHARE: a higher voice is also a smaller
 * speaker, but moving formants as far as the pitch sounds like a cartoon.
 */
const FORMANT_SHARE = 1 / 3;

export interface MatchCloneEngineOptions {
  /** The offline voices, as the rest of the service speaks with them. */
  registry: TtsRegistry;
  media: MediaToolkit;
  logger?: Logger | undefined;
  /** Largest text of one call (each call is measured and transformed on its own). Default 1000. */
  maxInputChars?: number | undefined;
}

/** A voice as measured on its self-test sentence. */
interface VoiceMeasure {
  medianHz: number | null;
  syllablesPerSecond: number | null;
}

/** The pitch and tempo change that turns speech measured as `from` into the clone's. */
export interface MatchTransform {
  pitch: number;
  tempo: number;
}

function clamp(value: number, [low, high]: readonly [number, number]): number {
  return Math.min(high, Math.max(low, value));
}

/** A rate measurement of a piece of speech, when it has enough syllables to be trusted. */
function trustedRate(measure: SpeechMeasure): number | null {
  return measure.syllables >= RATE_MIN_SYLLABLES && measure.speechSeconds >= RATE_MIN_SPEECH_SECONDS ? measure.profile.syllablesPerSecond : null;
}

/** `atempo` steps within 0.5–2 (what every ffmpeg takes) whose product is `tempo`. */
function atempoChain(tempo: number): string[] {
  const steps: string[] = [];
  let left = tempo;
  while (left > 2) {
    steps.push("atempo=2");
    left /= 2;
  }
  while (left < 0.5) {
    steps.push("atempo=0.5");
    left /= 0.5;
  }
  steps.push(`atempo=${left.toFixed(5)}`);
  return steps;
}

/**
 * The ffmpeg filter for a pitch change by `pitch` and a tempo change by `tempo` (above 1 is faster).
 * With rubberband (Debian's ffmpeg has it): `asetrate` moves pitch, formants and tempo together by
 * F = pitch^(1/3), then rubberband moves pitch by pitch/F with formants kept and tempo by tempo/F.
 * Without it (an ffmpeg built without librubberband): `asetrate` by the whole pitch change and `atempo`
 * to put the tempo right, formants moving with the pitch.
 */
export function matchFilter(transform: MatchTransform, sampleRate: number, options: { rubberband?: boolean } = {}): string {
  if (options.rubberband === false) {
    return [`asetrate=${Math.round(sampleRate * transform.pitch)}`, `aresample=${sampleRate}`, ...atempoChain(transform.tempo / transform.pitch)].join(",");
  }
  const formant = transform.pitch ** FORMANT_SHARE;
  const parts = [
    `asetrate=${Math.round(sampleRate * formant)}`,
    `aresample=${sampleRate}`,
    `rubberband=pitch=${(transform.pitch / formant).toFixed(5)}:tempo=${(transform.tempo / formant).toFixed(5)}:formant=preserved:pitchq=quality`,
  ];
  return parts.join(",");
}

/**
 * The offline `match` cloning engine. Not a clone: an approximation. It picks the target language's
 * installed voice whose pitch is nearest the sample's (each voice measured once, on its self-test
 * sentence), speaks with it, then shifts pitch and formants and changes the tempo (ffmpeg's `rubberband`
 * and `asetrate` filters) so the median pitch of the speech is within 10 % of the sample's and its
 * speaking rate within 15 %, measuring the result and correcting once more when it misses.
 */
export function createMatchCloneEngine(options: MatchCloneEngineOptions): CloneEngine {
  const { registry, media } = options;
  const log = options.logger?.child({ component: "clone", engine: "match" });
  const measures = new Map<string, Promise<VoiceMeasure | undefined>>();

  const offline = (voice: VoiceInfo): boolean => registry.engines.find((e) => e.id === voice.engine)?.capabilities().remote !== true;

  async function withWorkDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(join(tmpdir(), "voiceloc-match-"));
    try {
      return await fn(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** The voice's pitch and rate on its language's self-test sentence (once per process); undefined when it cannot speak. */
  function measureVoice(voice: VoiceInfo, signal: AbortSignal | undefined): Promise<VoiceMeasure | undefined> {
    const key = `${voice.name}\u0000${voice.language}`;
    let measured = measures.get(key);
    if (!measured) {
      measured = withWorkDir(async (dir) => {
        const { engine } = registry.resolve(voice.language, voice.name);
        const result = await engine.synthesize({ text: SELF_TEST_SENTENCES[voice.language], language: voice.language, voice: voice.name, outPath: join(dir, "voice.wav"), signal });
        // Another voice spoke instead (this one failed at run time): its figures would be misattributed.
        if (result.voice !== voice.name) return undefined;
        const m = await measureSpeech(result.wavPath, { signal });
        return { medianHz: m.profile.medianPitchHz, syllablesPerSecond: m.profile.syllablesPerSecond };
      }).catch((error: unknown) => {
        log?.warn({ voice: voice.name, err: error }, "could not measure a voice for matching");
        // A cancelled measurement is tried again by the next request; a voice that failed to speak is left out.
        if (signal?.aborted === true) measures.delete(key);
        return undefined;
      });
      measures.set(key, measured);
    }
    return measured;
  }

  /** The installed voice of `language` nearest the clone's median pitch (naturalness breaks near ties). */
  async function pickVoice(clone: ClonedVoice, language: Language, signal: AbortSignal | undefined): Promise<{ voice: VoiceInfo; measure: VoiceMeasure | undefined }> {
    const voices = registry.voicesFor(language);
    const candidates = voices.filter(offline);
    const target = clone.profile.medianPitchHz;
    const fallback = registry.defaultVoice(language) ?? voices[0];
    if (!fallback) throw new LanguageNotSupportedError(language);
    if (target === null || candidates.length === 0) return { voice: fallback, measure: undefined };
    // Each voice is measured once per process, two at a time (the first request of a language waits for it).
    const measured: (VoiceMeasure | undefined)[] = [];
    for (let i = 0; i < candidates.length; i += 2) {
      measured.push(...(await Promise.all(candidates.slice(i, i + 2).map((voice) => measureVoice(voice, signal)))));
    }
    let best: { voice: VoiceInfo; measure: VoiceMeasure; cost: number } | undefined;
    for (const [index, voice] of candidates.entries()) {
      const measure = measured[index];
      if (measure?.medianHz == null) continue;
      // Distance in octaves, plus up to a quarter octave for a less natural voice.
      const cost = Math.abs(Math.log2(measure.medianHz / target)) + ((100 - voice.quality) / 100) * 0.25;
      if (!best || cost < best.cost) best = { voice, measure, cost };
    }
    return best ? { voice: best.voice, measure: best.measure } : { voice: fallback, measure: undefined };
  }

  let rubberband = true;

  async function transform(input: string, output: string, change: MatchTransform, signal: AbortSignal | undefined): Promise<void> {
    const rate = (await readWavInfo(input))?.sampleRate ?? MATCH_SAMPLE_RATE;
    const run = (withRubberband: boolean) =>
      media.run(
        [
          ...GLOBAL_ARGS,
          ...inputArgs(input, WAV_DEMUXERS),
          "-map", "0:a:0",
          "-af", matchFilter(change, rate, { rubberband: withRubberband }),
          ...audioEncodeArgs("wav", { channels: 1, sampleRate: MATCH_SAMPLE_RATE }),
          "-y", safePath(output, "output"),
        ],
        { signal, what: "Shaping the speech to the cloned voice" },
      );
    try {
      await run(rubberband);
    } catch (error) {
      if (!(rubberband && error instanceof FfmpegFailedError && error.stderrTail.some((line) => /No such filter: 'rubberband'/.test(line)))) throw error;
      rubberband = false;
      log?.warn("this ffmpeg has no rubberband filter: cloned voices are shaped by resampling, which moves formants with the pitch");
      await run(false);
    }
  }

  return {
    id: "match",
    maxInputChars: options.maxInputChars ?? 1_000,
    languages: () => registry.capabilities().languages,
    // The profile measured on the sample is the whole voice: nothing is kept anywhere.
    create: () => Promise.resolve({ ref: "" }),
    remove: () => Promise.resolve(),
    async synthesize(clone: ClonedVoice, request: CloneSynthesizeRequest): Promise<SynthesisResult> {
      const { voice, measure } = await pickVoice(clone, request.language, request.signal);
      const { engine } = registry.resolve(request.language, voice.name);
      const wavPath = outputPath(request.outPath);
      return withWorkDir(async (dir) => {
        const raw = join(dir, "voice.wav");
        const spoken = await engine.synthesize({ text: request.text, language: request.language, voice: voice.name, signal: request.signal, outPath: raw });
        const targetPitch = clone.profile.medianPitchHz;
        const targetRate = clone.profile.syllablesPerSecond;
        const before = await measureSpeech(spoken.wavPath, { signal: request.signal });
        const fromPitch = before.profile.medianPitchHz ?? measure?.medianHz ?? null;
        const fromRate = trustedRate(before) ?? measure?.syllablesPerSecond ?? before.profile.syllablesPerSecond;
        let change: MatchTransform = {
          pitch: targetPitch !== null && fromPitch !== null ? clamp(targetPitch / fromPitch, PITCH_RATIO_RANGE) : 1,
          tempo: targetRate !== null && fromRate !== null ? clamp(targetRate / fromRate, TEMPO_RANGE) : 1,
        };
        // Voices, texts and the measures vary: measure what came out, aim again when it missed, keep the nearest.
        let best: { path: string; score: number; change: MatchTransform } | undefined;
        for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
          const path = join(dir, `shaped-${attempt}.wav`);
          await transform(spoken.wavPath, path, change, request.signal);
          const after = await measureSpeech(path, { signal: request.signal });
          const gotPitch = after.profile.medianPitchHz;
          const gotRate = trustedRate(after);
          const pitchMiss = targetPitch !== null && gotPitch !== null ? Math.abs(gotPitch / targetPitch - 1) : 0;
          const rateMiss = targetRate !== null && gotRate !== null ? Math.abs(gotRate / targetRate - 1) : 0;
          const score = Math.max(pitchMiss / PITCH_AIM, rateMiss / RATE_AIM);
          if (!best || score < best.score) best = { path, score, change: { ...change } };
          if (score <= 1) break;
          const next: MatchTransform = {
            pitch: pitchMiss > PITCH_AIM && targetPitch !== null && gotPitch !== null ? clamp(change.pitch * (targetPitch / gotPitch), PITCH_RATIO_RANGE) : change.pitch,
            tempo: rateMiss > RATE_AIM && targetRate !== null && gotRate !== null ? clamp(change.tempo * (targetRate / gotRate), TEMPO_RANGE) : change.tempo,
          };
          if (next.pitch === change.pitch && next.tempo === change.tempo) break;
          log?.debug({ attempt, change, next, gotPitch, gotRate }, "the shaped speech missed the voice; aiming again");
          change = next;
        }
        if (!best) throw new Error("unreachable: at least one attempt runs");
        await copyFile(best.path, wavPath);
        log?.debug({ voice: spoken.voice, ...best.change, chars: request.text.length }, "spoke in a matched voice");
        return { wavPath, sampleRate: MATCH_SAMPLE_RATE, voice: spoken.voice };
      });
    },
  };
}
