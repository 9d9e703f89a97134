/**
 * One subtitle task: fetch the video, probe it (one ordinary local media file with a picture and a
 * sound track, within the length limit), extract its sound as 16 kHz mono WAV (decoding at most the
 * limit: the decoded length is what counts), recognise timed segments, translate them when the
 * languages differ, build readable cues, write the SRT/WebVTT file, and render: subtitles burned into
 * the picture (audio copied) or a copy of the video with a soft subtitle track (nothing re-encoded).
 *
 * Checkpoints (a redelivered task resumes without redoing finished stages): `transcript.json` (the
 * recognised segments with word times and the video's length: recognition is never redone) and
 * `translation.json`. Rendering needs the video again, so a resumed task fetches it again.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { BlobStore } from "@voiceloc/blobs";
import { isSandboxOwner, type Language, type SubtitleWork } from "@voiceloc/contracts";
import type { MtRegistry, SttRegistry } from "@voiceloc/engines";
import { fetchToFile, type FetchOptions } from "@voiceloc/fetch";
import {
  assertSingleMediaFile,
  buildBurnInArgs,
  buildCappedSpeechWavArgs,
  buildSoftSubtitleTrackArgs,
  FfmpegFailedError,
  maxVideoPixels,
  MediaError,
  MP4_COPYABLE_AUDIO_CODECS,
  MP4_COPYABLE_VIDEO_CODECS,
  uprightFrameSize,
  videoContainerFor,
  videoExtension,
  withTempOutput,
  type DecodedFrameSize,
  type MediaInfo,
  type MediaToolkit,
} from "@voiceloc/media";
import {
  readTranslationCheckpoint,
  TaskInputError,
  translateWithCheckpoint,
  type ResumeContext,
  type TaskCheckpoints,
  type TaskContext,
  type TaskHandler,
  type TaskResult,
} from "@voiceloc/worker";
import { z } from "zod";
import { buildCues, type CueSegment } from "./cues.ts";
import { NO_SPEECH_MESSAGE, notVideo, PICTURE_NOT_IN_MP4, pictureTooLarge, tooLong, videoFailure } from "./errors.ts";
import { SUBTITLE_CONTENT_TYPES, writeSrt, writeSubtitles } from "./formats.ts";
import { ISO_639_2 } from "./languages.ts";
import { burnInLayout, type BurnInLayout } from "./layout.ts";

/** Where inputs may come from (passed to fetchToFile). */
export type SubtitleFetchSettings = Pick<FetchOptions, "mediaRoot" | "mediaRootScope" | "allowPrivateHosts" | "maxBytes" | "timeoutMs" | "s3" | "gs" | "ca">;

/** Default longest video subtitled (SUBTITLE_MAX_SECONDS): one hour. */
export const DEFAULT_SUBTITLE_MAX_SECONDS = 3600;

export interface BurnInSettings {
  /** x264 constant rate factor, default 20. */
  crf?: number;
  /** x264 preset, default "veryfast". */
  preset?: "ultrafast" | "superfast" | "veryfast" | "faster" | "fast" | "medium";
  /**
   * Font size in libass script pixels (the script's shorter side is 288 pixels, scaled to the video's
   * shorter side). Default 16. See `burnInLayout`.
   */
  fontSize?: number;
}

export interface SubtitlePipelineDeps {
  blobs: BlobStore;
  mt: MtRegistry;
  stt: SttRegistry;
  media: MediaToolkit;
  fetch: SubtitleFetchSettings;
  /** Longest video accepted, in seconds of decoded sound (and of the rendered output). Default 3600. */
  maxSeconds?: number;
  /** Longest video of a sandbox task (owner `sandbox:<account>`; SANDBOX_MAX_MEDIA_SECONDS). */
  sandboxMaxSeconds?: number;
  /** Largest picture accepted, in pixels of the decoded first frame (MAX_VIDEO_PIXELS). Default: `maxVideoPixels()`. */
  maxPixels?: number;
  /** Largest picture of a sandbox task (SANDBOX_MAX_VIDEO_PIXELS). */
  sandboxMaxPixels?: number;
  burnIn?: BurnInSettings;
}

const seconds = z.number().finite().min(0);

