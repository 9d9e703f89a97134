import { BlobError, BlobNotFoundError, InvalidBlobKeyError } from "@voiceloc/blobs";
import { BusError, RequestTimeoutError } from "@voiceloc/bus";
import {
  LanguageNotSupportedError,
  RecognitionError,
  RecognitionServiceError,
  SpeechServiceError,
  SttConfigError,
  SynthesisError,
  TranslationNotSupportedError,
  TranslationServiceError,
  UnknownVoiceError,
  UnspeakableTextError,
} from "@voiceloc/engines";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { FetchRefusedError, fetchToFile } from "@voiceloc/fetch";
import { FfmpegFailedError, FfmpegNotFoundError, MediaCancelledError, MediaProbeError, MediaRequestError } from "@voiceloc/media";
import { tempDir } from "@voiceloc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidCheckpointNameError, RetryableTaskError, TaskInputError } from "./errors.ts";
import { classifyFailure, INTERNAL_ERROR_REASON, NO_SPEECH_MESSAGE, taskFailure, type FailureScope } from "./policy.ts";
import { plainReason } from "./reason.ts";

const ffmpegDetails = { exitCode: 1, exitSignal: null, stderrTail: ["[pcm_s16le @ 0x55abdb24a500] Decoder requires channel count but channels not set"] };
const systemError = (code: string) => Object.assign(new Error(`${code}: write /tmp/voiceloc-x/chunk.wav`), { code, syscall: "write" });

