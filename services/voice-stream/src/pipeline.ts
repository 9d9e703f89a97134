/**
 * One voice stream task: fetch the recording, recognise what is said (timed segments), translate each
 * segment, speak each translation and put every clip at its segment's start time on a track as long as
 * the original, encoded to MP3.
 *
 * Intermediate results are task checkpoints, so a redelivered task does not redo finished work:
 * `transcript.json` (segments and the original's duration: the input is not fetched again),
 * `translation.json`, and one `clips/<n>.wav` per spoken segment.
 */
import { mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { BlobStore } from "@voiceloc/blobs";
import type { Language, VoiceStreamWork } from "@voiceloc/contracts";
import { synthesizeToFile, TtsError, type MtRegistry, type SttRegistry, type TtsRegistry } from "@voiceloc/engines";
import { fetchToFile, type FetchOptions } from "@voiceloc/fetch";
import { audioEncodeArgs, GLOBAL_ARGS, inputArgs, WAV_DEMUXERS, type MediaInfo, type MediaToolkit } from "@voiceloc/media";
import { CheckpointNotFoundError, TaskInputError, type TaskContext, type TaskHandler, type TaskResult } from "@voiceloc/worker";
import { engineFailure, fetchFailure, NO_SPEECH_MESSAGE, notAudio, probeFailure } from "./errors.ts";
import { fitClip, mergeSegments, type MergeOptions, type TimingOptions } from "./timing.ts";

/** Where inputs may come from (passed to fetchToFile). */
export type VoiceStreamFetchSettings = Pick<FetchOptions, "mediaRoot" | "allowPrivateHosts" | "maxBytes" | "timeoutMs" | "s3" | "gs" | "ca">;

export interface VoiceStreamPipelineDeps {
  blobs: BlobStore;
  tts: TtsRegistry;
  mt: MtRegistry;
  stt: SttRegistry;
  media: MediaToolkit;
  fetch: VoiceStreamFetchSettings;
  timing?: TimingOptions;
  /** How recognised pieces of one utterance are joined before translation. */
  merge?: MergeOptions;
  /** Output track: sample rate (Hz) and MP3 bitrate (kbit/s). Default 24000 Hz, 64 kbit/s mono. */
  output?: { sampleRate?: number; bitrateKbps?: number };
}

interface Segment {
  start: number;
  end: number;
  text: string;
}

interface SavedTranscript {
  version: 1;
  language: string;
  /** Length of the original recording, in seconds. */
  durationSeconds: number;
  segments: Segment[];
}

interface SavedTranslation {
  version: 1;
  source: string;
  target: string;
  /** One entry per transcript segment ("" when there is nothing to say). */
  texts: string[];
}

interface Clip {
  segment: number;
  path: string;
  durationSeconds: number;
}

const TRANSCRIPT = "transcript.json";
const TRANSLATION = "translation.json";
const clipCheckpoint = (index: number) => `clips/${String(index).padStart(5, "0")}.wav`;

/** Largest batch of segment texts sent to the translator in one call. */
const TRANSLATION_BATCH_CHARS = 2_000;

/** Progress milestones (percent). */
const P = { fetched: 5, probed: 10, recognised: 40, translated: 55, spoken: 90, fitted: 94, placed: 99 } as const;

const list = (items: readonly string[]) => (items.length > 0 ? items.join(", ") : "none");

const isSegment = (value: unknown): value is Segment => {
  const s = value as Partial<Segment> | null;
  return typeof s === "object" && s !== null && Number.isFinite(s.start) && Number.isFinite(s.end) && typeof s.text === "string";
};

export function createVoiceStreamHandler(deps: VoiceStreamPipelineDeps): TaskHandler<VoiceStreamWork> {
  const { blobs, tts, mt, stt, media } = deps;
  const sampleRate = deps.output?.sampleRate ?? 24_000;
  const bitrateKbps = deps.output?.bitrateKbps ?? 64;

  /** Every capability the task needs that the installed engines lack, as one plain-words message. */
  function checkCapabilities(source: Language, target: Language): void {
    const problems: string[] = [];
    const recognition = stt.capabilities().languages;
    if (!recognition.includes(source)) {
      problems.push(`Speech recognition in ${source} is not available with the installed engines (recognition languages: ${list(recognition)}).`);
    }
    if (source !== target && !mt.supports(source, target)) {
      const targets = mt.capabilities().pairs.filter((p) => p.source === source).map((p) => p.target);
      problems.push(`Translation from ${source} to ${target} is not available with the installed engines (from ${source}: ${list(targets)}).`);
    }
    const synthesis = tts.capabilities().languages;
    if (!synthesis.includes(target)) {
      problems.push(`Speech synthesis in ${target} is not available with the installed engines (synthesis languages: ${list(synthesis)}).`);
    }
    if (problems.length > 0) throw new TaskInputError(problems.join(" "));
  }

  async function readCheckpoint<T>(ctx: TaskContext, name: string, valid: (value: unknown) => value is T): Promise<T | undefined> {
    let path: string;
    try {
      path = await ctx.checkpoints.get(name);
    } catch (error) {
      if (error instanceof CheckpointNotFoundError) return undefined;
      throw error;
    }
    try {
      const value: unknown = JSON.parse(await readFile(path, "utf8"));
      if (valid(value)) return value;
    } catch (error) {
      ctx.logger.warn({ err: error, checkpoint: name }, "unreadable checkpoint; redoing that step");
      return undefined;
    }
    ctx.logger.warn({ checkpoint: name }, "checkpoint of another shape; redoing that step");
    return undefined;
  }

  async function fetchInput(task: VoiceStreamWork, ctx: TaskContext): Promise<string> {
    try {
      const fetched = await fetchToFile(task.file, join(ctx.workDir, "input"), { ...deps.fetch, signal: ctx.signal, logger: ctx.logger });
      return fetched.path;
    } catch (error) {
      throw fetchFailure(error);
    }
  }

  async function probeInput(path: string, ctx: TaskContext): Promise<MediaInfo> {
    let info: MediaInfo;
    try {
      info = await media.probe(path, { signal: ctx.signal });
    } catch (error) {
      throw probeFailure(error);
    }
    if (!info.audio) throw notAudio("it has no audio track.");
    if (!(info.durationSeconds > 0)) throw notAudio("it contains no sound (its length is zero).");
    return info;
  }

  async function recognise(task: VoiceStreamWork, ctx: TaskContext): Promise<SavedTranscript> {
    const input = await fetchInput(task, ctx);
    ctx.progress(P.fetched, "inspecting the audio");
    const info = await probeInput(input, ctx);
    ctx.progress(P.probed, "recognising speech");
    let transcript;
    try {
      transcript = await stt.transcribe({ path: input, language: task.source_language, signal: ctx.signal });
    } catch (error) {
      throw probeFailure(engineFailure(error));
    }
    // The input can be large and is not needed any more (a redelivery resumes from the transcript).
    await rm(input, { force: true });
    const segments = mergeSegments(
      transcript.segments
        .map((s) => ({ start: Math.max(0, s.start), end: Math.max(s.start, s.end), text: s.text.trim() }))
        .filter((s) => s.text !== ""),
      deps.merge,
    );
    if (segments.length === 0) throw new TaskInputError(NO_SPEECH_MESSAGE);
    const saved: SavedTranscript = {
      version: 1,
      language: task.source_language,
      durationSeconds: Math.max(info.durationSeconds, transcript.durationSeconds),
      segments,
    };
    await ctx.checkpoints.put(TRANSCRIPT, Buffer.from(JSON.stringify(saved)));
    ctx.logger.info({ segments: segments.length, seconds: saved.durationSeconds }, "speech recognised");
    return saved;
  }

  /** Translates texts, several segments per call (joined by paragraph breaks) when the engine keeps them apart. */
  async function translateTexts(texts: readonly string[], task: VoiceStreamWork, ctx: TaskContext): Promise<string[]> {
    const source = task.source_language;
    const target = task.target_language;
    const one = async (text: string): Promise<string> => {
      try {
        return (await mt.translate({ text, source, target, signal: ctx.signal })).trim();
      } catch (error) {
        throw engineFailure(error);
      }
    };
    const batches: number[][] = [];
    let current: number[] = [];
    let chars = 0;
    texts.forEach((text, index) => {
      if (current.length > 0 && chars + text.length > TRANSLATION_BATCH_CHARS) {
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
        const joined = await one(items.join("\n\n"));
        const parts = joined.split(/[^\S\n]*\n[^\S\n]*\n\s*/).map((p) => p.trim());
        if (parts.length === items.length && parts.every((p) => p !== "")) results = parts;
        else ctx.logger.debug({ expected: items.length, got: parts.length }, "translator merged segments; translating them one by one");
      }
      if (results === undefined) {
        results = [];
        for (const item of items) results.push(await one(item));
      }
      batch.forEach((index, k) => {
        out[index] = results[k] ?? "";
      });
      done += batch.length;
      ctx.progress(P.recognised + ((P.translated - P.recognised) * done) / texts.length, "translating");
    }
    return out;
  }

  async function translate(transcript: SavedTranscript, task: VoiceStreamWork, ctx: TaskContext): Promise<string[]> {
    const source = task.source_language;
    const target = task.target_language;
    const texts = transcript.segments.map((s) => s.text);
    if (source === target) return texts;
    const saved = await readCheckpoint(ctx, TRANSLATION, (v): v is SavedTranslation => {
      const t = v as Partial<SavedTranslation> | null;
      return (
        typeof t === "object" && t !== null && t.version === 1 && t.source === source && t.target === target &&
        Array.isArray(t.texts) && t.texts.length === texts.length && t.texts.every((x) => typeof x === "string")
      );
    });
    if (saved) {
      ctx.logger.info("translation restored from its checkpoint");
      return saved.texts;
    }
    const translated = await translateTexts(texts, task, ctx);
    const record: SavedTranslation = { version: 1, source, target, texts: translated };
    await ctx.checkpoints.put(TRANSLATION, Buffer.from(JSON.stringify(record)));
    ctx.logger.info({ segments: translated.length }, "speech translated");
    return translated;
  }

  async function speak(texts: readonly string[], voice: string, task: VoiceStreamWork, ctx: TaskContext): Promise<Clip[]> {
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
            { registry: tts, media, logger: ctx.logger },
            { text, language: task.target_language, voice, format: "wav", outPath: join(dir, `${index}.wav`), signal: ctx.signal },
          );
          await ctx.checkpoints.put(name, { path: result.path });
          clips.push({ segment: index, path: result.path, durationSeconds: result.durationSeconds });
        } catch (error) {
          if (error instanceof TtsError && (error.code === "TEXT_EMPTY" || error.code === "TEXT_NOT_SPEAKABLE")) {
            ctx.logger.warn({ segment: index, reason: error.message }, "segment left silent: its text cannot be spoken");
            skipped++;
          } else {
            throw engineFailure(error);
          }
        }
      }
      ctx.progress(P.translated + ((P.spoken - P.translated) * (index + 1)) / texts.length, "speaking");
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
    const source = task.source_language;
    const target = task.target_language;
    checkCapabilities(source, target);
    let voice: string;
    try {
      voice = tts.resolve(target, task.voice ?? undefined).voice.name;
    } catch (error) {
      throw engineFailure(error);
    }
    ctx.progress(0, "fetching the audio");

    const saved = await readCheckpoint(ctx, TRANSCRIPT, (v): v is SavedTranscript => {
      const t = v as Partial<SavedTranscript> | null;
      return (
        typeof t === "object" && t !== null && t.version === 1 && t.language === source &&
        typeof t.durationSeconds === "number" && t.durationSeconds > 0 && Array.isArray(t.segments) && t.segments.every(isSegment)
      );
    });
    if (saved) ctx.logger.info({ segments: saved.segments.length }, "transcript restored from its checkpoint; the input is not fetched again");
    const transcript = saved ?? (await recognise(task, ctx));
    ctx.progress(P.recognised, "translating");

    const texts = await translate(transcript, task, ctx);
    ctx.progress(P.translated, "speaking");

    const clips = await speak(texts, voice, task, ctx);
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
  };
}
