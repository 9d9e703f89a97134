/**
 * Test harness: the real engines (offline TTS, Apertium, ffmpeg), a real bus (in-process unless one
 * is given), a file-system blob store and a MEDIA_ROOT in temp dirs, and a log of every task event.
 */
import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { createFsBlobStore, type BlobStore } from "@voiceloc/blobs";
import { createCatalogBus, createInProcessBus, type Bus } from "@voiceloc/bus";
import { BUS_CATALOG, type AudioBookWork, type Language, type TaskEvent } from "@voiceloc/contracts";
import { createApertiumEngine, createMtRegistry, createTtsRegistry, detectOfflineEngines, type MtRegistry, type TtsRegistry } from "@voiceloc/engines";
import { silentLogger, type Logger } from "@voiceloc/log";
import { createMediaToolkit, GLOBAL_ARGS, inputArgs, resolveFfmpeg, type MediaToolkit } from "@voiceloc/media";
import { tempDir } from "@voiceloc/testing";
import { createAudioBookService, type AudioBookService, type AudioBookServiceOptions } from "../service.ts";

export interface EngineStack {
  tts: TtsRegistry;
  mt: MtRegistry;
  media: MediaToolkit;
  logger: Logger;
}

/** The installed engines, detected once per test file. */
export async function createEngineStack(logger: Logger = silentLogger()): Promise<EngineStack> {
  const [engines, apertium, binaries] = await Promise.all([
    detectOfflineEngines({ logger }),
    createApertiumEngine({ logger }),
    resolveFfmpeg({ logger }),
  ]);
  return { tts: createTtsRegistry(engines), mt: createMtRegistry([apertium]), media: createMediaToolkit(binaries, logger), logger };
}

export interface BookRequest {
  file: string;
  source?: Language;
  target?: Language;
  voice?: string | null;
  useVoiceClone?: boolean;
  /** `voice_clone_sample`: a file under MEDIA_ROOT. */
  voiceCloneSample?: string | null;
  /** The caller's clone, as the gateway resolves `preset_voice_name: "clone:<id>"`. */
  clone?: AudioBookWork["clone"];
  /** The owner (account_id) of the task; default alice. */
  owner?: string;
  /** The task id; default a new UUID (set one to store checkpoints before the first delivery). */
  taskId?: string;
  /** `output_format`; default absent (mp3). */
  outputFormat?: AudioBookWork["output_format"];
  /** `audio_book_cover`: a file under MEDIA_ROOT (or any reference the fetch takes). */
  cover?: string | null;
}

export interface BookHarness {
  bus: Bus;
  blobs: BlobStore;
  mediaRoot: string;
  /** Every task event seen, in arrival order. */
  events: TaskEvent[];
  eventsOf(taskId: string): TaskEvent[];
  /** A service on this harness's bus and stores (stopped by cleanup). */
  service(extra?: Partial<AudioBookServiceOptions>): AudioBookService;
  /** Writes a file under MEDIA_ROOT; returns its relative path. */
  writeInput(relative: string, content: string | Uint8Array): Promise<string>;
  /** Publishes an audio book task; returns its id. */
  publish(request: BookRequest): Promise<string>;
  /** Waits for the task's completed or failed event. */
  waitForEnd(taskId: string, timeoutMs?: number): Promise<TaskEvent>;
  /** A local file holding a blob (the fs store's own file). */
  localFile(key: string): Promise<string>;
  cleanup(): Promise<void>;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function waitFor(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

export const isTerminal = (e: TaskEvent) => e.status === "completed" || e.status === "failed";

export async function createBookHarness(stack: EngineStack, options: { bus?: Bus } = {}): Promise<BookHarness> {
  const dir = await tempDir("voiceloc-audiobook-test-");
  const mediaRoot = join(dir.path, "media");
  const workRoot = join(dir.path, "work");
  await Promise.all([mkdir(mediaRoot, { recursive: true }), mkdir(workRoot, { recursive: true })]);
  const bus = options.bus ?? createInProcessBus({ logger: silentLogger() });
  const typed = createCatalogBus(bus, BUS_CATALOG);
  const blobs = createFsBlobStore({ root: join(dir.path, "blobs"), fsync: false });
  const events: TaskEvent[] = [];
  const services: AudioBookService[] = [];
  let subscribed = false;

  const subscribe = async () => {
    if (subscribed) return;
    subscribed = true;
    await typed.subscribeEvents("task", (e) => void events.push(e.data));
  };

  return {
    bus,
    blobs,
    mediaRoot,
    events,
    eventsOf: (taskId) => events.filter((e) => e.task_id === taskId),
    service(extra = {}) {
      const service = createAudioBookService({
        bus,
        blobs,
        tts: stack.tts,
        mt: stack.mt,
        media: stack.media,
        fetch: { mediaRoot },
        logger: stack.logger,
        workRoot,
        ...extra,
      });
      services.push(service);
      return service;
    },
    async writeInput(relative, content) {
      const path = join(mediaRoot, relative);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, content);
      return relative;
    },
    async publish(request) {
      await subscribe();
      const task: AudioBookWork = {
        kind: "audiobook",
        task_id: request.taskId ?? randomUUID(),
        account_id: request.owner ?? "alice",
        file: request.file,
        source_language: request.source ?? "English",
        target_language: request.target ?? request.source ?? "English",
        name: "test book",
        preset_voice_name: request.voice ?? null,
        use_voice_clone: request.useVoiceClone ?? false,
        voice_clone_sample: request.voiceCloneSample ?? null,
        ...(request.clone ? { clone: request.clone } : {}),
        ...(request.outputFormat === undefined ? {} : { output_format: request.outputFormat }),
        ...(request.cover === undefined ? {} : { audio_book_cover: request.cover }),
      };
      await typed.publishWork("audiobook", task);
      return task.task_id;
    },
    async waitForEnd(taskId, timeoutMs = 150_000) {
      await waitFor(() => events.some((e) => e.task_id === taskId && isTerminal(e)), `the end of task ${taskId}`, timeoutMs);
      return events.find((e) => e.task_id === taskId && isTerminal(e)) as TaskEvent;
    },
    localFile: (key) => blobs.toLocalFile(key, join(dir.path, "copies")),
    async cleanup() {
      for (const service of services.splice(0).reverse()) await service.stop({ graceMs: 5_000 });
      await bus.close({ graceMs: 5_000 });
      await blobs.close();
      await dir.cleanup();
    },
  };
}

/** Decodes the whole MP3 with ffmpeg (exits on the first decoding error); resolves to ffmpeg's error lines. */
export async function decodeErrors(media: MediaToolkit, path: string): Promise<string[]> {
  const result = await media.run([...GLOBAL_ARGS, "-v", "error", "-xerror", ...inputArgs(path, ["mp3"]), "-f", "null", "-"], { what: "Decoding the audio book" });
  return result.stderrTail;
}