describe("the task failure policy", () => {
  it("the classification table: engine, media, fetch, storage and bus errors by code and scope", () => {
    const table: Array<[string, unknown, FailureScope, "input" | "retryable" | "bug"]> = [
      // Speech synthesis
      ["unknown voice", new UnknownVoiceError("flite:nobody"), "work", "input"],
      ["language without a voice", new LanguageNotSupportedError("Amharic"), "work", "input"],
      ["unspeakable text", new UnspeakableTextError("TEXT_NOT_SPEAKABLE", "Nothing to say."), "work", "input"],
      ["synthesis crashed", new SynthesisError("SYNTHESIS_FAILED", "The voice failed."), "work", "retryable"],
      ["speech service busy", new SpeechServiceError("SPEECH_SERVICE_RATE_LIMITED", "Busy."), "work", "retryable"],
      // Recognition
      ["unusable media", new RecognitionError("RECOGNITION_MEDIA_UNUSABLE", "The file has no audio track."), "input", "input"],
      ["no speech", new RecognitionError("RECOGNITION_NO_SPEECH", "nothing"), "input", "input"],
      ["recogniser crashed", new RecognitionError("RECOGNITION_FAILED", "pocketsphinx failed."), "input", "retryable"],
      ["recognition service down", new RecognitionServiceError("RECOGNITION_SERVICE_UNAVAILABLE", "Down."), "work", "retryable"],
      ["recogniser misconfigured", new SttConfigError("bad model path"), "work", "bug"],
      // Translation
      ["pair not offered", new TranslationNotSupportedError("English", "German"), "work", "input"],
      ["translation service busy", new TranslationServiceError("TRANSLATION_SERVICE_RATE_LIMITED", "Busy.", { retryAfterMs: 7_000 }), "work", "retryable"],
      // Media: the same code is the input's fault or the server's, by scope
      ["unreadable input", new FfmpegFailedError("MEDIA_UNREADABLE", "Decoding failed.", ffmpegDetails), "input", "input"],
      ["unreadable own file", new FfmpegFailedError("MEDIA_UNREADABLE", "Decoding failed.", ffmpegDetails), "work", "retryable"],
      ["input in a refused format", new FfmpegFailedError("MEDIA_FORMAT_NOT_ALLOWED", "Refused.", ffmpegDetails), "input", "input"],
      ["input without audio", new FfmpegFailedError("MEDIA_NO_AUDIO", "No audio.", ffmpegDetails), "input", "input"],
      ["unprobeable input", new MediaProbeError("PROBE_FAILED", "No description."), "input", "input"],
      ["ffmpeg failed otherwise", new FfmpegFailedError("FFMPEG_FAILED", "It stopped.", ffmpegDetails), "input", "retryable"],
      // Too large for memory (a picture over MAX_VIDEO_PIXELS, a child over CHILD_MEMORY_LIMIT_MB or killed by the kernel): never retried
      ["picture over the limit", new FfmpegFailedError("MEDIA_TOO_LARGE", "Too big.", ffmpegDetails), "input", "input"],
      ["out of memory on own work", new FfmpegFailedError("MEDIA_TOO_LARGE", "Too big.", { ...ffmpegDetails, exitSignal: "SIGKILL" }), "work", "input"],
      ["speech engine out of memory", new SynthesisError("SYNTHESIS_OUT_OF_MEMORY", "Too big."), "work", "input"],
      ["recogniser out of memory", new RecognitionError("RECOGNITION_OUT_OF_MEMORY", "Too big."), "input", "input"],
      ["ffmpeg missing", new FfmpegNotFoundError("No ffmpeg."), "work", "retryable"],
      ["media cancelled", new MediaCancelledError("Encoding"), "work", "retryable"],
      ["invalid media request", new MediaRequestError("maxSeconds must be positive."), "input", "bug"],
      // Fetching the input
      ["missing file", new FetchRefusedError("not_found", 'The file "a.wav" was not found.'), "input", "input"],
      ["private address", new FetchRefusedError("address_not_allowed", "Refused."), "input", "input"],
      ["fetch timeout", new FetchRefusedError("timeout", "Too slow."), "input", "retryable"],
      // The server holding the file: its own error, a timeout or a rate limit may pass; a refusal is about the reference
      ["HTTP 503", new FetchRefusedError("http_status", "The server answered 503.", { status: 503 }), "input", "retryable"],
      ["HTTP 408", new FetchRefusedError("http_status", "The server answered 408.", { status: 408 }), "input", "retryable"],
      ["HTTP 429", new FetchRefusedError("http_status", "The server answered 429.", { status: 429 }), "input", "retryable"],
      ["HTTP 404", new FetchRefusedError("http_status", "The server answered 404.", { status: 404 }), "input", "input"],
      ["HTTP 403", new FetchRefusedError("http_status", "The server answered 403.", { status: 403 }), "input", "input"],
      ["object store failing", new FetchRefusedError("object_storage_error", "The object store could not return it (HTTP 503).", { status: 503 }), "input", "retryable"],
      ["object store refusing", new FetchRefusedError("object_storage_error", "The object store refused access.", { status: 403 }), "input", "input"],
      ["object store with no content", new FetchRefusedError("object_storage_error", "The object store returned no content."), "input", "input"],
      ["file too large", new FetchRefusedError("too_large", "Too large."), "input", "input"],
      ["path outside the media root", new FetchRefusedError("path_outside_media_root", "Refused."), "input", "input"],
      // Storage, bus, the runtime, the system, and the rest
      ["blob store failed", new BlobError("blob_store_failed", "EIO at /var/lib/x"), "work", "retryable"],
      ["checkpoint gone", new BlobNotFoundError("tasks/x/checkpoints/a"), "work", "retryable"],
      ["bad blob key", new InvalidBlobKeyError("../x", "dots"), "work", "bug"],
      ["bus timeout", new RequestTimeoutError("synthesis.speak", 5_000), "work", "retryable"],
      ["bus misuse", new BusError("invalid_argument", "bad subject"), "work", "bug"],
      ["bad checkpoint name", new InvalidCheckpointNameError("../x"), "work", "bug"],
      ["disk full", systemError("ENOSPC"), "work", "retryable"],
      ["handler's input error", new TaskInputError("The book is empty."), "work", "input"],
      ["handler's retryable error", new RetryableTaskError("Busy."), "work", "retryable"],
      ["a TypeError", new TypeError("Cannot read properties of undefined (reading 'x')"), "work", "bug"],
      ["a thrown string", "boom", "work", "bug"],
    ];
    const got = table.map(([name, error, scope]) => [name, classifyFailure(error, scope).class]);
    expect(got).toEqual(table.map(([name, , , expected]) => [name, expected]));
  });

  it("gives plain reasons: engine messages, fixed wording for media and no speech, nothing of a bug", () => {
    expect(classifyFailure(new UnknownVoiceError("flite:nobody")).reason).toMatch(/flite:nobody/);
    expect(classifyFailure(new FfmpegFailedError("MEDIA_UNREADABLE", "x", ffmpegDetails), "input").reason).toBe(
      "The file is not audio we can read: it is damaged or is not an audio or video file.",
    );
    expect(classifyFailure(new RecognitionError("RECOGNITION_MEDIA_UNUSABLE", "The file has no audio track."), "input").reason).toBe(
      "The file is not audio we can read: the file has no audio track.",
    );
    expect(classifyFailure(new RecognitionError("RECOGNITION_NO_SPEECH", "nothing")).reason).toBe(NO_SPEECH_MESSAGE);
    expect(classifyFailure(new TypeError("x is undefined at /srv/app/x.ts:1")).reason).toBe(INTERNAL_ERROR_REASON);
    expect(classifyFailure(systemError("ENOSPC")).reason).toBe("the server ran out of disk space.");
    expect(classifyFailure(new TranslationServiceError("TRANSLATION_SERVICE_RATE_LIMITED", "Busy.", { retryAfterMs: 7_000 }))).toMatchObject({
      class: "retryable",
      retryAfterMs: 7_000,
    });
  });

  it("taskFailure turns a classified error into what the runtime settles, with context", () => {
    const input = taskFailure(new UnknownVoiceError("flite:nobody"), { context: "Speaking part 2 of 5 failed" });
    expect(input).toBeInstanceOf(TaskInputError);
    expect((input as Error).message).toMatch(/^Speaking part 2 of 5 failed: there is no voice called "flite:nobody"/i);
    const retry = taskFailure(new TranslationServiceError("TRANSLATION_SERVICE_RATE_LIMITED", "Busy.", { retryAfterMs: 7_000 }));
    expect(retry).toBeInstanceOf(RetryableTaskError);
    expect((retry as RetryableTaskError).retryAfterMs).toBe(7_000);
    const bug = new TypeError("oops");
    expect(taskFailure(bug)).toBe(bug);
  });
});

