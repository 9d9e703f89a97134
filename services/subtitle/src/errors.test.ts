import { BlobError } from "@voiceloc/blobs";
import { RecognitionError, TranslationServiceError } from "@voiceloc/engines";
import { FetchRefusedError } from "@voiceloc/fetch";
import { FfmpegFailedError, MediaProbeError, MediaRequestError } from "@voiceloc/media";
import { RetryableTaskError, TaskInputError } from "@voiceloc/worker";
import { describe, expect, it } from "vitest";
import { NO_SPEECH_MESSAGE, videoFailure } from "./errors.ts";

const ffmpegDetails = { exitCode: 1, exitSignal: null, stderrTail: ["[mov,mp4 @ 0x55abdb24a500] moov atom not found"] };

describe("videoFailure: the shared policy's class, the subtitle worker's words", () => {
  const cases: Array<[string, unknown, "input" | "retryable" | "bug", string]> = [
    ["a damaged video", new FfmpegFailedError("MEDIA_UNREADABLE", "Decoding failed.", ffmpegDetails), "input", "The file is not a video we can read: it is damaged or is not a video file."],
    ["an unprobeable file", new MediaProbeError("PROBE_FAILED", "No description."), "input", "The file is not a video we can read: it is damaged or is not a video file."],
    ["a playlist", new MediaProbeError("MEDIA_FORMAT_NOT_ALLOWED", "The file is a playlist."), "input", "The file is not a video we can read: it is a playlist or a list of other files; send one video file."],
    ["no audio", new MediaProbeError("MEDIA_NO_AUDIO", "No audio."), "input", "The file is not a video we can read: it has no audio track to take speech from."],
    ["no picture", new MediaProbeError("MEDIA_NO_VIDEO", "No video."), "input", "The file is not a video we can read: it has no picture (video track)."],
    ["unusable sound", new RecognitionError("RECOGNITION_MEDIA_UNUSABLE", "The file has no audio track."), "input", "The file is not a video we can read: its sound could not be used for speech recognition."],
    ["no speech", new RecognitionError("RECOGNITION_NO_SPEECH", "nothing"), "input", NO_SPEECH_MESSAGE],
    ["a missing file (the policy's own words)", new FetchRefusedError("not_found", 'The file "a.mp4" was not found.'), "input", 'The file "a.mp4" was not found.'],
    ["ffmpeg failing otherwise", new FfmpegFailedError("FFMPEG_FAILED", "Encoding the video failed.", ffmpegDetails), "retryable", "Encoding the video failed."],
    ["a fetch timeout", new FetchRefusedError("timeout", "Too slow."), "retryable", "Too slow."],
    ["the recogniser crashing", new RecognitionError("RECOGNITION_FAILED", "Speech recognition failed."), "retryable", "Speech recognition failed."],
    ["a busy translator", new TranslationServiceError("TRANSLATION_SERVICE_RATE_LIMITED", "Busy.", { retryAfterMs: 7_000 }), "retryable", "Busy."],
    ["storage failing", new BlobError("blob_store_failed", "EIO at /var/lib/x"), "retryable", "the server's storage failed for a while."],
    ["an invalid media request (a bug)", new MediaRequestError("maxSeconds must be positive."), "bug", "maxSeconds must be positive."],
    ["a TypeError (a bug)", new TypeError("x is undefined"), "bug", "x is undefined"],
  ];

  it.each(cases)("%s", (_name, error, kind, message) => {
    const out = videoFailure(error);
    switch (kind) {
      case "input":
        expect(out).toBeInstanceOf(TaskInputError);
        break;
      case "retryable":
        expect(out).toBeInstanceOf(RetryableTaskError);
        break;
      case "bug":
        expect(out).toBe(error);
        break;
      default: {
        const unreachable: never = kind;
        throw new Error(String(unreachable));
      }
    }
    expect((out as Error).message).toBe(message);
    expect((out as Error).message).not.toMatch(/0x[0-9a-f]{4,}|moov|\/var\/lib/);
  });

  it("keeps the retry delay a translation service asked for", () => {
    const out = videoFailure(new TranslationServiceError("TRANSLATION_SERVICE_RATE_LIMITED", "Busy.", { retryAfterMs: 7_000 }));
    expect(out).toBeInstanceOf(RetryableTaskError);
    expect((out as RetryableTaskError).retryAfterMs).toBe(7_000);
  });
});
