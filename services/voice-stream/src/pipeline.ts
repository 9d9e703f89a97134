/**
 * One voice stream task: fetch the recording, recognise what is said (timed segments), translate each
 * segment, speak each translation and put every clip at its segment's start time on a track as long as
 * the original, encoded to MP3.
 *
 * Intermediate results are task checkpoints, so a redelivered task does not redo finished work:
 * `transcript.json` (segments and the decoded length of the original: the input is not fetched again),
 * `translation.json`, and one `clips/<n>.wav` per spoken segment.
 */
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { BlobStore } from "@voiceloc/blobs";
import { DEFAULT_MAX_MEDIA_SECONDS } from "@voiceloc/config";
import { capabilityProblems, CLONE_SAMPLE_SECONDS, isSandboxOwner, LANGUAGES, type Capabilities, type Language, type VoiceStreamWork } from "@voiceloc/contracts";
import {
  analyzeSample,
  cloneEngineFor,
  cloneVoiceName,
  encodePcm16Wav,
  measurePitch,
  readPcm16Wav,
  synthesizeToFile,
  TtsError,
  type CloneEngine,
  type ClonedVoice,
  type MtRegistry,
  type SttRegistry,
  type TtsRegistry,
} from "@voiceloc/engines";
import { fetchToFile, type FetchOptions } from "@voiceloc/fetch";
import { audioEncodeArgs, GLOBAL_ARGS, inputArgs, WAV_DEMUXERS, type MediaToolkit } from "@voiceloc/media";
import {
  clonedVoiceFromWire,
  createTaskClone,
  removeTaskClone,
  NO_SPEECH_MESSAGE,
  NOT_MEDIA,
  readTranslationCheckpoint,
  TaskInputError,
  taskFailure,
  translateWithCheckpoint,
  type ResumeContext,
  type TaskCheckpoints,
  type TaskContext,
  type TaskHandler,
  type TaskResult,
} from "@voiceloc/worker";
import { z } from "zod";
import { inLanes, speechLanes } from "./lanes.ts";
import { inspectOriginal, originalAudioMode, writeVoiceStreamOutput } from "./output.ts";
import { lineFeatures, detectSpeech, refineStarts } from "./features.ts";
import { assignVoices, clusterSpeakers, speakerPitches } from "./speakers.ts";
import {
  DEFAULT_FADE_SECONDS,
  FALLBACK_SPEAKING_RATE,
  fitClip,
  measuredRate,
  mergeSegments,
  slotBudget,
  summarizeTiming,
  type ClipSlot,
  type MergeOptions,
  type TimedText,
  type SpeakingRate,
  type TimingOptions,
} from "./timing.ts";

/** Where inputs may come from (passed to fetchToFile). */
export type VoiceStreamFetchSettings = Pick<FetchOptions, "mediaRoot" | "mediaRootScope" | "allowPrivateHosts" | "maxBytes" | "timeoutMs" | "s3" | "gs" | "ca">;


export interface VoiceStreamPipelineDeps {
  blobs: BlobStore;
  tts: TtsRegistry;
  mt: MtRegistry;
  stt: SttRegistry;
  media: MediaToolkit;
  fetch: VoiceStreamFetchSettings;
  /**
   * The engine of cloned voices (CLONE_ENGINE): speaks streams whose voice is `clone:<id>`, and makes a
   * stream's own clone (`use_voice_clone`: of `voice_clone_sample`, else of the input's own speech),
   * removed at the engine when the stream ends. None: cloning is off.
   */
  clones?: CloneEngine | undefined;
  timing?: TimingOptions;
  /** How recognised pieces of one utterance are joined before translation. */
  merge?: MergeOptions;
  /** Output track: sample rate (Hz) and MP3 bitrate (kbit/s). Default 24000 Hz, 64 kbit/s mono. */
  output?: { sampleRate?: number; bitrateKbps?: number };
  /**
   * Longest input accepted, in seconds of decoded audio (MAX_MEDIA_SECONDS). Longer media fails the
   * task with a reason naming the limit. Default DEFAULT_MAX_MEDIA_SECONDS (config).
   */
  maxMediaSeconds?: number;
  /** Longest recording of a sandbox task (owner `sandbox:<account>`; SANDBOX_MAX_MEDIA_SECONDS). */
  sandboxMaxMediaSeconds?: number;
}

const SegmentSchema = z.object({
  start: z.number().finite().min(0),
  end: z.number().finite().min(0),
  text: z.string(),
  /** Who speaks the line (0, 1, …): grouped by voice features; absent with `speakers: one`. */
  speaker: z.number().int().min(0).optional(),
});