describe("the task failure policy on a fetched input", () => {
  let server: Server;
  let origin: string;
  let dir: Awaited<ReturnType<typeof tempDir>>;

  beforeAll(async () => {
    dir = await tempDir("voiceloc-policy-fetch-");
    // answers /status/<code> with that status
    server = createServer((req, res) => {
      res.writeHead(Number(/^\/status\/(\d{3})$/.exec(req.url ?? "")?.[1] ?? 404));
      res.end("error page");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await dir.cleanup();
  });

  async function failureOf(status: number) {
    const error = await fetchToFile(`http://${origin}/status/${status}`, dir.path, { mediaRoot: dir.path, allowPrivateHosts: [origin], timeoutMs: 30_000 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(FetchRefusedError);
    return classifyFailure(error, "input");
  }

  it("retries a task whose file's server fails (5xx), is rate limiting or timed out; fails at once one it refuses", async () => {
    expect(await failureOf(503)).toMatchObject({ class: "retryable", reason: `The server ${origin} answered HTTP 503.` });
    expect((await failureOf(500)).class).toBe("retryable");
    expect((await failureOf(429)).class).toBe("retryable");
    expect((await failureOf(408)).class).toBe("retryable");
    expect(await failureOf(404)).toEqual({ class: "input", reason: `The server ${origin} answered HTTP 404 (not found).` });
    expect((await failureOf(403)).class).toBe("input");
    expect((await failureOf(410)).class).toBe("input");
  });
});

describe("plainReason", () => {
  it("keeps plain sentences and user-given relative paths and URLs as they are", () => {
    expect(plainReason('The file "books/missing.txt" was not found.')).toBe('The file "books/missing.txt" was not found.');
    expect(plainReason("https://example.com/a/b.wav answered 404.")).toBe("https://example.com/a/b.wav answered 404.");
    expect(plainReason("Speech synthesis in Amharic is not available.")).toBe("Speech synthesis in Amharic is not available.");
  });

  it("removes stderr, heap addresses, local paths, network addresses and stack traces", () => {
    const raw = [
      "Decoding failed: [pcm_s16le @ 0x55abdb24a500] Decoder requires channel count at /tmp/voiceloc-voice-stream-x/input/a.wav via 10.0.3.7:4222 and [fd00::1]:4222",
      "    at decode (/work/services/voice-stream/src/pipeline.ts:120:11)",
      "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
    ].join("\n");
    const reason = plainReason(raw);
    expect(reason).toBe("Decoding failed: Decoder requires channel count at (a file on the server) via (address) and (address)");
    expect(plainReason("x".repeat(1_000)).length).toBeLessThanOrEqual(300);
    expect(plainReason("\n\n")).toBe("The task could not be completed.");
  });
});
