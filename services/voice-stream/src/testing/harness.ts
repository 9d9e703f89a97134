/** Test harness: real engines, ffmpeg, an fs blob store, a real bus, generated speech under a temp media root. */
import { randomUUID } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createFsBlobStore, type BlobStore } from "@voiceloc/blobs";
import { createCatalogBus, createInProcessBus, type Bus } from "@voiceloc/bus";
import { BUS_CATALOG, type Language, type TaskEvent, type VoiceStreamWork } from "@voiceloc/contracts";
import {
  createApertiumEngine,
  createMtRegistry,
  createPocketsphinxEngine,
  createSttRegistry,
  createTtsRegistry,
  detectOfflineEngines,
  type CloneEngine,
  type MtRegistry,
  type SttRegistry,
  type TtsRegistry,
} from "@voiceloc/engines";
import { silentLogger, type Logger } from "@voiceloc/log";
import { createMediaToolkit, GLOBAL_ARGS, inputArgs, resolveFfmpeg, WAV_DEMUXERS, AUDIO_CLIP_DEMUXERS, type MediaToolkit } from "@voiceloc/media";
import { makeSpeechWav, tempDir, withClaimedMp4Duration, withZeroWavChannels } from "@voiceloc/testing";
import { createVoiceStreamService, type VoiceStreamService } from "../service.ts";

export interface Stack {
  logger: Logger;
  media: MediaToolkit;
  tts: TtsRegistry;
  mt: MtRegistry;
  stt: SttRegistry;
}

/** The offline engines installed on this machine (flite/festival/espeak-ng, Apertium, pocketsphinx). */
export async function createStack(): Promise<Stack> {
  const logger = silentLogger();
  const media = createMediaToolkit(await resolveFfmpeg({ logger }), logger);
  const tts = createTtsRegistry(await detectOfflineEngines({ logger }));
  const mt = createMtRegistry([await createApertiumEngine({ logger })]);
  const stt = createSttRegistry([await createPocketsphinxEngine({ logger, media })]);
  return { logger, media, tts, mt, stt };
}

export const FIRST_SENTENCE = "The weather is very nice today.";
export const SECOND_SENTENCE = "I would like a cup of hot coffee please.";
export const PAUSE_SECONDS = 1.5;

export interface TwoSentences {
  path: string;
  durationSeconds: number;
  /** Length of the first sentence's audio; the second starts PAUSE_SECONDS later. */
  firstSeconds: number;
}

/** Two English sentences spoken by flite:slt with a 1.5 s pause between them, as one 16 kHz WAV. */
export async function makeTwoSentenceWav(media: MediaToolkit, dir: string, name: string): Promise<TwoSentences> {
  const scratch = join(dir, ".scratch");
  await mkdir(scratch, { recursive: true });
  const first = await makeSpeechWav(FIRST_SENTENCE, { voice: "flite:slt", path: join(scratch, `${name}-1.wav`) });
  const second = await makeSpeechWav(SECOND_SENTENCE, { voice: "flite:slt", path: join(scratch, `${name}-2.wav`) });
  const path = join(dir, name);
  await media.run([
    ...GLOBAL_ARGS,
    ...inputArgs(first, WAV_DEMUXERS),
    ...inputArgs(second, WAV_DEMUXERS),
    "-filter_complex",
    `anullsrc=r=16000:cl=mono,atrim=duration=${PAUSE_SECONDS}[gap];[0:a:0][gap][1:a:0]concat=n=3:v=0:a=1,aformat=sample_rates=16000:channel_layouts=mono[out]`,
    "-map", "[out]",
    "-c:a", "pcm_s16le", "-f", "wav", "-y", path,
  ]);
  const firstSeconds = (await media.probe(first, { demuxers: WAV_DEMUXERS })).durationSeconds;
  const durationSeconds = (await media.probe(path, { demuxers: WAV_DEMUXERS })).durationSeconds;
  return { path, durationSeconds, firstSeconds };
}

/** `wav` re-encoded as an AAC m4a whose container headers claim `claimedSeconds`. */
export async function makeLyingM4a(media: MediaToolkit, wav: string, path: string, claimedSeconds: number): Promise<string> {
  const honest = `${path}.honest.m4a`;
  await media.run([...GLOBAL_ARGS, ...inputArgs(wav, WAV_DEMUXERS), "-map", "0:a:0", "-c:a", "aac", "-b:a", "32k", "-f", "mp4", "-y", honest]);
  await writeFile(path, withClaimedMp4Duration(await readFile(honest), claimedSeconds));
  return path;
}