const TimedWordSchema = z.object({ word: z.string(), start: z.number().finite(), end: z.number().finite() });

const SegmentSchema = z.object({ start: seconds, end: seconds, text: z.string(), words: z.array(TimedWordSchema).optional() });
type SavedSegment = z.infer<typeof SegmentSchema>;

/** `transcript.json`: the recognised segments (with word times when the recogniser gives them). */
const TranscriptCheckpointSchema = z.object({
  version: z.literal(1),
  language: z.string(),
  /** Length of the video, in seconds (cues end inside it). */
  mediaSeconds: z.number().finite().positive(),
  segments: z.array(SegmentSchema),
});
type SavedTranscript = z.infer<typeof TranscriptCheckpointSchema>;

interface Input {
  path: string;
  info: MediaInfo;
  /** The largest picture this task's decoders may produce. */
  maxPixels: number;
  /** The decoded size of the first picture (the headers' may lie). */
  picture: DecodedFrameSize;
}

const TRANSCRIPT = "transcript.json";

/** Progress milestones (percent) at the end of each stage. */
const P = { fetched: 4, probed: 6, extracted: 12, recognised: 60, translated: 70, written: 72, rendered: 99 } as const;

/** What the MP4 muxer says about a stream it cannot carry. */
const CODEC_NOT_IN_MP4 = /codec not currently supported in container|Could not find tag for codec/i;

/** Largest batch of segment texts sent to the translator in one call. */
const TRANSLATION_BATCH_CHARS = 2_000;

/**
 * The video's length for cue timing, in seconds: what its header states, but never more than a couple of
 * seconds past the decoded sound (a header can claim 36,000 s for 3 s), nor more than the limit.
 */
function mediaSeconds(stated: number, decoded: number, limit = Number.POSITIVE_INFINITY): number {
  const trusted = stated > 0 ? Math.min(stated, decoded + STATED_LENGTH_SLACK_SECONDS) : decoded;
  return Math.min(limit, Math.max(decoded, trusted));
}

/** How far past the decoded sound a video's stated length is believed (a picture may outlast its sound a little). */
const STATED_LENGTH_SLACK_SECONDS = 2;

const list = (items: readonly string[]) => (items.length > 0 ? items.join(", ") : "none");

async function readTranscript(checkpoints: TaskCheckpoints, language: Language): Promise<SavedTranscript | undefined> {
  const saved = await checkpoints.readJson(TRANSCRIPT, TranscriptCheckpointSchema);
  return saved?.language === language ? saved : undefined;
}

/**
 * Progress already done by earlier deliveries, from the checkpoints: recognition (60), then
 * translation (70; at once when no translation is needed). What follows (cues, rendering) is redone.
 * Never more than the handler reports for the same checkpoints.
 */
export async function subtitleResumedProgress(task: SubtitleWork, ctx: Pick<ResumeContext, "checkpoints">): Promise<number> {
  if (!(await ctx.checkpoints.has(TRANSCRIPT))) return 0;
  const transcript = await readTranscript(ctx.checkpoints, task.source_language);
  if (transcript === undefined) return 0;
  if (task.source_language === task.target_language) return P.translated;
  const languages = { source: task.source_language, target: task.target_language };
  return (await readTranslationCheckpoint(ctx.checkpoints, languages, transcript.segments.length)) === undefined ? P.recognised : P.translated;
}