/** `transcript.json`: what was said, and the decoded length of the original (never a header's claim). */
const TranscriptCheckpointSchema = z.object({
  version: z.literal(2),
  language: z.string(),
  /** Length of the original recording's decoded audio, in seconds. */
  durationSeconds: z.number().finite().positive(),
  segments: z.array(SegmentSchema).min(1),
  /** Median pitch (Hz) of each speaker's lines, by speaker number; absent with one speaker. */
  speakerPitches: z.array(z.number().positive().nullable()).optional(),
});
type SavedTranscript = z.infer<typeof TranscriptCheckpointSchema>;

/** One speaker's voice: a preset voice's name, or a clone. */
interface Voice {
  voice: string;
  clone?: ClonedVoice | undefined;
}

interface Clip {
  segment: number;
  path: string;
  durationSeconds: number;
}

const TRANSCRIPT = "transcript.json";
/** The input's own speech (its first minutes, decoded) kept for a clone of it, so a redelivery makes the same voice without the input. */
const INPUT_SAMPLE = "clone-sample.wav";
/** The recogniser's speaker labels as speaker numbers, 0 for the first label heard, 1 for the next new one, … */
export function engineSpeakers(labels: readonly string[]): number[] {
  const numbers = new Map<string, number>();
  return labels.map((label) => {
    if (!numbers.has(label)) numbers.set(label, numbers.size);
    return numbers.get(label)!;
  });
}

/** One speaker's own lines (speaker `n`), kept as the sample of their clone. */
const speakerSample = (speaker: number) => `clone-sample-speaker-${speaker}.wav`;
/** Line-by-line translation with a length budget per line (a language model translates). */
const FITTED_TRANSLATION = "translation-fitted.json";
const FittedTranslationSchema = z.object({ version: z.literal(1), source: z.string(), target: z.string(), texts: z.array(z.string()) });
/** Longest text a voice reads to measure its speaking rate (the recording's own first lines). */
const RATE_PROBE_CHARS = 240;
/** Voices whose speaking rate a process keeps (the oldest is forgotten first). */
const RATE_CACHE_SIZE = 64;
/** Most voices of the target language measured when choosing a voice per speaker. */
const VOICE_CANDIDATES = 8;
/** Longest stretch of the input used as the sample of its own clone (CLONE_SAMPLE_SECONDS.max). */
const INPUT_SAMPLE_SECONDS = CLONE_SAMPLE_SECONDS.max;
/** Largest voice sample file accepted (five minutes of 48 kHz stereo WAV is 55 MB). */
const SAMPLE_MAX_BYTES = 200 * 1024 * 1024;
const CLIPS_PREFIX = "clips/";
const clipCheckpoint = (index: number) => `${CLIPS_PREFIX}${String(index).padStart(5, "0")}.wav`;
/** Largest batch of segment texts sent to the translator in one call. */
const TRANSLATION_BATCH_CHARS = 2_000;

/** Progress milestones (percent): each stage's end. */
const P = { fetched: 5, decoded: 10, recognised: 40, translated: 55, spoken: 90, fitted: 94, placed: 99 } as const;

/** Progress while speaking: `spoken` of `total` segments done. */
const speakingProgress = (spoken: number, total: number) => P.translated + ((P.spoken - P.translated) * spoken) / Math.max(1, total);

async function readTranscript(checkpoints: TaskCheckpoints, language: Language): Promise<SavedTranscript | undefined> {
  const saved = await checkpoints.readJson(TRANSCRIPT, TranscriptCheckpointSchema);
  return saved?.language === language ? saved : undefined;
}

/**
 * Progress already done by earlier deliveries, from the checkpoints: recognition (40), translation
 * (55), then the share of segments already spoken. Never more than the handler reports for the same state.
 */
export async function voiceStreamResumedProgress(task: VoiceStreamWork, ctx: Pick<ResumeContext, "checkpoints">): Promise<number> {
  const names = await ctx.checkpoints.list();
  if (!names.includes(TRANSCRIPT)) return 0;
  const transcript = await readTranscript(ctx.checkpoints, task.source_language);
  if (transcript === undefined) return 0;
  const total = transcript.segments.length;
  const translated =
    task.source_language === task.target_language ||
    names.includes(FITTED_TRANSLATION) ||
    (await readTranslationCheckpoint(ctx.checkpoints, { source: task.source_language, target: task.target_language }, total)) !== undefined;
  if (!translated) return P.recognised;
  const clips = names.filter((n) => n.startsWith(CLIPS_PREFIX)).length;
  return clips > 0 ? speakingProgress(clips, total) : P.translated;
}

function sentence(text: string): string {
  const trimmed = text.trim();
  const upper = trimmed.length > 0 ? `${trimmed[0]?.toUpperCase() ?? ""}${trimmed.slice(1)}` : trimmed;
  return /[.!?]$/.test(upper) ? upper : `${upper}.`;
}