/** `wav` with a header declaring 0 channels. */
export async function makeZeroChannelWav(wav: string, path: string): Promise<string> {
  await writeFile(path, withZeroWavChannels(await readFile(wav)));
  return path;
}

/** Ends of the silences ffmpeg's silencedetect finds (-40 dB, at least 0.4 s): where speech resumes. */
export async function silenceEnds(media: MediaToolkit, path: string): Promise<number[]> {
  const result = await media.run([
    ...GLOBAL_ARGS,
    ...inputArgs(path, AUDIO_CLIP_DEMUXERS),
    "-map", "0:a:0",
    "-af", "silencedetect=noise=-40dB:d=0.4",
    "-f", "null", "-",
  ]);
  return result.stderrTail.flatMap((line) => {
    const match = /silence_end:\s*([0-9.]+)/.exec(line);
    return match?.[1] === undefined ? [] : [Number(match[1])];
  });
}

export interface ServiceHarness {
  bus: Bus;
  blobs: BlobStore;
  service: VoiceStreamService;
  /** Every task event seen, in arrival order. */
  events: TaskEvent[];
  /** Publishes a voice stream task; resolves to its id. */
  submit(task: {
    file: string;
    source: Language;
    target: Language;
    voice?: string | null;
    id?: string;
    useVoiceClone?: boolean;
    voiceCloneSample?: string | null;
    clone?: VoiceStreamWork["clone"];
    speakers?: "auto" | "one";
  }): Promise<string>;
  /** The task's completed or failed event. */
  finished(taskId: string, timeoutMs?: number): Promise<TaskEvent>;
  /** A local copy of a result blob. */
  download(key: string): Promise<string>;
  cleanup(): Promise<void>;
}

export async function startService(stack: Stack, options: { mediaRoot: string; bus?: Bus; maxMediaSeconds?: number; clones?: CloneEngine }): Promise<ServiceHarness> {
  const dir = await tempDir("voiceloc-voice-stream-test-");
  const bus = options.bus ?? createInProcessBus({ logger: stack.logger });
  const blobs = createFsBlobStore({ root: join(dir.path, "blobs"), fsync: false });
  const service = createVoiceStreamService({
    bus,
    blobs,
    tts: stack.tts,
    mt: stack.mt,
    stt: stack.stt,
    media: stack.media,
    fetch: { mediaRoot: options.mediaRoot },
    logger: stack.logger,
    workRoot: dir.path,
    ...(options.maxMediaSeconds === undefined ? {} : { maxMediaSeconds: options.maxMediaSeconds }),
    ...(options.clones === undefined ? {} : { clones: options.clones }),
  });
  await service.start();
  const events: TaskEvent[] = [];
  const typed = createCatalogBus(bus, BUS_CATALOG);
  const subscription = await typed.subscribeEvents("task", (e) => void events.push(e.data));
  const terminal = (e: TaskEvent) => e.status === "completed" || e.status === "failed";
  return {
    bus,
    blobs,
    service,
    events,
    async submit(task) {
      const id = task.id ?? randomUUID();
      const work: VoiceStreamWork = {
        kind: "voice-stream",
        task_id: id,
        account_id: "alice",
        file: task.file,
        source_language: task.source,
        target_language: task.target,
        voice: task.voice ?? null,
        ...(task.useVoiceClone === undefined ? {} : { use_voice_clone: task.useVoiceClone }),
        ...(task.voiceCloneSample === undefined ? {} : { voice_clone_sample: task.voiceCloneSample }),
        ...(task.clone === undefined ? {} : { clone: task.clone }),
        ...(task.speakers === undefined ? {} : { speakers: task.speakers }),
      };
      await typed.publishWork("voice-stream", work);
      return id;
    },
    async finished(taskId, timeoutMs = 150_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const end = events.find((e) => e.task_id === taskId && terminal(e));
        if (end) return end;
        if (Date.now() > deadline) throw new Error(`timed out waiting for task ${taskId} to finish`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    download: (key) => blobs.toLocalFile(key, join(dir.path, "downloads")),
    async cleanup() {
      await service.stop();
      await subscription.stop();
      await bus.close({ graceMs: 5_000 });
      await blobs.close();
      await dir.cleanup();
    },
  };
}