export function createSubtitleHandler(deps: SubtitlePipelineDeps): TaskHandler<SubtitleWork> {
  const { blobs, mt, stt, media } = deps;
  const maxSeconds = deps.maxSeconds ?? DEFAULT_SUBTITLE_MAX_SECONDS;

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
    if (problems.length > 0) throw new TaskInputError(problems.join(" "));
  }

  /** A sandbox task's video over SANDBOX_MAX_MEDIA_SECONDS fails, naming the limit. */
  function checkSandboxLength(task: SubtitleWork, seconds: number): void {
    const limit = deps.sandboxMaxSeconds;
    if (limit !== undefined && isSandboxOwner(task.account_id) && seconds > limit + 0.05) {
      throw new TaskInputError(
        `The video is longer than ${limit} seconds, the most a sandbox key may send (SANDBOX_MAX_MEDIA_SECONDS): send a shorter video or use a live key.`,
      );
    }
  }

  /** Fetches and checks the video: one ordinary media file with a picture and sound, within the limit. */
  async function fetchInput(task: SubtitleWork, ctx: TaskContext): Promise<Input> {
    ctx.logger.info({ stage: "fetch" }, "subtitle stage");
    let path: string;
    try {
      path = (await fetchToFile(task.file, join(ctx.workDir, "input"), { ...deps.fetch, owner: task.account_id, blobs, signal: ctx.signal, logger: ctx.logger })).path;
    } catch (error) {
      throw videoFailure(error);
    }
    ctx.progress(P.fetched, "inspecting the video");
    let info: MediaInfo;
    try {
      info = await media.probe(path, { signal: ctx.signal });
      assertSingleMediaFile(info);
    } catch (error) {
      throw videoFailure(error);
    }
    if (!info.video) throw notVideo("it has no picture (video track).");
    if (!info.audio) throw notVideo("it has no audio track to take speech from.");
    // The stated duration is not checked: headers lie, and the decoded sound decides (extractSpeech).
    if (task.mode === "side_file" && !MP4_COPYABLE_VIDEO_CODECS.includes(info.video.codec)) throw notVideo(PICTURE_NOT_IN_MP4);
    const limit = pictureLimit(task);
    const picture = await checkPicture(path, limit, ctx);
    ctx.progress(P.probed, "extracting the sound");
    return { path, info, maxPixels: limit.pixels, picture };
  }

  /**
   * The largest picture this task may decode: MAX_VIDEO_PIXELS, or SANDBOX_MAX_VIDEO_PIXELS for a
   * sandbox task when it is the lower (`sandbox`: the limit to name when a picture is over it).
   */
  function pictureLimit(task: SubtitleWork): { pixels: number; sandbox: boolean } {
    const live = Math.min(deps.maxPixels ?? maxVideoPixels(), maxVideoPixels());
    const sandboxPixels = isSandboxOwner(task.account_id) ? deps.sandboxMaxPixels : undefined;
    return sandboxPixels !== undefined && sandboxPixels <= live ? { pixels: sandboxPixels, sandbox: true } : { pixels: live, sandbox: false };
  }

  /**
   * Decodes the first picture with its decoder bounded to the task's limit, before any filter or
   * encoder runs: a picture over it (whatever the headers claim) fails the task within seconds.
   */
  async function checkPicture(path: string, limit: { pixels: number; sandbox: boolean }, ctx: TaskContext): Promise<DecodedFrameSize> {
    let size: DecodedFrameSize;
    try {
      size = await media.firstFrame(path, { maxPixels: limit.pixels, signal: ctx.signal });
    } catch (error) {
      if (error instanceof MediaError && error.code === "MEDIA_TOO_LARGE") throw pictureTooLarge(error, limit.sandbox);
      throw videoFailure(error);
    }
    ctx.logger.info({ width: size.width, height: size.height, maxPixels: limit.pixels }, "first picture decoded");
    return size;
  }

  /** 16 kHz mono WAV of the sound, decoding at most the limit (plus a second to notice longer videos). */
  async function extractSpeech(task: SubtitleWork, input: Input, ctx: TaskContext): Promise<{ wav: string; seconds: number }> {
    ctx.logger.info({ stage: "extract" }, "subtitle stage");
    // Decoding stops a second past the limit that applies (a sandbox's may be lower): a longer video costs no more.
    const sandboxLimit = deps.sandboxMaxSeconds;
    const limit = isSandboxOwner(task.account_id) && sandboxLimit !== undefined ? Math.min(maxSeconds, sandboxLimit) : maxSeconds;
    const wav = join(ctx.workDir, "speech.wav");
    try {
      await withTempOutput(wav, (temp) =>
        media.run(buildCappedSpeechWavArgs({ input: input.path, output: temp, maxSeconds: limit + 1, maxPixels: input.maxPixels }), {
          signal: ctx.signal,
          what: "Extracting the sound",
          expectedDurationSeconds: Math.min(limit, input.info.durationSeconds),
          onProgress: (p) => {
            if (p.fraction !== undefined) ctx.progress(P.probed + (P.extracted - P.probed) * p.fraction, "extracting the sound");
          },
        }),
      );
    } catch (error) {
      throw videoFailure(error);
    }
    const seconds = await media.encodedAudioDuration(wav, "wav", { signal: ctx.signal });
    if (seconds > maxSeconds + 0.05) throw tooLong(maxSeconds);
    checkSandboxLength(task, seconds);
    if (!(seconds > 0.05)) throw notVideo("its sound track is empty.");
    return { wav, seconds };
  }

  async function recognise(task: SubtitleWork, ctx: TaskContext, input: Input): Promise<SavedTranscript> {
    // the decoded length is the one trusted (a file's stated duration can lie)
    const { wav, seconds } = await extractSpeech(task, input, ctx);
    ctx.progress(P.extracted, "recognising speech");
    ctx.logger.info({ stage: "recognise", seconds }, "subtitle stage");
    let transcript;
    try {
      transcript = await stt.transcribe({ path: wav, language: task.source_language, signal: ctx.signal });
    } catch (error) {
      throw videoFailure(error);
    }
    const segments: SavedSegment[] = transcript.segments
      .map((s) => {
        const segment: SavedSegment = { start: Math.max(0, s.start), end: Math.max(s.start, s.end), text: s.text.trim() };
        if (s.words !== undefined && s.words.length > 0) segment.words = s.words.map((w) => ({ word: w.word, start: w.start, end: w.end }));
        return segment;
      })
      .filter((s) => s.text !== "");
    if (segments.length === 0) throw new TaskInputError(NO_SPEECH_MESSAGE);
    const saved: SavedTranscript = {
      version: 1,
      language: task.source_language,
      mediaSeconds: mediaSeconds(input.info.durationSeconds, seconds, maxSeconds),
      segments,
    };
    await ctx.checkpoints.putJson(TRANSCRIPT, saved);
    ctx.logger.info({ segments: segments.length, seconds: saved.mediaSeconds, timedWords: segments.some((s) => s.words !== undefined) }, "speech recognised");
    return saved;
  }

  /** The segments in the target language: recognised ones (with word times) or translated ones (timed by segment). */
  async function translate(transcript: SavedTranscript, task: SubtitleWork, ctx: TaskContext): Promise<CueSegment[]> {
    const source = task.source_language;
    const target = task.target_language;
    if (source === target) return transcript.segments;
    const translated = await translateWithCheckpoint(
      mt,
      {
        texts: transcript.segments.map((s) => s.text),
        source,
        target,
        batchChars: TRANSLATION_BATCH_CHARS,
        onProgress: (done, total) => ctx.progress(P.recognised + ((P.translated - P.recognised) * done) / total, "translating"),
      },
      ctx,
    );
    return transcript.segments.map((s, i) => ({ start: s.start, end: s.end, text: translated[i] ?? "" }));
  }

  /** The burned cues' style and line length for the video's upright frame (its decoded size, turned as players show it). */
  function layoutFor(task: SubtitleWork, input: Input): BurnInLayout {
    const video = input.info.video;
    if (video === undefined) throw notVideo("it has no picture (video track).");
    const frame = uprightFrameSize({ ...input.picture, ...(video.rotation === undefined ? {} : { rotation: video.rotation }) });
    return burnInLayout(frame, task.target_language, deps.burnIn?.fontSize);
  }

  async function render(
    task: SubtitleWork,
    ctx: TaskContext,
    input: Input,
    srtPath: string,
    layout: BurnInLayout | undefined,
    /** The video's length as the transcript keeps it (`mediaSeconds`: decoded, within the limit). */
    videoSeconds: number,
  ): Promise<{ key: string; container: string }> {
    const target = task.target_language;
    const audioCodec = input.info.audio?.codec;
    const progress = (fraction: number | undefined) => {
      if (fraction !== undefined) ctx.progress(P.written + (P.rendered - P.written) * fraction, "rendering the video");
    };
    let args: (output: string) => string[];
    let container: "mp4" | "matroska";
    if (task.mode === "burn_in") {
      container = videoContainerFor(audioCodec);
      const style = (layout ?? layoutFor(task, input)).style;
      args = (output) => buildBurnInArgs({
        video: input.path,
        subtitles: srtPath,
        output,
        container,
        style,
        maxSeconds,
        maxPixels: input.maxPixels,
        ...(deps.burnIn?.crf === undefined ? {} : { crf: deps.burnIn.crf }),
        ...(deps.burnIn?.preset === undefined ? {} : { preset: deps.burnIn.preset }),
      });
    } else {
      container = "mp4";
      args = (output) => buildSoftSubtitleTrackArgs({
        video: input.path,
        subtitles: srtPath,
        output,
        language: ISO_639_2[target],
        title: target,
        maxSeconds,
        maxPixels: input.maxPixels,
        encodeAudio: audioCodec !== undefined && !MP4_COPYABLE_AUDIO_CODECS.includes(audioCodec),
      });
    }
    const ext = videoExtension(container);
    const outPath = join(ctx.workDir, `localized.${ext}`);
    try {
      await withTempOutput(outPath, (temp) =>
        media.run(args(temp), {
          signal: ctx.signal,
          what: task.mode === "burn_in" ? "Drawing the subtitles onto the video" : "Adding the subtitle track",
          expectedDurationSeconds: videoSeconds,
          onProgress: (p) => progress(p.fraction),
        }),
      );
    } catch (error) {
      if (task.mode === "side_file" && error instanceof FfmpegFailedError && error.stderrTail.some((line) => CODEC_NOT_IN_MP4.test(line))) {
        throw notVideo(PICTURE_NOT_IN_MP4, error);
      }
      throw videoFailure(error);
    }
    const key = ctx.resultKey(ext);
    await blobs.put(key, { path: outPath }, { contentType: container === "mp4" ? "video/mp4" : "video/x-matroska" });
    return { key, container };
  }

  return async (task, ctx): Promise<TaskResult> => {
    const source = task.source_language;
    const target = task.target_language;
    checkCapabilities(source, target);
    ctx.progress(0, "fetching the video");

    let input: Input | undefined;
    const saved = await readTranscript(ctx.checkpoints, source);
    let transcript: SavedTranscript;
    if (saved) {
      ctx.logger.info({ segments: saved.segments.length }, "transcript restored from its checkpoint; recognition is not redone");
      transcript = saved;
    } else {
      input = await fetchInput(task, ctx);
      transcript = await recognise(task, ctx, input);
    }
    ctx.progress(P.recognised, "translating");

    const segments = await translate(transcript, task, ctx);
    ctx.progress(P.translated, "building the cues");

    // Burned lines must fit the frame's width, so a burn-in task needs the video's size first.
    if (task.mode === "burn_in") input ??= await fetchInput(task, ctx);
    const layout = task.mode === "burn_in" && input !== undefined ? layoutFor(task, input) : undefined;
    ctx.logger.info({ stage: "cues", maxLineChars: layout?.rules.maxLineChars }, "subtitle stage");
    const cues = buildCues(segments, { language: target, mediaSeconds: transcript.mediaSeconds, ...(layout === undefined ? {} : { rules: layout.rules }) });
    if (cues.length === 0) throw new TaskInputError(NO_SPEECH_MESSAGE);
    const subtitleText = writeSubtitles(task.subtitle_format, cues);
    const subtitleKey = ctx.resultKey(task.subtitle_format);
    await blobs.put(subtitleKey, Buffer.from(subtitleText, "utf8"), { contentType: SUBTITLE_CONTENT_TYPES[task.subtitle_format] });
    const srtPath = join(ctx.workDir, "cues.srt");
    await writeFile(srtPath, task.subtitle_format === "srt" ? subtitleText : writeSrt(cues), "utf8");
    ctx.progress(P.written, "rendering the video");

    input ??= await fetchInput(task, ctx);
    ctx.logger.info({ stage: "render", mode: task.mode }, "subtitle stage");
    const { key, container } = await render(task, ctx, input, srtPath, layout, transcript.mediaSeconds);
    ctx.logger.info({ key, subtitleKey, cues: cues.length, mode: task.mode, container }, "subtitles written");
    return { resultKey: key, subtitleKey };
  };
}
