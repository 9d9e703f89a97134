/**
 * One voice stream task: fetch the recording, recognise what is said (timed segments), translate each
 * segment, speak each translation and put every clip at its segment's start time on a track as long as
 * the original, encoded to MP3.
 *
 * Intermediate results are task checkpoints, so a redelivered task does not redo finished work:
 * `transcript.json` (segments and the decoded length of the original: the input is not fetched again),
 * `translation.json`, and one `clips/<n>.wav` per spoken segment.
 */
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { BlobStore } from "@voiceloc/blobs";
import { DEFAULT_MAX_MEDIA_SECONDS } from "@voiceloc/config";
import { capabilityProblems, CLONE_SAMPLE_SECONDS, isSandboxOwner, LANGUAGES, type Capabilities, type Language, type VoiceStreamWork } from "@voiceloc/contracts";
import {
  analyzeSample,
  cloneEngineFor,
  cloneVoiceName,
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
import { fitClip, mergeSegments, type MergeOptions, type TimingOptions } from "./timing.ts";

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

const SegmentSchema = z.object({ start: z.number().finite().min(0), end: z.number().finite().min(0), text: z.string() });

/** `transcript.json`: what was said, and the decoded length of the original (never a header's claim). */
const TranscriptCheckpointSchema = z.object({
  version: z.literal(2),
  language: z.string(),
  /** Length of the original recording's decoded audio, in seconds. */
  durationSeconds: z.number().finite().positive(),
  segments: z.array(SegmentSchema).min(1),
});
type SavedTranscript = z.infer<typeof TranscriptCheckpointSchema>;

interface Clip {
  segment: number;
  path: string;
  durationSeconds: number;
}

const TRANSCRIPT = "transcript.json";
/** The input's own speech (its first minutes, decoded) kept for a clone of it, so a redelivery makes the same voice without the input. */
const INPUT_SAMPLE = "clone-sample.wav";
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
  const translated = task.source_language === task.target_language || (await readTranslationCheckpoint(ctx.checkpoints, { source: task.source_language, target: task.target_language }, total)) !== undefined;
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
    } finally {
      // The input can be large and is not needed any more (a redelivery resumes from the transcript).
      await rm(input, { force: true });
    }
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
    ctx.progress(P.fetched, "decoding the audio");
    const speech = await decodeInput(input, ctx, isSandboxOwner(task.account_id));
    ctx.progress(P.decoded, "recognising speech");
    if (clonesInput(task)) await keepInputSample(speech.path, ctx);
    let transcript;
    try {
      transcript = await stt.transcribe({ path: speech.path, language: task.source_language, signal: ctx.signal });
    } catch (error) {
      throw taskFailure(error, { scope: "input" });
    } finally {
      await rm(speech.path, { force: true });
    }
    const segments = mergeSegments(
      transcript.segments
        .map((s) => ({ start: Math.max(0, s.start), end: Math.max(s.start, s.end), text: s.text.trim() }))
        .filter((s) => s.text !== "" && s.start < speech.durationSeconds),
      deps.merge,
    );
    if (segments.length === 0) throw new TaskInputError(NO_SPEECH_MESSAGE);
    const saved: SavedTranscript = { version: 2, language: task.source_language, durationSeconds: speech.durationSeconds, segments };
    await ctx.checkpoints.putJson(TRANSCRIPT, saved);
    ctx.logger.info({ segments: segments.length, seconds: saved.durationSeconds }, "speech recognised");
    return saved;
  }

  /** The segments' texts in the target language (restored from the translation checkpoint, or translated and checkpointed). */
  async function translate(transcript: SavedTranscript, task: VoiceStreamWork, ctx: TaskContext): Promise<string[]> {
    const source = task.source_language;
    const target = task.target_language;
    const texts = transcript.segments.map((s) => s.text);
    if (source === target) return texts;
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

  async function speak(texts: readonly string[], voice: string, clone: ClonedVoice | undefined, task: VoiceStreamWork, ctx: TaskContext): Promise<Clip[]> {
    const dir = join(ctx.workDir, "clips");
    await mkdir(dir, { recursive: true });
    const clips: Clip[] = [];
    let skipped = 0;
    for (const [index, text] of texts.entries()) {
      ctx.signal.throwIfAborted();
      const name = clipCheckpoint(index);
      if (text.trim() === "") {
        skipped++;
      } else if (await ctx.checkpoints.has(name)) {
        const path = await ctx.checkpoints.get(name);
        clips.push({ segment: index, path, durationSeconds: await media.encodedAudioDuration(path, "wav", { signal: ctx.signal }) });
      } else {
        try {
          const result = await synthesizeToFile(
            { registry: tts, media, logger: ctx.logger, clones: deps.clones },
            { text, language: task.target_language, voice: clone ? undefined : voice, clone, format: "wav", outPath: join(dir, `${index}.wav`), signal: ctx.signal, lexicons: task.lexicons },
          );
          await ctx.checkpoints.put(name, { path: result.path });
          clips.push({ segment: index, path: result.path, durationSeconds: result.durationSeconds });
        } catch (error) {
          if (error instanceof TtsError && (error.code === "TEXT_EMPTY" || error.code === "TEXT_NOT_SPEAKABLE")) {
            ctx.logger.warn({ segment: index, reason: error.message }, "segment left silent: its text cannot be spoken");
            skipped++;
          } else {
            throw taskFailure(error);
          }
        }
      }
      ctx.progress(speakingProgress(index + 1, texts.length), "speaking");
    }
    if (clips.length === 0) {
      throw new TaskInputError(`None of the recognised speech could be spoken in ${task.target_language}.`);
    }
    if (skipped > 0) ctx.logger.info({ skipped }, "some segments are left silent");
    return clips;
  }

  /** Start times and speed-ups (see timing.ts); returns the clips as placed and the track length. */
  async function fit(clips: readonly Clip[], transcript: SavedTranscript, ctx: TaskContext) {
    const segments = transcript.segments;
    const placed: { path: string; startSeconds: number; durationSeconds: number }[] = [];
    let previousEnd = 0;
    let spedUp = 0;
    let late = 0;
    for (const clip of clips) {
      const segment = segments[clip.segment];
      if (segment === undefined) continue;
      const roomEnd = segments[clip.segment + 1]?.start ?? transcript.durationSeconds;
      const slot = fitClip(previousEnd, segment.start, roomEnd, clip.durationSeconds, deps.timing);
      let path = clip.path;
      let durationSeconds = clip.durationSeconds;
      if (slot.tempo > 1) {
        path = join(ctx.workDir, "clips", `${clip.segment}-fast.wav`);
        await media.run(
          [...GLOBAL_ARGS, ...inputArgs(clip.path, WAV_DEMUXERS), "-af", `atempo=${slot.tempo}`, ...audioEncodeArgs("wav", { channels: 1 }), "-y", path],
          { signal: ctx.signal, what: "Speeding up the speech" },
        );
        durationSeconds = await media.encodedAudioDuration(path, "wav", { signal: ctx.signal });
        spedUp++;
      }
      if (slot.startSeconds > segment.start + 0.01) late++;
      placed.push({ path, startSeconds: slot.startSeconds, durationSeconds });
      previousEnd = slot.startSeconds + durationSeconds;
    }
    // A last clip that runs past the original's end makes the track longer rather than being cut.
    const trackSeconds = Math.max(transcript.durationSeconds, previousEnd + 0.05);
    ctx.logger.info({ clips: placed.length, spedUp, late, trackSeconds, originalSeconds: transcript.durationSeconds }, "speech timed");
    return { placed, trackSeconds };
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
    try {
      if (task.use_voice_clone === true && !task.clone && task.voice_clone_sample) {
        ctx.progress(0, "cloning the voice");
        own = await cloneOfSample(task, clonesFor(task), task.voice_clone_sample, ctx);
      }
      ctx.progress(0, "fetching the audio");

      const saved = await readTranscript(ctx.checkpoints, task.source_language);
      if (saved) ctx.logger.info({ segments: saved.segments.length }, "transcript restored from its checkpoint; the input is not fetched again");
      const transcript = saved ?? (await recognise(task, ctx));
      if (clonesInput(task)) own = await makeClone(task, clonesFor(task), await ctx.checkpoints.get(INPUT_SAMPLE), ctx);
      ctx.progress(P.recognised, "translating");

      const texts = await translate(transcript, task, ctx);
      ctx.progress(P.translated, "speaking");
      clone ??= own;
      return await finish(texts, transcript, clone ? cloneVoiceName(clone) : preset, clone, task, ctx);
    } finally {
      if (own && deps.clones) await removeTaskClone(deps.clones, own, ctx.logger);
    }
  };

  async function finish(texts: string[], transcript: SavedTranscript, voice: string, clone: ClonedVoice | undefined, task: VoiceStreamWork, ctx: TaskContext): Promise<TaskResult> {
    const clips = await speak(texts, voice, clone, task, ctx);
    const { placed, trackSeconds } = await fit(clips, transcript, ctx);
    ctx.progress(P.fitted, "placing the speech on the track");

    const outPath = join(ctx.workDir, "voice-stream.mp3");
    await media.placeClips({
      clips: placed,
      durationSeconds: trackSeconds,
      outPath,
      format: "mp3",
      sampleRate,
      encode: { channels: 1, bitrateKbps },
      signal: ctx.signal,
      onProgress: (p) => {
        if (p.fraction !== undefined) ctx.progress(P.fitted + (P.placed - P.fitted) * p.fraction, "placing the speech on the track");
      },
    });
    const key = ctx.resultKey("mp3");
    await blobs.put(key, { path: outPath }, { contentType: "audio/mpeg" });
    ctx.logger.info({ key, voice, seconds: trackSeconds, clips: placed.length }, "voice stream written");
    return { resultKey: key };
  }
}