export function createVoiceStreamHandler(deps: VoiceStreamPipelineDeps): TaskHandler<VoiceStreamWork> {
  const { blobs, tts, mt, stt, media } = deps;
  const sampleRate = deps.output?.sampleRate ?? 24_000;
  const bitrateKbps = deps.output?.bitrateKbps ?? 64;
  const maxMediaSeconds = deps.maxMediaSeconds ?? DEFAULT_MAX_MEDIA_SECONDS;

  /** The engines' capability table, in the contract's shape (voices are checked by `tts.resolve`). */
  function capabilities(): Capabilities {
    const known = (l: string): l is Language => (LANGUAGES as readonly string[]).includes(l);
    const synthesis = tts.capabilities();
    return {
      synthesis: { languages: synthesis.languages.filter(known) },
      recognition: { languages: stt.capabilities().languages.filter(known) },
      translation: { pairs: mt.capabilities().pairs.map((p) => ({ source: p.source, target: p.target, pivot: p.pivot ?? null, quality: p.quality })) },
      cloning: { available: deps.clones !== undefined, languages: deps.clones?.languages().filter(known) ?? [] },
      voices: [],
    };
  }

  /** Every capability the task needs that the installed engines lack, as one plain-words message. */
  function checkCapabilities(task: VoiceStreamWork): void {
    const problems = capabilityProblems(capabilities(), {
      kind: "voice-stream",
      source: task.source_language,
      target: task.target_language,
      useVoiceClone: task.use_voice_clone === true || (task.clone !== undefined && task.clone !== null),
    });
    if (problems.length > 0) throw new TaskInputError(problems.map((p) => sentence(p.message)).join(" "));
  }

  async function fetchInput(task: VoiceStreamWork, ctx: TaskContext): Promise<string> {
    try {
      const fetched = await fetchToFile(task.file, join(ctx.workDir, "input"), { ...deps.fetch, owner: task.account_id, blobs, signal: ctx.signal, logger: ctx.logger });
      return fetched.path;
    } catch (error) {
      throw taskFailure(error, { scope: "input" });
    }
  }

  /** Whether the task speaks in a clone of its input's own speech (use_voice_clone without a sample). */
  const clonesInput = (task: VoiceStreamWork) => task.use_voice_clone === true && !task.clone && !task.voice_clone_sample;

  /** Makes the task's own clone from a sample file (removed by the handler when the task ends). */
  async function makeClone(task: VoiceStreamWork, clones: CloneEngine, sample: string, ctx: TaskContext): Promise<ClonedVoice> {
    return createTaskClone({
      clones,
      taskId: task.task_id,
      name: `voice stream ${task.task_id}`,
      analyze: () => analyzeSample({ inputPath: sample, workDir: ctx.workDir, media, signal: ctx.signal }),
      language: task.source_language,
      signal: ctx.signal,
      logger: ctx.logger,
    });
  }

  /** The clone of `voice_clone_sample`, fetched under the task account's rights. */
  async function cloneOfSample(task: VoiceStreamWork, clones: CloneEngine, reference: string, ctx: TaskContext): Promise<ClonedVoice> {
    let path: string;
    try {
      const maxBytes = Math.min(deps.fetch.maxBytes ?? SAMPLE_MAX_BYTES, SAMPLE_MAX_BYTES);
      path = (await fetchToFile(reference, join(ctx.workDir, "clone-input"), { ...deps.fetch, maxBytes, owner: task.account_id, blobs, signal: ctx.signal, logger: ctx.logger })).path;
    } catch (error) {
      throw taskFailure(error, { scope: "input", context: "The voice sample cannot be fetched" });
    }
    try {
      return await makeClone(task, clones, path, ctx);
    } finally {
      await rm(path, { force: true });
    }
  }

  /** The cloning engine for a task that speaks in a clone, or a plain-words failure when cloning is off or cannot speak the target language. */
  function clonesFor(task: VoiceStreamWork): CloneEngine {
    const clones = deps.clones;
    if (clones === undefined) {
      throw new TaskInputError("Voice cloning is not available on this server (CLONE_ENGINE=off): submit the voice stream with a preset voice (or none, for the default voice).");
    }
    if (!clones.languages().includes(task.target_language)) {
      throw new TaskInputError(`Cloned voices of this server (${clones.id}) cannot speak ${task.target_language}.`);
    }
    return clones;
  }

  /** The input decoded to the recogniser's 16 kHz mono WAV; its decoded length is the one trusted. */
  async function decodeInput(input: string, ctx: TaskContext, sandbox: boolean): Promise<{ path: string; durationSeconds: number }> {
    const limit = sandbox && deps.sandboxMaxMediaSeconds !== undefined ? Math.min(deps.sandboxMaxMediaSeconds, maxMediaSeconds) : maxMediaSeconds;
    let decoded;
    try {
      decoded = await media.decodeAudio({ input, outPath: join(ctx.workDir, "speech.wav"), sampleRate: 16_000, maxSeconds: limit, signal: ctx.signal });
    } catch (error) {
      throw taskFailure(error, { scope: "input" });
    }
    // The input stays in the work directory: the output stage mixes its sound and copies its picture.
    if (decoded.overLimit && limit < maxMediaSeconds) {
      throw new TaskInputError(
        `The recording is longer than ${limit} seconds, the most a sandbox key may send (SANDBOX_MAX_MEDIA_SECONDS): send a shorter recording or use a live key.`,
      );
    }
    if (decoded.overLimit) {
      throw new TaskInputError(
        `The recording is longer than ${maxMediaSeconds} seconds, the most this server accepts for a voice stream (MAX_MEDIA_SECONDS).`,
      );
    }
    if (!(decoded.durationSeconds > 0)) throw new TaskInputError(`${NOT_MEDIA}: it contains no sound (its length is zero).`);
    return decoded;
  }

  /** The input's first minutes of decoded sound, checkpointed as the sample of its own clone (before the transcript, so a restored transcript has it). */
  async function keepInputSample(speech: string, ctx: TaskContext): Promise<void> {
    const path = join(ctx.workDir, INPUT_SAMPLE);
    try {
      await media.run(
        [...GLOBAL_ARGS, ...inputArgs(speech, WAV_DEMUXERS), "-t", String(INPUT_SAMPLE_SECONDS), ...audioEncodeArgs("wav", { channels: 1 }), "-y", path],
        { signal: ctx.signal, what: "Keeping the speech to clone" },
      );
    } catch (error) {
      throw taskFailure(error);
    }
    await ctx.checkpoints.put(INPUT_SAMPLE, { path });
  }

  async function recognise(task: VoiceStreamWork, ctx: TaskContext): Promise<SavedTranscript> {
    const input = await fetchInput(task, ctx);
    // A picture over the pixel limit fails now, before minutes of recognition and speech (the output checks again).
    await inspectOriginal(media, input, { signal: ctx.signal });
    ctx.progress(P.fetched, "decoding the audio");
    const speech = await decodeInput(input, ctx, isSandboxOwner(task.account_id));
    ctx.progress(P.decoded, "recognising speech");
    if (clonesInput(task)) await keepInputSample(speech.path, ctx);
    let segments: SavedTranscript["segments"];
    let pitches: (number | null)[] | undefined;
    try {
      let transcript;
      try {
        transcript = await stt.transcribe({ path: speech.path, language: task.source_language, signal: ctx.signal });
      } catch (error) {
        throw taskFailure(error, { scope: "input" });
      }
      const merged = mergeSegments(
        transcript.segments
          .map((s) => ({ start: Math.max(0, s.start), end: Math.max(s.start, s.end), text: s.text.trim(), ...(s.speaker === undefined ? {} : { speaker: s.speaker }) }))
          .filter((s) => s.text !== "" && s.start < speech.durationSeconds),
        deps.merge,
      );
      if (merged.length === 0) throw new TaskInputError(NO_SPEECH_MESSAGE);
      ({ segments, pitches } = await lines(merged, speech.path, task, ctx));
    } finally {
      await rm(speech.path, { force: true });
    }
    const saved: SavedTranscript = {
      version: 2,
      language: task.source_language,
      durationSeconds: speech.durationSeconds,
      segments,
      ...(pitches === undefined ? {} : { speakerPitches: pitches }),
    };
    await ctx.checkpoints.putJson(TRANSCRIPT, saved);
    ctx.logger.info({ segments: segments.length, seconds: saved.durationSeconds }, "speech recognised");
    return saved;
  }

  /**
   * The recognised lines made ready for timing: each starts where its speech starts (energy voice
   * activity detection on the decoded input) and, with `speakers: auto`, carries its speaker (lines
   * grouped by their voice features). With use_voice_clone and no sample, each speaker's own lines are
   * checkpointed as the sample of their clone.
   */
  async function lines(merged: readonly TimedText[], speechPath: string, task: VoiceStreamWork, ctx: TaskContext) {
    const audio = await readPcm16Wav(speechPath);
    if (audio === undefined) return { segments: merged.map(({ speaker: _, ...line }) => line), pitches: undefined };
    const refined = refineStarts(merged, detectSpeech(audio.samples, audio.sampleRate));
    if (task.speakers === "one") return { segments: refined.map(({ speaker: _, ...line }) => line), pitches: undefined };
    const features = refined.map((l) => lineFeatures(audio.samples, audio.sampleRate, l.start, l.end));
    // The recogniser's speakers when it labels every line (a diarizing model), else grouped by voice features.
    const fromEngine = refined.every((l) => l.speaker !== undefined);
    const labels = fromEngine ? engineSpeakers(refined.map((l) => l.speaker!)) : clusterSpeakers(features);
    const pitches = speakerPitches(labels, features);
    const segments = refined.map(({ speaker: _, ...l }, i) => ({ ...l, speaker: labels[i] ?? 0 }));
    ctx.logger.info(
      { speakers: pitches.length, by: fromEngine ? "recogniser" : "voice features", pitches: pitches.map((p) => (p === null ? null : Math.round(p))) },
      "lines grouped by speaker",
    );
    if (clonesInput(task) && pitches.length > 1) {
      for (let speaker = 0; speaker < pitches.length; speaker++) {
        const parts = segments.filter((l) => l.speaker === speaker).map((l) => audio.samples.subarray(Math.floor(l.start * audio.sampleRate), Math.ceil(l.end * audio.sampleRate)));
        const limit = INPUT_SAMPLE_SECONDS * audio.sampleRate;
        const joined = new Int16Array(Math.min(limit, parts.reduce((n, part) => n + part.length, 0)));
        let at = 0;
        for (const part of parts) {
          if (at >= joined.length) break;
          const take = part.subarray(0, joined.length - at);
          joined.set(take, at);
          at += take.length;
        }
        const path = join(ctx.workDir, speakerSample(speaker));
        await writeFile(path, encodePcm16Wav(joined, audio.sampleRate));
        await ctx.checkpoints.put(speakerSample(speaker), { path });
      }
    }
    return { segments, pitches: pitches.length > 1 ? pitches : undefined };
  }

  /** Measured median pitch of the installed voices (by voice and language), each measured once per process. */
  const voicePitch = new Map<string, Promise<number | null>>();
  function measureVoice(name: string, language: Language, text: string, ctx: TaskContext): Promise<number | null> {
    const id = `${name}\u0000${language}`;
    let known = voicePitch.get(id);
    if (known === undefined) {
      known = (async () => {
        const dir = join(ctx.workDir, "voices");
        await mkdir(dir, { recursive: true });
        const out = join(dir, `${name.replace(/[^A-Za-z0-9_-]/g, "_")}.wav`);
        try {
          await synthesizeToFile({ registry: tts, media, logger: ctx.logger }, { text, language, voice: name, format: "wav", outPath: out, signal: ctx.signal });
          return (await measurePitch(out)).medianHz;
        } catch (error) {
          ctx.logger.warn({ voice: name, err: error }, "the voice's pitch could not be measured");
          return null;
        } finally {
          await rm(out, { force: true });
        }
      })();
      voicePitch.set(id, known);
      void known.then((v) => {
        if (v === null) voicePitch.delete(id);
      });
    }
    return known;
  }

  /**
   * How fast `voice` speaks the target language, measured once per process (per voice, target and
   * source language): it reads the recording's first recognised lines (up to RATE_PROBE_CHARS), and
   * the characters per second from its first to its last sound are its rate. A voice that cannot be
   * measured gets FALLBACK_SPEAKING_RATE (not kept, so the next task measures again).
   */
  const speakingRates = new Map<string, Promise<SpeakingRate | undefined>>();
  async function speakingRate(voice: Voice, transcript: SavedTranscript, task: VoiceStreamWork, ctx: TaskContext): Promise<SpeakingRate> {
    const id = `${voice.voice}\u0000${task.target_language}\u0000${task.source_language}`;
    let known = speakingRates.get(id);
    if (known === undefined) {
      let probe = "";
      for (const segment of transcript.segments) {
        if (probe.length >= RATE_PROBE_CHARS) break;
        probe = `${probe} ${sentence(segment.text)}`.trim();
      }
      probe = probe.slice(0, RATE_PROBE_CHARS).trim();
      known = (async () => {
        const dir = join(ctx.workDir, "voices");
        await mkdir(dir, { recursive: true });
        const out = join(dir, "speaking-rate.wav");
        try {
          const result = await synthesizeToFile(
            { registry: tts, media, logger: ctx.logger, clones: deps.clones },
            { text: probe, language: task.target_language, voice: voice.clone ? undefined : voice.voice, clone: voice.clone, format: "wav", outPath: out, signal: ctx.signal },
          );
          const audio = await readPcm16Wav(out);
          const regions = audio === undefined ? [] : detectSpeech(audio.samples, audio.sampleRate);
          const first = regions[0];
          const last = regions.at(-1);
          return measuredRate(probe.length, result.durationSeconds, first && last ? { start: first.start, end: last.end } : undefined);
        } catch (error) {
          if (ctx.signal.aborted) throw error;
          ctx.logger.warn({ voice: voice.voice, err: error }, "the voice's speaking rate could not be measured");
          return undefined;
        } finally {
          await rm(out, { force: true });
        }
      })();
      speakingRates.set(id, known);
      while (speakingRates.size > RATE_CACHE_SIZE) speakingRates.delete(speakingRates.keys().next().value ?? id);
      void known.then(
        (rate) => {
          if (rate === undefined) speakingRates.delete(id);
        },
        () => speakingRates.delete(id),
      );
    }
    const rate = await known;
    ctx.logger.info({ voice: voice.voice, rate: rate ?? null, fallback: rate === undefined ? FALLBACK_SPEAKING_RATE : undefined }, "speaking rate of the voice");
    return rate ?? FALLBACK_SPEAKING_RATE;
  }

  /** A preset voice per speaker (distinct, nearest each speaker's pitch), or the one preset voice for all. */
  async function presetVoices(transcript: SavedTranscript, texts: readonly string[], preset: string, task: VoiceStreamWork, ctx: TaskContext): Promise<string[]> {
    const pitches = transcript.speakerPitches;
    if (task.voice || task.speakers === "one" || pitches === undefined || pitches.length < 2) return [preset];
    const probe = texts.find((t) => t.trim().length >= 12) ?? texts.find((t) => t.trim() !== "");
    if (probe === undefined) return [preset];
    const candidates = tts
      .capabilities()
      .voices.filter((v) => v.language === task.target_language)
      .sort((a, b) => b.quality - a.quality)
      .filter((v, i, all) => all.findIndex((w) => w.name === v.name) === i)
      .slice(0, VOICE_CANDIDATES);
    const measured = await inLanes(candidates, speechLanes(), async (v) => ({ name: v.name, medianHz: await measureVoice(v.name, task.target_language, probe.slice(0, 200), ctx) }));
    const usable = measured.filter((v) => v.medianHz !== null);
    if (usable.length === 0) return [preset];
    const voices = assignVoices(pitches, usable);
    ctx.logger.info({ voices }, "a voice per speaker");
    return voices;
  }

  /**
   * Line by line with a length budget (a language model translates): each line is asked for a rendering
   * that fits its slot (to the next line's start) at the speaking rate of the voice that will speak it
   * (`speakingRate`), before any speed-up. Checkpointed as `translation-fitted.json`.
   */
  async function translateFitted(transcript: SavedTranscript, voice: Voice, task: VoiceStreamWork, ctx: TaskContext): Promise<string[]> {
    const source = task.source_language;
    const target = task.target_language;
    const saved = await ctx.checkpoints.readJson(FITTED_TRANSLATION, FittedTranslationSchema);
    if (saved && saved.source === source && saved.target === target && saved.texts.length === transcript.segments.length) {
      ctx.logger.info("translation restored from its checkpoint");
      return saved.texts;
    }
    const rate = await speakingRate(voice, transcript, task, ctx);
    const texts: string[] = [];
    const segments = transcript.segments;
    for (const [index, segment] of segments.entries()) {
      const slot = (segments[index + 1]?.start ?? transcript.durationSeconds) - segment.start;
      try {
        texts.push(await mt.translate({ text: segment.text, source, target, maxChars: slotBudget(slot, rate), signal: ctx.signal }));
      } catch (error) {
        throw taskFailure(error);
      }
      ctx.progress(P.recognised + ((P.translated - P.recognised) * (index + 1)) / segments.length, "translating");
    }
    await ctx.checkpoints.putJson(FITTED_TRANSLATION, { version: 1, source, target, texts });
    return texts;
  }

  /**
   * The segments' texts in the target language (restored from the translation checkpoint, or translated
   * and checkpointed). `voice`: the voice whose speaking rate sets a language model's length budgets.
   */
  async function translate(transcript: SavedTranscript, voice: Voice, task: VoiceStreamWork, ctx: TaskContext): Promise<string[]> {
    const source = task.source_language;
    const target = task.target_language;
    const texts = transcript.segments.map((s) => s.text);
    if (source === target) return texts;
    const pair = mt.capabilities().pairs.find((p) => p.source === source && p.target === target);
    if (pair?.quality === "llm") return translateFitted(transcript, voice, task, ctx);
    return translateWithCheckpoint(
      mt,
      {
        texts,
        source,
        target,
        batchChars: TRANSLATION_BATCH_CHARS,
        onProgress: (done, total) => ctx.progress(P.recognised + ((P.translated - P.recognised) * done) / total, "translating"),
      },
      ctx,
    );
  }

  /** Speaks each line in its speaker's voice: `voices[speaker]` (or clone), the first one for a line without a speaker. */
  async function speak(texts: readonly string[], speakers: readonly (number | undefined)[], voices: readonly Voice[], task: VoiceStreamWork, ctx: TaskContext): Promise<Clip[]> {
    const dir = join(ctx.workDir, "clips");
    await mkdir(dir, { recursive: true });
    let skipped = 0;
    let done = 0;
    // Each line is its own engine run and file: spoken on every core, the clips kept in line order.
    const spoken = await inLanes([...texts.entries()], speechLanes(), async ([index, text]): Promise<Clip | undefined> => {
      ctx.signal.throwIfAborted();
      const name = clipCheckpoint(index);
      const { voice, clone } = voices[speakers[index] ?? 0] ?? voices[0] ?? { voice: "" };
      let clip: Clip | undefined;
      if (text.trim() === "") {
        skipped++;
      } else if (await ctx.checkpoints.has(name)) {
        const path = await ctx.checkpoints.get(name);
        clip = { segment: index, path, durationSeconds: await media.encodedAudioDuration(path, "wav", { signal: ctx.signal }) };
      } else {
        try {
          const result = await synthesizeToFile(
            { registry: tts, media, logger: ctx.logger, clones: deps.clones },
            { text, language: task.target_language, voice: clone ? undefined : voice, clone, format: "wav", outPath: join(dir, `${index}.wav`), signal: ctx.signal, lexicons: task.lexicons },
          );
          await ctx.checkpoints.put(name, { path: result.path });
          clip = { segment: index, path: result.path, durationSeconds: result.durationSeconds };
        } catch (error) {
          if (error instanceof TtsError && (error.code === "TEXT_EMPTY" || error.code === "TEXT_NOT_SPEAKABLE")) {
            ctx.logger.warn({ segment: index, reason: error.message }, "segment left silent: its text cannot be spoken");
            skipped++;
          } else {
            throw taskFailure(error);
          }
        }
      }
      ctx.progress(speakingProgress(++done, texts.length), "speaking");
      return clip;
    });
    const clips = spoken.filter((clip): clip is Clip => clip !== undefined);
    if (clips.length === 0) {
      throw new TaskInputError(`None of the recognised speech could be spoken in ${task.target_language}.`);
    }
    if (skipped > 0) ctx.logger.info({ skipped }, "some segments are left silent");
    return clips;
  }

  /** Start times, speed-ups and cuts (see timing.ts); returns the clips as placed, the track length and the timing summary. */
  async function fit(clips: readonly Clip[], transcript: SavedTranscript, ctx: TaskContext) {
    const segments = transcript.segments;
    const placed: { path: string; startSeconds: number; durationSeconds: number }[] = [];
    const slots: ClipSlot[] = [];
    const fade = deps.timing?.fadeSeconds ?? DEFAULT_FADE_SECONDS;
    for (const clip of clips) {
      const segment = segments[clip.segment];
      if (segment === undefined) continue;
      const roomEnd = segments[clip.segment + 1]?.start ?? transcript.durationSeconds;
      const slot = fitClip(segment.start, roomEnd, clip.durationSeconds, deps.timing);
      slots.push(slot);
      let path = clip.path;
      let durationSeconds = clip.durationSeconds;
      if (slot.tempo > 1 || slot.cutSeconds !== undefined) {
        const filters: string[] = [];
        if (slot.tempo > 1) filters.push(`atempo=${slot.tempo}`);
        if (slot.cutSeconds !== undefined) {
          const cut = slot.cutSeconds;
          filters.push(`atrim=duration=${cut}`, `afade=t=out:st=${Math.max(0, cut - fade).toFixed(3)}:d=${Math.min(fade, cut).toFixed(3)}`);
        }
        path = join(ctx.workDir, "clips", `${clip.segment}-fitted.wav`);
        await media.run(
          [...GLOBAL_ARGS, ...inputArgs(clip.path, WAV_DEMUXERS), "-af", filters.join(","), ...audioEncodeArgs("wav", { channels: 1 }), "-y", path],
          { signal: ctx.signal, what: "Fitting the speech to its line" },
        );
        durationSeconds = await media.encodedAudioDuration(path, "wav", { signal: ctx.signal });
      }
      placed.push({ path, startSeconds: slot.startSeconds, durationSeconds });
    }
    const timing = summarizeTiming(slots);
    const cut = slots.filter((s) => s.cutSeconds !== undefined).length;
    // The track keeps the original's length: the last line is cut at its end like any other at the next line.
    const trackSeconds = transcript.durationSeconds;
    ctx.logger.info({ clips: placed.length, spedUp: timing.lines_sped_up, largestFactor: timing.largest_factor, cut, trackSeconds }, "speech timed");
    return { placed, trackSeconds, timing };
  }

  return async (task, ctx): Promise<TaskResult> => {
    checkCapabilities(task);
    // The voice: the caller's clone, the task's own clone (made below), or a preset voice.
    let clone: ClonedVoice | undefined;
    let preset = "";
    if (task.clone) {
      clone = clonedVoiceFromWire(task.clone);
      try {
        cloneEngineFor(clonesFor(task), clone);
      } catch (error) {
        throw taskFailure(error);
      }
    } else if (task.use_voice_clone === true) {
      clonesFor(task);
    } else {
      try {
        preset = tts.resolve(task.target_language, task.voice ?? undefined).voice.name;
      } catch (error) {
        throw taskFailure(error);
      }
    }
    // The task's own clone, removed at the engine however the task ends (a redelivery makes it again).
    let own: ClonedVoice | undefined;
    const ownBySpeaker: ClonedVoice[] = [];
    try {
      if (task.use_voice_clone === true && !task.clone && task.voice_clone_sample) {
        ctx.progress(0, "cloning the voice");
        own = await cloneOfSample(task, clonesFor(task), task.voice_clone_sample, ctx);
      }
      ctx.progress(0, "fetching the audio");

      const saved = await readTranscript(ctx.checkpoints, task.source_language);
      if (saved) ctx.logger.info({ segments: saved.segments.length }, "transcript restored from its checkpoint; the input is not fetched again");
      const transcript = saved ?? (await recognise(task, ctx));
      const speakerCount = transcript.speakerPitches?.length ?? 1;
      if (clonesInput(task) && speakerCount > 1) {
        // A clone per speaker, each made from that speaker's own lines.
        // A speaker with too little speech for a clone of their own speaks in a clone of the whole input.
        for (let speaker = 0; speaker < speakerCount; speaker++) {
          try {
            ownBySpeaker.push(await makeClone(task, clonesFor(task), await ctx.checkpoints.get(speakerSample(speaker)), ctx));
          } catch (error) {
            if (!(error instanceof TaskInputError)) throw error;
            ctx.logger.info({ speaker, reason: error.message }, "a speaker's own lines cannot be cloned: the input's clone speaks them");
            own ??= await makeClone(task, clonesFor(task), await ctx.checkpoints.get(INPUT_SAMPLE), ctx);
            ownBySpeaker.push(own);
          }
        }
      } else if (clonesInput(task)) {
        own = await makeClone(task, clonesFor(task), await ctx.checkpoints.get(INPUT_SAMPLE), ctx);
      }
      ctx.progress(P.recognised, "translating");

      clone ??= own;
      // The budget's voice: the clone, the first speaker's own clone, or the preset voice (each speaker's
      // preset is chosen after translation, by pitch; they speak at much the same rate).
      const first = clone ?? ownBySpeaker[0];
      const texts = await translate(transcript, first ? { voice: cloneVoiceName(first), clone: first } : { voice: preset }, task, ctx);
      ctx.progress(P.translated, "speaking");
      const voices: Voice[] = clone
        ? [{ voice: cloneVoiceName(clone), clone }]
        : ownBySpeaker.length > 0
          ? ownBySpeaker.map((c) => ({ voice: cloneVoiceName(c), clone: c }))
          : (await presetVoices(transcript, texts, preset, task, ctx)).map((voice) => ({ voice }));
      return await finish(texts, transcript, voices, task, ctx);
    } finally {
      for (const made of new Set([...(own ? [own] : []), ...ownBySpeaker])) if (deps.clones) await removeTaskClone(deps.clones, made, ctx.logger);
    }
  };

  async function finish(texts: string[], transcript: SavedTranscript, voices: readonly Voice[], task: VoiceStreamWork, ctx: TaskContext): Promise<TaskResult> {
    const voice = voices.map((v) => v.voice).join(", ");
    const clips = await speak(
      texts,
      transcript.segments.map((s) => (voices.length > 1 ? s.speaker : 0)),
      voices,
      task,
      ctx,
    );
    const { placed, trackSeconds, timing } = await fit(clips, transcript, ctx);
    ctx.progress(P.fitted, "placing the speech on the track");

    const input = await originalInput(task, ctx);
    const original = input === undefined ? { path: "" } : await inspectOriginal(media, input, { signal: ctx.signal });
    const output = await writeVoiceStreamOutput({
      task,
      original,
      clips: placed,
      originalSeconds: transcript.durationSeconds,
      trackSeconds,
      workDir: ctx.workDir,
      media,
      blobs,
      resultKey: (extension) => ctx.resultKey(extension),
      maxSeconds: maxMediaSeconds,
      sampleRate,
      bitrateKbps,
      signal: ctx.signal,
      logger: ctx.logger,
      onProgress: (fraction) => ctx.progress(P.fitted + (P.placed - P.fitted) * fraction, "placing the speech on the track"),
    });
    ctx.logger.info({ key: output.key, kind: output.kind, voice, timing, seconds: trackSeconds, clips: placed.length }, "voice stream written");
    return { resultKey: output.key, timing };
  }

  /**
   * The input for the output stage: the file fetched for recognition, or fetched again by a delivery
   * that resumed from the transcript. With `drop`, a resumed task whose input is gone still finishes
   * (undefined: the speech alone, as audio); with `duck` the original sound is needed, so it fails.
   */
  async function originalInput(task: VoiceStreamWork, ctx: TaskContext): Promise<string | undefined> {
    const dir = join(ctx.workDir, "input");
    const kept = await readdir(dir, { withFileTypes: true }).catch(() => []);
    const file = kept.find((entry) => entry.isFile());
    if (file) return join(dir, file.name);
    try {
      return await fetchInput(task, ctx);
    } catch (error) {
      if (originalAudioMode(task) === "duck" || !(error instanceof TaskInputError)) throw error;
      ctx.logger.warn({ reason: error instanceof Error ? error.message : String(error) }, "the input cannot be fetched again: the speech is written alone, as audio");
      return undefined;
    }
  }
}
